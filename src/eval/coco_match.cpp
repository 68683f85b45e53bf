// Similarity matrices and the greedy matcher; see coco_match.h. Compiled without FP contraction
// (project-wide -ffp-contract=off): a fused multiply-add would move IoU/OKS by an ulp and flip
// matches that sit exactly on a threshold.
#include "eval/coco_match.h"

#include <algorithm>
#include <cmath>

#include "eval/coco_numeric.h"

namespace detrain::eval {

void box_ious(const CellDets& dets, const CellGts& gts, double* ious) {
  const int num_gt = gts.count;
  for (int g = 0; g < num_gt; ++g) {
    const BoxXywh& gb = gts.box[g];
    const double gt_area = gb.w * gb.h;
    const bool crowd = gts.crowd[g] != 0;
    for (int d = 0; d < dets.count; ++d) {
      const BoxXywh& db = dets.box[d];
      double& out = ious[static_cast<size_t>(d) * num_gt + g];
      out = 0;
      const double w = std::fmin(db.w + db.x, gb.w + gb.x) - std::fmax(db.x, gb.x);
      if (w <= 0) continue;
      const double h = std::fmin(db.h + db.y, gb.h + gb.y) - std::fmax(db.y, gb.y);
      if (h <= 0) continue;
      const double dt_area = db.w * db.h;
      const double inter = w * h;
      const double uni = crowd ? dt_area : dt_area + gt_area - inter;
      out = inter / uni;
    }
  }
}

namespace {

// exp(-3) = 0.049787...: a term whose e is at least 3 adds at most this much to the OKS sum.
constexpr double kFarExponent = 3;
constexpr double kFarTermBound = 0.0498;
// e >= 3 is decided as d2 > 6 * variance * area, with this much slack for the rounding of the
// two divisions that give e (each within half an ulp).
constexpr double kFarSlack = 1 + 1e-9;

}  // namespace

namespace {

bool finite_points(const double* row, int k_count) {
  for (int k = 0; k < k_count; ++k)
    if (!std::isfinite(row[3 * k]) || !std::isfinite(row[3 * k + 1])) return false;
  return true;
}

}  // namespace

void keypoint_oks(const CellKeypoints& kps, const CellGts& gts, int num_dets, double* ious,
                  double floor) {
  constexpr double kEps = 2.220446049250313e-16;  // np.spacing(1)
  const int k_count = kps.num_keypoints;
  std::vector<double> terms(static_cast<size_t>(k_count));
  std::vector<int> used(static_cast<size_t>(k_count));    // the points a GT's OKS averages
  std::vector<double> far(static_cast<size_t>(k_count));  // [K] d2 above which e >= 3
  std::vector<uint8_t> dt_finite(static_cast<size_t>(num_dets));
  for (int d = 0; d < num_dets; ++d)
    dt_finite[d] = finite_points(kps.dt_rows[static_cast<size_t>(d)], k_count);
  for (int g = 0; g < gts.count; ++g) {
    const double* gt = kps.gt_rows[static_cast<size_t>(g)];
    int n = 0;
    for (int k = 0; k < k_count; ++k)
      if (gt[3 * k + 2] > 0) used[n++] = k;
    const bool visible = n > 0;
    if (!visible)
      for (int k = 0; k < k_count; ++k) used[n++] = k;
    const BoxXywh& bb = gts.box[g];
    const double x0 = bb.x - bb.w, x1 = bb.x + bb.w * 2;
    const double y0 = bb.y - bb.h, y1 = bb.y + bb.h * 2;
    const double area = gts.area[g] + kEps;
    const auto squared_distance = [&](const double* dt, int k) {
      const double xd = dt[3 * k], yd = dt[3 * k + 1];
      double dx, dy;
      if (visible) {
        dx = xd - gt[3 * k];
        dy = yd - gt[3 * k + 1];
      } else {
        dx = std::max(0.0, x0 - xd) + std::max(0.0, xd - x1);
        dy = std::max(0.0, y0 - yd) + std::max(0.0, yd - y1);
      }
      return dx * dx + dy * dy;
    };
    // The shortcut needs every term in [0, 1] (e >= 0), finite inputs (a NaN distance must give
    // its NaN OKS) and a threshold to stay below. With `near` terms bounded by 1 and the others
    // by kFarTermBound, the OKS is below `floor` while near <= near_max.
    int near_max = -1;
    const bool may_skip = floor > 0 && n > 0 && area > 0 && std::isfinite(area) &&
                          finite_points(gt, k_count) && std::isfinite(x0) && std::isfinite(x1) &&
                          std::isfinite(y0) && std::isfinite(y1);
    if (may_skip) {
      for (int j = 0; j < n; ++j)
        far[j] = 2 * kFarExponent * kps.variances[used[j]] * area * kFarSlack;
      const double limit = floor * static_cast<double>(n) * (1 - 1e-9);
      for (int q = 0; q <= n; ++q)
        if (static_cast<double>(q) + static_cast<double>(n - q) * kFarTermBound < limit)
          near_max = q;
    }
    for (int d = 0; d < num_dets; ++d) {
      const double* dt = kps.dt_rows[static_cast<size_t>(d)];
      double& out = ious[static_cast<size_t>(d) * gts.count + g];
      // Squared distances first, stopping as soon as the count of near points decides: when
      // the terms provably average below `floor`, no exp().
      if (may_skip && near_max >= 0 && dt_finite[d]) {
        int near = 0, j = 0;
        for (; j < n && near <= near_max && near + (n - j) > near_max; ++j)
          near += !(squared_distance(dt, used[j]) > far[j]);
        if (near + (n - j) <= near_max) {
          out = 0;
          continue;
        }
      }
      // pycocotools' order: e = d2 / variance / area / 2, then exp(-e), summed as numpy does.
      for (int j = 0; j < n; ++j) {
        const int k = used[j];
        const double e = squared_distance(dt, k) / kps.variances[k] / area / 2;
        terms[j] = std::exp(-e);
      }
      out = numpy_sum(terms.data(), static_cast<size_t>(n)) / static_cast<double>(n);
    }
  }
}

MatchSetup make_match_setup(const std::vector<double>& iou_thresholds,
                            const std::vector<AreaRange>& areas) {
  MatchSetup setup;
  setup.lowest_threshold = 1 - 1e-10;
  for (double t : iou_thresholds) {
    setup.thresholds.push_back(std::min(t, 1 - 1e-10));
    setup.lowest_threshold = std::min(setup.lowest_threshold, setup.thresholds.back());
  }
  setup.areas = areas;
  setup.words = outcome_words(iou_thresholds.size());
  setup.all_bits.assign(static_cast<size_t>(setup.words), 0);
  for (size_t t = 0; t < iou_thresholds.size(); ++t)
    setup.all_bits[t / kOutcomeWordBits] |= OutcomeWord{1} << (t % kOutcomeWordBits);
  return setup;
}

namespace {

// Area range a's outcome of detections that match nothing: a false positive at every threshold,
// or ignored at every one when the detection's own area is out of the range.
void write_unmatched(const CellDets& dets, size_t a, const MatchSetup& setup,
                     OutcomeWord* outcome) {
  const size_t num_a = setup.areas.size();
  const int words = setup.words;
  const double lo = setup.areas[a].lo, hi = setup.areas[a].hi;
  const size_t stride = outcome_offset(1, 0, num_a, words);
  OutcomeWord* bits = outcome + outcome_offset(0, a, num_a, words);
  if (words == 1) {  // COCO's 10 thresholds; locals, since the stores may alias setup's words
    const OutcomeWord all = setup.all_bits[0];
    for (int d = 0; d < dets.count; ++d, bits += stride) {
      // Without branches: whether an area is in a range is a coin toss for the predictor.
      const int out_of_range = (dets.area[d] < lo) | (dets.area[d] > hi);
      bits[0] = 0;
      bits[1] = static_cast<OutcomeWord>(all & -out_of_range);
    }
    return;
  }
  for (int d = 0; d < dets.count; ++d, bits += stride) {
    const bool out_of_range = dets.area[d] < lo || dets.area[d] > hi;
    for (int w = 0; w < words; ++w) {
      bits[w] = 0;
      bits[words + w] = out_of_range ? setup.all_bits[static_cast<size_t>(w)] : 0;
    }
  }
}

}  // namespace

void match_cell_without_gts(const CellDets& dets, const MatchSetup& setup, OutcomeWord* outcome,
                            int32_t* npig) {
  for (size_t a = 0; a < setup.areas.size(); ++a) {
    write_unmatched(dets, a, setup, outcome);
    npig[a] = 0;
  }
}

namespace {

// evaluateImg's pick for one detection, read as it is written: GTs in gt_order (regular ones,
// then ignored ones), each taken when not already matched (crowds can be taken again) and its
// IoU is at least the best so far (the threshold to begin with). Used for cells with a NaN
// IoU, which passes every comparison and so defeats the ranked lists below. Returns the GT or -1.
int pick_by_scan(const double* row, double threshold, const CellGts& gts, const MatchScratch& s) {
  int match = -1;
  double best = threshold;
  for (int o = 0; o < gts.count; ++o) {
    const int g = s.gt_order[o];
    if (s.gt_matched[g] && !gts.crowd[g]) continue;
    // Once matched to a regular GT, the ignored GTs (sorted last) cannot take over.
    if (match >= 0 && !s.gt_ignored[match] && s.gt_ignored[g]) break;
    if (row[g] < best) continue;
    best = row[g];  // >=: among equal IoUs the later GT wins
    match = g;
  }
  return match;
}

// The same pick from the detection's ranked list (IoU descending, later GT first among equals:
// the order in which the scan above would prefer them): the first available regular GT at or
// above the threshold, else the first available ignored one. gt_order keeps file order within
// the regular and the ignored GTs, so "later" is the same in both orders.
int pick_by_rank(const RankedGt* ranked, const RankedGt* ranked_end, double threshold,
                 const CellGts& gts, const MatchScratch& s) {
  int ignored_pick = -1;
  for (const RankedGt* r = ranked; r != ranked_end && r->iou >= threshold; ++r) {
    const int g = r->gt;
    if (s.gt_matched[g] && !gts.crowd[g]) continue;
    if (!s.gt_ignored[g]) return g;
    if (ignored_pick < 0) ignored_pick = g;
  }
  return ignored_pick;
}

}  // namespace

void match_cell(const CellGts& gts, const CellDets& dets, const double* ious,
                const MatchSetup& setup, OutcomeWord* outcome, int32_t* npig, MatchScratch& s) {
  const int num_gt = gts.count;
  const int num_dt = dets.count;
  const size_t num_t = setup.thresholds.size();
  const size_t num_a = setup.areas.size();
  const int words = setup.words;

  // A detection whose best IoU is below every threshold cannot match: it is a false positive,
  // or ignored when its own area is out of range. Only the others (candidates) are matched,
  // each from its GTs at or above the lowest threshold, ranked once for every area range and
  // threshold (most detections of a crowded image reach one or two GTs, out of all of them).
  s.best_iou.resize(static_cast<size_t>(num_dt));
  s.candidates.clear();
  s.ranked.clear();
  s.ranked_begin.clear();
  bool any_nan = false;
  for (int d = 0; d < num_dt && num_gt > 0; ++d) {
    const double* row = ious + static_cast<size_t>(d) * num_gt;
    double best = -1.0;
    for (int g = 0; g < num_gt; ++g) {
      any_nan |= std::isnan(row[g]);
      // A NaN (from infinite coordinates) passes pycocotools' `iou < best` test: keep it.
      best = std::isnan(row[g]) ? HUGE_VAL : std::max(best, row[g]);
    }
    s.best_iou[d] = best;
    if (!(best >= setup.lowest_threshold)) continue;
    s.candidates.push_back(d);
    s.ranked_begin.push_back(static_cast<int>(s.ranked.size()));
    for (int g = num_gt - 1; g >= 0; --g)  // later GTs first, kept first by the stable sort
      if (row[g] >= setup.lowest_threshold) s.ranked.push_back({row[g], g});
    // Insertion sort, stable (the lists are short): IoU descending.
    for (size_t i = static_cast<size_t>(s.ranked_begin.back()) + 1; i < s.ranked.size(); ++i) {
      const RankedGt x = s.ranked[i];
      size_t k = i;
      for (; k > static_cast<size_t>(s.ranked_begin.back()) && s.ranked[k - 1].iou < x.iou; --k)
        s.ranked[k] = s.ranked[k - 1];
      s.ranked[k] = x;
    }
  }
  s.ranked_begin.push_back(static_cast<int>(s.ranked.size()));

  s.gt_ignored.resize(static_cast<size_t>(num_gt));
  s.gt_order.resize(static_cast<size_t>(num_gt));
  s.gt_matched.resize(static_cast<size_t>(num_gt));
  for (size_t a = 0; a < num_a; ++a) {
    const double lo = setup.areas[a].lo, hi = setup.areas[a].hi;
    // Unmatched outcome for every detection and threshold; matches below overwrite it.
    write_unmatched(dets, a, setup, outcome);
    // GTs: ignored ones last, file order inside each group (a stable sort on _ignore).
    int count = 0;
    for (int g = 0; g < num_gt; ++g) {
      s.gt_ignored[g] = gts.ignore[g] || gts.area[g] < lo || gts.area[g] > hi;
      if (!s.gt_ignored[g]) s.gt_order[count++] = g;
    }
    npig[a] = count;
    for (int g = 0; g < num_gt; ++g)
      if (s.gt_ignored[g]) s.gt_order[count++] = g;
    if (s.candidates.empty()) continue;

    // The greedy matching at threshold t is also the one at every t' >= t up to the lowest IoU
    // it matched: each pick is the best available GT at or above t, and when that is at or
    // above t' it is the best one at or above t' too, leaving the same GTs to the detections
    // after it. Runs of such thresholds are matched once. A NaN IoU breaks the argument (NaN
    // wins every comparison): such cells match each threshold on its own.
    for (size_t t = 0; t < num_t;) {
      const double threshold = setup.thresholds[t];
      std::fill(s.gt_matched.begin(), s.gt_matched.end(), 0);
      s.matches.clear();
      double lowest_match = HUGE_VAL;
      for (size_t c = 0; c < s.candidates.size(); ++c) {
        const int d = s.candidates[c];
        if (s.best_iou[d] < threshold) continue;
        const double* row = ious + static_cast<size_t>(d) * num_gt;
        const int g =
            any_nan ? pick_by_scan(row, threshold, gts, s)
                    : pick_by_rank(s.ranked.data() + s.ranked_begin[c],
                                   s.ranked.data() + s.ranked_begin[c + 1], threshold, gts, s);
        if (g < 0) continue;
        s.gt_matched[g] = 1;
        s.matches.push_back({d, g});
        lowest_match = std::fmin(lowest_match, row[g]);
      }
      size_t end = t + 1;  // thresholds [t, end) share this matching
      if (!any_nan)
        while (end < num_t && setup.thresholds[end] >= threshold &&
               setup.thresholds[end] <= lowest_match)
          ++end;
      for (const auto& [d, g] : s.matches) {
        const bool out_of_range = dets.area[d] < lo || dets.area[d] > hi;
        // A match to GT id 0 counts as unmatched (pycocotools stores matches by GT id).
        const bool ignored = s.gt_ignored[g] || (gts.id_is_zero[g] && out_of_range);
        const bool true_positive = !ignored && !gts.id_is_zero[g];
        OutcomeWord* bits = outcome + outcome_offset(static_cast<size_t>(d), a, num_a, words);
        for (size_t u = t; u < end; ++u) {
          const size_t w = u / kOutcomeWordBits;
          const OutcomeWord bit = OutcomeWord{1} << (u % kOutcomeWordBits);
          bits[words + w] = ignored ? bits[words + w] | bit : bits[words + w] & ~bit;
          if (true_positive) bits[w] |= bit;
        }
      }
      t = end;
    }
  }
}

}  // namespace detrain::eval
