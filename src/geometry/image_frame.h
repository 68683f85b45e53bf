// How an image was placed in the network input (the letterbox: scale per axis, then pad), so
// that predictions in input pixels map back to the original image. A plain type shared by the
// data pipeline (which records it per image in a batch) and inference (which inverts it).
#pragma once

#include <cstdint>

namespace detrain::geometry {

// original = (input_px - pad) / ratio per axis (the data pipeline's ImageMeta).
struct ImageFrame {
  int64_t image_id = -1;
  int64_t orig_width = 0;
  int64_t orig_height = 0;
  double ratio_x = 1.0;  // input pixels per original pixel
  double ratio_y = 1.0;
  double pad_left = 0;
  double pad_top = 0;
};

}  // namespace detrain::geometry
