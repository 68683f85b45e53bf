// accumulate() for one category; see coco_accumulate.h. pycocotools builds cumulative TP/FP
// arrays over all detections (ignored ones repeat the previous value), makes precision
// non-increasing from the right and samples it with searchsorted. Ignored detections never
// change the sampled values, so this walks only TP events: the precision sampled at recall r is
// the running maximum, from the right, of tp / (tp + fp + eps) over TP events from the first one
// whose tp / npig reaches r.
#include "eval/coco_accumulate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Orders doubles as unsigned integers, largest double first (-0 and +0 tie, as in numpy).
uint64_t descending_key(double score) {
  if (score == 0) score = 0;  // -0 -> +0
  uint64_t bits;
  std::memcpy(&bits, &score, sizeof bits);
  bits = (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);  // ascending as unsigned
  return ~bits;
}

// Stable sort by score, descending. Small inputs use a comparison sort on (score, position); large
// ones an LSD radix sort over the 8 key bytes, skipping bytes that are equal for every entry
// (scores in [0, 1] share their top bytes).
void sort_by_score_stable(std::vector<AccumulateScratch::Entry>& entries,
                          std::vector<AccumulateScratch::Entry>& buffer) {
  const size_t n = entries.size();
  if (n < 256) {
    std::sort(entries.begin(), entries.end(),
              [](const AccumulateScratch::Entry& a, const AccumulateScratch::Entry& b) {
                if (a.score != b.score) return a.score > b.score;
                return a.slot < b.slot;
              });
    return;
  }
  buffer.resize(n);
  size_t counts[8][256] = {};
  for (const auto& e : entries) {
    const uint64_t key = descending_key(e.score);
    for (int b = 0; b < 8; ++b) ++counts[b][(key >> (8 * b)) & 0xff];
  }
  AccumulateScratch::Entry* from = entries.data();
  AccumulateScratch::Entry* to = buffer.data();
  for (int b = 0; b < 8; ++b) {
    size_t* count = counts[b];
    bool trivial = false;
    for (int v = 0; v < 256; ++v)
      if (count[v] == n) trivial = true;
    if (trivial) continue;
    size_t offset = 0;
    for (int v = 0; v < 256; ++v) {
      const size_t c = count[v];
      count[v] = offset;
      offset += c;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t key = descending_key(from[i].score);
      to[count[(key >> (8 * b)) & 0xff]++] = from[i];
    }
    std::swap(from, to);
  }
  if (from != entries.data()) std::copy(from, from + n, entries.data());
}

// One (area range, maxDets) pass over the sorted detections: for each threshold, the FP count
// and score at each TP event. FP count before a TP = detections before it - TPs before it -
// ignored before it, so only TP and ignore events are visited; a detection ignored at every
// threshold (common outside an area range) bumps one counter.
struct TpEvents {
  int64_t detections = 0;  // nd: kept detections, ignored ones included
  double first_score = 0;  // score of the first kept detection
  size_t stride = 0;       // row length of fp_at_tp / score_at_tp
};

