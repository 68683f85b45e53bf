// Hand-worked cells for the evaluator's per-cell work: box IoU (crowd, touching boxes), OKS
// (visible points, the enlarged-box fallback), the greedy matcher (order, ties, ignore regions,
// crowds, closed area ranges, GT id 0), numpy-exact summation and the default thresholds.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>

#include "eval/coco_match.h"
#include "eval/coco_numeric.h"
#include "eval/coco_types.h"

using namespace detrain::eval;

namespace {

// A cell's ground truths built from plain vectors.
struct Gts {
  std::vector<BoxXywh> box;
  std::vector<double> area;
  std::vector<uint8_t> crowd, ignore, id_is_zero;
  CellGts view() const {
    CellGts v;
    v.count = static_cast<int>(area.size());
    v.box = box.data();
    v.area = area.data();
    v.crowd = crowd.data();
    v.ignore = ignore.data();
    v.id_is_zero = id_is_zero.data();
    return v;
  }
  void add(double area_value, bool is_crowd = false, bool zero_id = false,
           BoxXywh b = {0, 0, 1, 1}) {
    box.push_back(b);
    area.push_back(area_value);
    crowd.push_back(is_crowd);
    ignore.push_back(is_crowd);
    id_is_zero.push_back(zero_id);
  }
};

// Outcome of detection d at area range a and threshold t: 'T', 'F' or 'I'.
char outcome_at(const std::vector<OutcomeWord>& bits, int d, int a, int t, int num_areas,
                int words) {
  const OutcomeWord* w =
      bits.data() + outcome_offset(static_cast<size_t>(d), static_cast<size_t>(a),
                                   static_cast<size_t>(num_areas), words);
  const OutcomeWord bit = OutcomeWord{1} << (t % kOutcomeWordBits);
  if (w[t / kOutcomeWordBits] & bit) return 'T';
  if (w[words + t / kOutcomeWordBits] & bit) return 'I';
  return 'F';
}

struct Matched {
  std::vector<OutcomeWord> bits;
  std::vector<int32_t> npig;
  int areas = 0, words = 0;
  char at(int d, int a, int t) const { return outcome_at(bits, d, a, t, areas, words); }
};

Matched run_match(const Gts& gts, const std::vector<double>& det_area,
                  const std::vector<double>& ious, const std::vector<double>& thresholds,
                  const std::vector<AreaRange>& areas) {
  const MatchSetup setup = make_match_setup(thresholds, areas);
  std::vector<BoxXywh> boxes(det_area.size());
  const CellDets dets{static_cast<int>(det_area.size()), boxes.data(), det_area.data()};
  Matched m;
  m.areas = static_cast<int>(areas.size());
  m.words = setup.words;
  m.bits.assign(outcome_offset(det_area.size(), 0, areas.size(), setup.words),
                static_cast<OutcomeWord>(0xdeadbeef));
  m.npig.assign(areas.size(), -7);
  MatchScratch scratch;
  match_cell(gts.view(), dets, ious.data(), setup, m.bits.data(), m.npig.data(), scratch);
  return m;
}

const std::vector<AreaRange> kAll = {{"all", 0, 1e10}};

}  // namespace

TEST_CASE("coco box iou by hand", "[unit][eval]") {
  Gts gts;
  gts.add(100, false, false, {5, 5, 10, 10});
  gts.add(100, false, false, {10, 0, 10, 10});
  gts.add(10000, true, false, {0, 0, 100, 100});
  const std::vector<BoxXywh> boxes = {{0, 0, 10, 10}, {90, 90, 20, 20}};
  const std::vector<double> areas = {100, 400};
  const CellDets dets{2, boxes.data(), areas.data()};
  std::vector<double> ious(6);
  box_ious(dets, gts.view(), ious.data());
  CHECK(ious[0] == 25.0 / 175.0);  // overlap 5 x 5, union 100 + 100 - 25
  CHECK(ious[1] == 0.0);           // touching edges: w = 0 counts as no overlap
  CHECK(ious[2] == 1.0);           // crowd: intersection over the detection's own area
  CHECK(ious[3] == 0.0);
  CHECK(ious[4] == 0.0);
  CHECK(ious[5] == 100.0 / 400.0);  // 10 x 10 of the 20 x 20 detection lies in the crowd box
}

