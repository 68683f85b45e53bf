// Every key of configs/default.yaml has a reader: code outside src/config/ that reads the field.
// The registry is the code itself. A read is a member access `x.train.patience` (through the
// section's name), or `t.patience` / `t->patience` where `t` is declared in the same file, or in
// its header / source twin, as the section's struct (`const config::TrainOptions& t`,
// `config::LossOptions options_;`) or bound to it (`const auto& aug = o.augment;`). Comments,
// string literals, assignments to the field and src/config/ itself (loading, validation, the
// table) do not count, so a key that only has a doc line, a default, a mention in a message or
// a validation rule fails here: a key nobody reads cannot pass.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/paths.h"
#include "config/config.h"

namespace fs = std::filesystem;
using namespace detrain;

namespace {

// `text` with comments, string literals (raw ones too) and character literals blanked, so only
// code is left to match; line breaks stay.
std::string code_only(const std::string& text) {
  std::string out = text;
  const size_t n = text.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < n; ++i)
      if (out[i] != '\n') out[i] = ' ';
  };
  for (size_t i = 0; i < n;) {
    if (text.compare(i, 2, "//") == 0) {
      const size_t end = text.find('\n', i);
      blank(i, end == std::string::npos ? n : end);
      i = end == std::string::npos ? n : end;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? n : end + 2;
      blank(i, stop);
      i = stop;
    } else if (text.compare(i, 2, "R\"") == 0 &&
               (i == 0 ||
                !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
      const size_t open = text.find('(', i + 2);
      const std::string close = ")" + text.substr(i + 2, open - i - 2) + "\"";
      const size_t end = text.find(close, open);
      const size_t stop = end == std::string::npos ? n : end + close.size();
      blank(i, stop);
      i = stop;
    } else if (text[i] == '"' || text[i] == '\'') {
      // A digit separator (1'000'000) is no character literal.
      if (text[i] == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))) {
        ++i;
        continue;
      }
      const char quote = text[i];
      size_t j = i + 1;
      while (j < n && text[j] != quote && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct Section {
  std::string name;  // "train"
  std::string type;  // "TrainOptions"
};

// A source tree (or a test's few files): path -> code_only text.
using Sources = std::map<std::string, std::string>;

// "src/loss/criterion.cpp" and "src/loss/criterion.h" share declarations.
std::string stem_of(const std::string& path) { return fs::path(path).replace_extension().string(); }

// Names that stand for a `section` struct in the files of one stem.
std::set<std::string> bound_names(const std::string& code, const Section& s) {
  std::set<std::string> names;
  const std::regex declared("\\b" + s.type + "\\b\\s*(?:const\\s*)?[&*]?\\s*(\\w+)");
  const std::regex alias("(\\w+)\\s*=\\s*[\\w.>\\-]*(?:\\.|->)\\s*" + s.name + "\\s*;");
  for (const auto* re : {&declared, &alias})
    for (std::sregex_iterator it(code.begin(), code.end(), *re), end; it != end; ++it)
      names.insert((*it)[1].str());
  return names;
}

// Where each `section.key` of `sources` is read; the names bound per stem are found once.
class Readers {
 public:
  explicit Readers(Sources sources) : sources_(std::move(sources)) {
    for (const auto& [path, code] : sources_) by_stem_[stem_of(path)] += code + "\n";
  }

  // "file:line" of each file that reads it.
  std::vector<std::string> of(const Section& s, const std::string& key) {
    std::vector<std::string> out;
    for (const auto& [path, code] : sources_) {
      if (code.find(key) == std::string::npos) continue;  // std::regex is slow: skip early
      const std::string stem = stem_of(path);
      auto cached = names_.find({stem, s.name});
      if (cached == names_.end())
        cached = names_.emplace(std::make_pair(stem, s.name), bound_names(by_stem_[stem], s)).first;
      std::string names = "(?:(?:\\.|->)\\s*" + s.name + ")";
      for (const std::string& n : cached->second) names += "|\\b" + n;
      const std::regex read("(?:" + names + ")\\s*(?:\\.|->)\\s*" + key + "\\b(?!\\s*=[^=])");
      std::smatch m;
      if (std::regex_search(code, m, read)) {
        const auto line = std::count(code.begin(), code.begin() + m.position(0), '\n') + 1;
        out.push_back(path + ":" + std::to_string(line));
      }
    }
    return out;
  }

 private:
  Sources sources_;
  std::map<std::string, std::string> by_stem_;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> names_;
};

std::vector<std::string> readers(const Sources& sources, const Section& s, const std::string& key) {
  return Readers(sources).of(s, key);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sections in canonical order, each with its struct's name from src/config/<name>_options.h.
std::vector<Section> sections() {
  config::Experiment e;
  std::vector<Section> out;
  auto collect = [&](const char* name, auto&) {
    const std::string header =
        read_text(fs::path(source_dir()) / "src/config" / (std::string(name) + "_options.h"));
    std::smatch m;
    REQUIRE(std::regex_search(header, m, std::regex("struct (\\w+Options)\\b")));
    out.push_back({name, m[1].str()});
  };
  e.visit_sections(collect);
  return out;
}

// Every .h/.cpp under src/ (but src/config/) and apps/.
Sources tree() {
  Sources out;
  for (const char* root : {"src", "apps"})
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(source_dir()) / root)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp") continue;
      const std::string rel = fs::relative(entry.path(), source_dir()).string();
      if (rel.rfind("src/config/", 0) == 0) continue;
      out[rel] = code_only(read_text(entry.path()));
    }
  return out;
}

}  // namespace

