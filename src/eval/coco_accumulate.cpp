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

// A walk over the sorted detections gives, for each threshold, the FP count and score at each
// TP event. FP count before a TP = detections before it - TPs before it - ignored before it, so
// only TP and ignore events are recorded; a detection ignored at every threshold (common outside
// an area range) bumps one counter. One pass over the detections advances every (area range,
// maxDets) walk at once: each detection's outcome bits are read once, where a pass per walk
// would read them A x M times.

void start_walk(AccumulateWalk& w, size_t T, int64_t npig, int64_t count, double first_score) {
  w.npig = npig;
  w.detections = count;
  w.first_score = first_score;
  w.stride = static_cast<size_t>(std::min(npig, count)) + 1;
  w.fp_at_tp.resize(T * w.stride);
  w.score_at_tp.resize(T * w.stride);
  w.tp.assign(T, 0);
  w.ignored.assign(T, 0);
}

// TP events of kept detection k (score `score`) at the thresholds in tp_bits (word w).
inline void record_tps(AccumulateWalk& walk, int64_t k, int w, OutcomeWord tp_bits,
                       int64_t all_before, double score) {
  const size_t t0 = static_cast<size_t>(w) * kOutcomeWordBits;
  const auto max_tp = static_cast<int64_t>(walk.stride - 1);
  for (; tp_bits; tp_bits &= tp_bits - 1) {
    const size_t t = t0 + static_cast<size_t>(__builtin_ctz(tp_bits));
    const int64_t tp = ++walk.tp[t];
    if (tp > max_tp) throw std::logic_error("coco accumulate: more true positives than GTs");
    const size_t at = t * walk.stride + static_cast<size_t>(tp);
    walk.fp_at_tp[at] = k - (tp - 1) - all_before - walk.ignored[t];
    walk.score_at_tp[at] = score;
  }
}

inline void record_ignored(AccumulateWalk& walk, int w, OutcomeWord ignored_bits) {
  const size_t t0 = static_cast<size_t>(w) * kOutcomeWordBits;
  for (; ignored_bits; ignored_bits &= ignored_bits - 1)
    ++walk.ignored[t0 + static_cast<size_t>(__builtin_ctz(ignored_bits))];
}

// Sum of counts[0 .. m].
inline int64_t up_to(const int64_t* counts, size_t m) {
  int64_t sum = 0;
  for (size_t c = 0; c <= m; ++c) sum += counts[c];
  return sum;
}

// recall [T], precision and scores [T, R] of one finished walk.
void sample_precision(AccumulateScratch& s, const AccumulateWalk& walk, size_t T, size_t R,
                      double* recall, double* precision, double* scores) {
  s.precision_max.resize(walk.stride + 1);
  for (size_t t = 0; t < T; ++t) {
    const int64_t ntp = walk.tp[t];
    const int64_t* fp_at_tp = walk.fp_at_tp.data() + t * walk.stride;
    const double* score_at_tp = walk.score_at_tp.data() + t * walk.stride;
    recall[t] = walk.detections ? static_cast<double>(ntp) / static_cast<double>(walk.npig) : 0.0;
    // Running maximum from the right over TP events c = ntp .. 1.
    s.precision_max[static_cast<size_t>(ntp) + 1] = 0.0;
    for (int64_t c = ntp; c >= 1; --c) {
      const double tp_d = static_cast<double>(c);
      const double fp_d = static_cast<double>(fp_at_tp[c]);
      const double pr = tp_d / (fp_d + tp_d + kEps);
      s.precision_max[static_cast<size_t>(c)] =
          std::max(pr, s.precision_max[static_cast<size_t>(c) + 1]);
    }
    bool reachable = walk.detections > 0;  // with no detection numpy's lookup fails: zeros
    for (size_t j = 0; j < R; ++j) {
      const int64_t c = s.recall_count[j];
      if (reachable && c > ntp) reachable = false;  // and every later threshold too
      double& p = precision[t * R + j];
      double& score = scores[t * R + j];
      if (!reachable) {
        p = 0.0;
        score = 0.0;
      } else if (c == 0) {
        p = ntp > 0 ? s.precision_max[1] : 0.0;
        score = walk.first_score;
      } else {
        p = s.precision_max[static_cast<size_t>(c)];
        score = score_at_tp[c];
      }
    }
  }
}

}  // namespace