TEST_CASE("coco oks by hand", "[unit][eval]") {
  // K = 2, sigmas 0.1 and 0.2. GT: point 0 visible at (10, 10), point 1 not labelled.
  const std::vector<double> variances = {(0.1 * 2) * (0.1 * 2), (0.2 * 2) * (0.2 * 2)};
  const std::vector<double> gt_points = {10, 10, 2, 20, 20, 0};
  const std::vector<double> dt_points = {13, 14, 1, 0, 0, 1};
  Gts gts;
  gts.add(100, false, false, {0, 0, 20, 20});
  CellKeypoints kps;
  kps.num_keypoints = 2;
  kps.variances = variances.data();
  kps.gt_rows = {gt_points.data()};
  kps.dt_rows = {dt_points.data()};
  double oks = 0;
  keypoint_oks(kps, gts.view(), 1, &oks);
  // Only the visible point counts: d^2 = 3^2 + 4^2 = 25, e = 25 / (2 * 100 * 0.2^2) = 3.125;
  // exp(-3.125) = 0.04393693362340742 (math.exp). 1e-15: the var and area+eps roundings.
  CHECK(oks == Approx(0.04393693362340742).margin(1e-15));

  // No visible point: distance to the GT box enlarged by its size on each side, all K points
  // averaged. The box [10, 10, 10, 10] grows to [0, 30] x [0, 30].
  const std::vector<double> hidden = {0, 0, 0, 0, 0, 0};
  kps.gt_rows = {hidden.data()};
  Gts box_gt;
  box_gt.add(100, false, false, {10, 10, 10, 10});
  const std::vector<double> inside = {0, 30, 1, 15, 15, 1};
  kps.dt_rows = {inside.data()};
  keypoint_oks(kps, box_gt.view(), 1, &oks);
  CHECK(oks == 1.0);  // every point inside: exp(-0) for each
  const std::vector<double> one_out = {35, 15, 1, 15, 15, 1};  // 5 px right of the region
  kps.dt_rows = {one_out.data()};
  keypoint_oks(kps, box_gt.view(), 1, &oks);
  // (exp(-25 / 0.04 / 100 / 2) + 1) / 2 = (exp(-3.125) + 1) / 2.
  CHECK(oks == Approx((0.04393693362340742 + 1) / 2).margin(1e-15));
}

TEST_CASE("coco matcher is greedy by score with per-threshold state", "[unit][eval]") {
  Gts gts;
  gts.add(100);
  gts.add(100);
  // d0 overlaps g0 0.6 and g1 0.7; d1 overlaps g0 0.9.
  const std::vector<double> ious = {0.6, 0.7, 0.9, 0.0};
  const auto m = run_match(gts, {100, 100}, ious, {0.5, 0.65, 0.75, 0.95}, kAll);
  CHECK(m.npig[0] == 2);
  CHECK(m.at(0, 0, 0) == 'T');  // takes g1 (best IoU 0.7); d1 then takes g0
  CHECK(m.at(1, 0, 0) == 'T');
  CHECK(m.at(0, 0, 1) == 'T');  // 0.6 < 0.65, still g1
  CHECK(m.at(0, 0, 2) == 'F');  // nothing >= 0.75
  CHECK(m.at(1, 0, 2) == 'T');
  CHECK(m.at(1, 0, 3) == 'F');  // 0.9 < 0.95
}

