// MixUp; see mixup.h. numpy's beta sampler is not reproduced (our own Rng stream); the blend
// itself truncates like the reference.
#include "data/mixup.h"

#include <cmath>
#include <opencv2/core.hpp>

namespace detrain::data {

namespace {

// Gamma(shape >= 1, 1) by Marsaglia and Tsang's squeeze method.
double draw_gamma(Rng& rng, double shape) {
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace

double draw_beta(Rng& rng, double a, double b) {
  const double x = draw_gamma(rng, a), y = draw_gamma(rng, b);
  return x / (x + y);
}

void mixup(Sample& sample, const Sample& other, double r) {
  cv::Mat blended(sample.image.size(), CV_8UC3);
  const cv::Mat a = sample.image.isContinuous() ? sample.image : sample.image.clone();
  const cv::Mat b = other.image.isContinuous() ? other.image : other.image.clone();
  const size_t n = a.total() * 3;
  const uint8_t *pa = a.data, *pb = b.data;
  // float64 blend truncated to uint8, as the reference's astype(np.uint8) (OpenCV would round).
  for (size_t i = 0; i < n; ++i)
    blended.data[i] = static_cast<uint8_t>(pa[i] * r + pb[i] * (1.0 - r));
  sample.image = blended;
  sample.append_labels(other, 0.f, 0.f);
}

}  // namespace detrain::data