TEST_CASE("every config key has a reader outside src/config", "[unit][config]") {
  const Sources sources = tree();
  REQUIRE(sources.size() > 100);
  Readers index(sources);
  size_t checked = 0;
  for (const Section& s : sections()) {
    config::Experiment e;
    for (const config::FieldRef& f : config::fields_of(e)) {
      if (f.section != s.name) continue;
      const auto sites = index.of(s, f.key);
      INFO(f.name() << " is read at: " << (sites.empty() ? "nowhere" : sites.front()));
      // A key nobody reads promises what it does not do: wire it to the code it documents,
      // or remove it (and regenerate configs/default.yaml).
      CHECK_FALSE(sites.empty());
      ++checked;
    }
  }
  CHECK(checked == config::all_keys().size());
}

TEST_CASE("the reader check cannot be satisfied by a key nobody reads", "[unit][config]") {
  const Section train{"train", "TrainOptions"};
  auto found = [&](const std::string& code, const std::string& file = "src/x/a.cpp") {
    return !readers({{file, code_only(code)}}, train, "patience").empty();
  };
  // Reads.
  CHECK(found("int f(const config::Experiment& x) { return x.train.patience; }"));
  CHECK(found("bool g(const Experiment* x) { return x->train.patience > 0; }"));
  CHECK(found("int f(const config::TrainOptions& t) { return t.patience; }"));
  CHECK(found("int f(const TrainOptions* t) { return t->patience + 1; }"));
  CHECK(found("void f(const X& o) { const auto& t = o.train; use(t.patience); }"));
  CHECK(found("if (x_.train.patience == 0) return;"));
  // A member declared in the header twin and read in the source file.
  CHECK_FALSE(readers({{"src/x/b.cpp", code_only("int B::f() { return options_.patience; }")}},
                      train, "patience")
                  .size());
  CHECK(readers({{"src/x/b.h", code_only("struct B { config::TrainOptions options_; };")},
                 {"src/x/b.cpp", code_only("int B::f() { return options_.patience; }")}},
                train, "patience")
            .size() == 1);
  // Not reads.
  CHECK_FALSE(found("// x.train.patience stops the run\nint f();"));
  CHECK_FALSE(found("/* t.patience */ int f();"));
  CHECK_FALSE(found(R"(log("train.patience=0 never stops"); auto s = ".train.patience";)"));
  CHECK_FALSE(found("auto s = R\"(x.train.patience)\";"));
  CHECK_FALSE(found("void f(Experiment& x) { x.train.patience = 5; }"));  // a write
  CHECK_FALSE(found("int f(const Other& t) { return t.patience; }"));     // another struct's
  CHECK_FALSE(found("int f(const Stopper& s) { return s.patience; }"));
  CHECK_FALSE(found("int f(const Experiment& x) { return x.train.patience_steps; }"));
  CHECK_FALSE(found("int f(const Experiment& x) { return x.loss.patience; }"));  // other section
  // Character literals and digit separators do not swallow code after them.
  CHECK(found("char q = '\"'; int n = 1'000; int p = x.train.patience;"));
}
