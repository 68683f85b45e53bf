// Archive form of OptimizerSnapshot: names joined by newlines next to a tensor list and a double
// list, so keys never depend on what characters a parameter name holds.
#include "optim/optimizer.h"

#include "common/errors.h"
#include "common/strings.h"

namespace detrain::optim {

namespace {

std::string read_text(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value) || !value.isString())
    throw ModelError("optimizer state: entry '" + key +
                     "' is missing; the checkpoint was not written by this optimizer");
  return value.toStringRef();
}

std::vector<std::string> split_names(const std::string& joined) {
  return joined.empty() ? std::vector<std::string>{} : split(joined, '\n');
}

}  // namespace

void Optimizer::save_group_options(OptimizerSnapshot& snapshot) const {
  snapshot.kind = kind();
  for (size_t g = 0; g < num_groups(); ++g) {
    const std::string prefix = "group" + std::to_string(g) + "/";
    snapshot.scalars[prefix + "lr"] = lr(g);
    snapshot.scalars[prefix + "momentum"] = momentum(g);
  }
}

void Optimizer::restore_group_options(const OptimizerSnapshot& snapshot) {
  if (snapshot.kind != kind())
    throw ModelError("optimizer state is for '" + snapshot.kind +
                     "' but optim.optimizer resolves to '" + kind() +
                     "'; resume with the optimizer the run started with");
  for (size_t g = 0; g < num_groups(); ++g) {
    const std::string prefix = "group" + std::to_string(g) + "/";
    const auto lr_it = snapshot.scalars.find(prefix + "lr");
    const auto m_it = snapshot.scalars.find(prefix + "momentum");
    if (lr_it == snapshot.scalars.end() || m_it == snapshot.scalars.end())
      throw ModelError("optimizer state has no options for group " + std::to_string(g) + " (" +
                       group_name(g) + "); it was written for another parameter grouping");
    set_lr(g, lr_it->second);
    set_momentum(g, m_it->second);
  }
}

void Optimizer::save(torch::serialize::OutputArchive& archive) const {
  const auto snap = snapshot();
  std::vector<std::string> tensor_names, scalar_names;
  c10::List<at::Tensor> tensors;
  c10::List<double> scalars;
  for (const auto& [name, tensor] : snap.tensors) {
    tensor_names.push_back(name);
    tensors.push_back(tensor.detach().to(torch::kCPU).contiguous());
  }
  for (const auto& [name, value] : snap.scalars) {
    scalar_names.push_back(name);
    scalars.push_back(value);
  }
  archive.write("optim/kind", c10::IValue(snap.kind));
  archive.write("optim/tensor_names", c10::IValue(join(tensor_names, "\n")));
  archive.write("optim/tensors", c10::IValue(tensors));
  archive.write("optim/scalar_names", c10::IValue(join(scalar_names, "\n")));
  archive.write("optim/scalars", c10::IValue(scalars));
}

void Optimizer::load(torch::serialize::InputArchive& archive) {
  OptimizerSnapshot snap;
  snap.kind = read_text(archive, "optim/kind");
  const auto tensor_names = split_names(read_text(archive, "optim/tensor_names"));
  const auto scalar_names = split_names(read_text(archive, "optim/scalar_names"));
  c10::IValue tensors, scalars;
  if (!archive.try_read("optim/tensors", tensors) || !tensors.isTensorList() ||
      tensors.toTensorList().size() != tensor_names.size() ||
      !archive.try_read("optim/scalars", scalars) || !scalars.isDoubleList() ||
      scalars.toDoubleList().size() != scalar_names.size())
    throw ModelError("optimizer state: the tensor or scalar list is missing or incomplete");
  const auto tensor_list = tensors.toTensorList();
  for (size_t i = 0; i < tensor_names.size(); ++i)
    snap.tensors.emplace_back(tensor_names[i], tensor_list.get(i));
  const auto scalar_list = scalars.toDoubleList();
  for (size_t i = 0; i < scalar_names.size(); ++i)
    snap.scalars[scalar_names[i]] = scalar_list.get(i);
  restore(snap);
}

}  // namespace detrain::optim
