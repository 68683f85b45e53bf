// COCO's 17 person-keypoint OKS sigmas, defined once for the loader's default, the synthetic
// data set and the evaluator. pycocotools (COCOeval Params.setKpParams) and Ultralytics 8.4.190
// (utils/metrics.py OKS_SIGMA) both write the literals in tenths and divide by 10.0, so the
// values are computed the same way here: 0.26 / 10.0 is 0.026000000000000002, one ulp above the
// literal 0.026 (four of the seventeen differ so). pycocotools divides in double, as this does;
// Ultralytics' loss holds them in float32 (loss/criterion.cpp divides the tenths so).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace detrain::coco {

inline constexpr size_t kPersonKeypoints = 17;

// pycocotools' [.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87,
// .89, .89] (nose, eyes, ears, shoulders, elbows, wrists, hips, knees, ankles).
inline constexpr std::array<double, kPersonKeypoints> kPersonSigmaTenths = {
    .26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89};

// The sigmas as pycocotools computes them: np.array(tenths) / 10.0, in double.
inline std::vector<double> person_keypoint_sigmas() {
  std::vector<double> sigmas;
  sigmas.reserve(kPersonKeypoints);
  for (const double t : kPersonSigmaTenths) sigmas.push_back(t / 10.0);
  return sigmas;
}

}  // namespace detrain::coco
