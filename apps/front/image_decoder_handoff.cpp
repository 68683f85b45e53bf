// The front end's definition of data::decoded_image_size (data/image_decoder.h): it links no
// image decoder, so an image that only decoding can size sends the command to detrain-torch.
#include "data/image_decoder.h"

namespace detrain::data {

std::optional<std::array<int32_t, 2>> decoded_image_size(const std::string& path) {
  throw ImageNeedsDecoder(path);
}

}  // namespace detrain::data
