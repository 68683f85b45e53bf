// accumulate()'s score sort against std::stable_sort on the same entries: the same order, slot
// for slot, for the score shapes results files have (rounded scores with many zeros, a few
// distinct values, a long tail of low scores), the ones that stress its buckets (one score, a
// single outlier far from a crowded rest, -0 beside +0, infinities, subnormal ranges) and sizes
// on both sides of its small-input path.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "eval/coco_score_sort.h"

using detrain::eval::ScoredSlot;
using detrain::eval::ScoreSortScratch;
using detrain::eval::sort_by_score_stable;

namespace {

std::vector<ScoredSlot> entries_with(const std::vector<double>& scores) {
  std::vector<ScoredSlot> entries;
  for (size_t i = 0; i < scores.size(); ++i)
    entries.push_back({scores[i], static_cast<uint32_t>(i), static_cast<uint32_t>(i % 7)});
  return entries;
}

// Sorts with the evaluator's sort and with std::stable_sort; both orders must match exactly,
// scores bit for bit (so a -0 stays where numpy's stable argsort leaves it).
void check_same_order(const std::vector<double>& scores, ScoreSortScratch& scratch) {
  std::vector<ScoredSlot> ours = entries_with(scores);
  std::vector<ScoredSlot> reference = ours;
  std::stable_sort(reference.begin(), reference.end(),
                   [](const ScoredSlot& a, const ScoredSlot& b) { return a.score > b.score; });
  sort_by_score_stable(ours, scratch);
  REQUIRE(ours.size() == reference.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < ours.size(); ++i)
    mismatches += ours[i].slot != reference[i].slot || ours[i].rank != reference[i].rank ||
                  std::memcmp(&ours[i].score, &reference[i].score, sizeof(double)) != 0;
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("score sort gives std::stable_sort's order for every score shape", "[eval][sort]") {
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  const double tiny = std::numeric_limits<double>::denorm_min();
  struct Shape {
    std::string name;
    std::function<double()> draw;
  };
  const std::vector<Shape> shapes = {
      {"uniform", [&] { return unit(rng); }},
      {"rounded to 3 decimals, a third zeros",
       [&] { return unit(rng) < 0.33 ? 0.0 : std::round(unit(rng) * 1000) / 1000; }},
      {"five distinct values", [&] { return static_cast<double>(rng() % 5) / 4; }},
      {"long tail of low scores", [&] { return std::pow(unit(rng), 8.0); }},
      {"one outlier, the rest crowded",
       [&] { return unit(rng) < 0.001 ? 1e6 : 0.5 + unit(rng) * 1e-9; }},
      {"-0 and +0 among others",
       [&] { return unit(rng) < 0.5 ? (rng() % 2 ? -0.0 : 0.0) : unit(rng) - 0.5; }},
      {"infinities", [&] { return unit(rng) < 0.1 ? (rng() % 2 ? inf : -inf) : unit(rng); }},
      {"subnormal range", [&] { return tiny * static_cast<double>(rng() % 1000); }},
      {"one score", [] { return 0.25; }},
  };
  ScoreSortScratch scratch;  // reused, as accumulate() reuses it across categories
  for (const Shape& shape : shapes)
    for (const size_t n : {0, 1, 2, 63, 64, 65, 1000, 70000}) {
      INFO(shape.name << ", " << n << " entries");
      std::vector<double> scores(n);
      for (double& s : scores) s = shape.draw();
      check_same_order(scores, scratch);
    }
}

TEST_CASE("score sort keeps equal scores in input order when the input is not by slot",
          "[eval][sort]") {
  // Stability is about input positions: slots given in descending order must stay so.
  std::vector<ScoredSlot> entries;
  for (uint32_t i = 0; i < 500; ++i) entries.push_back({i % 3 == 0 ? 0.5 : 0.25, 1000 - i, 0});
  ScoreSortScratch scratch;
  sort_by_score_stable(entries, scratch);
  for (size_t i = 1; i < entries.size(); ++i) {
    INFO("position " << i);
    REQUIRE(entries[i - 1].score >= entries[i].score);
    if (entries[i - 1].score == entries[i].score) CHECK(entries[i - 1].slot > entries[i].slot);
  }
}