TEST_CASE("coco matcher ties go to the later gt and matched gts are taken", "[unit][eval]") {
  Gts gts;
  gts.add(100);
  gts.add(100, false, /*zero_id=*/true);
  // Both detections overlap both GTs equally: d0 takes the later GT (id 0: a false positive),
  // d1 the remaining one.
  const auto m = run_match(gts, {100, 100}, {0.8, 0.8, 0.8, 0.8}, {0.5}, kAll);
  CHECK(m.at(0, 0, 0) == 'F');
  CHECK(m.at(1, 0, 0) == 'T');
}

TEST_CASE("coco matcher stops at ignored gts once matched and crowds absorb", "[unit][eval]") {
  Gts gts;
  gts.add(100);
  gts.add(10000, /*crowd=*/true);
  // d0: 0.6 with the regular GT, 0.9 with the crowd -> the regular GT (ignored ones come last and
  // cannot replace a regular match). d1, d2: only the crowd -> both ignored.
  const std::vector<double> ious = {0.6, 0.9, 0.0, 0.9, 0.0, 0.95};
  const auto m = run_match(gts, {100, 100, 100}, ious, {0.5, 0.7}, kAll);
  CHECK(m.npig[0] == 1);
  CHECK(m.at(0, 0, 0) == 'T');
  CHECK(m.at(1, 0, 0) == 'I');
  CHECK(m.at(2, 0, 0) == 'I');
  // At 0.7 the regular GT is out of reach: d0 goes to the crowd and is ignored.
  CHECK(m.at(0, 0, 1) == 'I');
}

TEST_CASE("coco matcher area ranges are closed and use det area only when unmatched",
          "[unit][eval]") {
  const std::vector<AreaRange> areas = {
      {"all", 0, 1e10}, {"small", 0, 1024}, {"medium", 1024, 9216}, {"large", 9216, 1e10}};
  Gts gts;
  gts.add(1024);  // exactly on the small/medium boundary: counts in both
  gts.add(900);   // small; its detection below has a medium-sized box
  // d0 matches g0, d1 matches g1, d2 is unmatched with area 9216 (medium and large).
  const std::vector<double> ious = {0.9, 0.0, 0.0, 0.9, 0.0, 0.0};
  const auto m = run_match(gts, {1024, 1600, 9216}, ious, {0.5}, areas);
  CHECK(m.npig == std::vector<int32_t>{2, 2, 1, 0});
  CHECK(m.at(0, 1, 0) == 'T');  // small: g0 in range
  CHECK(m.at(0, 2, 0) == 'T');  // medium: g0 in range too
  CHECK(m.at(1, 1, 0) == 'T');  // small: matched to an in-range GT, own area out of range
  CHECK(m.at(1, 2, 0) == 'I');  // medium: its GT is out of range -> ignored with it
  CHECK(m.at(2, 1, 0) == 'I');  // unmatched, own area out of small -> ignored
  CHECK(m.at(2, 2, 0) == 'F');  // unmatched, 9216 is inside medium
  CHECK(m.at(2, 3, 0) == 'F');  // and inside large
  CHECK(m.at(0, 3, 0) == 'I');  // large: g0 out of range; d0 matches it anyway and is ignored
}

TEST_CASE("coco matcher gt id 0 reads as unmatched", "[unit][eval]") {
  const std::vector<AreaRange> areas = {{"all", 0, 1e10}, {"small", 0, 1024}};
  Gts gts;
  gts.add(400, false, /*zero_id=*/true);
  // The match is recorded (the GT is taken) but counts as a false positive; with the
  // detection's own area out of range it is ignored like any unmatched detection.
  const auto m = run_match(gts, {400, 2000}, {1.0, 0.9}, {0.5}, areas);
  CHECK(m.at(0, 0, 0) == 'F');
  CHECK(m.at(1, 0, 0) == 'F');  // GT already taken by d0
  CHECK(m.at(0, 1, 0) == 'F');
  CHECK(m.at(1, 1, 0) == 'I');  // unmatched and 2000 > 1024
}

