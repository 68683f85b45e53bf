// State dicts by reference name: every parameter and buffer of a module tree (BN running stats
// and num_batches_tracked included), in the reference's state_dict() order, and strict loading
// that reports every missing, unexpected and shape-mismatched name in one error.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace detrain::model {

// Per module in pre-order: its own parameters, then its own buffers (Python's order).
std::vector<std::pair<std::string, torch::Tensor>> state_dict(const torch::nn::Module& module);

// Copies `tensors` into the module's parameters and buffers (converting dtype and device).
// Strict: throws ModelError naming `source` and listing the missing, unexpected and
// shape-mismatched names (with both shapes) when the names and shapes do not match exactly.
void load_state_dict(torch::nn::Module& module, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& source);

// Reads a safetensors file and loads it strictly (load_state_dict).
void load_weights(torch::nn::Module& module, const std::string& path);

// Writes the module's state dict as safetensors (atomically).
void save_weights(const torch::nn::Module& module, const std::string& path,
                  const std::map<std::string, std::string>& metadata = {});

}  // namespace detrain::model
