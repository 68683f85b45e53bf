// RandomFlip: horizontal (x -> w - x, keypoints re-indexed by flip_idx so left stays left of
// the person) and vertical (y -> h - y) flips of image and labels together.
#pragma once

#include <vector>

#include "data/sample.h"

namespace detrain::data {

// `flip_idx` [K] (may be empty when the sample has no keypoints).
void flip_horizontal(Sample& sample, const std::vector<int64_t>& flip_idx);
void flip_vertical(Sample& sample);

}  // namespace detrain::data
