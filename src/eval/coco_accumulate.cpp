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
                return a.cell != b.cell ? a.cell < b.cell : a.rank < b.rank;
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

}  // namespace

void accumulate_category(const AccumulateInput& in, const AccumulateCell* cells, size_t num_cells,
                         double* precision, double* recall, double* scores, AccumulateScratch& s) {
  if (num_cells == 0) return;  // no GT and no detection: -1 stays
  const std::vector<double>& iou_thresholds = *in.iou_thresholds;
  const std::vector<double>& recall_thresholds = *in.recall_thresholds;
  const std::vector<int64_t>& max_dets = *in.max_dets;
  const size_t T = iou_thresholds.size(), R = recall_thresholds.size();
  const size_t A = static_cast<size_t>(in.num_areas), M = max_dets.size();

  // One sort for every area range and maxDets, by score and then (image, rank in the cell):
  // numpy's stable order after concatenating the cells by image.
  s.entries.clear();
  for (size_t c = 0; c < num_cells; ++c)
    for (int32_t r = 0; r < cells[c].num_slots; ++r)
      s.entries.push_back({in.slot_score[cells[c].slot_begin + r], static_cast<uint32_t>(c),
                           static_cast<uint32_t>(r)});
  sort_by_score_stable(s.entries, s.radix_buffer);
  // The outcome bits in sorted order: one scattered read per detection instead of one per
  // (area range, maxDets) walk.
  const int words = outcome_words(T);
  const size_t per_slot = outcome_offset(1, 0, A, words);
  s.sorted_bits.resize(s.entries.size() * per_slot);
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const auto& e = s.entries[i];
    const OutcomeWord* bits =
        in.outcome +
        outcome_offset(static_cast<size_t>(cells[e.cell].slot_begin + e.rank), 0, A, words);
    std::copy(bits, bits + per_slot,
              s.sorted_bits.begin() + static_cast<std::ptrdiff_t>(i * per_slot));
  }

  s.tp.resize(T);
  s.ignored.resize(T);
  s.ignored_all.resize(static_cast<size_t>(words));
  s.word_mask.assign(static_cast<size_t>(words), 0);
  for (size_t t = 0; t < T; ++t)
    s.word_mask[t / kOutcomeWordBits] |= OutcomeWord{1} << (t % kOutcomeWordBits);
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
      // FP count before a TP = entries before it - TPs before it - ignored before it. Only
      // TP and ignore events are visited; a detection ignored at every threshold (common outside
      // an area range) bumps one counter.
      std::fill(s.tp.begin(), s.tp.end(), 0);
      std::fill(s.ignored.begin(), s.ignored.end(), 0);
      std::fill(s.ignored_all.begin(), s.ignored_all.end(), 0);
      int64_t nd = 0;
      double first_score = 0;
      for (size_t i = 0; i < s.entries.size(); ++i) {
        const auto& e = s.entries[i];
        if (e.rank >= max_det) continue;
        const int64_t position = nd++;
        if (position == 0) first_score = e.score;
        const OutcomeWord* bits =
            s.sorted_bits.data() + i * per_slot + outcome_offset(0, a, A, words);
        for (int w = 0; w < words; ++w) {
          OutcomeWord ignored_bits = bits[words + w];
          if (ignored_bits == s.word_mask[w]) {
            ++s.ignored_all[w];
            continue;
          }
          const size_t t0 = static_cast<size_t>(w) * kOutcomeWordBits;
          for (OutcomeWord tp_bits = bits[w]; tp_bits; tp_bits &= tp_bits - 1) {
            const size_t t = t0 + static_cast<size_t>(__builtin_ctz(tp_bits));
            const int64_t tp = ++s.tp[t];
            if (static_cast<size_t>(tp) > max_tp)
              throw std::logic_error("coco accumulate: more true positives than GTs");
            s.fp_at_tp[t * stride + static_cast<size_t>(tp)] =
                position - (tp - 1) - s.ignored_all[w] - s.ignored[t];
            s.score_at_tp[t * stride + static_cast<size_t>(tp)] = e.score;
          }
          for (; ignored_bits; ignored_bits &= ignored_bits - 1)
            ++s.ignored[t0 + static_cast<size_t>(__builtin_ctz(ignored_bits))];
        }
      }
      for (size_t t = 0; t < T; ++t) {
        const int64_t ntp = s.tp[t];
        recall[(a * M + m) * T + t] =
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
          const size_t at = ((a * M + m) * T + t) * R + j;
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

void transpose(const double* src, size_t rows, size_t cols, double* dst) {
  constexpr size_t kBlock = 32;
  for (size_t i0 = 0; i0 < rows; i0 += kBlock)
    for (size_t j0 = 0; j0 < cols; j0 += kBlock) {
      const size_t i1 = std::min(rows, i0 + kBlock), j1 = std::min(cols, j0 + kBlock);
      for (size_t i = i0; i < i1; ++i)
        for (size_t j = j0; j < j1; ++j) dst[j * rows + i] = src[i * cols + j];
    }
}

}  // namespace detrain::eval
