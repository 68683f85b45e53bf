// Mosaic placement; see mosaic.h.
#include "data/mosaic.h"

#include <algorithm>

namespace detrain::data {

std::array<int, 2> draw_mosaic_center(Rng& rng, int s) {
  const int xc = static_cast<int>(rng.uniform(s / 2.0, 1.5 * s));
  const int yc = static_cast<int>(rng.uniform(s / 2.0, 1.5 * s));
  return {xc, yc};
}

Sample mosaic4(const std::array<const Sample*, 4>& tiles, int s, int xc, int yc) {
  Sample out;
  const Sample& first = *tiles[0];
  out.kpt_count = first.kpt_count;
  out.record_index = first.record_index;
  out.image_id = first.image_id;
  out.orig_width = first.orig_width;
  out.orig_height = first.orig_height;
  out.file = first.file;
  out.image = cv::Mat(2 * s, 2 * s, CV_8UC3, cv::Scalar::all(114));
  const int s2 = 2 * s;
  for (int i = 0; i < 4; ++i) {
    const Sample& t = *tiles[static_cast<size_t>(i)];
    const int w = t.width(), h = t.height();
    int x1a, y1a, x2a, y2a, x1b, y1b;
    switch (i) {
      case 0:  // top left
        x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
        x1b = w - (x2a - x1a), y1b = h - (y2a - y1a);
        break;
      case 1:  // top right
        x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, s2), y2a = yc;
        x1b = 0, y1b = h - (y2a - y1a);
        break;
      case 2:  // bottom left
        x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(s2, yc + h);
        x1b = w - (x2a - x1a), y1b = 0;
        break;
      default:  // bottom right
        x1a = xc, y1a = yc, x2a = std::min(xc + w, s2), y2a = std::min(s2, yc + h);
        x1b = 0, y1b = 0;
        break;
    }
    const cv::Rect dst(x1a, y1a, x2a - x1a, y2a - y1a);
    if (dst.width > 0 && dst.height > 0)
      t.image(cv::Rect(x1b, y1b, dst.width, dst.height)).copyTo(out.image(dst));
    out.append_labels(t, static_cast<float>(x1a - x1b), static_cast<float>(y1a - y1b));
  }
  clip_labels(out, static_cast<float>(s2), static_cast<float>(s2));
  drop_empty_boxes(out);
  return out;
}

}  // namespace detrain::data
