// accumulate() for one category; see coco_accumulate.h. pycocotools builds cumulative TP/FP
// arrays over all detections (ignored ones repeat the previous value), makes precision
// non-increasing from the right and samples it with searchsorted. Ignored detections never
// change the sampled values, so this walks only TP events: the precision sampled at recall r is
// the running maximum, from the right, of tp / (tp + fp + eps) over TP events from the first one
// whose tp / npig reaches r.
#include "eval/coco_accumulate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace detrain::eval {

namespace {

constexpr double kEps = 2.220446049250313e-16;  // np.spacing(1)

// Smallest tp count c in [0, npig] with c / npig >= r (numpy's searchsorted on tp / npig), or
// npig + 1 when the threshold cannot be reached.
int64_t tp_needed(double r, int64_t npig) {
  const double n = static_cast<double>(npig);
  int64_t c = static_cast<int64_t>(std::ceil(std::clamp(r, 0.0, 1.0) * n));
  while (c > 0 && static_cast<double>(c - 1) / n >= r) --c;
  while (c <= npig && !(static_cast<double>(c) / n >= r)) ++c;
  return c;
}

}  // namespace

void accumulate_category(const AccumulateInput& in, const AccumulateCell* cells, size_t num_cells,
                         int k, double* precision, double* recall, double* scores,
                         AccumulateScratch& s) {
  if (num_cells == 0) return;  // no GT and no detection: -1 stays
  const std::vector<double>& iou_thresholds = *in.iou_thresholds;
  const std::vector<double>& recall_thresholds = *in.recall_thresholds;
  const std::vector<int64_t>& max_dets = *in.max_dets;
  const size_t T = iou_thresholds.size(), R = recall_thresholds.size();
  const size_t A = static_cast<size_t>(in.num_areas), M = max_dets.size();
  const size_t K = static_cast<size_t>(in.num_categories);
  const size_t kk = static_cast<size_t>(k);

  // One stable sort by score for every area range and maxDets: entries start in (image, rank)
  // order, which is numpy's tie order after concatenating the cells by image.
  s.entries.clear();
  for (size_t c = 0; c < num_cells; ++c)
    for (int32_t r = 0; r < cells[c].num_slots; ++r) {
      const int64_t slot = cells[c].slot_begin + r;
      s.entries.push_back({in.slot_score[slot], static_cast<int32_t>(c), r, slot});
    }
  std::stable_sort(s.entries.begin(), s.entries.end(),
                   [](const AccumulateScratch::Entry& a, const AccumulateScratch::Entry& b) {
                     return a.score > b.score;
                   });

  s.tp.resize(T);
  s.fp.resize(T);
  s.recall_count.resize(R);
  for (size_t a = 0; a < A; ++a) {
    int64_t npig = 0;
    for (size_t c = 0; c < num_cells; ++c) npig += cells[c].npig[a];
    if (npig == 0) continue;  // only ignored GTs (or none): -1 stays
    for (size_t j = 0; j < R; ++j) s.recall_count[j] = tp_needed(recall_thresholds[j], npig);
    const size_t max_tp =
        static_cast<size_t>(std::min<int64_t>(npig, static_cast<int64_t>(s.entries.size())));
    const size_t stride = max_tp + 1;
    s.fp_at_tp.resize(T * stride);
    s.score_at_tp.resize(T * stride);
    s.precision_max.resize(max_tp + 2);

    for (size_t m = 0; m < M; ++m) {
      const int64_t max_det = max_dets[m];
      std::fill(s.tp.begin(), s.tp.end(), 0);
      std::fill(s.fp.begin(), s.fp.end(), 0);
      size_t nd = 0;
      double first_score = 0;
      for (const auto& e : s.entries) {
        if (e.rank >= max_det) continue;
        if (nd++ == 0) first_score = e.score;
        const uint8_t* outcome = in.outcome + (static_cast<size_t>(e.slot) * A + a) * T;
        for (size_t t = 0; t < T; ++t) {
          if (outcome[t] == 1) {
            const int64_t tp = ++s.tp[t];
            if (static_cast<size_t>(tp) > max_tp)
              throw std::logic_error("coco accumulate: more true positives than GTs");
            s.fp_at_tp[t * stride + static_cast<size_t>(tp)] = s.fp[t];
            s.score_at_tp[t * stride + static_cast<size_t>(tp)] = e.score;
          } else if (outcome[t] == 0) {
            ++s.fp[t];
          }
        }
      }
      for (size_t t = 0; t < T; ++t) {
        const int64_t ntp = s.tp[t];
        recall[((t * K + kk) * A + a) * M + m] =
            nd ? static_cast<double>(ntp) / static_cast<double>(npig) : 0.0;
        // Running maximum from the right over TP events c = ntp .. 1.
        s.precision_max[static_cast<size_t>(ntp) + 1] = 0.0;
        for (int64_t c = ntp; c >= 1; --c) {
          const double tp_d = static_cast<double>(c);
          const double fp_d = static_cast<double>(s.fp_at_tp[t * stride + static_cast<size_t>(c)]);
          const double pr = tp_d / (fp_d + tp_d + kEps);
          s.precision_max[static_cast<size_t>(c)] =
              std::max(pr, s.precision_max[static_cast<size_t>(c) + 1]);
        }
        bool reachable = nd > 0;  // with no detection numpy's lookup fails: all zeros
        for (size_t j = 0; j < R; ++j) {
          const size_t at = (((t * R + j) * K + kk) * A + a) * M + m;
          const int64_t c = s.recall_count[j];
          if (reachable && c > ntp) reachable = false;  // and every later threshold too
          if (!reachable) {
            precision[at] = 0.0;
            scores[at] = 0.0;
          } else if (c == 0) {
            precision[at] = ntp > 0 ? s.precision_max[1] : 0.0;
            scores[at] = first_score;
          } else {
            precision[at] = s.precision_max[static_cast<size_t>(c)];
            scores[at] = s.score_at_tp[t * stride + static_cast<size_t>(c)];
          }
        }
      }
    }
  }
}

}  // namespace detrain::eval