void accumulate_category(const AccumulateInput& in, const AccumulateCell* cells, size_t num_cells,
                         double* precision, double* recall, double* scores, AccumulateScratch& s) {
  const std::vector<double>& recall_thresholds = *in.recall_thresholds;
  const std::vector<int64_t>& max_dets = *in.max_dets;
  const size_t T = in.iou_thresholds->size(), R = recall_thresholds.size();
  const size_t A = static_cast<size_t>(in.num_areas), M = max_dets.size();
  // -1 for every maxDets of an area range without non-ignored GTs (pycocotools' "absent").
  const auto absent = [&](size_t a) {
    std::fill(recall + a * M * T, recall + (a + 1) * M * T, -1.0);
    std::fill(precision + a * M * T * R, precision + (a + 1) * M * T * R, -1.0);
    std::fill(scores + a * M * T * R, scores + (a + 1) * M * T * R, -1.0);
  };
  if (num_cells == 0) {  // no GT and no detection
    for (size_t a = 0; a < A; ++a) absent(a);
    return;
  }
  const int words = outcome_words(T);

  // One sort for every area range and maxDets, by score and then slot (= image, then rank in
  // the cell): numpy's stable order after concatenating the cells by image.
  size_t num_entries = 0;
  s.kept_count.assign(M, 0);
  for (size_t c = 0; c < num_cells; ++c) {
    num_entries += static_cast<size_t>(cells[c].num_slots);
    for (size_t m = 0; m < M; ++m)
      s.kept_count[m] += std::min<int64_t>(cells[c].num_slots, max_dets[m]);
  }
  s.entries.resize(num_entries);
  ScoredSlot* entry = s.entries.data();
  for (size_t c = 0; c < num_cells; ++c)
    for (int32_t r = 0; r < cells[c].num_slots; ++r) {
      const int64_t slot = cells[c].slot_begin + r;
      *entry++ = {in.slot_score[slot], static_cast<uint32_t>(slot), static_cast<uint32_t>(r)};
    }
  sort_by_score_stable(s.entries, s.sort);

  s.word_mask.assign(static_cast<size_t>(words), 0);
  for (size_t t = 0; t < T; ++t)
    s.word_mask[t / kOutcomeWordBits] |= OutcomeWord{1} << (t % kOutcomeWordBits);
  // The walks to run: area ranges with non-ignored GTs (others keep -1), and per area range
  // each maxDets that keeps more detections than the previous one. maxDets keep nested sets, so
  // one keeping as many keeps the same ones and gives the same curve (common: 10 and 100 keep
  // every detection of a cell): it is copied below.
  s.walks.resize(A * M);
  bool any_active = false;
  for (size_t a = 0; a < A; ++a) {
    int64_t npig = 0;
    for (size_t c = 0; c < num_cells; ++c) npig += cells[c].npig[a];
    if (npig == 0) absent(a);  // only ignored GTs (or none)
    for (size_t m = 0; m < M; ++m) {
      AccumulateWalk& walk = s.walks[a * M + m];
      walk.npig = npig;
      walk.active = npig > 0 && (m == 0 || s.kept_count[m] != s.kept_count[m - 1]);
      // The category's first detection (highest score, lowest slot among equals) is first in
      // its cell, so every maxDets keeps it.
      if (walk.active)
        start_walk(walk, T, npig, s.kept_count[m],
                   s.entries.empty() ? 0.0 : s.entries.front().score);
      any_active |= walk.active;
    }
  }
  if (!any_active) return;

  // The pass. A detection of rank r in its cell is kept by every maxDets above r. Nearly every
  // detection is, for every area range, a false positive at every threshold or ignored at every
  // one (outside the range): it only adds to its class's counters, without a branch. The others
  // (a TP or a partly ignored detection somewhere) are recorded in each walk that keeps them.
  const size_t n = s.entries.size();
  const OutcomeWord* mask = s.word_mask.data();
  const size_t W = static_cast<size_t>(words);
  s.class_count.assign(M, 0);
  s.every_count.assign(A * W * M, 0);
  int64_t* class_count = s.class_count.data();
  int64_t* every_count = s.every_count.data();
  constexpr size_t kPrefetchAhead = 16;  // the reads are random: keep several misses in flight
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n)
      __builtin_prefetch(in.outcome +
                         outcome_offset(s.entries[i + kPrefetchAhead].slot, 0, A, words));
    const ScoredSlot& e = s.entries[i];
    const OutcomeWord* bits = in.outcome + outcome_offset(e.slot, 0, A, words);
    size_t first_m = 0;
    for (size_t m = 0; m < M; ++m) first_m += static_cast<int64_t>(e.rank) >= max_dets[m];
    if (first_m == M) continue;  // cut by every maxDets (the cell phase keeps none of these)
    bool event = false;
    for (size_t a = 0; a < A; ++a)
      for (size_t w = 0; w < W; ++w) {
        const OutcomeWord tp_bits = bits[a * 2 * W + w], ignored_bits = bits[a * 2 * W + W + w];
        const bool every = ignored_bits == mask[w];  // implies no TP
        every_count[(a * W + w) * M + first_m] += every;
        event |= ((tp_bits | ignored_bits) != 0) & !every;
      }
    if (event) {
      for (size_t a = 0; a < A; ++a)
        for (size_t m = first_m; m < M; ++m) {
          AccumulateWalk& walk = s.walks[a * M + m];
          if (!walk.active) continue;
          const int64_t k = up_to(class_count, m);  // the walk's kept detections before this
          for (size_t w = 0; w < W; ++w) {
            const OutcomeWord tp_bits = bits[a * 2 * W + w], ignored_bits = bits[a * 2 * W + W + w];
            if ((tp_bits | ignored_bits) == 0 || ignored_bits == mask[w]) continue;
            record_tps(walk, k, static_cast<int>(w), tp_bits,
                       up_to(every_count + (a * W + w) * M, m), e.score);
            record_ignored(walk, static_cast<int>(w), ignored_bits);
          }
        }
    }
    ++class_count[first_m];
  }

  s.recall_count.resize(R);
  for (size_t a = 0; a < A; ++a) {
    const int64_t npig = s.walks[a * M].npig;
    if (npig == 0) continue;  // absent, filled above
    for (size_t j = 0; j < R; ++j) s.recall_count[j] = tp_needed(recall_thresholds[j], npig);
    for (size_t m = 0; m < M; ++m) {
      const size_t to = a * M + m;
      if (!s.walks[to].active) {  // the same detections as maxDets m - 1
        const size_t from = to - 1;
        std::copy(recall + from * T, recall + (from + 1) * T, recall + to * T);
        std::copy(precision + from * T * R, precision + (from + 1) * T * R, precision + to * T * R);
        std::copy(scores + from * T * R, scores + (from + 1) * T * R, scores + to * T * R);
        continue;
      }
      sample_precision(s, s.walks[to], T, R, recall + to * T, precision + to * T * R,
                       scores + to * T * R);
    }
  }
}

}  // namespace detrain::eval
