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

void match_cell(const CellGts& gts, const CellDets& dets, const double* ious,
                const MatchSetup& setup, OutcomeWord* outcome, int32_t* npig, MatchScratch& s) {
  const int num_gt = gts.count;
  const int num_dt = dets.count;
  const size_t num_t = setup.thresholds.size();
  const size_t num_a = setup.areas.size();
  const int words = setup.words;

  // A detection whose best IoU is below a threshold cannot match at it: it is a false positive,
  // or ignored when its own area is out of range. Only the others (candidates) are scanned.
  s.best_iou.resize(static_cast<size_t>(num_dt));
  s.candidates.clear();
  for (int d = 0; d < num_dt && num_gt > 0; ++d) {
    double best = -1.0;
    for (int g = 0; g < num_gt; ++g) {
      const double iou = ious[static_cast<size_t>(d) * num_gt + g];
      // A NaN (from infinite coordinates) passes pycocotools' `iou < best` test: keep it.
      best = std::isnan(iou) ? HUGE_VAL : std::max(best, iou);
    }
    s.best_iou[d] = best;
    if (best >= setup.lowest_threshold) s.candidates.push_back(d);
  }

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

    for (size_t t = 0; t < num_t; ++t) {
      const double threshold = setup.thresholds[t];
      std::fill(s.gt_matched.begin(), s.gt_matched.end(), 0);
      for (const int d : s.candidates) {
        if (s.best_iou[d] < threshold) continue;
        const double* row = ious + static_cast<size_t>(d) * num_gt;
        int match = -1;  // position in gt_order
        double best = threshold;
        for (int o = 0; o < num_gt; ++o) {
          const int g = s.gt_order[o];
          if (s.gt_matched[o] && !gts.crowd[g]) continue;
          // Once matched to a regular GT, the ignored GTs (sorted last) cannot take over.
          if (match >= 0 && !s.gt_ignored[s.gt_order[match]] && s.gt_ignored[g]) break;
          if (row[g] < best) continue;
          best = row[g];  // >=: among equal IoUs the later GT wins
          match = o;
        }
        if (match < 0) continue;
        s.gt_matched[match] = 1;
        const int g = s.gt_order[match];
        const bool out_of_range = dets.area[d] < lo || dets.area[d] > hi;
        // A match to GT id 0 counts as unmatched (pycocotools stores matches by GT id).
        const bool ignored = s.gt_ignored[g] || (gts.id_is_zero[g] && out_of_range);
        const bool true_positive = !ignored && !gts.id_is_zero[g];
        OutcomeWord* bits = outcome + outcome_offset(static_cast<size_t>(d), a, num_a, words);
        const size_t w = t / kOutcomeWordBits;
        const OutcomeWord bit = OutcomeWord{1} << (t % kOutcomeWordBits);
        bits[words + w] = ignored ? bits[words + w] | bit : bits[words + w] & ~bit;
        if (true_positive) bits[w] |= bit;
      }
    }
  }
}

}  // namespace detrain::eval