TpEvents walk(AccumulateScratch& s, const OutcomeWord* area_bits, int words, size_t T, int64_t npig,
              const uint32_t* kept, size_t count) {
  TpEvents events;
  const size_t pair = 2 * static_cast<size_t>(words);
  const size_t max_tp = static_cast<size_t>(std::min<int64_t>(npig, static_cast<int64_t>(count)));
  events.stride = max_tp + 1;
  s.fp_at_tp.resize(T * events.stride);
  s.score_at_tp.resize(T * events.stride);
  s.tp.assign(T, 0);
  s.ignored.assign(T, 0);
  s.ignored_all.assign(static_cast<size_t>(words), 0);
  int64_t* tp_count = s.tp.data();
  int64_t* ignored_count = s.ignored.data();
  int64_t* ignored_all = s.ignored_all.data();
  const OutcomeWord* mask = s.word_mask.data();
  // A TP event at sorted entry i, the k-th kept one, for the thresholds in tp_bits (word w).
  const auto record_tps = [&](size_t i, size_t k, int w, OutcomeWord tp_bits, int64_t all_before) {
    const size_t t0 = static_cast<size_t>(w) * kOutcomeWordBits;
    for (; tp_bits; tp_bits &= tp_bits - 1) {
      const size_t t = t0 + static_cast<size_t>(__builtin_ctz(tp_bits));
      const int64_t tp = ++tp_count[t];
      if (static_cast<size_t>(tp) > max_tp)
        throw std::logic_error("coco accumulate: more true positives than GTs");
      const size_t at = t * events.stride + static_cast<size_t>(tp);
      s.fp_at_tp[at] = static_cast<int64_t>(k) - (tp - 1) - all_before - ignored_count[t];
      s.score_at_tp[at] = s.sorted_score[i];
    }
  };
  const auto record_ignored = [&](int w, OutcomeWord ignored_bits) {
    const size_t t0 = static_cast<size_t>(w) * kOutcomeWordBits;
    for (; ignored_bits; ignored_bits &= ignored_bits - 1)
      ++ignored_count[t0 + static_cast<size_t>(__builtin_ctz(ignored_bits))];
  };
  // Nearly every detection is a false positive at every threshold or ignored at every one
  // (outside an area range): one well-predicted branch skips both, the count is added without
  // a branch. Ignored at every threshold implies no true positive.
  if (words == 1) {  // up to 16 thresholds (COCO's 10): counters in registers
    const OutcomeWord all_mask = mask[0];
    int64_t all_ignored = 0;
    for (size_t k = 0; k < count; ++k) {
      const size_t i = kept ? kept[k] : k;
      const OutcomeWord tp_bits = area_bits[2 * i], ignored_bits = area_bits[2 * i + 1];
      const bool every = ignored_bits == all_mask;
      all_ignored += every;
      if (((tp_bits | ignored_bits) == 0) | every) continue;
      record_tps(i, k, 0, tp_bits, all_ignored);
      record_ignored(0, ignored_bits);
    }
    ignored_all[0] = all_ignored;
  } else {
    for (size_t k = 0; k < count; ++k) {
      const size_t i = kept ? kept[k] : k;
      const OutcomeWord* bits = area_bits + i * pair;
      for (int w = 0; w < words; ++w) {
        const OutcomeWord tp_bits = bits[w], ignored_bits = bits[words + w];
        const bool every = ignored_bits == mask[w];
        ignored_all[w] += every;
        if (((tp_bits | ignored_bits) == 0) | every) continue;
        record_tps(i, k, w, tp_bits, ignored_all[w]);
        record_ignored(w, ignored_bits);
      }
    }
  }
  events.detections = static_cast<int64_t>(count);
  if (count > 0) events.first_score = s.sorted_score[kept ? kept[0] : 0];
  return events;
}

