// MuSGD; see musgd.h. The per-parameter paths mirror the reference's operation order (and
// torch::optim::SGD's for vectors) so they round where it rounds; the bucket path runs the same
// operations on [k, ...] stacks.
#include "optim/musgd.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/errors.h"
#include "optim/newton_schulz.h"

namespace detrain::optim {

namespace {

// sqrt(max(1, size(-2) / size(-1))) of the parameter's own shape, as Python evaluates
// max(1, a / b) ** 0.5 (for 4-D convs this is kh / kw, so 1).
double muon_scale(at::IntArrayRef shape) {
  const double ratio =
      static_cast<double>(shape[shape.size() - 2]) / static_cast<double>(shape.back());
  return std::pow(std::max(1.0, ratio), 0.5);
}

// The orthogonalised update in the gradient's dtype, scaled there (Ultralytics 8.4.190 casts
// Newton-Schulz's bf16 result before scaling; 8.4.41 scaled in bf16).
torch::Tensor scaled_update(torch::Tensor ortho, at::IntArrayRef shape, torch::ScalarType dtype) {
  ortho = ortho.to(dtype);
  const double scale = muon_scale(shape);
  if (scale != 1.0) ortho.mul_(scale);  // the reference multiplies by 1.0 too: an exact no-op
  return ortho;
}

// Muon's momentum in 8.4.190's two foreach steps (m = m * beta, then m += (1 - beta) * g; the
// Nesterov update likewise from m), not 8.4.41's lerp: the same ATen ops, so the same bits.
torch::Tensor momentum_step(const torch::Tensor& grad, torch::Tensor& buffer, double beta,
                            bool nesterov) {
  buffer.mul_(beta).add_(grad, 1.0 - beta);
  return nesterov ? buffer.mul(beta).add_(grad, 1.0 - beta) : buffer;
}

const void* data_of(const torch::Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

torch::Tensor cpu_copy(const torch::Tensor& t) { return t.detach().to(torch::kCPU).clone(); }

// `rows` stacked into [k, ...shape] where each row has the layout of `like` (NCHW or
// channels-last), so a member that becomes a view of its row keeps the layout it had; the same
// values as torch::stack, which would make every row NCHW.
torch::Tensor stack_like(const std::vector<torch::Tensor>& rows, const torch::Tensor& like) {
  if (!like.is_non_overlapping_and_dense()) return torch::stack(rows);
  std::vector<int64_t> sizes{static_cast<int64_t>(rows.size())}, strides{like.numel()};
  sizes.insert(sizes.end(), like.sizes().begin(), like.sizes().end());
  strides.insert(strides.end(), like.strides().begin(), like.strides().end());
  torch::Tensor out = torch::empty_strided(sizes, strides, like.options());  // [k, ...shape]
  for (size_t i = 0; i < rows.size(); ++i) out[static_cast<int64_t>(i)].copy_(rows[i]);
  return out;
}

// A restored state tensor laid out as its parameter, so that a resumed step runs the same
// kernels (vectorised or strided loops) as the uninterrupted one.
torch::Tensor state_like(const torch::Tensor& param, const torch::Tensor& value) {
  return torch::empty_like(param).copy_(value);
}

}  // namespace

namespace {

// The momentum half of muon_update: the buffer updated in place, then the update to
// orthogonalise as [rows, rest].
torch::Tensor muon_momentum_update(const torch::Tensor& grad, const torch::Tensor& momentum,
                                   double beta, bool nesterov) {
  auto buffer = momentum;  // in place, as the reference's foreach ops
  const auto update = momentum_step(grad, buffer, beta, nesterov);  // [rows, ...]
  return update.reshape({update.size(0), -1});
}

}  // namespace

torch::Tensor muon_update(const torch::Tensor& grad, const torch::Tensor& momentum, double beta,
                          bool nesterov, torch::ScalarType ns_dtype, NsKernel ns_kernel) {
  TORCH_CHECK(grad.dim() >= 2, "muon_update takes a matrix or conv weight, got ", grad.sizes());
  const auto out =
      newton_schulz(muon_momentum_update(grad, momentum, beta, nesterov), ns_dtype, ns_kernel);
  return scaled_update(out, grad.sizes(), grad.scalar_type());  // [rows, rest]
}

MuSGD::MuSGD(std::vector<MuSGDGroup> groups, MuSGDSettings settings)
    : settings_(std::move(settings)) {
  torch::NoGradGuard no_grad;
  for (auto& in : groups) {
    TORCH_CHECK(in.names.size() == in.params.size(), "MuSGD group '", in.name,
                "': ", in.names.size(), " names for ", in.params.size(), " parameters");
    Group group{in.name, in.options, {}};
    const bool muon_group = in.options.w_muon > 0;
    for (size_t i = 0; i < in.params.size(); ++i) {
      Slot slot;
      slot.name = in.names[i];
      slot.param = in.params[i];
      slot.muon = muon_group && slot.param.dim() >= 2;
      if (slot.muon) slot.muon_buffer = torch::zeros_like(slot.param);
      if (slot.muon) slot.sgd_buffer = torch::zeros_like(slot.param);
      group.slots.push_back(std::move(slot));
    }
    groups_.push_back(std::move(group));
  }
  build_buckets();
}

void MuSGD::build_buckets() {
  // Shape, dtype, device and layout (strides): a bucket's rows share all four.
  using Key = std::tuple<std::vector<int64_t>, int, std::string, std::vector<int64_t>>;
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::map<Key, std::vector<size_t>> members;  // ordered: buckets come out deterministic
    std::vector<Key> first_seen;
    for (size_t s = 0; s < groups_[g].slots.size(); ++s) {
      const auto& p = groups_[g].slots[s].param;
      if (!groups_[g].slots[s].muon) continue;
      Key key{p.sizes().vec(), static_cast<int>(p.scalar_type()), p.device().str(),
              p.strides().vec()};
      if (!members.count(key)) first_seen.push_back(key);
      members[key].push_back(s);
    }
    for (const auto& key : first_seen) {
      const auto& slots = members[key];
      keys_.push_back({g, std::get<0>(key), static_cast<int64_t>(slots.size())});
      if (settings_.bucketing != Bucketing::kExact) continue;
      if (slots.size() == 1) {
        singles_.emplace_back(g, slots[0]);
        groups_[g].slots[slots[0]].single = true;
        continue;
      }
      Bucket bucket;
      bucket.group = g;
      bucket.slots = slots;
      link(bucket);
      for (size_t s : slots) groups_[g].slots[s].bucket = static_cast<int>(buckets_.size());
      buckets_.push_back(std::move(bucket));
    }
  }
  std::vector<std::vector<int64_t>> stacks;
  for (const auto& bucket : buckets_)
    stacks.push_back({bucket.grads.size(0), bucket.grads.size(1),
                      bucket.grads[0].numel() / bucket.grads.size(1)});
  for (const auto& [g, s] : singles_) {
    const auto& p = groups_[g].slots[s].param;
    stacks.push_back({1, p.size(0), p.numel() / p.size(0)});
  }
  plan_ = NewtonSchulzPlan(std::move(stacks), settings_.ns_dtype, settings_.ns_kernel);
}

// Moves the members' parameters, gradients and momentum buffers into [k, ...] tensors and makes
// each member a view of its row. Called once, and again when a member's storage was replaced.
void MuSGD::link(Bucket& bucket) {
  torch::NoGradGuard no_grad;
  auto& slots = groups_[bucket.group].slots;
  std::vector<torch::Tensor> params, grads, muon, sgd;
  for (size_t s : bucket.slots) {
    const auto& slot = slots[s];
    params.push_back(slot.param.detach());
    grads.push_back(slot.param.grad().defined() ? slot.param.grad().detach()
                                                : torch::zeros_like(slot.param));
    muon.push_back(slot.muon_buffer.to(slot.param.options()));
    sgd.push_back(slot.sgd_buffer.to(slot.param.options()));
  }
  const torch::Tensor& like = slots[bucket.slots[0]].param;
  bucket.params = stack_like(params, like);  // [k, ...shape]
  bucket.grads = stack_like(grads, like);
  bucket.muon_buffer = stack_like(muon, like);
  bucket.sgd_buffer = stack_like(sgd, like);
  bucket.param_rows.clear();
  bucket.grad_rows.clear();
  for (size_t i = 0; i < bucket.slots.size(); ++i) {
    auto& slot = slots[bucket.slots[i]];
    slot.row = i;
    const bool had_grad = slot.param.grad().defined();
    slot.param.set_data(bucket.params[i]);
    // A parameter without a gradient keeps none: the reference skips such parameters.
    if (had_grad) slot.param.mutable_grad() = bucket.grads[i];
    slot.muon_buffer = bucket.muon_buffer[i];
    slot.sgd_buffer = bucket.sgd_buffer[i];
    bucket.param_rows.push_back(slot.param.data_ptr());
    bucket.grad_rows.push_back(bucket.grads[i].data_ptr());
  }
}

// Makes every member's gradient the view of bucket.grads (copying a gradient that autograd or
// the caller put elsewhere). False when a member has no gradient: the bucket then steps its
// members one by one, skipping that one, as the reference does.
bool MuSGD::gather_grads(Bucket& bucket) {
  auto& slots = groups_[bucket.group].slots;
  bool relinked = false;
  for (size_t i = 0; i < bucket.slots.size(); ++i) {
    const auto& slot = slots[bucket.slots[i]];
    if (!slot.param.grad().defined()) return false;
    if (!relinked && data_of(slot.param) != bucket.param_rows[i]) {
      link(bucket);  // someone replaced the storage (Module::to, set_data)
      relinked = true;
    }
  }
  for (size_t i = 0; i < bucket.slots.size(); ++i) {
    auto& param = slots[bucket.slots[i]].param;
    if (param.grad().data_ptr() == bucket.grad_rows[i]) continue;
    auto row = bucket.grads[i];
    row.copy_(param.grad());
    param.mutable_grad() = row;
  }
  return true;
}

void MuSGD::step() {
  torch::NoGradGuard no_grad;
  // Every Muon update of the stacked path first (buckets, then single-matrix keys), so that one
  // plan run orthogonalises all of them together.
  const size_t nb = buckets_.size();
  std::vector<torch::Tensor> updates(nb + singles_.size());  // [k, rows, rest] each
  for (size_t b = 0; b < nb; ++b)
    if (gather_grads(buckets_[b]))
      updates[b] = muon_momentum(groups_[buckets_[b].group].options, buckets_[b]);
  for (size_t i = 0; i < singles_.size(); ++i) {
    const auto& group = groups_[singles_[i].first];
    const auto& slot = group.slots[singles_[i].second];
    if (!slot.param.grad().defined()) continue;
    const auto& o = group.options;
    updates[nb + i] =
        muon_momentum_update(slot.param.grad(), slot.muon_buffer, o.momentum, o.nesterov)
            .unsqueeze(0);
  }
  auto orthos = plan_.run(updates);
  for (size_t b = 0; b < nb; ++b)
    if (updates[b].defined())
      step_bucket(groups_[buckets_[b].group].options, buckets_[b], std::move(orthos[b]));
  for (size_t i = 0; i < singles_.size(); ++i) {
    if (!updates[nb + i].defined()) continue;
    auto& group = groups_[singles_[i].first];
    auto& slot = group.slots[singles_[i].second];
    // [rows, rest], as newton_schulz returns it
    const auto ortho =
        scaled_update(orthos[nb + i][0], slot.param.sizes(), slot.param.grad().scalar_type());
    apply_matrix(group.options, slot, ortho);
  }
  for (auto& group : groups_) {
    for (auto& slot : group.slots) {
      if (slot.bucket >= 0 && updates[slot.bucket].defined()) continue;
      if (slot.single) continue;
      if (!slot.param.grad().defined()) continue;
      if (slot.muon)
        step_matrix(group.options, slot);
      else
        step_vector(group.options, slot);
    }
  }
}

// The reference's Muon-group body for one matrix: Muon step, then the SGD step whose decay uses
// the already Muon-updated parameter.
void MuSGD::step_matrix(const MuSGDOptions& o, Slot& slot) {
  apply_matrix(o, slot,
               muon_update(slot.param.grad(), slot.muon_buffer, o.momentum, o.nesterov,
                           settings_.ns_dtype, settings_.ns_kernel));
}

// step_matrix after the orthogonalisation: `update` [rows, rest] is muon_update's result.
void MuSGD::apply_matrix(const MuSGDOptions& o, Slot& slot, const torch::Tensor& update) {
  auto& p = slot.param;
  const auto grad = p.grad();
  p.add_(update.reshape(p.sizes()), -(o.lr * o.w_muon));
  const auto g = o.weight_decay != 0 ? grad.add(p, o.weight_decay) : grad;
  slot.sgd_buffer.mul_(o.momentum).add_(g);
  const auto v = o.nesterov ? g.add(slot.sgd_buffer, o.momentum) : slot.sgd_buffer;
  p.add_(v, -(o.lr * o.w_sgd));
}

// The Muon momentum of step_matrix on a [k, ...] stack: the buffer updated in place and the
// update to orthogonalise, as [k, rows, rest].
torch::Tensor MuSGD::muon_momentum(const MuSGDOptions& o, Bucket& bucket) {
  const auto& grad = bucket.grads;  // [k, ...shape]
  const auto update = momentum_step(grad, bucket.muon_buffer, o.momentum, o.nesterov);
  // A view for NCHW rows; channels-last rows are copied into the reference's (rows, rest) order.
  return update.reshape({grad.size(0), grad.size(1), -1});
}

// The rest of step_matrix on a [k, ...] stack, given the orthogonalised update [k, r, c]: one
// op per formula term.
void MuSGD::step_bucket(const MuSGDOptions& o, Bucket& bucket, torch::Tensor ortho) {
  const auto& grad = bucket.grads;  // [k, ...shape]
  ortho = scaled_update(std::move(ortho), grad.sizes().slice(1), grad.scalar_type());
  auto& p = bucket.params;
  p.add_(ortho.view(p.sizes()), -(o.lr * o.w_muon));  // ortho [k, r, c] is NCHW-ordered
  const auto g = o.weight_decay != 0 ? grad.add(p, o.weight_decay) : grad;
  bucket.sgd_buffer.mul_(o.momentum).add_(g);
  const auto v = o.nesterov ? g.add(bucket.sgd_buffer, o.momentum) : bucket.sgd_buffer;
  p.add_(v, -(o.lr * o.w_sgd));
}

// torch::optim::SGD::step for one parameter (dampening 0), operation for operation.
void MuSGD::step_vector(const MuSGDOptions& o, Slot& slot) {
  auto& p = slot.param;
  auto d_p = p.grad();
  if (o.weight_decay != 0) d_p = d_p.add(p, o.weight_decay);
  if (o.momentum != 0) {
    if (!slot.sgd_buffer.defined()) {
      slot.sgd_buffer = torch::clone(d_p).detach();
    } else {
      slot.sgd_buffer.mul_(o.momentum).add_(d_p, 1.0);
    }
    d_p = o.nesterov ? d_p.add(slot.sgd_buffer, o.momentum) : slot.sgd_buffer;
  }
  p.add_(d_p, -1 * o.lr);
}

void MuSGD::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) bucket.grads.zero_();
  for (auto& group : groups_) {
    for (auto& slot : group.slots) {
      auto& grad = slot.param.mutable_grad();
      if (!grad.defined()) continue;
      if (slot.bucket >= 0 && grad.data_ptr() == buckets_[slot.bucket].grad_rows[slot.row])
        continue;
      grad.zero_();
    }
  }
}

