// Applies runtime.memory_format (model/memory_format.h) to tensors: the model's 4-D parameters
// and buffers converted in place (the same tensor objects, so an optimizer or an EMA holding
// them sees the new layout), and the uint8 image batch turned into the model's float input in
// the model's layout. Files on disk stay NCHW: every writer takes contiguous copies.
#pragma once

#include <torch/torch.h>

#include <string>

#include "model/memory_format.h"

namespace detrain::model {

torch::MemoryFormat torch_memory_format(MemoryFormat format);

// runtime.memory_format (`option`) for a run on `device`: auto asks the machine
// (compat::cpu_vector_level). Throws ConfigError for an unknown value.
MemoryFormatDecision choose_memory_format(const std::string& option, const torch::Device& device);

// Every 4-D parameter and buffer of `module` and its submodules in `format`, in place
// (set_data: the tensor objects stay, their data is a converted copy where it had another layout).
void convert_to_memory_format(torch::nn::Module& module, MemoryFormat format);

// [B, 3, H, W] uint8 RGB -> float in [0, 1] on `device` in `format`. The layout is converted while
// the batch is still uint8, a quarter of the bytes a float conversion would move. With `bf16` on
// the CPU the values are made in bf16 directly: bit for bit what BF16 autocast hands the first
// convolution from the float batch (u / 255 in float, then rounded), in a third of the memory
// traffic (no float batch, no autocast cast of it). Only for a forward under BF16 autocast.
torch::Tensor image_input(const torch::Tensor& images, const torch::Device& device,
                          MemoryFormat format, bool bf16 = false);

// `activation`, with a hook that hands its backward a dense channels-last gradient when it is a
// dense channels-last tensor that needs one. Autograd gives `cat`'s inputs strided slices of the
// output's gradient (and a reshape's input an NCHW one); BatchNorm's and SiLU's backward kernels
// take a generic path on those, 3-7x slower than on the dense layout at the stem's sizes, which
// one copy avoids (docs/perf/2026-12-07-dense-gradients.md).
torch::Tensor with_dense_channels_last_grad(const torch::Tensor& activation);

}  // namespace detrain::model
