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

void keypoint_oks(const CellKeypoints& kps, const CellGts& gts, int num_dets, double* ious) {
  constexpr double kEps = 2.220446049250313e-16;  // np.spacing(1)
  const int k_count = kps.num_keypoints;
  std::vector<double> terms(static_cast<size_t>(k_count));
  for (int g = 0; g < gts.count; ++g) {
    const double* gt = kps.gt_rows[static_cast<size_t>(g)];
    int visible = 0;
    for (int k = 0; k < k_count; ++k) visible += gt[3 * k + 2] > 0;
    const BoxXywh& bb = gts.box[g];
    const double x0 = bb.x - bb.w, x1 = bb.x + bb.w * 2;
    const double y0 = bb.y - bb.h, y1 = bb.y + bb.h * 2;
    const double area = gts.area[g] + kEps;
    for (int d = 0; d < num_dets; ++d) {
      const double* dt = kps.dt_rows[static_cast<size_t>(d)];
      size_t n = 0;
      for (int k = 0; k < k_count; ++k) {
        const double xd = dt[3 * k], yd = dt[3 * k + 1];
        double dx, dy;
        if (visible > 0) {
          if (!(gt[3 * k + 2] > 0)) continue;
          dx = xd - gt[3 * k];
          dy = yd - gt[3 * k + 1];
        } else {
          dx = std::max(0.0, x0 - xd) + std::max(0.0, xd - x1);
          dy = std::max(0.0, y0 - yd) + std::max(0.0, yd - y1);
        }
        const double e = (dx * dx + dy * dy) / kps.variances[k] / area / 2;
        terms[n++] = std::exp(-e);
      }
      ious[static_cast<size_t>(d) * gts.count + g] =
          numpy_sum(terms.data(), n) / static_cast<double>(n);
    }
  }
}

void match_cell(const CellGts& gts, const CellDets& dets, const double* ious,
                const std::vector<double>& iou_thresholds, const std::vector<AreaRange>& areas,
                uint8_t* outcome, int32_t* npig, MatchScratch& s) {
  const int num_gt = gts.count;
  const int num_dt = dets.count;
  const size_t num_t = iou_thresholds.size();
  const size_t num_a = areas.size();

  // A detection whose best IoU is below a threshold cannot match at it (nor at any higher one).
  s.best_iou.assign(static_cast<size_t>(num_dt), -1.0);
  for (int d = 0; d < num_dt; ++d)
    for (int g = 0; g < num_gt; ++g)
      s.best_iou[d] = std::max(s.best_iou[d], ious[static_cast<size_t>(d) * num_gt + g]);

  s.gt_ignored.resize(static_cast<size_t>(num_gt));
  s.gt_order.resize(static_cast<size_t>(num_gt));
  s.gt_matched.resize(static_cast<size_t>(num_gt));
  for (size_t a = 0; a < num_a; ++a) {
    const double lo = areas[a].lo, hi = areas[a].hi;
    // GTs: ignored ones last, file order inside each group (a stable sort on _ignore).
    int count = 0;
    for (int g = 0; g < num_gt; ++g) {
      s.gt_ignored[g] = gts.ignore[g] || gts.area[g] < lo || gts.area[g] > hi;
      if (!s.gt_ignored[g]) s.gt_order[count++] = g;
    }
    npig[a] = count;
    for (int g = 0; g < num_gt; ++g)
      if (s.gt_ignored[g]) s.gt_order[count++] = g;

    for (size_t t = 0; t < num_t; ++t) {
      const double threshold = std::min(iou_thresholds[t], 1 - 1e-10);
      std::fill(s.gt_matched.begin(), s.gt_matched.end(), 0);
      for (int d = 0; d < num_dt; ++d) {
        const double* row = ious + static_cast<size_t>(d) * num_gt;
        int match = -1;  // position in gt_order
        if (s.best_iou[d] >= threshold) {
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
        }
        const bool out_of_range = dets.area[d] < lo || dets.area[d] > hi;
        uint8_t result;
        if (match < 0) {
          result = out_of_range ? kIgnored : kFalsePositive;
        } else {
          s.gt_matched[match] = 1;
          const int g = s.gt_order[match];
          if (gts.id_is_zero[g])
            result = s.gt_ignored[g] || out_of_range ? kIgnored : kFalsePositive;
          else
            result = s.gt_ignored[g] ? kIgnored : kTruePositive;
        }
        outcome[(static_cast<size_t>(d) * num_a + a) * num_t + t] = result;
      }
    }
  }
}

}  // namespace detrain::eval