TEST_CASE("coco matcher with no gt or no detections", "[unit][eval]") {
  const std::vector<AreaRange> areas = {{"all", 0, 1e10}, {"small", 0, 1024}};
  Gts none;
  const auto m = run_match(none, {100, 5000}, {}, {0.5, 0.75}, areas);
  CHECK(m.npig == std::vector<int32_t>{0, 0});
  CHECK(m.at(0, 0, 1) == 'F');
  CHECK(m.at(1, 1, 0) == 'I');
  Gts two;
  two.add(100);
  two.add(100, true);
  const auto empty = run_match(two, {}, {}, {0.5}, areas);
  CHECK(empty.npig == std::vector<int32_t>{1, 1});
}

TEST_CASE("coco matcher handles more than 32 thresholds", "[unit][eval]") {
  const std::vector<double> thresholds = numpy_linspace(0.05, 0.95, 40);
  Gts gts;
  gts.add(100);
  const auto m = run_match(gts, {100}, {0.5}, thresholds, kAll);
  for (int t = 0; t < 40; ++t) CHECK(m.at(0, 0, t) == (thresholds[t] <= 0.5 ? 'T' : 'F'));
}

TEST_CASE("coco numpy summation order", "[unit][eval]") {
  // Expected values from numpy 1.24.2: np.sum / np.mean on the same float64 arrays.
  std::vector<double> tenths;
  for (int i = 0; i < 20000; ++i) tenths.push_back(i * 0.1);
  CHECK(numpy_sum(tenths.data(), tenths.size()) == 19999000.0);  // a plain loop gives ...996
  std::vector<double> sines;
  for (int i = 0; i < 100; ++i) sines.push_back(std::sin(i) * 1e3);
  CHECK(numpy_sum(sines.data(), sines.size()) == 379.1946274493389);  // loop: ...33935
  std::vector<double> harmonic;
  for (int i = 0; i < 9000; ++i) harmonic.push_back(1.0 / (i + 1));
  CHECK(numpy_mean(harmonic.data(), harmonic.size()) == 0.00107580567508296);
  CHECK(numpy_sum(harmonic.data(), 17) == 3.439552522640758);
}

TEST_CASE("coco default thresholds are numpy's linspace values", "[unit][eval]") {
  // np.linspace(.5, 0.95, 10) and np.linspace(0, 1, 101) from numpy 1.24.2, as hex.
  const auto p = CocoParams::defaults(IouType::kBbox);
  const std::vector<double> iou = {0x1.0000000000000p-1, 0x1.199999999999ap-1, 0x1.3333333333333p-1,
                                   0x1.4cccccccccccdp-1, 0x1.6666666666666p-1, 0x1.8000000000000p-1,
                                   0x1.999999999999ap-1, 0x1.b333333333333p-1, 0x1.cccccccccccccp-1,
                                   0x1.e666666666666p-1};
  CHECK(p.iou_thresholds == iou);
  REQUIRE(p.recall_thresholds.size() == 101);
  for (int i = 0; i < 101; ++i) CHECK(p.recall_thresholds[i] == i * 0.01);
  CHECK(p.recall_thresholds[35] == 0x1.6666666666667p-2);  // 0.35000000000000003
  CHECK(p.max_dets == std::vector<int64_t>{1, 10, 100});
  CHECK(p.area_ranges[2].lo == 1024);
  CHECK(p.area_ranges[0].hi == 1e10);
  const auto k = CocoParams::defaults(IouType::kKeypoints);
  CHECK(k.max_dets == std::vector<int64_t>{20});
  CHECK(k.area_ranges.size() == 3);
  // pycocotools divides the literals by 10: 0.026000000000000002, 0.034999999999999996, ...
  CHECK(k.keypoint_sigmas[0] == 0.026000000000000002);
  CHECK(k.keypoint_sigmas[3] == 0.034999999999999996);
  CHECK(k.keypoint_sigmas[11] == 0.10700000000000001);
  CHECK(k.keypoint_sigmas.size() == 17);
}

