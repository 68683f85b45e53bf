// MuSGD (the reference's ultralytics/optim/muon.py): matrices in groups with w_muon > 0 take a
// Muon step then an SGD step; vectors and groups with w_muon == 0 take torch::optim::SGD's step
// bit for bit. Deliberate difference: with bucketing `exact` the matrices of one group that share
// (shape, dtype, device, layout) live in one dense [k, ...] buffer whose rows keep the members'
// layout, NCHW or channels-last (parameters, gradients and both momentum buffers are views of
// it); all buckets are orthogonalised in one NewtonSchulzPlan run
// (on the CPU their matrices share one parallel region); `off` is the reference's per-parameter
// loop. Same formula, different schedule.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "optim/newton_schulz.h"
#include "optim/optimizer.h"

namespace detrain::optim {

enum class Bucketing {
  kOff,    // one Newton-Schulz call per matrix (the reference path)
  kExact,  // one batched call per (group, shape, dtype, device) key with two or more matrices
};

struct MuSGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;  // SGD momentum and Muon beta alike
  double weight_decay = 0.0;
  bool nesterov = false;
  double w_muon = 0.0;  // > 0: matrices take the Muon branch, scaled by this
  double w_sgd = 1.0;   // scale of the SGD branch of matrices in Muon groups
};

struct MuSGDGroup {
  std::string name;
  MuSGDOptions options;
  std::vector<std::string> names;     // parameter names (state keys), parallel to params
  std::vector<torch::Tensor> params;  // the model's parameters
};

struct MuSGDSettings {
  Bucketing bucketing = Bucketing::kExact;
  torch::ScalarType ns_dtype = torch::kBFloat16;  // Newton-Schulz compute dtype
  NsKernel ns_kernel = NsKernel::kAuto;           // Newton-Schulz CPU kernel
  std::string kind = "musgd";                     // reported by kind(); "sgd" for plain SGD
};

// The reference's muon_update (8.4.190) for one parameter: momentum = momentum * beta +
// (1 - beta) * grad in place, the update (nesterov: momentum * beta + (1 - beta) * grad)
// orthogonalised on its (rows, rest) view, cast to the gradient's dtype and times
// sqrt(max(1, size(-2) / size(-1))). Returns [rows, rest] in the gradient's dtype.
torch::Tensor muon_update(const torch::Tensor& grad, const torch::Tensor& momentum, double beta,
                          bool nesterov, torch::ScalarType ns_dtype,
                          NsKernel ns_kernel = NsKernel::kAuto);

// One exact-shape key among the Muon matrices: `count` matrices of `shape` in group `group`.
struct MatrixKey {
  size_t group = 0;
  std::vector<int64_t> shape;
  int64_t count = 0;
};

struct MuSGDSlot {
  std::string name;
  torch::Tensor param;
  bool muon = false;          // matrix in a Muon group: both branches
  torch::Tensor muon_buffer;  // Muon EMA of gradients (a bucket view when stacked)
  torch::Tensor sgd_buffer;   // heavy-ball buffer; undefined until the first SGD-only step
  int bucket = -1;            // index into the buckets, -1: per-parameter path
  size_t row = 0;             // position inside the bucket
  bool single = false;        // `exact` and the only matrix of its key: in the plan as [1, ...]
};

struct MuSGDGroupState {
  std::string name;
  MuSGDOptions options;
  std::vector<MuSGDSlot> slots;
};

class MuSGD : public GroupedOptimizer<MuSGDGroupState> {
 public:
  // Builds the buckets once. With `exact`, each stacked parameter's storage moves into its
  // bucket (values unchanged); a later set_data on it (e.g. Module::to) is detected and relinked.
  explicit MuSGD(std::vector<MuSGDGroup> groups, MuSGDSettings settings = {});

  std::string kind() const override { return settings_.kind; }
  void step() override;
  void zero_grad() override;

  double momentum(size_t group) const override { return groups_.at(group).options.momentum; }
  void set_momentum(size_t group, double m) override { groups_.at(group).options.momentum = m; }
  const MuSGDOptions& options(size_t group) const { return groups_.at(group).options; }

  OptimizerSnapshot snapshot() const override;
  void restore(const OptimizerSnapshot& snapshot) override;

  // Every (group, shape) key of the Muon matrices, singles included, in group order.
  const std::vector<MatrixKey>& matrix_keys() const { return keys_; }
  int64_t muon_matrices() const;
  size_t stacked_buckets() const { return buckets_.size(); }  // keys with >= 2 matrices
  const MuSGDSettings& settings() const { return settings_; }
  // The Newton-Schulz kernel CPU matrices run with (native or emulated; settings' auto resolved).
  NsKernel cpu_ns_kernel() const { return plan_.cpu_kernel(); }

 private:
  using Slot = MuSGDSlot;
  using Group = MuSGDGroupState;
  struct Bucket {
    size_t group = 0;
    std::vector<size_t> slots;  // indices into the group's slots
    torch::Tensor params;       // [k, ...shape] storage of the members' parameters
    torch::Tensor grads;        // [k, ...shape] members' gradients are views of it
    torch::Tensor muon_buffer;  // [k, ...shape]
    torch::Tensor sgd_buffer;   // [k, ...shape]
    // Where each member's parameter and gradient rows start; checked every step without
    // creating views (each view would be one more operator call).
    std::vector<const void*> param_rows, grad_rows;
  };

  void build_buckets();
  void link(Bucket& bucket);
  bool gather_grads(Bucket& bucket);
  torch::Tensor muon_momentum(const MuSGDOptions& o, Bucket& bucket);
  void step_bucket(const MuSGDOptions& o, Bucket& bucket, torch::Tensor ortho);
  void step_matrix(const MuSGDOptions& o, Slot& slot);
  void apply_matrix(const MuSGDOptions& o, Slot& slot, const torch::Tensor& update);
  static void step_vector(const MuSGDOptions& o, Slot& slot);

  std::vector<Bucket> buckets_;
  // With `exact`, the keys with one matrix (group, slot): orthogonalised as [1, rows, rest]
  // stacks in the same plan run, with the direct call's norm, so bit for bit as called directly.
  std::vector<std::pair<size_t, size_t>> singles_;
  NewtonSchulzPlan plan_{{}, torch::kFloat};  // buckets' [k, rows, rest] stacks, then singles'
  std::vector<MatrixKey> keys_;
  MuSGDSettings settings_;
};

}  // namespace detrain::optim
