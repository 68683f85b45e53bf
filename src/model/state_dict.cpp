// State dicts; see state_dict.h.
#include "model/state_dict.h"

#include <sstream>

#include "common/errors.h"
#include "model/safetensors.h"

namespace detrain::model {

namespace {

std::string shape_text(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

// "3 missing: a, b, c" with at most `limit` names shown.
std::string listing(const std::string& what, const std::vector<std::string>& names,
                    size_t limit = 8) {
  std::ostringstream out;
  out << names.size() << " " << what << " (";
  for (size_t i = 0; i < names.size() && i < limit; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > limit) out << ", ... " << names.size() - limit << " more";
  out << ")";
  return out.str();
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> state_dict(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> entries;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false))
      entries.emplace_back(prefix + p.key(), p.value());
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false))
      entries.emplace_back(prefix + b.key(), b.value());
  }
  return entries;
}

void load_state_dict(torch::nn::Module& module, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& source) {
  const auto entries = state_dict(module);
  std::vector<std::string> missing, unexpected, mismatched;
  std::map<std::string, bool> known;
  for (const auto& [name, target] : entries) {
    known[name] = true;
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      missing.push_back(name);
    } else if (it->second.sizes() != target.sizes()) {
      mismatched.push_back(name + " file " + shape_text(it->second) + " vs model " +
                           shape_text(target));
    }
  }
  for (const auto& [name, tensor] : tensors)
    if (!known.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::vector<std::string> problems;
    if (!missing.empty()) problems.push_back(listing("missing", missing));
    if (!unexpected.empty()) problems.push_back(listing("unexpected", unexpected));
    if (!mismatched.empty()) problems.push_back(listing("with another shape", mismatched, 4));
    std::string message = source + " does not match the model: ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw ModelError(message + " (is it for this architecture, scale and nc?)");
  }
  torch::NoGradGuard no_grad;
  for (auto [name, target] : entries) {  // tensor handles share the module's storage
    target.copy_(tensors.at(name).to(target.device(), target.scalar_type()));
  }
}

void load_weights(torch::nn::Module& module, const std::string& path) {
  const auto file = read_safetensors(path);
  load_state_dict(module, file.tensors, path);
}

void save_weights(const torch::nn::Module& module, const std::string& path,
                  const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, state_dict(module), metadata);
}

}  // namespace detrain::model
