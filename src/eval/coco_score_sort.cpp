// The score sort of accumulate(); see coco_score_sort.h. One counting pass places every
// detection in one of about n buckets that split the range of its scores evenly, then each
// bucket (a handful of detections) is sorted on its own. Where an LSD radix sort
// moves every detection once per digit (6 passes for doubles in 11-bit digits), this moves it
// once, plus the few moves inside its bucket.
#include "eval/coco_score_sort.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace detrain::eval {

namespace {

// Below this many detections a plain insertion sort is cheaper than the bucket bookkeeping.
constexpr size_t kBucketSortFrom = 64;
// Buckets holding more than this are sorted with std::stable_sort, so no input is quadratic,
// unless they hold one score (rounded scores, zeros): those are in order already.
constexpr size_t kInsertionSortUpTo = 32;
// At most 2^16 buckets (256 KiB of offsets): a category rarely has more than a few 10k results.
constexpr int kMaxBucketBits = 16;

bool higher_score(const ScoredSlot& x, const ScoredSlot& y) { return x.score > y.score; }

bool one_score(const ScoredSlot* first, const ScoredSlot* last) {
  for (const ScoredSlot* e = first + 1; e < last; ++e)
    if (e->score != first->score) return false;
  return true;
}

// Stable: a detection moves left only past strictly lower scores.
void insertion_sort(ScoredSlot* first, ScoredSlot* last) {
  if (last - first < 2) return;
  for (ScoredSlot* i = first + 1; i < last; ++i) {
    const ScoredSlot moving = *i;
    ScoredSlot* j = i;
    for (; j > first && moving.score > (j - 1)->score; --j) *j = *(j - 1);
    *j = moving;
  }
}

}  // namespace

void sort_by_score_stable(std::vector<ScoredSlot>& entries, ScoreSortScratch& s) {
  const size_t n = entries.size();
  if (n < kBucketSortFrom) {
    insertion_sort(entries.data(), entries.data() + n);
    return;
  }
  double lo = entries[0].score, hi = entries[0].score;
  for (const ScoredSlot& e : entries) {
    lo = std::min(lo, e.score);
    hi = std::max(hi, e.score);
  }
  if (!(lo < hi)) return;  // one score throughout (-0 and +0 included): already in order
  // Bucket b holds scores in the b-th of `buckets` equal steps down from the highest. A
  // monotone function of the score, rounding included, so the buckets never reorder two
  // scores. Linear in the value rather than in the bit pattern: results files round their
  // scores and hold zeros, whose bit patterns lie far from the others' and would crowd every
  // other score into a few buckets.
  const size_t buckets = std::min(size_t{1} << kMaxBucketBits, n);
  const double scale = static_cast<double>(buckets) / (hi - lo);
  if (!std::isfinite(scale) || !std::isfinite(hi - lo)) {  // infinite scores or subnormal range
    std::stable_sort(entries.begin(), entries.end(), higher_score);
    return;
  }
  const auto bucket_of = [&](double score) {
    return std::min(buckets - 1, static_cast<size_t>((hi - score) * scale));
  };
  s.bucket_begin.assign(buckets + 1, 0);
  for (const ScoredSlot& e : entries) ++s.bucket_begin[bucket_of(e.score) + 1];
  for (size_t b = 0; b < buckets; ++b) s.bucket_begin[b + 1] += s.bucket_begin[b];
  s.buffer.resize(n);
  // Placing in input order keeps equal scores in their order. Afterwards bucket_begin[b] is
  // where bucket b + 1 begins.
  for (const ScoredSlot& e : entries) s.buffer[s.bucket_begin[bucket_of(e.score)]++] = e;
  uint32_t begin = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const uint32_t end = s.bucket_begin[b];
    ScoredSlot* first = s.buffer.data() + begin;
    ScoredSlot* last = s.buffer.data() + end;
    if (end - begin <= kInsertionSortUpTo)
      insertion_sort(first, last);
    else if (!one_score(first, last))
      std::stable_sort(first, last, higher_score);
    begin = end;
  }
  entries.swap(s.buffer);
}

void sort_cell_by_score(int32_t* index, double* score, double* area, size_t n, CellSortScratch& s) {
  if (n == 2) {  // the commonest case after one
    if (score[1] > score[0]) {
      std::swap(index[0], index[1]);
      std::swap(score[0], score[1]);
      std::swap(area[0], area[1]);
    }
    return;
  }
  // Most cells hold a few detections, often in order already: positions first, moved only if
  // needed.
  s.order.resize(n);
  for (size_t j = 0; j < n; ++j) s.order[j] = static_cast<int32_t>(j);
  const auto before = [&](int32_t a, int32_t b) {
    return score[a] != score[b] ? score[a] > score[b] : a < b;
  };
  std::sort(s.order.begin(), s.order.end(), before);
  size_t moved = 0;
  while (moved < n && s.order[moved] == static_cast<int32_t>(moved)) ++moved;
  if (moved == n) return;
  s.index.assign(index, index + n);
  s.score.assign(score, score + n);
  s.area.assign(area, area + n);
  for (size_t j = moved; j < n; ++j) {
    const auto from = static_cast<size_t>(s.order[j]);
    index[j] = s.index[from];
    score[j] = s.score[from];
    area[j] = s.area[from];
  }
}

}  // namespace detrain::eval
