// Mosaic placement and the composed mosaic + affine warp; see mosaic.h. Tiles go through
// warp_scaled, which writes what cv::warpAffine would, about twice as fast.
#include "data/mosaic.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "data/pad_value.h"
#include "data/scale_warp.h"

namespace detrain::data {

namespace {

// The labels of all tiles on the canvas (no pixels), clipped, zero-area boxes dropped.
Sample mosaic_labels(const std::array<const Sample*, 4>& tiles,
                     const std::array<TilePlacement, 4>& layout, int s) {
  Sample out;
  const Sample& first = *tiles[0];
  out.kpt_count = first.kpt_count;
  out.record_index = first.record_index;
  out.image_id = first.image_id;
  out.orig_width = first.orig_width;
  out.orig_height = first.orig_height;
  out.file = first.file;
  for (size_t i = 0; i < 4; ++i)
    out.append_labels(*tiles[i], static_cast<float>(layout[i].canvas.x - layout[i].src_x),
                      static_cast<float>(layout[i].canvas.y - layout[i].src_y));
  clip_labels(out, static_cast<float>(2 * s), static_cast<float>(2 * s));
  drop_empty_boxes(out);
  return out;
}

// First output index (of `size`) whose preimage x = (j - offset) / scale reaches `edge`,
// computed with warpAffine's own inverse so the split between tiles is where it samples.
int first_index_at(double edge, double scale, double offset, int size) {
  const double inv = 1.0 / scale, inv_offset = -offset / scale;
  int j = static_cast<int>(std::ceil(edge * scale + offset));
  while (j > 0 && (j - 1) * inv + inv_offset >= edge) --j;
  while (j < size && j * inv + inv_offset < edge) ++j;
  return std::clamp(j, 0, size);
}

}  // namespace

std::array<int, 2> draw_mosaic_center(Rng& rng, int s) {
  const int xc = static_cast<int>(rng.uniform(s / 2.0, 1.5 * s));
  const int yc = static_cast<int>(rng.uniform(s / 2.0, 1.5 * s));
  return {xc, yc};
}

std::array<TilePlacement, 4> mosaic_layout(const std::array<const Sample*, 4>& tiles, int s, int xc,
                                           int yc) {
  const int s2 = 2 * s;
  std::array<TilePlacement, 4> layout;
  for (size_t i = 0; i < 4; ++i) {
    const int w = tiles[i]->width(), h = tiles[i]->height();
    int x1a, y1a, x2a, y2a;
    switch (i) {
      case 0:  // top left
        x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
        break;
      case 1:  // top right
        x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, s2), y2a = yc;
        break;
      case 2:  // bottom left
        x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(s2, yc + h);
        break;
      default:  // bottom right
        x1a = xc, y1a = yc, x2a = std::min(xc + w, s2), y2a = std::min(s2, yc + h);
        break;
    }
    // Left and top tiles keep their right / bottom part; the others their left / top part.
    const int src_x = (i == 0 || i == 2) ? w - (x2a - x1a) : 0;
    const int src_y = (i == 0 || i == 1) ? h - (y2a - y1a) : 0;
    layout[i] = {cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a), src_x, src_y};
  }
  return layout;
}

Sample mosaic4(const std::array<const Sample*, 4>& tiles, int s, int xc, int yc) {
  const auto layout = mosaic_layout(tiles, s, xc, yc);
  Sample out = mosaic_labels(tiles, layout, s);
  out.image = cv::Mat(2 * s, 2 * s, CV_8UC3, cv::Scalar::all(kPadGrey));
  for (size_t i = 0; i < 4; ++i) {
    const cv::Rect& dst = layout[i].canvas;
    if (dst.width > 0 && dst.height > 0)
      tiles[i]
          ->image(cv::Rect(layout[i].src_x, layout[i].src_y, dst.width, dst.height))
          .copyTo(out.image(dst));
  }
  return out;
}

Sample mosaic_warp(const std::array<const Sample*, 4>& tiles, int s, int xc, int yc,
                   const AffineDraw& draw) {
  const cv::Matx33f& m = draw.matrix;
  if (draw.perspective || m(0, 1) != 0 || m(1, 0) != 0 || m(0, 0) <= 0 || m(1, 1) <= 0) {
    Sample canvas = mosaic4(tiles, s, xc, yc);
    warp_sample(canvas, draw, s, s);
    return canvas;
  }
  const auto layout = mosaic_layout(tiles, s, xc, yc);
  Sample out = mosaic_labels(tiles, layout, s);
  out.image = cv::Mat(s, s, CV_8UC3, cv::Scalar::all(kPadGrey));
  const double sx = m(0, 0), sy = m(1, 1), tx = m(0, 2), ty = m(1, 2);
  for (size_t i = 0; i < 4; ++i) {
    const cv::Rect& a = layout[i].canvas;
    if (a.width <= 0 || a.height <= 0) continue;
    const int j0 = first_index_at(a.x, sx, tx, s), j1 = first_index_at(a.x + a.width, sx, tx, s);
    const int i0 = first_index_at(a.y, sy, ty, s), i1 = first_index_at(a.y + a.height, sy, ty, s);
    if (j1 <= j0 || i1 <= i0) continue;
    // Tile pixels -> canvas (shift by the placement) -> output, relative to the ROI's corner.
    const double dx = a.x - layout[i].src_x, dy = a.y - layout[i].src_y;
    const cv::Matx23d tile_to_roi(sx, 0, sx * dx + tx - j0, 0, sy, sy * dy + ty - i0);
    cv::Mat roi = out.image(cv::Rect(j0, i0, j1 - j0, i1 - i0));
    warp_scaled(tiles[i]->image, roi, tile_to_roi, {true, kPadGrey});
  }
  warp_labels(out, draw, s, s);
  return out;
}

}  // namespace detrain::data
