// The one thing the LibTorch-free record reading needs from an image decoder: the size of an
// image whose size image_size.h cannot read from its header (AVIF, HEIC, JPEG 2000, a WebP or
// TIFF turned a quarter by EXIF, which the reference decodes too). Each executable links exactly
// one definition: detrain_core's (data/decode.cpp, OpenCV), or the front end's
// (apps/front/image_decoder_handoff.cpp), which throws ImageNeedsDecoder so that the front end
// hands the command to detrain-torch before it has printed anything.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace detrain::data {

// {width, height} of the decoded image (EXIF orientation applied as the header readers do), or
// nullopt when the file does not decode.
std::optional<std::array<int32_t, 2>> decoded_image_size(const std::string& path);

// Thrown by a build that has no image decoder; names the image that needs one.
class ImageNeedsDecoder : public std::runtime_error {
 public:
  explicit ImageNeedsDecoder(const std::string& path)
      : std::runtime_error(path + ": its size needs an image decoder") {}
};

}  // namespace detrain::data
