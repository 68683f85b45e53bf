// Module layering, enforced: every `#include "module/..."` line under src/ and apps/ must be an
// edge of the table below, the table must be a strict DAG (each module names only modules
// above it, so no cycle can be allowed), and the modules promised LibTorch-free must not reach a
// LibTorch header through any chain of project headers. The test prints the module graph it
// found. docs/architecture.md describes the same table; change both together.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/paths.h"

namespace fs = std::filesystem;

namespace {

struct Layer {
  std::string module;
  std::vector<std::string> uses;  // modules it may include, each listed above it
};

// Bottom to top. A module may include only the modules it lists (and itself).
const std::vector<Layer>& layers() {
  static const std::vector<Layer> table = {
      {"common", {}},
      {"config", {"common"}},
      // LibTorch's version-dependent API and the process runtime (threads, seed) set from
      // config::RuntimeOptions.
      {"compat", {"common", "config"}},
      {"geometry", {"common"}},
      // COCO annotation files: the one reader and its plain table (loader and evaluator).
      {"coco", {"common"}},
      // The COCO evaluator and its JSON: plain C++, no LibTorch.
      {"eval", {"common", "coco"}},
      {"data", {"common", "compat", "config", "geometry", "coco"}},
      {"model", {"common", "compat", "config", "geometry"}},
      // Head output -> detections -> COCO records, and the validation loop over a model.
      {"infer", {"common", "compat", "config", "geometry", "coco", "model", "eval"}},
      {"loss", {"common", "compat", "config", "geometry", "coco", "model"}},
      {"optim", {"common", "compat", "config", "model"}},
      {"export", {"common", "compat", "config", "geometry", "model"}},
      // Foreign weight files read as data: Ultralytics .pt (the pickle interpreter has no
      // LibTorch; the archive and tensors do).
      {"weights", {"common", "compat", "config", "model"}},
      // Run reporting: the run directory, metrics log and results.csv, and the plots.
      {"report", {"common", "data", "infer"}},
      // detrain checkpoints (save, load, best.ckpt) and the weights a run starts from.
      {"ckpt", {"common", "compat", "config", "model", "optim", "weights", "report"}},
      // Processes and devices: torchrun/Slurm placement, the c10d world, the local launcher.
      {"dist", {"common", "compat", "config"}},
      // The val and predict tasks over a loaded model (also what training validates with).
      {"tasks",
       {"common", "compat", "config", "coco", "eval", "data", "model", "infer", "loss", "weights",
        "ckpt", "report"}},
      // The training loop alone.
      {"train",
       {"common", "compat", "config", "eval", "data", "model", "infer", "loss", "optim", "weights",
        "report", "ckpt", "dist", "tasks"}},
      // `detrain bench` kinds: measurements over the modules above, returned as reports.
      {"bench",
       {"common", "compat", "config", "geometry", "eval", "data", "model", "loss", "optim",
        "report", "train"}},
      {"apps",
       {"common", "compat", "config", "geometry", "coco", "eval", "data", "model", "infer", "loss",
        "optim", "export", "weights", "report", "ckpt", "dist", "tasks", "train", "bench"}},
  };
  return table;
}

// Modules whose code needs no tensors: none of their files may reach <torch/...>, <ATen/...> or
// <c10/...>, directly or through project headers (the evaluator builds without LibTorch).
const std::set<std::string> kTorchFree = {"config", "coco", "eval"};

struct Include {
  std::string file;  // relative to the source dir, e.g. "src/data/collate.h"
  int line = 0;
  std::string target;  // as written, e.g. "data/sample.h"
};

struct SourceFile {
  std::string module;
  std::vector<Include> includes;  // project includes ("...")
  bool includes_torch = false;    // <torch/...>, <ATen/...> or <c10/...>
  bool includes_opencv = false;   // <opencv2/...>
  bool forwarding = false;        // a header kept only so old include paths still compile
};

// "src/eval/x.h" -> "eval", "apps/cmd_val.cpp" -> "apps".
std::string module_of(const std::string& rel) {
  if (rel.rfind("apps/", 0) == 0) return "apps";
  const auto slash = rel.find('/', 4);
  return rel.substr(4, slash - 4);
}

std::map<std::string, SourceFile> scan_sources(const std::string& root) {
  static const std::regex quoted(R"(^\s*#\s*include\s*"([^"]+)\")");
  static const std::regex torch(R"(^\s*#\s*include\s*<(torch|ATen|c10)/)");
  static const std::regex opencv(R"(^\s*#\s*include\s*<opencv2/)");
  std::map<std::string, SourceFile> files;
  for (const char* top : {"src", "apps"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(root) / top)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      SourceFile& f = files[rel];
      f.module = module_of(rel);
      std::ifstream in(entry.path());
      std::string text;
      int number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        // Forwarding headers say so on their first line (see the WARN below).
        if (number == 1 && line.rfind("// Forwarding header", 0) == 0) f.forwarding = true;
        std::smatch m;
        if (std::regex_search(line, m, quoted)) f.includes.push_back({rel, number, m[1]});
        if (std::regex_search(line, torch)) f.includes_torch = true;
        if (std::regex_search(line, opencv)) f.includes_opencv = true;
      }
    }
  }
  return files;
}

// The file an include names: src/<target>, or beside the includer (apps' own headers; the front
// end's "../cli_shell.h").
std::string resolve(const std::map<std::string, SourceFile>& files, const Include& inc) {
  const std::string in_src = "src/" + inc.target;
  if (files.count(in_src)) return in_src;
  const std::string beside =
      (fs::path(inc.file).parent_path() / inc.target).lexically_normal().generic_string();
  if (files.count(beside)) return beside;
  return "";
}

// The modules an include really reaches: a forwarding header stands for what it includes.
void reached_modules(const std::map<std::string, SourceFile>& files, const std::string& path,
                     std::set<std::string>& out, int depth = 0) {
  const SourceFile& f = files.at(path);
  if (!f.forwarding || depth > 8) {
    out.insert(f.module);
    return;
  }
  for (const auto& inc : f.includes) {
    const std::string next = resolve(files, inc);
    if (!next.empty()) reached_modules(files, next, out, depth + 1);
  }
}

}  // namespace

