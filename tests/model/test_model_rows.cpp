// Bad architecture-YAML rows: each is one ModelError naming the file, the row, the module, the
// argument and its allowed range, raised before any layer is built; `detrain model` and
// `detrain train` exit 6 with one line and create no run directory. The fuzz test mutates the
// rows of models/yolo26.yaml (fixed seed): every mutation builds and runs, or is refused with a
// ModelError, within 10 s; none crashes or escapes as another exception.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <random>
#include <regex>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/paths.h"
#include "model/builder.h"
#include "model/yolo_model.h"
#include "test_support.h"
#include "train/train_fixtures.h"

using namespace detrain;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A small network with every module kind the checks cover; ROW is layer 1.
constexpr const char* kTemplate = R"(nc: 4
scales:
  n: [0.50, 0.25, 1024]
backbone:
  - [-1, 1, Conv, [64, 3, 2]]
  - ROW
  - [-1, 1, C3k2, [128, False, 0.25]]
  - [-1, 1, Conv, [256, 3, 2]]
  - [-1, 1, SPPF, [256, 5]]
  - [-1, 1, C2PSA, [256]]
head:
  - [-1, 1, Conv, [256, 3, 2]]
  - [-1, 1, nn.Upsample, [None, 2, "nearest"]]
  - [[-1, 5], 1, Concat, [1]]
  - [[8, 6], 1, Detect, [nc]]
)";

std::string with_row(const std::string& row) {
  return std::regex_replace(kTemplate, std::regex("ROW"), row);
}

