// Mosaic of 4 tiles on a 2s x 2s canvas filled with 114: tiles go top-left, top-right,
// bottom-left and bottom-right of a centre (xc, yc), cropped where they overflow; labels shift
// with their tile, are clipped to the canvas and zero-area boxes are dropped. The canvas then
// goes through RandomPerspective with a -s/2 border (the caller), as in the reference.
#pragma once

#include <array>

#include "common/rng.h"
#include "data/sample.h"

namespace detrain::data {

// The mosaic centre, uniform in [s/2, 3s/2) per axis (truncated like the reference's int()).
std::array<int, 2> draw_mosaic_center(Rng& rng, int s);

// Places the 4 tiles (each at most s x s) around (xc, yc); the result carries tile 0's
// provenance.
Sample mosaic4(const std::array<const Sample*, 4>& tiles, int s, int xc, int yc);

}  // namespace detrain::data
