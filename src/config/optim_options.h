// `optim.*`: optimizer and its parameter groups. Owned by src/optim/.
#pragma once

#include "config/field.h"

namespace detrain::config {

struct OptimOptions {
  std::string optimizer = "auto";
  double lr0 = 0.01;
  double momentum = 0.937;
  double weight_decay = 0.0005;
  bool nesterov = true;
  double muon_w = 0.2;
  double sgd_w = 1.0;
  std::string bucketing = "exact";
  std::string ns_dtype = "bf16";
  std::string ns_kernel = "auto";
  double cls_lr_mult = 3.0;

  template <class V>
  void visit(V& v) {
    v("optimizer", optimizer,
      "musgd | sgd | adamw | auto (MuSGD above 10k iterations, else AdamW, as the reference)",
      Constraint::one_of({"musgd", "sgd", "adamw", "auto"}));
    v("lr0", lr0, "initial learning rate", Constraint::range(0, 10));
    v("momentum", momentum, "SGD momentum / Muon beta / Adam beta1", Constraint::range(0, 1));
    v("weight_decay", weight_decay, "L2 decay at batch 64 (scaled by batch*accumulate/64)",
      Constraint::range(0, 1));
    v("nesterov", nesterov, "Nesterov momentum for SGD and Muon");
    v("muon_w", muon_w, "MuSGD weight of the Muon (orthogonalised) step", Constraint::range(0, 10));
    v("sgd_w", sgd_w, "MuSGD weight of the SGD step", Constraint::range(0, 10));
    v("bucketing", bucketing,
      "MuSGD Newton-Schulz batching: exact (same-shape stacks) or off (per parameter)",
      Constraint::one_of({"exact", "off"}));
    v("ns_dtype", ns_dtype, "Newton-Schulz compute dtype", Constraint::one_of({"bf16", "fp32"}));
    v("ns_kernel", ns_kernel,
      "Newton-Schulz CPU kernel: native (LibTorch matmuls), emulated (fp32 gemms, bf16 rounding "
      "in software), auto (native for bf16 on AVX512-BF16/AMX CPUs)",
      Constraint::one_of({"auto", "native", "emulated"}));
    v("cls_lr_mult", cls_lr_mult, "learning-rate multiplier of the head's classification towers",
      Constraint::range(0, 100));
  }
};

}  // namespace detrain::config
