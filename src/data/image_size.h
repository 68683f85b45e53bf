// An image's size from its file header, without decoding: JPEG (SOF marker), PNG (IHDR) and
// BMP. Sizes are as Ultralytics 8.4.190's exif_size reports them: EXIF orientations 5-8
// (transposed or rotated a quarter turn) swap width and height, for JPEG and for a PNG eXIf
// chunk that precedes the image data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace detrain::data {

// {width, height}, or nullopt when the file is missing, of another format, or its header
// cannot be parsed (callers decode the image instead). Never throws.
std::optional<std::array<int32_t, 2>> read_image_size(const std::string& path);

}  // namespace detrain::data
