// RandomHSV; see hsv.h. The lookup tables follow the reference; the fused kernels are chosen
// here by what the CPU and OpenCV run.
#include "data/hsv.h"

#include <algorithm>
#include <cmath>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include "data/hsv_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define DETRAIN_HSV_KERNELS 1
#endif

namespace detrain::data {

HsvGains draw_hsv(Rng& rng, double hgain, double sgain, double vgain) {
  HsvGains g;
  g.h = rng.uniform(-1, 1) * hgain;
  g.s = rng.uniform(-1, 1) * sgain;
  g.v = rng.uniform(-1, 1) * vgain;
  return g;
}

HsvTables hsv_tables(const HsvGains& g) {
  HsvTables t;
  for (int x = 0; x < 256; ++x) {
    // Python's % is a floored modulo (never negative); the casts truncate like astype(uint8).
    double h = std::fmod(x + g.h * 180.0, 180.0);
    if (h < 0) h += 180.0;
    t.hue[x] = static_cast<uint8_t>(h);
    t.sat[x] = static_cast<uint8_t>(std::clamp(x * (1 + g.s), 0.0, 255.0));
    t.val[x] = static_cast<uint8_t>(std::clamp(x * (1 + g.v), 0.0, 255.0));
  }
  t.sat[0] = 0;  // the reference keeps saturation 0 at 0 (greys stay grey)
  return t;
}

void apply_hsv_with_opencv(cv::Mat& bgr, const HsvTables& t) {
  cv::Mat hsv;
  cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
  // Three byte tables in one pass: cv::LUT with a 3-channel table is twice as slow here.
  for (int y = 0; y < hsv.rows; ++y) {
    uint8_t* p = hsv.ptr<uint8_t>(y);
    for (int x = 0; x < 3 * hsv.cols; x += 3) {
      p[x] = t.hue[p[x]];
      p[x + 1] = t.sat[p[x + 1]];
      p[x + 2] = t.val[p[x + 2]];
    }
  }
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
}

const char* hsv_kernel_name(HsvKernel kernel) {
  return kernel == HsvKernel::avx512 ? "avx512" : "avx2";
}

bool hsv_kernel_available(HsvKernel kernel) {
#ifdef DETRAIN_HSV_KERNELS
  // Both kernels reproduce OpenCV's AVX2 colour kernels, so OpenCV must run those here (it
  // does on an AVX2 + FMA CPU unless OPENCV_CPU_DISABLE turns them off).
  const bool opencv_avx2 = cv::checkHardwareSupport(CV_CPU_AVX2) &&
                           cv::checkHardwareSupport(CV_CPU_FMA3) &&
                           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (kernel == HsvKernel::avx2) return opencv_avx2;
  return opencv_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vbmi");
#else
  (void)kernel;
  return false;
#endif
}

bool apply_hsv_fused(cv::Mat& bgr, const HsvTables& tables, HsvKernel kernel) {
  if (bgr.type() != CV_8UC3 || bgr.empty() || !hsv_kernel_available(kernel)) return false;
  // OpenCV's hue bytes index [0, 180); an entry beyond has no sector in the kernels' formula.
  if (std::any_of(tables.hue.begin(), tables.hue.begin() + 180, [](uint8_t h) { return h >= 180; }))
    return false;
#ifdef DETRAIN_HSV_KERNELS
  if (kernel == HsvKernel::avx512)
    hsv_kernels::fused_avx512(bgr, tables);
  else
    hsv_kernels::fused_avx2(bgr, tables);
  return true;
#else
  return false;
#endif
}

bool apply_hsv_fused(cv::Mat& bgr, const HsvTables& tables) {
  for (const HsvKernel kernel : {HsvKernel::avx512, HsvKernel::avx2})
    if (hsv_kernel_available(kernel)) return apply_hsv_fused(bgr, tables, kernel);
  return false;
}

void apply_hsv(cv::Mat& bgr, const HsvGains& g) {
  if (g.h == 0 && g.s == 0 && g.v == 0) return;
  const HsvTables tables = hsv_tables(g);
  if (!apply_hsv_fused(bgr, tables)) apply_hsv_with_opencv(bgr, tables);
}

}  // namespace detrain::data
