// Runtime setup; see runtime.h.
#include "compat/runtime.h"

#include <c10/util/Exception.h>
#include <c10/util/Logging.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <sstream>
#include <thread>

#include "common/cores.h"
#include "compat/torch_compat.h"

namespace detrain::compat {

std::string RuntimeInfo::summary() const {
  std::ostringstream out;
  out << "device " << device << ", " << torch_threads << " torch thread(s) of " << cores
      << " core(s), seed " << seed;
  return out.str();
}

RuntimeInfo apply_runtime(const config::RuntimeOptions& options) {
  RuntimeInfo info;
  info.cores = usable_cores();
  info.torch_threads = options.threads > 0 ? static_cast<int>(options.threads) : info.cores;
  set_num_threads(info.torch_threads);
  // Our loader runs its own worker threads; OpenCV's pool would oversubscribe the cores.
  cv::setNumThreads(0);
  info.opencv_threads = cv::getNumThreads();
  torch::manual_seed(static_cast<uint64_t>(options.seed));
  info.seed = options.seed;
  info.device = options.device;
  at::globalContext().setBenchmarkCuDNN(options.cudnn_benchmark);
  return info;
}

namespace {

class DebugLogWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    spdlog::debug("LibTorch: {}", warning.msg());
  }
};

}  // namespace

void route_libtorch_messages() {
  // c10 keeps a pointer: the handler lives as long as the process.
  static DebugLogWarnings handler;
  c10::WarningUtils::set_warning_handler(&handler);
  // c10's own LOG(WARNING) lines (not TORCH_WARN) print unless its level is ERROR (2); at -v
  // they stay visible.
  FLAGS_caffe2_log_level = spdlog::get_level() <= spdlog::level::debug ? 0 : 2;
}

}  // namespace detrain::compat