std::string build_error(const std::string& path) {
  try {
    model::BuildOptions options;
    options.arch = path;
    model::build_network(options);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("each bad model row is one ModelError naming file, row, module and allowed range",
          "[unit][model]") {
  TempDir dir;
  const std::string path = dir.file("bad.yaml");
  detrain::test::write_text(path, with_row("[-1, 1, Conv, [128, 3, 2]]"));
  REQUIRE(build_error(path).empty());  // the template itself is good

  struct Case {
    const char* row;
    const char* expected;
  };
  const Case cases[] = {
      {"[-1, 1, Conv, [64, 3, 0]]", "layer 1 (Conv [64, 3, 0]): stride is 0; allowed 1, 2, 4 or 8"},
      {"[-1, 1, Conv, [64, 3, -2]]", "stride is -2; allowed 1, 2, 4 or 8"},
      {"[-1, 1, Conv, [64, 3, 1000]]", "stride is 1000; allowed 1, 2, 4 or 8"},
      {"[-1, 1, Conv, [64, 999, 2]]", "kernel is 999; allowed odd values 1 to 15"},
      {"[-1, 1, Conv, [64, 0, 2]]", "kernel is 0; allowed odd values 1 to 15"},
      {"[-1, 1, Conv, [64, -3, 2]]", "kernel is -3; allowed odd values 1 to 15"},
      {"[-1, 1, Conv, [64, 2, 2]]", "kernel is 2; allowed odd values 1 to 15"},
      {"[-1, 1, Conv, [0, 3, 2]]", "(Conv [0, 3, 2]): the output width is 0; allowed 1 to 16384"},
      {"[-1, 1, Conv, [-8, 3, 2]]", "the output width is -8; allowed 1 to 16384"},
      {"[-1, 1, Conv, [64, 3, 2, None, 5]]", "groups is 5; allowed a divisor of the block width"},
      {"[-1, 1, Conv, [64, 3, 2, 7]]", "padding is 7; allowed None or d * (k - 1) / 2 = 1"},
      {"[-1, 1, C3k2, [128, False, 0.0]]", "(C3k2 [128, False, 0.0]): the expansion e is 0.0"},
      {"[-1, 1, C3k2, [128, False, -0.5]]", "the expansion e is -0.5"},
      {"[-1, 1, SPPF, [128, 0]]", "(SPPF [128, 0]): kernel is 0; allowed odd values 1 to 15"},
      {"[-1, 1, SPPF, [128, 5, -1]]", "n (poolings) is -1; allowed 1 to 8"},
      {"[-1, 1, Concat, [5]]", "(Concat [5]): the dimension is 5; allowed 1 (channels)"},
      {"[-1, 1, nn.Upsample, [None, 1000, 'nearest']]", "the upsampling factor is 1000"},
      {"[-1, 99, Conv, [64, 3, 2]]", "repeats is 99; allowed 1 to 64"},
      {"[-1, 1, C2PSA, [64, 0.01]]", "the expansion e is 0.01; allowed at least 1/16"},
  };
  for (const auto& c : cases) {
    detrain::test::write_text(path, with_row(c.row));
    const std::string error = build_error(path);
    INFO(c.row << " -> " << error);
    CHECK_THAT(error, Catch::StartsWith(path + " layer 1"));
    CHECK_THAT(error, Catch::Contains(c.expected));
    CHECK(error.find('\n') == std::string::npos);
  }

  // A network coarser than config::kMaxStride, the stride data.imgsz is checked against when
  // the config resolves: 2 * 8 * 2 * 2 = 64 at the head's first Conv (layer 6).
  detrain::test::write_text(path, with_row("[-1, 1, Conv, [64, 3, 8]]"));
  CHECK_THAT(build_error(path),
             Catch::Contains("layer 6") &&
                 Catch::Contains("the total stride reaches 64; allowed up to 32 (data.imgsz is a "
                                 "multiple of 32)"));

  // The head and the top-level keys.
  auto head_error = [&](const std::string& from, const std::string& text) {
    std::string yaml = std::regex_replace(with_row("[-1, 1, Conv, [128, 3, 2]]"),
                                          std::regex(R"(\[\[8, 6\], 1, Detect, \[nc\]\])"), from);
    if (!text.empty()) yaml = text + "\n" + yaml;
    detrain::test::write_text(path, yaml);
    return build_error(path);
  };
  CHECK_THAT(head_error("[[8, 6], 1, Detect, [0]]", ""),
             Catch::Contains("layer 9 (Detect [0]): nc (classes) is 0; allowed 1 to 100000"));
  CHECK_THAT(head_error("[[8, 6], 1, Detect, [100001]]", ""),
             Catch::Contains("nc (classes) is 100001; allowed 1 to 100000"));
  detrain::test::write_text(path, std::regex_replace(with_row("[-1, 1, Conv, [128, 3, 2]]"),
                                                     std::regex("nc: 4"), "nc: null"));
  CHECK_THAT(build_error(path), Catch::Contains(path + ": nc is null; give the number of classes"));
  detrain::test::write_text(path, std::regex_replace(with_row("[-1, 1, Conv, [128, 3, 2]]"),
                                                     std::regex("nc: 4"), "nc: 1000000"));
  CHECK_THAT(build_error(path), Catch::Contains("nc is 1000000; allowed 1 to 100000"));
  CHECK_THAT(head_error("[[8, 6], 1, Detect, [nc]]", "reg_maxx: 4"),
             Catch::Contains(path + ": unknown key 'reg_maxx'; did you mean 'reg_max'?"));
  detrain::test::write_text(path, std::regex_replace(with_row("[-1, 1, Conv, [128, 3, 2]]"),
                                                     std::regex("0.25, 1024"), "0, 1024"));
  CHECK_THAT(build_error(path),
             Catch::Contains(path + ": scale 'n' width multiple is 0.0; allowed above 0 up to 4"));
}

TEST_CASE("detrain model and detrain train refuse a bad row with exit 6 and no run directory",
          "[smoke][model]") {
  TempDir dir;
  const std::string path = dir.file("stride0.yaml");
  detrain::test::write_text(path, with_row("[-1, 1, Conv, [64, 3, 0]]"));
  auto r = detrain::test::run_detrain("model -m '" + path + "'");
  INFO(r.output);
  CHECK(r.exit_code == static_cast<int>(ExitCode::kModel));
  CHECK(r.output == "detrain: error: " + path +
                        " layer 1 (Conv [64, 3, 0]): stride is 0; allowed 1, 2, 4 or 8\n");

  r = detrain::test::run_detrain("model -m '" + dir.path() + "'");
  CHECK(r.exit_code == static_cast<int>(ExitCode::kModel));
  CHECK_THAT(r.output, Catch::Contains("is not a file"));

  const auto synth = detrain::test::tiny_synth(dir);
  r = detrain::test::run_detrain("train model.arch='" + path + "' train.project='" +
                                 dir.file("runs") + "' data.dataset='" + synth.detect_yaml + "'");
  INFO(r.output);
  CHECK(r.exit_code == static_cast<int>(ExitCode::kModel));
  CHECK_THAT(r.output, Catch::Contains("stride is 0; allowed 1, 2, 4 or 8"));
  CHECK_FALSE(fs::exists(dir.file("runs")));
}

TEST_CASE("fuzzed model YAML rows build and run or fail with a ModelError, each within 10 s",
          "[unit][model][fuzz]") {
  const std::string original = read_file(resolve_resource("models/yolo26.yaml"));
  std::vector<std::string> lines;
  std::vector<size_t> rows;  // indices of "  - [...]" lines
  {
    std::istringstream in(original);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("  - [", 0) == 0) rows.push_back(lines.size());
      lines.push_back(line);
    }
  }
  REQUIRE(rows.size() == 24);
  const std::vector<std::string> values{"-3",  "-1",  "0",    "1",       "2",     "3",
                                        "4",   "7",   "999",  "1000",    "0.0",   "-0.5",
                                        "0.3", "1e9", "True", "None",    "'x'",   "[1, 2]",
                                        "nc",  "[]",  "2.5",  "1048576", "False", "[3, -1]"};
  std::mt19937 rng(19);
  TempDir dir;
  const std::string path = dir.file("fuzz.yaml");
  torch::NoGradGuard no_grad;
  int built = 0, refused = 0;
  for (int trial = 0; trial < 240; ++trial) {
    std::vector<std::string> mutated = lines;
    std::string& line = mutated[rows[rng() % rows.size()]];
    // Split "  - [from, repeats, Module, [a, b, c]] # comment" into its fields and change one
    // argument, the repeats or the from.
    const std::string body = line.substr(0, line.find(" #"));
    const size_t open = body.find('[', body.find(", ", body.find(", ") + 2));
    const size_t close = body.rfind(']', body.size() - 2);
    const std::string value = values[rng() % values.size()];
    const int what = static_cast<int>(rng() % 6);
    if (what == 0) {  // repeats
      const size_t first = body.find(", ");
      const size_t second = body.find(", ", first + 2);
      line = body.substr(0, first + 2) + value + body.substr(second);
    } else if (what == 1) {  // append an argument
      line = body.substr(0, close) + (close > open + 1 ? ", " : "") + value + body.substr(close);
    } else {  // replace argument 0-3
      std::vector<std::string> args;
      std::string inner = body.substr(open + 1, close - open - 1), part;
      std::istringstream in(inner);
      while (std::getline(in, part, ',')) args.push_back(part);
      const size_t i = args.empty() ? 0 : (what - 2) % args.size();
      if (args.empty())
        args.push_back(value);
      else
        args[i] = (i ? " " : "") + value;
      std::string joined;
      for (size_t k = 0; k < args.size(); ++k) joined += (k ? "," : "") + args[k];
      line = body.substr(0, open + 1) + joined + body.substr(close);
    }
    std::string text;
    for (const auto& l : mutated) text += l + "\n";
    detrain::test::write_text(path, text);

    INFO("trial " << trial << ": " << line);
    const auto start = std::chrono::steady_clock::now();
    try {
      config::ModelOptions options;
      options.arch = path;
      options.scale = "n";
      model::YoloModel m = model::make_model(options);
      m->eval();
      m->forward_eval(torch::zeros({1, 3, 64, 64}));
      m->train();
      m->forward_train(torch::zeros({1, 3, 64, 64}));
      ++built;
    } catch (const ModelError& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    } catch (const std::exception& e) {
      FAIL("not a ModelError: " << e.what());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(seconds < 10.0);
  }
  INFO(built << " built, " << refused << " refused");
  CHECK(built + refused == 240);
  CHECK(refused > 40);  // the mutations do reach the checks
  CHECK(built > 40);    // and leave good rows alone
}

TEST_CASE("a YAML without a scales table has no scale: its multiples, C3k2 as written",
          "[unit][model]") {
  // A user's YAML as Ultralytics writes it into a .pt built from it: depth_multiple /
  // width_multiple, no scales. The reference's parse_model has scale None then, so model.scale
  // (even m) must not force C3k blocks.
  TempDir dir;
  const std::string path = dir.file("mine.yaml");
  detrain::test::write_text(path, R"(nc: 3
depth_multiple: 0.5
width_multiple: 0.25
backbone:
  - [-1, 1, Conv, [64, 3, 2]]
  - [-1, 2, C3k2, [128, False, 0.25]]
  - [-1, 1, Conv, [256, 3, 2]]
head:
  - [[-1], 1, Detect, [nc]]
)");
  model::BuildOptions o;
  o.arch = path;
  o.scale = "m";
  const model::Network net = model::check_network(o);
  CHECK(net.arch.scale.empty());
  CHECK(net.arch.name() == "mine");
  CHECK(net.arch.depth == 0.5);
  CHECK(net.arch.width == 0.25);
  CHECK(net.rows[1].args == "[16, 32, 1, False, 0.25]");  // c3k stays False; 2 x 0.5 = 1 repeat
}
