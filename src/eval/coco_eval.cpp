// The evaluator's driver: validates parameters, indexes the ground truth once, then per call
// groups detections into cells, matches cells in parallel, accumulates categories in parallel
// and summarizes. Every parallel item writes only its own slice, so the thread count never
// changes a bit of the output.
#include "eval/coco_eval.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"
#include "common/timer.h"
#include "eval/coco_accumulate.h"
#include "eval/coco_cells.h"
#include "eval/coco_match.h"
#include "eval/coco_memory.h"
#include "eval/coco_numeric.h"
#include "eval/coco_parallel.h"
#include "eval/coco_score_sort.h"
#include "eval/coco_summarize.h"

namespace detrain::eval {

namespace {

void require_finite(const std::vector<double>& values, const char* name) {
  for (double v : values)
    if (!std::isfinite(v))
      throw ConfigError(std::string("COCO eval parameter ") + name + " holds a non-finite value");
}

CocoParams validated(CocoParams p, const CocoGroundTruth& gt) {
  validate_coco_params(p);
  std::sort(p.max_dets.begin(), p.max_dets.end());  // pycocotools sorts them in evaluate()
  const int k = static_cast<int>(p.keypoint_sigmas.size());
  if (p.iou_type == IouType::kKeypoints && gt.keypoints_per_instance != 0 &&
      gt.keypoints_per_instance != k)
    throw ConfigError(gt.source + ": annotations have " +
                      std::to_string(gt.keypoints_per_instance) + " keypoints but " +
                      std::to_string(k) +
                      " sigmas are given (pass one sigma per keypoint, e.g. --sigmas)");
  return p;
}

// Per-thread buffers for the cell phase.
struct CellScratch {
  CellSortScratch sort;
  std::vector<BoxXywh> dt_box;
  std::vector<double> ious;
  CellKeypoints keypoints;
  MatchScratch match;
};

}  // namespace

void validate_coco_params(const CocoParams& p) {
  if (p.iou_thresholds.empty()) throw ConfigError("COCO eval: iou_thresholds is empty");
  if (p.recall_thresholds.empty()) throw ConfigError("COCO eval: recall_thresholds is empty");
  if (p.max_dets.empty()) throw ConfigError("COCO eval: max_dets is empty");
  if (p.area_ranges.empty()) throw ConfigError("COCO eval: area_ranges is empty");
  require_finite(p.iou_thresholds, "iou_thresholds");
  require_finite(p.recall_thresholds, "recall_thresholds");
  for (const auto& range : p.area_ranges)
    if (std::isnan(range.lo) || std::isnan(range.hi))
      throw ConfigError("COCO eval: area range '" + range.label + "' has a NaN bound");
  for (int64_t m : p.max_dets)
    // 0 keeps no detection: every statistic would be -1, which reads as "no ground truth".
    if (m < 1)
      throw ConfigError("COCO eval: max_dets (--max-dets) must be >= 1, found " +
                        std::to_string(m));
  if (p.iou_type == IouType::kKeypoints) {
    if (!p.use_cats)
      throw ConfigError(
          "COCO eval: keypoints with use_cats off is refused: pycocotools scores it as all "
          "zeros (its OKS step looks up a pooled cell that does not exist); keypoint data sets "
          "have one category, so keep use_cats on");
    if (p.keypoint_sigmas.empty()) throw ConfigError("COCO eval: keypoint_sigmas is empty");
    for (double s : p.keypoint_sigmas)
      if (!(s > 0) || !std::isfinite(s))
        throw ConfigError("COCO eval: keypoint sigmas must be positive");
  }
}

struct CocoEvaluator::State {
  const CocoGroundTruth* gt = nullptr;
  CocoParams params;
  CocoEvalOptions options;
  GtIndex index;
  std::vector<double> variances;  // [K] (2 sigma)^2 for keypoints
};

CocoEvaluator::CocoEvaluator(const CocoGroundTruth& gt, CocoParams params, CocoEvalOptions options)
    : state_(std::make_unique<State>()) {
  state_->gt = &gt;
  state_->params = validated(std::move(params), gt);
  state_->options = options;
  state_->index = build_gt_index(gt, state_->params);
  for (double sigma : state_->params.keypoint_sigmas)
    state_->variances.push_back((sigma * 2) * (sigma * 2));
}

CocoEvaluator::~CocoEvaluator() = default;
CocoEvaluator::CocoEvaluator(CocoEvaluator&&) noexcept = default;
CocoEvaluator& CocoEvaluator::operator=(CocoEvaluator&&) noexcept = default;

const CocoParams& CocoEvaluator::params() const { return state_->params; }

namespace {

// What the cell phase leaves for accumulate() besides the sorted scores (CellTable::dt_score):
// per detection (slot) its outcome bits, per cell and area range the count of non-ignored GTs.
struct CellOutcomes {
  FillBuffer<OutcomeWord> outcome;  // [slots, A, 2W]; a cell's slots past num_slots are unset
  FillBuffer<int32_t> npig;         // [cells, A]
};

// Sorts each cell's detections in place (score descending, file order among equals: numpy's
// stable argsort), computes its IoU/OKS matrix once and matches it for every area range and
// threshold; cells are independent work items, each touching only its own range of dt_*.
CellOutcomes match_cells(const CocoParams& p, const GtIndex& index, const CocoGroundTruth& gt,
                         const std::vector<double>& variances, CellTable& table,
                         const CocoDetections& dets, int threads) {
  const bool keypoints = p.iou_type == IouType::kKeypoints;
  const int num_kp = static_cast<int>(p.keypoint_sigmas.size());
  const size_t k3 = 3 * static_cast<size_t>(num_kp);
  const size_t A = p.area_ranges.size();
  const size_t slots = table.dt_index.size();
  const int words = outcome_words(p.iou_thresholds.size());
  CellOutcomes out;
  out.outcome.resize(outcome_offset(slots, 0, A, words));
  out.npig.resize(table.cells.size() * A);
  std::vector<CellScratch> scratch(static_cast<size_t>(threads));
  const MatchSetup setup = make_match_setup(p.iou_thresholds, p.area_ranges);
  // Long claims, so the prefetch below runs ahead within one; at least 16 per thread, so a few
  // heavy cells (crowded keypoint images) still spread over the threads.
  const size_t claim =
      std::clamp<size_t>(table.cells.size() / (16 * static_cast<size_t>(threads)), 16, 256);
  parallel_chunks(table.cells.size(), claim, threads, [&](int worker, size_t begin, size_t end) {
    CellScratch& s = scratch[static_cast<size_t>(worker)];
    for (size_t c = begin; c < end; ++c) {
      const Cell& cell = table.cells[c];
      // The boxes are read from the results in random order: ask for a later cell's early.
      constexpr size_t kPrefetchCells = 32;
      constexpr int32_t kPrefetchBoxes = 8;
      if (!keypoints && c + kPrefetchCells < end) {
        const Cell& ahead = table.cells[c + kPrefetchCells];
        if (ahead.gt_end > ahead.gt_begin)
          for (int32_t j = ahead.dt_begin;
               j < std::min(ahead.dt_end, ahead.dt_begin + kPrefetchBoxes); ++j)
            __builtin_prefetch(
                &dets.bbox[static_cast<size_t>(table.dt_index[static_cast<size_t>(j)])]);
      }
      const auto first = static_cast<size_t>(cell.dt_begin);
      const auto n = static_cast<size_t>(cell.dt_end - cell.dt_begin);
      int32_t* dt_index = table.dt_index.data() + first;
      double* dt_score = table.dt_score.data() + first;
      double* dt_area = table.dt_area.data() + first;
      if (n > 1) sort_cell_by_score(dt_index, dt_score, dt_area, n, s.sort);
      const int num_dt = cell.num_slots;  // the first maxDets[-1] of them
      CellGts gts;
      gts.count = cell.gt_end - cell.gt_begin;
      OutcomeWord* outcome = out.outcome.data() + outcome_offset(first, 0, A, words);
      if (gts.count == 0) {  // most cells: no matrix, no matcher
        match_cell_without_gts({num_dt, nullptr, dt_area}, setup, outcome, out.npig.data() + c * A);
        continue;
      }
      s.dt_box.resize(keypoints ? 0 : static_cast<size_t>(num_dt));  // OKS reads no det box
      for (size_t d = 0; d < s.dt_box.size(); ++d)
        s.dt_box[d] = dets.bbox[static_cast<size_t>(dt_index[d])];
      gts.box = index.box.data() + cell.gt_begin;
      gts.area = index.area.data() + cell.gt_begin;
      gts.crowd = index.crowd.data() + cell.gt_begin;
      gts.ignore = index.ignore.data() + cell.gt_begin;
      gts.id_is_zero = index.id_is_zero.data() + cell.gt_begin;
      const CellDets cell_dets{num_dt, s.dt_box.data(), dt_area};
      s.ious.resize(static_cast<size_t>(num_dt) * static_cast<size_t>(gts.count));  // [D, G]
      if (num_dt > 0 && gts.count > 0) {
        if (keypoints) {
          s.keypoints.num_keypoints = num_kp;
          s.keypoints.variances = variances.data();
          s.keypoints.gt_rows.resize(static_cast<size_t>(gts.count));
          for (int g = 0; g < gts.count; ++g) {
            const auto ann = index.entry_annotation[static_cast<size_t>(cell.gt_begin + g)];
            s.keypoints.gt_rows[g] = gt.ann_keypoints.data() + static_cast<size_t>(ann) * k3;
          }
          s.keypoints.dt_rows.resize(static_cast<size_t>(num_dt));
          for (int d = 0; d < num_dt; ++d)
            s.keypoints.dt_rows[d] = dets.keypoints.data() + static_cast<size_t>(dt_index[d]) * k3;
          keypoint_oks(s.keypoints, gts, num_dt, s.ious.data(), setup.lowest_threshold);
        } else {
          box_ious(cell_dets, gts, s.ious.data());
        }
      }
      match_cell(gts, cell_dets, s.ious.data(), setup, outcome, out.npig.data() + c * A, s.match);
    }
  });
  return out;
}

// Precision, recall and scores of every category into pycocotools' layouts. Each category is
// computed into a small [A, M, T, R] block, then scattered into [T, R, K, A, M]: A x M contiguous
// values per (t, r), where writing the final layout value by value would touch a new cache line
// with every store.
void accumulate_categories(const CocoParams& p, const CellTable& table,
                           const CellOutcomes& cells_out, int threads, CocoEvalResult& result) {
  const size_t T = p.iou_thresholds.size(), R = p.recall_thresholds.size();
  const size_t K = result.category_ids.size(), A = p.area_ranges.size(), M = p.max_dets.size();
  const size_t block = A * M * T * R;
  result.precision.resize(T * R * K * A * M);
  result.scores.resize(T * R * K * A * M);
  result.recall.resize(T * K * A * M);
  const AccumulateInput input{table.dt_score.data(), cells_out.outcome.data(),
                              &p.iou_thresholds,     &p.recall_thresholds,
                              &p.max_dets,           static_cast<int>(A)};
  result.gt_per_category.assign(K, 0);
  for (size_t k = 0; k < K; ++k)
    for (int32_t c = table.category_begin[k]; c < table.category_begin[k + 1]; ++c)
      result.gt_per_category[k] += cells_out.npig[static_cast<size_t>(c) * A];
  std::vector<AccumulateScratch> scratch(static_cast<size_t>(threads));
  // Four categories per claim: neighbouring categories write the same cache lines of the output
  // arrays, so two threads should rarely work on neighbours at once.
  parallel_chunks(K, 4, threads, [&](int worker, size_t begin, size_t end) {
    AccumulateScratch& s = scratch[static_cast<size_t>(worker)];
    std::vector<AccumulateCell> cells;
    for (size_t k = begin; k < end; ++k) {
      cells.clear();
      for (int32_t c = table.category_begin[k]; c < table.category_begin[k + 1]; ++c) {
        const Cell& cell = table.cells[static_cast<size_t>(c)];
        cells.push_back(
            {cell.dt_begin, cell.num_slots, cells_out.npig.data() + static_cast<size_t>(c) * A});
      }
      s.precision_block.resize(block);  // every entry is written
      s.scores_block.resize(block);
      s.recall_block.resize(A * M * T);
      accumulate_category(input, cells.data(), cells.size(), s.precision_block.data(),
                          s.recall_block.data(), s.scores_block.data(), s);
      for (size_t t = 0; t < T; ++t) {
        for (size_t r = 0; r < R; ++r) {
          const size_t out = ((t * R + r) * K + k) * A * M;
          for (size_t am = 0; am < A * M; ++am) {
            result.precision[out + am] = s.precision_block[(am * T + t) * R + r];
            result.scores[out + am] = s.scores_block[(am * T + t) * R + r];
          }
        }
        for (size_t am = 0; am < A * M; ++am)
          result.recall[(t * K + k) * A * M + am] = s.recall_block[am * T + t];
      }
    }
  });
}

}  // namespace

CocoEvalResult CocoEvaluator::evaluate(const CocoDetections& dets) const {
  const State& st = *state_;
  const CocoParams& p = st.params;
  const GtIndex& index = st.index;
  const bool keypoints = p.iou_type == IouType::kKeypoints;
  const int num_kp = static_cast<int>(p.keypoint_sigmas.size());
  if (keypoints && dets.size() > 0 && dets.keypoints_per_instance != num_kp)
    throw DataError(dets.source + ": results have " + std::to_string(dets.keypoints_per_instance) +
                    " keypoints per instance but " + std::to_string(num_kp) +
                    " sigmas are used (pass one sigma per keypoint, e.g. --sigmas)");
  const int threads = resolve_threads(st.options.threads);

  CocoEvalResult result;
  result.params = p;
  result.image_ids = index.image_ids;
  result.category_ids = p.use_cats ? index.category_ids : std::vector<int64_t>{-1};
  const size_t T = p.iou_thresholds.size(), R = p.recall_thresholds.size();
  const size_t K = result.category_ids.size(), A = p.area_ranges.size(), M = p.max_dets.size();
  result.num_iou = static_cast<int>(T);
  result.num_recall = static_cast<int>(R);
  result.num_categories = static_cast<int>(K);
  result.num_areas = static_cast<int>(A);
  result.num_max_dets = static_cast<int>(M);
  result.counts.images = index.image_ids.size();
  result.counts.categories = K;
  result.counts.gt_annotations = index.entry_annotation.size();

  Stopwatch clock;
  double cpu = process_cpu_seconds();
  const auto lap = [&](double& wall_s, double& cpu_s) {
    wall_s = clock.seconds();
    cpu_s = process_cpu_seconds() - cpu;
    clock.reset();
    cpu = process_cpu_seconds();
  };
  CellTable table = build_cells(index, dets, p, threads, result.counts);
  lap(result.timing.prepare_s, result.timing.prepare_cpu_s);

  // evaluate(): one similarity matrix per cell, matched for every area range and threshold.
  const CellOutcomes outcomes = match_cells(p, index, *st.gt, st.variances, table, dets, threads);
  // Freed now, so that accumulate()'s arrays can take their memory instead of fresh pages (each
  // first touch is a page fault).
  release_matching_fields(table);
  lap(result.timing.evaluate_s, result.timing.evaluate_cpu_s);

  // accumulate(): one category per work item.
  accumulate_categories(p, table, outcomes, threads, result);
  lap(result.timing.accumulate_s, result.timing.accumulate_cpu_s);

  result.stats = summarize_stats(result);
  lap(result.timing.summarize_s, result.timing.summarize_cpu_s);
  return result;
}

double CocoEvalResult::precision_at(int t, int r, int k, int a, int m) const {
  return precision[static_cast<size_t>(
      (((t * num_recall + r) * num_categories + k) * num_areas + a) * num_max_dets + m)];
}

double CocoEvalResult::recall_at(int t, int k, int a, int m) const {
  return recall[static_cast<size_t>(((t * num_categories + k) * num_areas + a) * num_max_dets + m)];
}

double CocoEvalResult::category_ap(int k, double iou_threshold) const {
  std::vector<double> values;
  const int m = num_max_dets - 1;
  for (int t = 0; t < num_iou; ++t) {
    if (iou_threshold >= 0 && params.iou_thresholds[static_cast<size_t>(t)] != iou_threshold)
      continue;
    for (int r = 0; r < num_recall; ++r) {
      const double v = precision_at(t, r, k, 0, m);
      if (v > -1) values.push_back(v);
    }
  }
  return values.empty() ? -1.0 : numpy_mean(values.data(), values.size());
}

std::vector<std::string> CocoEvalResult::summary_lines() const {
  std::vector<std::string> lines;
  const auto specs = stat_specs(params);
  for (size_t i = 0; i < specs.size() && i < stats.size(); ++i)
    lines.push_back(format_stat_line(params, specs[i], stats[i]));
  return lines;
}

CocoEvalResult evaluate_coco(const CocoGroundTruth& gt, const CocoDetections& detections,
                             const CocoParams& params, CocoEvalOptions options) {
  return CocoEvaluator(gt, params, options).evaluate(detections);
}

}  // namespace detrain::eval
