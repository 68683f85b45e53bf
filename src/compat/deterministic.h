// Deterministic training (`runtime.deterministic`), as Ultralytics 8.4.190's
// init_seeds(deterministic=True): LibTorch's deterministic-algorithms switch (an operation without
// a deterministic implementation warns, or with `warn_only` false stops with an error), cuDNN's
// deterministic flag, no NaN fill of every new tensor (the reference turns that cost off too) and
// CUBLAS_WORKSPACE_CONFIG=:4096:8 for deterministic cuBLAS on CUDA (a value the user set wins).
// Switched on for the span of a training run and restored after it, as the reference's
// unset_deterministic() does, so nothing else in the process inherits it.
#pragma once

#include <string>

namespace detrain::compat {

// What LibTorch holds now.
struct DeterministicState {
  bool algorithms = false;         // at::globalContext().deterministicAlgorithms()
  bool warn_only = false;          // ... deterministicAlgorithmsWarnOnly()
  bool cudnn = false;              // ... deterministicCuDNN()
  bool fill_uninitialized = true;  // ... deterministicFillUninitializedMemory()
  std::string cublas_workspace;    // $CUBLAS_WORKSPACE_CONFIG ("" when unset)
  std::string describe() const;    // "deterministic algorithms (warn only), cuDNN deterministic"
};

DeterministicState deterministic_state();

// Sets the state for `on` / `warn_only` on construction and puts the previous one back on
// destruction (the environment variable stays: cuBLAS reads it once per handle). Off sets the
// reference's unset_deterministic() state. Non-copyable.
class DeterministicScope {
 public:
  DeterministicScope(bool on, bool warn_only);
  ~DeterministicScope();
  DeterministicScope(const DeterministicScope&) = delete;
  DeterministicScope& operator=(const DeterministicScope&) = delete;

 private:
  DeterministicState previous_;
};

}  // namespace detrain::compat
