// RandomPerspective: one matrix M = T * S * R * P * C (centre, perspective, rotation with
// isotropic scale, shear, translation) moves the image, the box corners and the keypoints
// together; boxes are then clipped and filtered with the reference's box_candidates rule.
// Matrices and label maths are float32 like the reference's numpy code; draws come from our
// own Rng stream, not Python's `random`, so the same seed gives different (equally
// distributed) parameters than the reference.
#pragma once

#include <opencv2/core.hpp>

#include "common/rng.h"
#include "config/augment_options.h"
#include "data/sample.h"

namespace detrain::data {

struct AffineDraw {
  cv::Matx33f matrix = cv::Matx33f::eye();  // input px -> output px
  float scale = 1.0f;                       // the drawn isotropic scale
  bool perspective = false;                 // warpPerspective instead of warpAffine
};

// Draws M for an input of in_w x in_h placed into an output of out_w x out_h (a mosaic canvas
// 2s x 2s into s x s, or a loaded image with long side s into s x s).
AffineDraw draw_affine(Rng& rng, const config::AugmentOptions& options, int in_w, int in_h,
                       int out_w, int out_h);

// Warps the image (INTER_LINEAR, border kPadGrey; skipped when M is the identity and the size does
// not change) and the labels, clips them to the output, and keeps boxes that pass
// box_candidates (w > 2 px, h > 2 px, area after / (area before * scale^2) > 0.1, aspect < 100).
void warp_sample(Sample& sample, const AffineDraw& draw, int out_w, int out_h);

// The label half of warp_sample (the image is already warped): transform, clip, filter.
void warp_labels(Sample& sample, const AffineDraw& draw, int out_w, int out_h);

// The reference's box_candidates for one box pair (before scaled by the drawn scale, after).
bool box_candidate(const BoxXyxy& before_scaled, const BoxXyxy& after, float wh_thr = 2.f,
                   float ar_thr = 100.f, float area_thr = 0.1f);

}  // namespace detrain::data
