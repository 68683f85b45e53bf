// Image decode and the reference's load_image resize (long side -> imgsz, aspect kept, ceil).
// JPEGs go through libturbojpeg when it is available, decoding at the smallest DCT scale
// (n/8) that still covers the target size (saves 10-20 % of a decode at 1/2 or 1/4: entropy
// decoding stays); the reference always decodes at full size (cv2.imread), so downscaled
// images can differ by a level or two from it. Other formats use cv::imdecode.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detrain::data {

struct DecodedImage {
  cv::Mat bgr;           // [H, W, 3] uint8 BGR; empty on failure
  std::string error;     // why decoding failed (corrupt, truncated, unsupported)
  int source_width = 0;  // size stored in the file (before any DCT downscale)
  int source_height = 0;
  bool ok() const { return !bgr.empty(); }
};

// Decodes encoded bytes. `min_long_side` > 0 allows DCT downscaling while the long side stays
// at least that large. Never throws for bad data (the error says what happened); truncated
// JPEGs count as failures.
DecodedImage decode_image(const std::vector<uint8_t>& bytes, int min_long_side = 0);

// Reads and decodes a file, then resizes so the long side is `long_side` (sides ceil'ed,
// capped at long_side) with INTER_LINEAR, as 8.4.190's load_image. `exact` decodes at full
// size first, so the pixels are the reference's (validation, whose scores must equal `yolo
// val`'s); otherwise a DCT-reduced decode may be what is resized (training). long_side <= 0
// keeps the decoded size.
DecodedImage load_image(const std::string& path, int long_side, bool exact);

// The size load_image resizes a w x h image to: long side `long_side`, sides ceil'ed and capped.
cv::Size resized_size(int width, int height, int long_side);

// Reads a whole file; false when it cannot be read.
bool read_file_bytes(const std::string& path, std::vector<uint8_t>& out);

}  // namespace detrain::data
