// The optimizer interface the trainer drives: a fixed list of named parameter groups whose lr and
// momentum the schedule sets every iteration, step / zero_grad, and state keyed by parameter
// name (never by tensor address, unlike torch::optim), so a checkpoint loads into a rebuilt model.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace detrain::optim {

// Everything a resumed run needs: per-parameter tensors ("<param name>/<slot>") and scalars
// ("group<g>/lr", "<param name>/step", ...). A training checkpoint holds it as it is
// (train::Checkpoint::optimizer).
struct OptimizerSnapshot {
  std::string kind;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  std::map<std::string, double> scalars;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  virtual std::string kind() const = 0;  // "musgd", "sgd", "adamw"
  virtual void step() = 0;
  // Zeroes gradients in place (LibTorch 1.13's default); parameters without one keep none.
  virtual void zero_grad() = 0;

  virtual size_t num_groups() const = 0;
  virtual std::string group_name(size_t group) const = 0;
  virtual size_t group_size(size_t group) const = 0;  // parameters in the group
  virtual double lr(size_t group) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;
  // SGD momentum / Muon beta / Adam beta1: one value drives every branch of the group.
  virtual double momentum(size_t group) const = 0;
  virtual void set_momentum(size_t group, double momentum) = 0;
  // Whether warmup ramps momentum: the reference ramps a group's "momentum" key, which SGD and
  // MuSGD groups have and Adam-type groups (betas) do not.
  virtual bool warmup_ramps_momentum() const { return true; }

  // Copies of the state (CPU tensors) and its restoration into this optimizer's own storage.
  // Loading checks the kind and every name and shape, throwing ModelError naming the first
  // mismatch.
  virtual OptimizerSnapshot snapshot() const = 0;
  virtual void restore(const OptimizerSnapshot& snapshot) = 0;

  // snapshot() / restore() through a LibTorch archive (keys "optim/...").
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 protected:
  // The per-group entries every kind shares: "group<g>/lr" and "group<g>/momentum".
  void save_group_options(OptimizerSnapshot& snapshot) const;
  // Checks the kind and restores every group's lr and momentum (ModelError when absent).
  void restore_group_options(const OptimizerSnapshot& snapshot);
};

// The group bookkeeping of optimizers whose groups hold `name`, `options.lr` and `slots`.
template <class Group>
class GroupedOptimizer : public Optimizer {
 public:
  size_t num_groups() const override { return groups_.size(); }
  std::string group_name(size_t group) const override { return groups_.at(group).name; }
  size_t group_size(size_t group) const override { return groups_.at(group).slots.size(); }
  double lr(size_t group) const override { return groups_.at(group).options.lr; }
  void set_lr(size_t group, double lr) override { groups_.at(group).options.lr = lr; }

 protected:
  using Slot = typename decltype(Group::slots)::value_type;

  // Calls apply(slot, entry, tensor) for each state tensor "<param name>/<entry>"; ModelError
  // naming the key when no parameter has that name or the shapes differ.
  template <class F>
  void for_each_state_entry(const OptimizerSnapshot& snapshot, F&& apply) {
    std::map<std::string, Slot*> by_name;
    for (auto& group : groups_)
      for (auto& slot : group.slots) by_name[slot.name] = &slot;
    for (const auto& [key, tensor] : snapshot.tensors) {
      const auto cut = key.rfind('/');
      const auto it = cut == std::string::npos ? by_name.end() : by_name.find(key.substr(0, cut));
      if (it == by_name.end() || tensor.sizes() != it->second->param.sizes())
        throw ModelError("optimizer state entry '" + key +
                         "' fits no parameter of this model; resume with the same model");
      apply(*it->second, key.substr(cut + 1), tensor);
    }
  }

  std::vector<Group> groups_;
};

}  // namespace detrain::optim
