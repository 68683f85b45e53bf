// Tensor comparisons for model tests: a max-abs-difference check relative to the reference's
// largest magnitude, which on failure prints the worst elements (index, ours, reference).
#pragma once

#include <torch/torch.h>

#include <string>

namespace detrain::test {

struct CloseReport {
  bool ok = true;
  double max_abs_diff = 0;
  double bound = 0;
  std::string details;  // worst elements when !ok
};

// max|actual - expected| <= rel * max|expected| (+ abs); shapes must match.
CloseReport check_close(const std::string& name, const torch::Tensor& actual,
                        const torch::Tensor& expected, double rel, double abs = 0.0, int worst = 5);

}  // namespace detrain::test
