// Fuzzing the COCO JSON loaders and the evaluator behind them: every truncation of a valid
// ground-truth and results file, and seeded random mutations, must either load (and evaluate)
// or fail with a typed error; never crash, hang or throw anything else.
#include <catch2/catch.hpp>

#include "coco_test_cases.h"
#include "common/errors.h"
#include "common/rng.h"
#include "eval/coco_eval.h"
#include "eval/coco_json.h"

using namespace detrain::eval;

namespace {

// Loads both texts and evaluates; returns "ok" or the typed error's kind. Anything else
// (std::exception from a bug, a crash) fails the test.
std::string load_and_evaluate(const std::string& gt_text, const std::string& results_text,
                              IouType type) {
  try {
    const auto gt = parse_ground_truth_json(gt_text, "gt.json");
    const auto dets = parse_results_json(results_text, "results.json", type);
    CocoParams params = CocoParams::defaults(type);
    if (type == IouType::kKeypoints && gt.keypoints_per_instance > 0 &&
        gt.keypoints_per_instance != 17)
      params.keypoint_sigmas.assign(static_cast<size_t>(gt.keypoints_per_instance), 0.05);
    const auto result = CocoEvaluator(gt, params, {2}).evaluate(dets);
    for (double s : result.stats) REQUIRE((s == -1 || (s >= 0 && s <= 1)));
    return "ok";
  } catch (const detrain::DataError&) {
    return "data";
  } catch (const detrain::ConfigError&) {
    return "config";
  }
}

// Replaces, inserts or deletes bytes, favouring JSON's structural characters.
std::string mutate(const std::string& text, detrain::Rng& rng) {
  static const std::string kAlphabet = "{}[]\",:-+.eE0123456789 \\utfnal\x01\xff";
  std::string out = text;
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits && !out.empty(); ++e) {
    const size_t at = rng.below(out.size());
    const char c = kAlphabet[rng.below(kAlphabet.size())];
    switch (rng.below(3)) {
      case 0:
        out[at] = c;
        break;
      case 1:
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), c);
        break;
      default:
        out.erase(at, 1 + rng.below(3));
    }
  }
  return out;
}

bool blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Every truncation of `cut` (sampled evenly) with `other` intact: a file whose top-level value
// is an object or a list can only load if the cut removed nothing but trailing whitespace, and
// otherwise must fail as malformed data (DataError), never as anything else.
void truncations(const detrain::test::EvalCase& c, bool cut_gt) {
  const std::string& text = cut_gt ? c.gt_json : c.results_json;
  size_t loaded = 0, expected = 0, tried = 0;
  std::string first_wrong;
  for (size_t n = 0; n < text.size(); n += 1 + text.size() / 1500) {
    const std::string cut = text.substr(0, n);
    const std::string outcome = cut_gt ? load_and_evaluate(cut, c.results_json, c.iou_type)
                                       : load_and_evaluate(c.gt_json, cut, c.iou_type);
    const bool whole = blank(text.substr(n));
    ++tried;
    loaded += outcome == "ok";
    expected += whole;
    if (outcome != (whole ? "ok" : "data") && first_wrong.empty())
      first_wrong =
          "cut at " + std::to_string(n) + " of " + std::to_string(text.size()) + ": " + outcome;
  }
  INFO((cut_gt ? "ground truth" : "results")
       << " truncations: " << tried << " tried, " << loaded << " loaded");
  CHECK(first_wrong.empty());
  CHECK(loaded == expected);
  CHECK(tried > 100);
}

void fuzz_case(const detrain::test::EvalCase& c, int mutations) {
  truncations(c, /*cut_gt=*/true);
  truncations(c, /*cut_gt=*/false);
  // Random edits to either file.
  detrain::Rng rng(2024, {c.gt_json.size()});
  size_t mutated_ok = 0;
  for (int i = 0; i < mutations; ++i) {
    const bool gt_side = rng.bernoulli(0.5);
    const std::string gt = gt_side ? mutate(c.gt_json, rng) : c.gt_json;
    const std::string results = gt_side ? c.results_json : mutate(c.results_json, rng);
    mutated_ok += load_and_evaluate(gt, results, c.iou_type) == "ok";
  }
  // Some edits keep the files valid (a digit for a digit): the evaluator ran on odd values too.
  CHECK(mutated_ok > 0);
  CHECK(load_and_evaluate(c.gt_json, c.results_json, c.iou_type) == "ok");
}

}  // namespace

TEST_CASE("coco json fuzz bbox files", "[fuzz][eval]") {
  fuzz_case(detrain::test::quirks_bbox_case(true), 3000);
}

TEST_CASE("coco json fuzz keypoint files", "[fuzz][eval]") {
  fuzz_case(detrain::test::quirks_keypoints_case(true), 1500);
  fuzz_case(detrain::test::quirks_keypoints_case(false), 1500);
}