TEST_CASE("the layer table is a strict DAG", "[unit][layers]") {
  std::set<std::string> below;
  for (const auto& layer : layers()) {
    for (const auto& use : layer.uses) {
      INFO(layer.module << " uses " << use);
      CHECK(below.count(use) == 1);  // listed above it: no cycle can be allowed
    }
    CHECK(below.insert(layer.module).second);
  }
}

TEST_CASE("#include lines follow the module layers and form no cycle", "[unit][layers]") {
  const std::string root = detrain::source_dir();
  const auto files = scan_sources(root);
  REQUIRE(files.size() > 100);  // the scan found the tree

  std::map<std::string, std::set<std::string>> allowed;
  for (const auto& layer : layers())
    allowed[layer.module] = std::set<std::string>(layer.uses.begin(), layer.uses.end());

  // module -> used module -> how many include lines.
  std::map<std::string, std::map<std::string, int>> graph;
  std::vector<std::string> violations, forwarding_uses;
  for (const auto& [path, f] : files) {
    INFO(path);
    CHECK(allowed.count(f.module) == 1);  // a new module needs a row in the table
    graph[f.module];
    if (f.forwarding) continue;  // its edge is counted at each includer
    for (const auto& inc : f.includes) {
      const std::string target = resolve(files, inc);
      if (target.empty()) {
        violations.push_back(inc.file + ":" + std::to_string(inc.line) + ": \"" + inc.target +
                             "\" is no file under src/ or beside the includer");
        continue;
      }
      if (files.at(target).forwarding)
        forwarding_uses.push_back(inc.file + ":" + std::to_string(inc.line) + " includes " +
                                  target);
      std::set<std::string> modules;
      reached_modules(files, target, modules);
      for (const auto& to : modules) {
        if (to == f.module) continue;
        ++graph[f.module][to];
        if (!allowed.count(f.module) || !allowed[f.module].count(to))
          violations.push_back(inc.file + ":" + std::to_string(inc.line) + ": " + f.module +
                               " -> " + to + " (\"" + inc.target + "\") is not in the table");
      }
    }
  }

  std::ostringstream listing;
  listing << "module graph (module: used modules with include counts; * allowed but unused)\n";
  for (const auto& layer : layers()) {
    listing << "  " << layer.module << ":";
    for (const auto& [to, count] : graph[layer.module]) listing << " " << to << "(" << count << ")";
    for (const auto& use : layer.uses)
      if (!graph[layer.module].count(use)) listing << " *" << use;
    listing << "\n";
  }
  std::cout << listing.str() << std::flush;  // stdout: Catch's WARN would wrap the lines
  if (!forwarding_uses.empty()) {
    std::string list;
    for (const auto& u : forwarding_uses) list += "\n  " + u;
    WARN("forwarding headers still included (move the includers to the new paths):" << list);
  }
  for (const auto& v : violations) FAIL_CHECK(v);

  // Cycle check on the graph found (the table check above already rules cycles out; this names
  // one if a table change ever lets one through).
  std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::function<void(const std::string&)> visit = [&](const std::string& m) {
    state[m] = 1;
    stack.push_back(m);
    for (const auto& [to, count] : graph[m]) {
      if (state[to] == 1) {
        std::string cycle;
        for (auto it = std::find(stack.begin(), stack.end(), to); it != stack.end(); ++it)
          cycle += *it + " -> ";
        FAIL_CHECK("module cycle: " << cycle << to);
      } else if (state[to] == 0) {
        visit(to);
      }
    }
    stack.pop_back();
    state[m] = 2;
  };
  for (const auto& [m, edges] : graph)
    if (state[m] == 0) visit(m);
}