// recall [T], precision and scores [T, R] of one (area range, maxDets) from its TP events.
void sample_precision(AccumulateScratch& s, const TpEvents& events, int64_t npig, size_t T,
                      size_t R, double* recall, double* precision, double* scores) {
  s.precision_max.resize(events.stride + 1);
  for (size_t t = 0; t < T; ++t) {
    const int64_t ntp = s.tp[t];
    const int64_t* fp_at_tp = s.fp_at_tp.data() + t * events.stride;
    const double* score_at_tp = s.score_at_tp.data() + t * events.stride;
    recall[t] = events.detections ? static_cast<double>(ntp) / static_cast<double>(npig) : 0.0;
    // Running maximum from the right over TP events c = ntp .. 1.
    s.precision_max[static_cast<size_t>(ntp) + 1] = 0.0;
    for (int64_t c = ntp; c >= 1; --c) {
      const double tp_d = static_cast<double>(c);
      const double fp_d = static_cast<double>(fp_at_tp[c]);
      const double pr = tp_d / (fp_d + tp_d + kEps);
      s.precision_max[static_cast<size_t>(c)] =
          std::max(pr, s.precision_max[static_cast<size_t>(c) + 1]);
    }
    bool reachable = events.detections > 0;  // with no detection numpy's lookup fails: zeros
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
        score = events.first_score;
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
  if (num_cells == 0) return;  // no GT and no detection: -1 stays
  const std::vector<double>& recall_thresholds = *in.recall_thresholds;
  const std::vector<int64_t>& max_dets = *in.max_dets;
  const size_t T = in.iou_thresholds->size(), R = recall_thresholds.size();
  const size_t A = static_cast<size_t>(in.num_areas), M = max_dets.size();

  // One sort for every area range and maxDets, by score and then slot (= image, then rank in
  // the cell): numpy's stable order after concatenating the cells by image.
  size_t num_entries = 0;
  uint32_t max_rank = 0;
  for (size_t c = 0; c < num_cells; ++c) {
    num_entries += static_cast<size_t>(cells[c].num_slots);
    if (cells[c].num_slots > 0)
      max_rank = std::max(max_rank, static_cast<uint32_t>(cells[c].num_slots - 1));
  }
  s.entries.resize(num_entries);
  AccumulateScratch::Entry* entry = s.entries.data();
  for (size_t c = 0; c < num_cells; ++c)
    for (int32_t r = 0; r < cells[c].num_slots; ++r) {
      const int64_t slot = cells[c].slot_begin + r;
      *entry++ = {in.slot_score[slot], static_cast<uint32_t>(slot), static_cast<uint32_t>(r)};
    }
  sort_by_score_stable(s.entries, s.radix_buffer);

  // The outcome bits in sorted order, area-major: one scattered read per detection, then every
  // (area range, maxDets) walk reads a contiguous run.
  const int words = outcome_words(T);
  const size_t n = s.entries.size();
  const size_t pair = 2 * static_cast<size_t>(words);
  s.sorted_bits.resize(A * n * pair);
  s.sorted_score.resize(n);
  constexpr size_t kPrefetchAhead = 16;  // the reads are random: keep several misses in flight
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n)
      __builtin_prefetch(in.outcome +
                         outcome_offset(s.entries[i + kPrefetchAhead].slot, 0, A, words));
    const auto& e = s.entries[i];
    s.sorted_score[i] = e.score;
    const OutcomeWord* bits = in.outcome + outcome_offset(e.slot, 0, A, words);
    for (size_t a = 0; a < A; ++a) {
      OutcomeWord* to = s.sorted_bits.data() + (a * n + i) * pair;
      for (size_t w = 0; w < pair; ++w) to[w] = bits[a * pair + w];
    }
  }
  // Per maxDets, the sorted positions it keeps (ranks below it); empty when it keeps them all.
  s.kept.resize(M);
  for (size_t m = 0; m < M; ++m) {
    s.kept[m].clear();
    if (static_cast<int64_t>(max_rank) < max_dets[m]) continue;
    for (size_t i = 0; i < n; ++i)
      if (static_cast<int64_t>(s.entries[i].rank) < max_dets[m])
        s.kept[m].push_back(static_cast<uint32_t>(i));
  }

  s.word_mask.assign(static_cast<size_t>(words), 0);
  for (size_t t = 0; t < T; ++t)
    s.word_mask[t / kOutcomeWordBits] |= OutcomeWord{1} << (t % kOutcomeWordBits);
  s.recall_count.resize(R);
  for (size_t a = 0; a < A; ++a) {
    int64_t npig = 0;
    for (size_t c = 0; c < num_cells; ++c) npig += cells[c].npig[a];
    if (npig == 0) continue;  // only ignored GTs (or none): -1 stays
    for (size_t j = 0; j < R; ++j) s.recall_count[j] = tp_needed(recall_thresholds[j], npig);
    const OutcomeWord* area_bits = s.sorted_bits.data() + a * n * pair;
    for (size_t m = 0; m < M; ++m) {
      const bool all = static_cast<int64_t>(max_rank) < max_dets[m];
      const size_t count = all ? n : s.kept[m].size();
      // maxDets keep nested sets: one that keeps as many detections as the previous keeps the
      // same ones, and gives the same curve (common: 10 and 100 keep every detection of a cell).
      const bool previous_all = m > 0 && static_cast<int64_t>(max_rank) < max_dets[m - 1];
      if (m > 0 && count == (previous_all ? n : s.kept[m - 1].size())) {
        const size_t from = a * M + m - 1, to = a * M + m;
        std::copy(recall + from * T, recall + (from + 1) * T, recall + to * T);
        std::copy(precision + from * T * R, precision + (from + 1) * T * R, precision + to * T * R);
        std::copy(scores + from * T * R, scores + (from + 1) * T * R, scores + to * T * R);
        continue;
      }
      const TpEvents events =
          walk(s, area_bits, words, T, npig, all ? nullptr : s.kept[m].data(), count);
      sample_precision(s, events, npig, T, R, recall + (a * M + m) * T,
                       precision + (a * M + m) * T * R, scores + (a * M + m) * T * R);
    }
  }
}

}  // namespace detrain::eval