int64_t MuSGD::muon_matrices() const {
  int64_t total = 0;
  for (const auto& key : keys_) total += key.count;
  return total;
}

OptimizerSnapshot MuSGD::snapshot() const {
  OptimizerSnapshot snap;
  save_group_options(snap);
  for (const auto& group : groups_) {
    for (const auto& slot : group.slots) {
      if (slot.muon_buffer.defined())
        snap.tensors.emplace_back(slot.name + "/muon_buffer", cpu_copy(slot.muon_buffer));
      if (slot.sgd_buffer.defined())
        snap.tensors.emplace_back(slot.name + "/momentum_buffer", cpu_copy(slot.sgd_buffer));
    }
  }
  return snap;
}

void MuSGD::restore(const OptimizerSnapshot& snap) {
  restore_group_options(snap);
  torch::NoGradGuard no_grad;
  for_each_state_entry(snap, [&](Slot& slot, const std::string& entry, const torch::Tensor& t) {
    const auto value = t.to(slot.param.options());
    if (entry == "muon_buffer" && slot.muon) {
      slot.muon_buffer.copy_(value);
    } else if (entry == "momentum_buffer" && slot.muon) {
      slot.sgd_buffer.copy_(value);
    } else if (entry == "momentum_buffer") {
      slot.sgd_buffer = state_like(slot.param, value);
    } else {
      throw ModelError("optimizer state entry '" + slot.name + "/" + entry +
                       "' does not fit this parameter (Muon routing differs); resume with the "
                       "same optimizer settings");
    }
  });
}

}  // namespace detrain::optim
