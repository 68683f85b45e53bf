// Model EMA; see ema.h. On CPU the update is one pass per tensor over raw fp32 memory
// (parallel for large tensors, no per-op dispatch); elsewhere two foreach ops over all tensors.
#include "optim/ema.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <map>

#include "common/errors.h"

namespace detrain::optim {
namespace {

NamedTensors named_state_of(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& item : module.named_parameters(/*recurse=*/true))
    out.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true))
    out.emplace_back(item.key(), item.value());
  return out;
}

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// Both dense with the same strides (NCHW, or channels-last alike): element i of one's memory is
// element i of the other's, so one flat pass over the memory is the elementwise update.
bool cpu_fast_path(const torch::Tensor& ema, const torch::Tensor& model) {
  return ema.device().is_cpu() && model.device().is_cpu() && ema.scalar_type() == torch::kFloat &&
         model.scalar_type() == torch::kFloat && ema.is_non_overlapping_and_dense() &&
         ema.strides() == model.strides() && ema.sizes() == model.sizes();
}

// e <- e * d + m * (1 - d), each product rounded to fp32 as the reference's in-place ops do.
void blend_cpu(const torch::Tensor& ema, const torch::Tensor& model, float d, float one_minus_d) {
  float* e = ema.data_ptr<float>();
  const float* m = model.data_ptr<float>();
  constexpr int64_t kGrain = 1 << 15;
  at::parallel_for(0, ema.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) e[i] = e[i] * d + m[i] * one_minus_d;
  });
}

}  // namespace

ModelEma::ModelEma(std::shared_ptr<torch::nn::Module> ema_model, const torch::nn::Module& model,
                   EmaOptions options)
    : ema_model_(std::move(ema_model)), options_(options) {
  TORCH_CHECK(ema_model_ != nullptr, "ModelEma needs a module to hold the average");
  const NamedTensors source = named_state_of(model);
  std::map<std::string, torch::Tensor> target;
  for (auto& [name, tensor] : named_state_of(*ema_model_)) target.emplace(name, tensor);
  if (source.size() != target.size())
    throw ModelError("EMA model has " + std::to_string(target.size()) +
                     " parameters and buffers but the trained model has " +
                     std::to_string(source.size()) + "; build both from the same architecture");

  torch::NoGradGuard no_grad;
  for (const auto& [name, model_tensor] : source) {
    auto it = target.find(name);
    if (it == target.end())
      throw ModelError("EMA model has no '" + name + "'; build both from the same architecture");
    torch::Tensor ema_tensor = it->second;  // [...] same shape as model_tensor
    if (!ema_tensor.sizes().equals(model_tensor.sizes()))
      throw ModelError("EMA model's '" + name + "' is " + shape_text(ema_tensor) +
                       " but the trained model's is " + shape_text(model_tensor));
    const bool floating = model_tensor.is_floating_point();
    const auto dtype = floating ? torch::kFloat : model_tensor.scalar_type();
    ema_tensor.set_requires_grad(false);
    // set_data keeps the module's tensor object (so the module sees the change) while moving it
    // to the model's device and fp32.
    ema_tensor.set_data(model_tensor.detach().to(model_tensor.device(), dtype).clone());
    (floating ? floating_ : integral_).push_back({name, ema_tensor, model_tensor});
  }
  ema_model_->eval();
}

double ModelEma::decay_at(int64_t updates) const {
  return options_.decay * (1.0 - std::exp(-static_cast<double>(updates) / options_.tau));
}

void ModelEma::update() {
  torch::NoGradGuard no_grad;
  ++updates_;
  const double d = decay_at(updates_);
  std::vector<torch::Tensor> slow_ema, slow_model;
  for (const Entry& entry : floating_) {
    const torch::Tensor model = entry.model.detach();  // [...] shape of entry.ema
    if (cpu_fast_path(entry.ema, model)) {
      blend_cpu(entry.ema, model, static_cast<float>(d), static_cast<float>(1.0 - d));
    } else {
      slow_ema.push_back(entry.ema);
      slow_model.push_back(model.to(entry.ema.dtype()));
    }
  }
  if (!slow_ema.empty()) {
    // Fused multi-tensor kernels on CUDA; a loop of two ops per tensor elsewhere.
    at::_foreach_mul_(slow_ema, d);
    at::_foreach_add_(slow_ema, slow_model, 1.0 - d);
  }
  for (const Entry& entry : integral_) entry.ema.copy_(entry.model);
}

NamedTensors ModelEma::state() const { return named_state_of(*ema_model_); }

void ModelEma::load_state(const NamedTensors& state, int64_t updates, const std::string& source) {
  std::map<std::string, torch::Tensor> by_name(state.begin(), state.end());
  std::vector<std::string> missing, mismatched;
  for (const auto* group : {&floating_, &integral_}) {
    for (const Entry& entry : *group) {
      auto it = by_name.find(entry.name);
      if (it == by_name.end())
        missing.push_back(entry.name);
      else if (!it->second.sizes().equals(entry.ema.sizes()))
        mismatched.push_back(entry.name + " " + shape_text(it->second) + " vs " +
                             shape_text(entry.ema));
    }
  }
  const size_t expected = floating_.size() + integral_.size();
  if (!missing.empty() || !mismatched.empty() || by_name.size() != expected) {
    std::string what = source + ": EMA state does not fit this model";
    if (!missing.empty())
      what += "; missing " + missing.front() +
              (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more" : "");
    if (!mismatched.empty()) what += "; shape of " + mismatched.front();
    if (by_name.size() > expected)
      what += "; " + std::to_string(by_name.size() - expected) + " unexpected entries";
    throw ModelError(what + " (was it saved from another architecture?)");
  }
  torch::NoGradGuard no_grad;
  for (const auto* group : {&floating_, &integral_})
    for (const Entry& entry : *group) entry.ema.copy_(by_name.at(entry.name));
  updates_ = updates;
}

}  // namespace detrain::optim
