// MixUp: the sample's image blended with a second sample (both after the geometric stage) as
// r * a + (1 - r) * b, r ~ Beta(32, 32), truncated to uint8 like the reference's astype; the
// labels of both are kept. Off by default (augment.mixup = 0) and with close_mosaic.
#pragma once

#include "common/rng.h"
#include "data/sample.h"

namespace detrain::data {

// A Beta(a, b) draw from two Gamma draws (Marsaglia and Tsang), a, b >= 1.
double draw_beta(Rng& rng, double a, double b);

// Blends `other` into `sample` (same size and K) with weight r for `sample`.
void mixup(Sample& sample, const Sample& other, double r);

}  // namespace detrain::data