// The training loop is the train command's alone: val, predict, export and data run through
// tasks/ and report/, so a change to the loop cannot reach them. Only train/ itself, bench (which
// times training steps) and apps/cmd_train.cpp may include a train/ header.
TEST_CASE("only the train command and bench include train/", "[unit][layers]") {
  const auto files = scan_sources(detrain::source_dir());
  int train_includes = 0;
  for (const auto& [path, f] : files) {
    for (const auto& inc : f.includes) {
      const std::string target = resolve(files, inc);
      if (target.rfind("src/train/", 0) != 0) continue;
      ++train_includes;
      const bool allowed =
          f.module == "train" || f.module == "bench" || path == "apps/cmd_train.cpp";
      INFO(path << ":" << inc.line << " includes " << target);
      CHECK(allowed);
    }
  }
  CHECK(train_includes > 20);  // the scan saw the loop's own includes
}

// Whether a file reaches a header that `bad` flags, through project headers, memoised: "" (no) or
// the chain that does, for the message.
class ChainFinder {
 public:
  ChainFinder(const std::map<std::string, SourceFile>& files,
              std::function<const char*(const SourceFile&)> bad)
      : files_(files), bad_(std::move(bad)) {}

  std::string operator()(const std::string& path) {
    if (auto it = reaches_.find(path); it != reaches_.end()) return it->second;
    if (!in_progress_.insert(path).second) return std::string();  // header cycle: pragma once
    const SourceFile& f = files_.at(path);
    const char* what = bad_(f);
    std::string chain = what ? path + " -> " + what : "";
    for (size_t i = 0; chain.empty() && i < f.includes.size(); ++i) {
      const std::string next = resolve(files_, f.includes[i]);
      if (next.empty()) continue;
      const std::string rest = (*this)(next);
      if (!rest.empty()) chain = path + ":" + std::to_string(f.includes[i].line) + " -> " + rest;
    }
    in_progress_.erase(path);
    return reaches_[path] = chain;
  }

 private:
  const std::map<std::string, SourceFile>& files_;
  std::function<const char*(const SourceFile&)> bad_;
  std::map<std::string, std::string> reaches_;
  std::set<std::string> in_progress_;
};

TEST_CASE("LibTorch-free modules reach no LibTorch header", "[unit][layers]") {
  const auto files = scan_sources(detrain::source_dir());
  ChainFinder torch_chain(
      files, [](const SourceFile& f) { return f.includes_torch ? "<torch>" : nullptr; });
  int checked = 0;
  for (const auto& [path, f] : files) {
    // A forwarding header stands for its target's module (eval/validate.h is infer's).
    if (!kTorchFree.count(f.module) || f.forwarding) continue;
    ++checked;
    const std::string chain = torch_chain(path);
    INFO(chain);
    CHECK(chain.empty());
  }
  CHECK(checked > 20);
}

// The front end `detrain` (apps/front/) maps neither LibTorch nor OpenCV (tests/apps/
// test_front_end.cpp checks the running process; CMakeLists.txt gives it neither include folder).
TEST_CASE("the front end reaches no LibTorch or OpenCV header", "[unit][layers]") {
  const auto files = scan_sources(detrain::source_dir());
  ChainFinder heavy_chain(files, [](const SourceFile& f) {
    return f.includes_torch ? "<torch>" : f.includes_opencv ? "<opencv2>" : nullptr;
  });
  int checked = 0;
  for (const auto& [path, f] : files) {
    if (path.rfind("apps/front/", 0) != 0) continue;
    ++checked;
    const std::string chain = heavy_chain(path);
    INFO(chain);
    CHECK(chain.empty());
  }
  CHECK(checked >= 2);
}