TEST_CASE("coco oks shortcut changes only values below the floor", "[unit][eval]") {
  // 17 points, COCO's sigmas; a GT at a fixed place and detections from on top of it to far
  // away, visible points and the box fallback, plus a NaN coordinate. With floor 0.5 every
  // value at or above it must be the exact one and every other one stay below it.
  const std::vector<double> sigmas = coco_person_sigmas();
  std::vector<double> variances;
  for (double s : sigmas) variances.push_back((s * 2) * (s * 2));
  const int k = 17;
  for (const bool labelled : {true, false}) {
    std::vector<double> gt_points(3 * k);
    for (int j = 0; j < k; ++j) {
      gt_points[3 * j] = 100 + 3 * j;
      gt_points[3 * j + 1] = 200 + 2 * j;
      gt_points[3 * j + 2] = labelled && j % 4 != 0 ? 2 : 0;
    }
    Gts gts;
    gts.add(1500, false, false, {95, 190, 60, 50});
    std::vector<std::vector<double>> dets;
    for (int step = 0; step < 60; ++step) {
      std::vector<double> p = gt_points;
      for (int j = 0; j < k; ++j) {
        p[3 * j] += 2.0 * step * (j % 3);  // from exact to far away (the box fallback too)
        p[3 * j + 1] -= 1.5 * step * (j % 2);
        p[3 * j + 2] = 1;
      }
      dets.push_back(p);
    }
    dets.back()[3] = NAN;
    CellKeypoints kps;
    kps.num_keypoints = k;
    kps.variances = variances.data();
    kps.gt_rows = {gt_points.data()};
    for (const auto& d : dets) kps.dt_rows.push_back(d.data());
    const int n = static_cast<int>(dets.size());
    std::vector<double> exact(dets.size()), fast(dets.size());
    keypoint_oks(kps, gts.view(), n, exact.data());
    keypoint_oks(kps, gts.view(), n, fast.data(), 0.5);
    int skipped = 0;
    for (size_t d = 0; d < dets.size(); ++d) {
      INFO("labelled " << labelled << " det " << d << ": " << exact[d] << " vs " << fast[d]);
      if (std::isnan(exact[d]))
        CHECK(std::isnan(fast[d]));
      else if (exact[d] >= 0.5)
        CHECK(fast[d] == exact[d]);
      else
        CHECK(fast[d] < 0.5);
      skipped += fast[d] != exact[d];
    }
    CHECK(exact.front() == 1.0);
    CHECK(skipped > 0);  // the far ones took the shortcut
  }
}

