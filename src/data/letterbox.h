// LetterBox: resize keeping the aspect ratio (r = min(out_h / h, out_w / w), capped at 1 unless
// scale-up is allowed), then pad to the output size with grey (kPadGrey), centred. Rounding follows
// the reference's Python `round` (half to even), so 106.5 -> 106; labels move by r and the pad.
#pragma once

#include "data/pad_value.h"
#include "data/sample.h"

namespace detrain::data {

struct LetterboxOptions {
  int out_height = 640;
  int out_width = 640;
  bool scaleup = true;  // val uses false
  bool center = true;
  int pad_value = kPadGrey;
};

// Python's round() for doubles: nearest, ties to even.
double python_round(double x);

// Letterboxes the sample in place and folds the new ratio and pad into sample.placement.
void letterbox(Sample& sample, const LetterboxOptions& options);

}  // namespace detrain::data
