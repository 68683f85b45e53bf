// An image's size from its file header, without decoding: JPEG and MPO (SOF marker), PNG
// (IHDR), BMP, WebP (VP8, VP8L, VP8X) and classic TIFF (IFD0). Sizes are as Ultralytics
// 8.4.190's exif_size reports them: EXIF orientations 5-8 (transposed or rotated a quarter turn)
// swap width and height for JPEG and for a PNG eXIf chunk that precedes the image data; a WebP
// or TIFF with such an orientation is decoded by the reference, so it has no size here.
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