namespace {

// pycocotools' evaluateImg for one cell, written out loop by loop as in cocoeval.py (no
// candidates, no ranked lists, no shared thresholds): the reference for the matcher above.
// Returns 'T', 'F' or 'I' per [d][a][t].
std::vector<std::vector<std::string>> evaluate_img_reference(const Gts& gts,
                                                             const std::vector<double>& det_area,
                                                             const std::vector<double>& ious,
                                                             const std::vector<double>& thresholds,
                                                             const std::vector<AreaRange>& areas) {
  const int G = static_cast<int>(gts.area.size()), D = static_cast<int>(det_area.size());
  std::vector<std::vector<std::string>> out(
      static_cast<size_t>(D),
      std::vector<std::string>(areas.size(), std::string(thresholds.size(), 'F')));
  for (size_t a = 0; a < areas.size(); ++a) {
    std::vector<int> ig(static_cast<size_t>(G)), gtind;
    for (int g = 0; g < G; ++g)
      ig[g] = gts.ignore[g] || gts.area[g] < areas[a].lo || gts.area[g] > areas[a].hi;
    for (int pass = 0; pass < 2; ++pass)  // np.argsort(_ignore, kind='mergesort')
      for (int g = 0; g < G; ++g)
        if (ig[g] == pass) gtind.push_back(g);
    for (size_t t = 0; t < thresholds.size(); ++t) {
      std::vector<int> gtm(static_cast<size_t>(G), 0);  // matched det id (ids from 1), 0: none
      for (int d = 0; d < D; ++d) {
        double iou = std::min(thresholds[t], 1 - 1e-10);
        int m = -1;
        for (const int g : gtind) {
          if (gtm[g] > 0 && !gts.crowd[g]) continue;
          if (m > -1 && ig[m] == 0 && ig[g] == 1) break;
          if (ious[static_cast<size_t>(d) * G + g] < iou) continue;
          iou = ious[static_cast<size_t>(d) * G + g];
          m = g;
        }
        bool dt_ig = false, matched_id = false;
        if (m != -1) {
          dt_ig = ig[m] != 0;
          matched_id = !gts.id_is_zero[m];
          gtm[m] = d + 1;
        }
        const bool out_of_range = det_area[d] < areas[a].lo || det_area[d] > areas[a].hi;
        dt_ig = dt_ig || (!matched_id && out_of_range);
        out[d][a][t] = dt_ig ? 'I' : matched_id ? 'T' : 'F';
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("coco matcher equals evaluateImg's loops on random cells", "[unit][eval]") {
  // Random cells made to hit the matcher's corners: IoUs on a coarse grid (ties, values exactly
  // on a threshold), crowds, ignored GTs, GT id 0, areas on and across the range bounds, the
  // odd NaN, and besides COCO's ten thresholds unsorted ones with repeats.
  std::mt19937 rng(20261204);
  const std::vector<AreaRange> areas = {
      {"all", 0, 1e10}, {"small", 0, 1024}, {"medium", 1024, 9216}, {"large", 9216, 1e10}};
  const std::vector<double> area_values = {100, 1024, 2000, 9216, 20000};
  const std::vector<double> coco_thresholds = numpy_linspace(0.5, 0.95, 10);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int cells = 0, matched_somewhere = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    Gts gts;
    const int G = pick(9), D = pick(13);
    for (int g = 0; g < G; ++g) {
      const bool crowd = pick(8) == 0, zero_id = pick(20) == 0;
      gts.add(area_values[static_cast<size_t>(pick(5))], crowd, zero_id);
      if (!crowd && pick(10) == 0) gts.ignore.back() = 1;  // keypoints: num_keypoints == 0
    }
    std::vector<double> det_area(static_cast<size_t>(D)), ious(static_cast<size_t>(D * G));
    for (auto& v : det_area) v = area_values[static_cast<size_t>(pick(5))];
    const bool with_nan = pick(25) == 0;
    for (auto& v : ious) v = pick(3) == 0 ? 0.0 : 0.05 * (6 + pick(15));  // 0.3 .. 1.0
    if (with_nan && !ious.empty())
      ious[static_cast<size_t>(pick(static_cast<int>(ious.size())))] = NAN;
    std::vector<double> thresholds = coco_thresholds;
    if (trial % 3 == 0) {
      thresholds.clear();
      for (int t = 0, n = 1 + pick(6); t < n; ++t) thresholds.push_back(0.05 * (8 + pick(12)));
    }
    const auto m = run_match(gts, det_area, ious, thresholds, areas);
    const auto ref = evaluate_img_reference(gts, det_area, ious, thresholds, areas);
    bool any_tp = false;
    for (int d = 0; d < D; ++d)
      for (int a = 0; a < 4; ++a)
        for (int t = 0; t < static_cast<int>(thresholds.size()); ++t) {
          INFO("trial " << trial << " det " << d << " area " << a << " threshold " << t);
          REQUIRE(m.at(d, a, t) == ref[d][a][t]);
          any_tp |= ref[d][a][t] == 'T';
        }
    ++cells;
    matched_somewhere += any_tp;
  }
  CHECK(cells == 4000);
  CHECK(matched_somewhere > 1000);  // the cells do exercise matching, not only misses
}
