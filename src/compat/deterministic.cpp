// See deterministic.h.
#include "compat/deterministic.h"

#include <ATen/Context.h>

#include <cstdlib>

namespace detrain::compat {

namespace {

// The reference's value: 8 workspaces of 4 MiB, what cuBLAS needs to be reproducible.
constexpr const char* kCublasWorkspace = ":4096:8";

void set_state(bool algorithms, bool warn_only, bool cudnn, bool fill_uninitialized) {
  at::Context& c = at::globalContext();
  c.setDeterministicAlgorithms(algorithms, warn_only);
  c.setDeterministicCuDNN(cudnn);
  c.setDeterministicFillUninitializedMemory(fill_uninitialized);
}

}  // namespace

std::string DeterministicState::describe() const {
  if (!algorithms) return "deterministic algorithms off";
  std::string s = warn_only ? "deterministic algorithms (warn only)"
                            : "deterministic algorithms (error on a nondeterministic operation)";
  if (cudnn) s += ", cuDNN deterministic";
  return s;
}

DeterministicState deterministic_state() {
  const at::Context& c = at::globalContext();
  DeterministicState s;
  s.algorithms = c.deterministicAlgorithms();
  s.warn_only = c.deterministicAlgorithmsWarnOnly();
  s.cudnn = c.deterministicCuDNN();
  s.fill_uninitialized = c.deterministicFillUninitializedMemory();
  const char* env = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  s.cublas_workspace = env ? env : "";
  return s;
}

DeterministicScope::DeterministicScope(bool on, bool warn_only) : previous_(deterministic_state()) {
  if (!on) {
    set_state(false, false, false, true);
    return;
  }
  // Before any cuBLAS handle exists (the run has not touched the GPU yet); overwrite=0 keeps
  // a value the user chose.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", kCublasWorkspace, 0);
  set_state(true, warn_only, true, false);
}

DeterministicScope::~DeterministicScope() {
  set_state(previous_.algorithms, previous_.warn_only, previous_.cudnn,
            previous_.fill_uninitialized);
}

}  // namespace detrain::compat
