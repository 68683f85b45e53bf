// Tensor comparisons; see tensor_checks.h.
#include "model/tensor_checks.h"

#include <sstream>

namespace detrain::test {

CloseReport check_close(const std::string& name, const torch::Tensor& actual,
                        const torch::Tensor& expected, double rel, double abs, int worst) {
  CloseReport report;
  std::ostringstream out;
  if (actual.sizes() != expected.sizes()) {
    report.ok = false;
    out << name << ": shape " << actual.sizes() << " vs reference " << expected.sizes();
    report.details = out.str();
    return report;
  }
  const auto a = actual.detach().to(torch::kCPU, torch::kFloat64).contiguous().view(-1);
  const auto e = expected.detach().to(torch::kCPU, torch::kFloat64).contiguous().view(-1);
  const auto diff = (a - e).abs();
  report.max_abs_diff = diff.numel() ? diff.max().item<double>() : 0.0;
  const double scale = e.numel() ? e.abs().max().item<double>() : 0.0;
  report.bound = rel * scale + abs;
  report.ok = report.max_abs_diff <= report.bound && !torch::isnan(a).any().item<bool>();
  if (!report.ok) {
    out << name << ": max|diff| " << report.max_abs_diff << " > bound " << report.bound << " (rel "
        << rel << " x max|ref| " << scale << " + " << abs << "); worst elements:";
    const auto top = diff.topk(std::min<int64_t>(worst, diff.numel()));
    const auto indices = std::get<1>(top);
    for (int64_t i = 0; i < indices.numel(); ++i) {
      const int64_t flat = indices[i].item<int64_t>();
      // Unravel the flat index into the tensor's coordinates.
      std::vector<int64_t> coord(static_cast<size_t>(expected.dim()));
      int64_t rest = flat;
      for (int64_t d = expected.dim() - 1; d >= 0; --d) {
        coord[static_cast<size_t>(d)] = rest % expected.size(d);
        rest /= expected.size(d);
      }
      out << "\n    " << torch::IntArrayRef(coord) << ": ours " << a[flat].item<double>()
          << ", reference " << e[flat].item<double>();
    }
    report.details = out.str();
  }
  return report;
}

}  // namespace detrain::test
