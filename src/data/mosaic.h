// Mosaic of 4 tiles on a 2s x 2s canvas filled with grey (kPadGrey): tiles go top-left, top-right,
// bottom-left and bottom-right of a centre (xc, yc), cropped where they overflow; labels shift
// with their tile, are clipped to the canvas and zero-area boxes are dropped. The canvas then
// goes through RandomPerspective with a -s/2 border, as in the reference. When that matrix is
// axis-aligned (no rotation, shear or perspective: the defaults) mosaic_warp skips the canvas
// and warps each tile straight into its part of the output: identical geometry and interior
// pixels; only the 1 px seams between tiles differ (edge replicated instead of blended).
#pragma once

#include <array>
#include <opencv2/core.hpp>

#include "common/rng.h"
#include "data/random_affine.h"
#include "data/sample.h"

namespace detrain::data {

// The mosaic centre, uniform in [s/2, 3s/2) per axis (truncated like the reference's int()).
std::array<int, 2> draw_mosaic_center(Rng& rng, int s);

// Where each tile lands: `canvas` in canvas pixels, cut from the tile at (`src_x`, `src_y`).
struct TilePlacement {
  cv::Rect canvas;
  int src_x = 0, src_y = 0;
};
std::array<TilePlacement, 4> mosaic_layout(const std::array<const Sample*, 4>& tiles, int s, int xc,
                                           int yc);

// The 2s x 2s canvas with the tiles and their labels (tile 0's provenance).
Sample mosaic4(const std::array<const Sample*, 4>& tiles, int s, int xc, int yc);

// Mosaic followed by warp_sample(draw, s, s), composed per tile when `draw` is axis-aligned.
Sample mosaic_warp(const std::array<const Sample*, 4>& tiles, int s, int xc, int yc,
                   const AffineDraw& draw);

}  // namespace detrain::data
