// `runtime.*`: device, threads and seed, applied once at start (src/compat/runtime),
// deterministic algorithms for training (src/compat/deterministic), the memory format of the
// model's tensors (src/model/memory_format) and its BatchNorm + SiLU kernel (src/model/bn_silu).
#pragma once

#include "config/field.h"

namespace detrain::config {

struct RuntimeOptions {
  std::string device = "cpu";
  int64_t threads = 0;
  int64_t seed = 0;
  bool deterministic = true;
  bool deterministic_warn_only = true;
  bool cudnn_benchmark = false;
  std::string memory_format = "auto";
  std::string bn_silu = "auto";

  template <class V>
  void visit(V& v) {
    v("device", device, "cpu, cuda or cuda:N");
    v("threads", threads,
      "intra-op CPU threads; 0 uses every core the other processes leave idle, at least one "
      "(sampled at start and once a minute while training)",
      Constraint::range(0, 1024));
    v("seed", seed, "global seed (model init, shuffling, augmentation)",
      Constraint::range(0, 9.007199254740992e15));
    v("deterministic", deterministic,
      "train with deterministic algorithms only (LibTorch's use_deterministic_algorithms, "
      "cuDNN deterministic, CUBLAS_WORKSPACE_CONFIG=:4096:8)");
    v("deterministic_warn_only", deterministic_warn_only,
      "with deterministic: an operation that has no deterministic implementation warns (true) "
      "or stops the run with an error (false)");
    v("cudnn_benchmark", cudnn_benchmark, "let cuDNN autotune convolution algorithms");
    v("memory_format", memory_format,
      "layout of the model's activations and 4-D weights in train, val and predict: nhwc "
      "(channels-last), nchw, or auto (nhwc on CUDA and on x86 CPUs with AVX2 or AVX-512, "
      "nchw elsewhere); files on disk are NCHW either way",
      Constraint::one_of({"auto", "nchw", "nhwc"}));
    v("bn_silu", bn_silu,
      "training-mode BatchNorm + SiLU of each Conv block: fused (one autograd node that keeps "
      "only the convolution output and makes two passes each way; CPU runs only), aten "
      "(LibTorch's two ops), or auto (fused on CPUs with AVX2 or AVX-512, aten elsewhere)",
      Constraint::one_of({"auto", "fused", "aten"}));
  }
};

}  // namespace detrain::config
