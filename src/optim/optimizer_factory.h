// Builds the trainer's optimizer from `optim.*`: resolves optimizer=auto the reference's way,
// forms the eight parameter groups (param_groups.h) with the batch-scaled decay, and returns
// MuSGD, SGD (MuSGD with no Muon branch, torch::optim::SGD semantics) or AdamW behind one
// interface. Nesterov follows optim.nesterov (the reference hard-codes True).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/optim_options.h"
#include "model/param_info.h"
#include "optim/musgd.h"
#include "optim/optimizer.h"

namespace detrain::optim {

// What the trainer knows when it builds the optimizer.
struct OptimizerRun {
  int64_t batch = 16;            // images per iteration (all ranks)
  int64_t accumulate = 4;        // steady micro-batches per step: max(round(nbs / batch), 1)
  int64_t total_iterations = 0;  // ceil(train images / max(batch, nbs)) * epochs (auto rule)
  int64_t nc = 80;               // classes (AdamW's auto lr)
  int64_t nbs = 64;              // nominal batch size
};

// The optimizer `optim.optimizer` resolves to. Under auto the reference ignores lr0 and
// momentum: more than 10 000 iterations -> MuSGD lr 0.01 momentum 0.9, else AdamW with
// lr round(0.002 * 5 / (4 + nc), 6) and momentum 0.9; it also forces warmup_bias_lr to 0.
struct OptimizerChoice {
  std::string kind;  // "musgd", "sgd", "adamw"
  double lr0 = 0.0;
  double momentum = 0.0;
  bool automatic = false;  // chosen by the auto rule: the trainer sets warmup_bias_lr to 0
};
OptimizerChoice choose_optimizer(const config::OptimOptions& options, int64_t total_iterations,
                                 int64_t nc);

// optim.bucketing / optim.ns_dtype / optim.ns_kernel as enums; ConfigError naming the key and
// the valid values otherwise (the config refuses such values first; these guard options built
// in code).
Bucketing parse_bucketing(const std::string& text);
torch::ScalarType parse_ns_dtype(const std::string& text);
NsKernel parse_ns_kernel(const std::string& text);

std::unique_ptr<Optimizer> build_optimizer(const std::vector<model::ParamInfo>& params,
                                           const config::OptimOptions& options,
                                           const OptimizerRun& run);

}  // namespace detrain::optim
