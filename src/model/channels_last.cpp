// Memory formats on tensors; see channels_last.h.
#include "model/channels_last.h"

#include "compat/torch_compat.h"

namespace detrain::model {

torch::MemoryFormat torch_memory_format(MemoryFormat format) {
  return format == MemoryFormat::kNhwc ? torch::MemoryFormat::ChannelsLast
                                       : torch::MemoryFormat::Contiguous;
}

MemoryFormatDecision choose_memory_format(const std::string& option, const torch::Device& device) {
  const MemoryFormatChoice choice = parse_memory_format(option);
  MemoryFormatHost host;
  host.cuda = device.is_cuda();
  if (choice == MemoryFormatChoice::kAuto && !host.cuda) {
    const compat::CpuVectorLevel level = compat::cpu_vector_level();
    host.x86 = level.x86;
    host.avx2 = level.avx2;
    host.avx512 = level.avx512;
  }
  return resolve_memory_format(choice, host);
}

void convert_to_memory_format(torch::nn::Module& module, MemoryFormat format) {
  const torch::MemoryFormat layout = torch_memory_format(format);
  torch::NoGradGuard no_grad;
  auto convert = [&](torch::Tensor& t) {
    if (t.defined() && t.dim() == 4 && !t.is_contiguous(layout)) t.set_data(t.contiguous(layout));
  };
  for (auto& p : module.parameters(/*recurse=*/true)) convert(p);
  for (auto& b : module.buffers(/*recurse=*/true)) convert(b);
}

torch::Tensor image_input(const torch::Tensor& images, const torch::Device& device,
                          MemoryFormat format, bool bf16) {
  // LibTorch's CPU division of a bf16 tensor by a scalar computes u / 255 in float and rounds,
  // as autocast's cast of the float quotient does (tested on every byte value). CUDA's kernels
  // are not checked here, so CUDA keeps the float batch.
  const bool direct_bf16 = bf16 && device.is_cpu();
  return images.to(device, /*non_blocking=*/true)
      .contiguous(torch_memory_format(format))
      .to(direct_bf16 ? torch::kBFloat16 : torch::kFloat)
      .div_(255.0);
}

torch::Tensor with_dense_channels_last_grad(const torch::Tensor& activation) {
  // A tensor that is dense in both layouts (1x1 spatial, or one channel) needs nothing.
  if (!activation.requires_grad() || activation.dim() != 4 || activation.is_contiguous() ||
      !activation.is_contiguous(torch::MemoryFormat::ChannelsLast))
    return activation;
  activation.register_hook([](const torch::Tensor& grad) {
    return grad.contiguous(torch::MemoryFormat::ChannelsLast);  // itself when already dense
  });
  return activation;
}

}  // namespace detrain::model
