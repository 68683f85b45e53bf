// Cell grouping for the evaluator; see coco_cells.h. Orders reproduce pycocotools' _prepare():
// getAnnIds walks image ids ascending and each image's annotations in file order, loadAnns maps
// every id to the last annotation carrying it, and useCats=0 pools categories ascending.
#include "eval/coco_cells.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>

#include "common/errors.h"
#include "eval/coco_memory.h"
#include "eval/coco_parallel.h"

namespace detrain::eval {

IdLookup::IdLookup(const std::vector<int64_t>& keys) : size_(0) {
  size_t capacity = 16;
  while (capacity < keys.size() * 2) capacity *= 2;
  keys_.assign(capacity, 0);
  values_.assign(capacity, -1);
  mask_ = capacity - 1;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (uint64_t slot = hash(keys[i]) & mask_;; slot = (slot + 1) & mask_) {
      if (values_[slot] < 0) {
        keys_[slot] = keys[i];
        values_[slot] = static_cast<int32_t>(i);
        ++size_;
        break;
      }
      if (keys_[slot] == keys[i]) {
        values_[slot] = static_cast<int32_t>(i);
        break;
      }
    }
  }
}

namespace {

std::vector<int64_t> sorted_unique(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Where stable_scatter put each key's items: end(key) is one past the last position of key's
// items (their start is end(key - 1), or 0).
struct ScatterOffsets {
  std::vector<int32_t> next;  // [block, key] positions after placing
  size_t blocks = 0, buckets = 0;
  int32_t end(size_t key) const { return next[(blocks - 1) * buckets + key]; }
};

// Stable counting sort of items 0 .. n-1 by key (in [0, buckets)): place(i, position) is called
// once per item with its position in the sorted order (items of one key keep their order).
// Large inputs are counted and placed in blocks on `threads` threads: block k's items of a key
// go after blocks 0..k-1's, so every position is the same whatever the split.
template <class KeyOf, class Place>
ScatterOffsets stable_scatter(size_t n, size_t buckets, KeyOf key_of, Place place, int threads) {
  constexpr size_t kMinBlock = size_t{1} << 16;
  size_t blocks = std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), n / kMinBlock);
  // Per-block counts cost blocks x buckets: keep them within twice the input.
  while (blocks > 1 && blocks * buckets > 2 * n) --blocks;
  blocks = std::max<size_t>(blocks, 1);
  const size_t block_size = (n + blocks - 1) / blocks;
  std::vector<int32_t> next(blocks * buckets, 0);  // [block, key]: counts, then positions
  parallel_chunks(blocks, 1, threads, [&](int, size_t b0, size_t b1) {
    for (size_t b = b0; b < b1; ++b) {
      int32_t* count = next.data() + b * buckets;
      for (size_t i = b * block_size, end = std::min(n, (b + 1) * block_size); i < end; ++i)
        ++count[static_cast<size_t>(key_of(i))];
    }
  });
  int32_t offset = 0;
  for (size_t key = 0; key < buckets; ++key)
    for (size_t b = 0; b < blocks; ++b) {
      int32_t& slot = next[b * buckets + key];
      const int32_t count = slot;
      slot = offset;
      offset += count;
    }
  parallel_chunks(blocks, 1, threads, [&](int, size_t b0, size_t b1) {
    for (size_t b = b0; b < b1; ++b) {
      int32_t* position = next.data() + b * buckets;
      for (size_t i = b * block_size, end = std::min(n, (b + 1) * block_size); i < end; ++i)
        place(i, static_cast<size_t>(position[static_cast<size_t>(key_of(i))]++));
    }
  });
  // Block `blocks - 1` places each key's last items, so its row ends where the key ends.
  return {std::move(next), blocks, buckets};
}

// `order`'s items grouped by key (in [0, buckets)), their order kept inside a key.
template <class KeyOf>
std::vector<int32_t> stable_bucket(const std::vector<int32_t>& order, size_t buckets, KeyOf key_of,
                                   int threads = 1) {
  std::vector<int32_t> sorted(order.size());
  stable_scatter(
      order.size(), buckets, [&](size_t i) { return key_of(order[i]); },
      [&](size_t i, size_t position) { sorted[position] = order[i]; }, threads);
  return sorted;
}

// `order` sorted by (cell category, image, pooled category) with its given order kept inside
// (least significant key first). `cell_category` is the category index, or 0 for every entry
// when categories are pooled (use_cats off: a cell is an image, categories ascending inside).
template <class ImageOf, class CategoryOf>
std::vector<int32_t> cell_order(std::vector<int32_t> order, size_t num_images,
                                size_t num_categories, bool pooled, ImageOf image_of,
                                CategoryOf category_of, int threads = 1) {
  if (pooled) order = stable_bucket(order, num_categories, category_of, threads);
  order = stable_bucket(order, num_images, image_of, threads);
  if (!pooled) order = stable_bucket(order, num_categories, category_of, threads);
  return order;
}

void require_fields(const CocoGroundTruth& gt, size_t ann, IouType type) {
  const uint8_t fields = gt.ann_fields[ann];
  const char* missing = nullptr;
  if (!(fields & kGtBbox))
    missing = "bbox";
  else if (!(fields & kGtArea))
    missing = "area";
  else if (!(fields & kGtIscrowd))
    missing = "iscrowd";
  else if (type == IouType::kKeypoints && !(fields & kGtNumKeypoints))
    missing = "num_keypoints";
  else if (type == IouType::kKeypoints && !(fields & kGtKeypoints))
    missing = "keypoints";
  if (missing)
    throw DataError(gt.source + ": annotation id " + std::to_string(gt.ann_id[ann]) + " has no '" +
                    missing + "' (required on every evaluated annotation: bbox, area, iscrowd" +
                    (type == IouType::kKeypoints ? ", keypoints, num_keypoints)" : ")"));
}

}  // namespace

GtIndex build_gt_index(const CocoGroundTruth& gt, const CocoParams& params) {
  GtIndex index;
  const std::vector<int64_t> all_images = sorted_unique(gt.image_ids);
  index.all_images = IdLookup(all_images);
  index.image_ids = params.image_ids.empty() ? all_images : sorted_unique(params.image_ids);
  index.eval_images = IdLookup(index.image_ids);

  std::vector<int64_t> gt_category_ids;
  for (const auto& c : gt.categories) gt_category_ids.push_back(c.id);
  index.gt_categories = IdLookup(sorted_unique(gt_category_ids));
  index.images_are_all = params.image_ids.empty();
  index.categories_are_all = params.category_ids.empty();
  const std::vector<int64_t>& listed =
      params.category_ids.empty() ? gt_category_ids : params.category_ids;
  index.category_ids = sorted_unique(listed);
  if (!params.use_cats && index.category_ids.size() != listed.size())
    throw DataError(gt.source +
                    ": the category list repeats an id; with use_cats off pycocotools would pool "
                    "that category twice, which detrain refuses (remove the duplicate)");
  index.eval_categories = IdLookup(index.category_ids);

  const size_t n = gt.num_annotations();
  // pycocotools' loadAnns maps an id to the last annotation holding it.
  std::vector<int32_t> resolved(n);
  std::iota(resolved.begin(), resolved.end(), 0);
  const IdLookup by_id(gt.ann_id);
  if (by_id.size() != n)
    for (size_t j = 0; j < n; ++j) resolved[j] = by_id.find(gt.ann_id[j]);

  // Annotations by their own image, in file order (getAnnIds' imgToAnns walk).
  const size_t num_images = index.image_ids.size();
  const size_t num_categories = index.category_ids.size();
  std::vector<int32_t> image_of(n);
  std::vector<int32_t> walk;
  for (size_t j = 0; j < n; ++j) {
    image_of[j] = index.eval_images.find(gt.ann_image_id[j]);
    if (image_of[j] >= 0) walk.push_back(static_cast<int32_t>(j));
  }
  walk =
      stable_bucket(walk, num_images, [&](int32_t j) { return image_of[static_cast<size_t>(j)]; });

  struct Entry {
    int32_t image, category, annotation;
  };
  std::vector<Entry> entries;
  entries.reserve(walk.size());
  for (const int32_t j : walk) {
    if (params.use_cats &&
        index.eval_categories.find(gt.ann_category_id[static_cast<size_t>(j)]) < 0)
      continue;
    const size_t r = static_cast<size_t>(resolved[static_cast<size_t>(j)]);
    const int32_t image = index.eval_images.find(gt.ann_image_id[r]);
    const int32_t category = index.eval_categories.find(gt.ann_category_id[r]);
    if (image < 0 || category < 0) continue;  // lands in a cell that is never evaluated
    require_fields(gt, r, params.iou_type);
    entries.push_back({image, category, static_cast<int32_t>(r)});
  }

  const bool pooled = !params.use_cats;
  std::vector<int32_t> positions(entries.size());
  std::iota(positions.begin(), positions.end(), 0);
  const std::vector<int32_t> order = cell_order(
      std::move(positions), num_images, num_categories, pooled,
      [&](int32_t e) { return entries[static_cast<size_t>(e)].image; },
      [&](int32_t e) { return entries[static_cast<size_t>(e)].category; });
  const size_t num_entries = entries.size();
  index.entry_image.resize(num_entries);
  index.entry_cell_category.resize(num_entries);
  index.entry_annotation.resize(num_entries);
  index.box.resize(num_entries);
  index.area.resize(num_entries);
  index.crowd.resize(num_entries);
  index.ignore.resize(num_entries);
  index.id_is_zero.resize(num_entries);
  for (size_t e = 0; e < num_entries; ++e) {
    const Entry& entry = entries[static_cast<size_t>(order[e])];
    const size_t a = static_cast<size_t>(entry.annotation);
    index.entry_image[e] = entry.image;
    index.entry_cell_category[e] = pooled ? 0 : entry.category;
    index.entry_annotation[e] = entry.annotation;
    index.box[e] = gt.ann_bbox[a];
    index.area[e] = gt.ann_area[a];
    index.crowd[e] = gt.ann_iscrowd[a];
    index.ignore[e] = gt.ann_iscrowd[a] ||
                      (params.iou_type == IouType::kKeypoints && gt.ann_num_keypoints[a] == 0);
    index.id_is_zero[e] = gt.ann_id[a] == 0;
  }
  return index;
}

void release_matching_fields(CellTable& table) {
  FillBuffer<int32_t>().swap(table.dt_index);
  FillBuffer<double>().swap(table.dt_area);
}

CellTable build_cells(const GtIndex& index, const CocoDetections& dets, const CocoParams& params,
                      int threads, CocoEvalCounts& counts) {
  const size_t n = dets.size();
  if (n > static_cast<size_t>(INT32_MAX))  // positions and slots are 32-bit
    throw DataError(dets.source + ": " + std::to_string(n) +
                    " results; the evaluator takes at most 2^31 - 1 per evaluation (split the "
                    "file by image and evaluate the parts)");
  const size_t num_images = index.image_ids.size();
  FillBuffer<int32_t> det_image, det_category;  // det_category is read only where det_image >= 0
  det_image.resize(n);
  det_category.resize(n);
  // Lookups in parallel blocks; per-block findings are combined in block order so errors and
  // counts do not depend on the thread count.
  constexpr size_t kBlock = 1 << 15;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  struct BlockFindings {
    size_t bad_image = SIZE_MAX, nan_value = SIZE_MAX, unknown = 0, first_unknown = SIZE_MAX;
    size_t in_cells = 0;
  };
  std::vector<BlockFindings> findings(blocks);
  parallel_chunks(n, kBlock, threads, [&](int, size_t begin, size_t end) {
    BlockFindings& f = findings[begin / kBlock];
    for (size_t i = begin; i < end; ++i) {
      det_image[i] = -1;
      const int32_t gt_image = index.all_images.find(dets.image_id[i]);
      if (gt_image < 0) {
        f.bad_image = std::min(f.bad_image, i);
        continue;
      }
      const BoxXywh& b = dets.bbox[i];
      if (std::isnan(dets.score[i]) || std::isnan(b.x) || std::isnan(b.y) || std::isnan(b.w) ||
          std::isnan(b.h)) {
        f.nan_value = std::min(f.nan_value, i);
        continue;
      }
      const int32_t image =
          index.images_are_all ? gt_image : index.eval_images.find(dets.image_id[i]);
      if (image < 0) continue;
      const int32_t gt_category = index.gt_categories.find(dets.category_id[i]);
      if (gt_category < 0) {
        if (f.unknown++ == 0) f.first_unknown = i;
        continue;
      }
      const int32_t category =
          index.categories_are_all ? gt_category : index.eval_categories.find(dets.category_id[i]);
      if (category < 0) continue;
      det_image[i] = image;
      det_category[i] = category;
      ++f.in_cells;
    }
  });
  size_t in_cells = 0, bad_image = SIZE_MAX, nan_value = SIZE_MAX;
  for (const BlockFindings& f : findings) {
    bad_image = std::min(bad_image, f.bad_image);
    nan_value = std::min(nan_value, f.nan_value);
    if (f.unknown > 0 && counts.dropped_unknown_category == 0)
      counts.first_unknown_category = dets.category_id[f.first_unknown];
    counts.dropped_unknown_category += f.unknown;
    in_cells += f.in_cells;
  }
  if (bad_image != SIZE_MAX)  // checked first, like loadRes' assertion
    throw DataError(dets.source + ": result " + std::to_string(bad_image) + " has image_id " +
                    std::to_string(dets.image_id[bad_image]) +
                    ", which is not an image of the ground truth (pycocotools: 'Results do not "
                    "correspond to current coco set'); evaluate against the matching GT file");
  if (nan_value != SIZE_MAX)
    throw DataError(dets.source + ": result " + std::to_string(nan_value) +
                    " has a NaN score or box");
  counts.detections = n;
  counts.detections_in_cells = in_cells;

  const bool pooled = !params.use_cats;
  const size_t num_categories = index.category_ids.size();
  const size_t m = in_cells;
  // Detection fields in cell order, so the cell phase reads contiguous memory; the box only by
  // index: every placed field is a scattered write into fresh pages, and only the detections of
  // cells holding a GT (a third here) need their box, which the cell phase reads from the
  // results through dt_index.
  CellTable table;
  table.dt_index.resize(m);
  table.dt_score.resize(m);
  table.dt_area.resize(m);
  const auto put = [&](size_t i, size_t j) {
    table.dt_index[j] = static_cast<int32_t>(i);
    table.dt_score[j] = dets.score[i];
    table.dt_area[j] = dets.area[i];
  };
  // A run of detections sharing a cell: its (cell category, image) key, and where it ends.
  struct DetectionRun {
    uint64_t key;
    size_t end;
  };
  const auto cell_key_of = [](uint64_t category, uint64_t image) { return category << 32 | image; };
  // One counting sort on the whole cell key (category, image; pooled: image, category) when
  // its range is not much larger than the input: it reads the results in file order and writes
  // each to its place, where sorting positions first and gathering after would read them in
  // random order. Results outside every cell sort last and are not placed. The runs then come
  // from the counts alone.
  const size_t cell_keys = num_images * std::max<size_t>(num_categories, 1);
  const bool counting = num_categories > 0 && cell_keys <= 4 * n;
  ScatterOffsets offsets;
  FillBuffer<uint64_t> dt_cell_key;  // otherwise: each placed detection's key, for the runs
  if (counting) {
    const auto cell_key = [&](size_t i) {
      if (det_image[i] < 0) return cell_keys;
      const auto image = static_cast<size_t>(det_image[i]);
      const auto category = static_cast<size_t>(det_category[i]);
      return pooled ? image * num_categories + category : category * num_images + image;
    };
    offsets = stable_scatter(
        n, cell_keys + 1, cell_key,
        [&](size_t i, size_t j) {
          if (j < m) put(i, j);
        },
        threads);
  } else {
    std::vector<int32_t> kept;
    kept.reserve(in_cells);
    for (size_t i = 0; i < n; ++i)
      if (det_image[i] >= 0) kept.push_back(static_cast<int32_t>(i));
    const std::vector<int32_t> order = cell_order(
        std::move(kept), num_images, num_categories, pooled,
        [&](int32_t i) { return det_image[static_cast<size_t>(i)]; },
        [&](int32_t i) { return det_category[static_cast<size_t>(i)]; }, threads);
    dt_cell_key.resize(m);
    parallel_chunks(m, kBlock, threads, [&](int, size_t begin, size_t end) {
      constexpr size_t kPrefetchAhead = 16;  // random reads: keep several misses in flight
      for (size_t j = begin; j < end; ++j) {
        if (j + kPrefetchAhead < end) {
          const auto ahead = static_cast<size_t>(order[j + kPrefetchAhead]);
          __builtin_prefetch(&dets.score[ahead]);
          __builtin_prefetch(&det_image[ahead]);
        }
        const auto i = static_cast<size_t>(order[j]);
        put(i, j);
        dt_cell_key[j] = cell_key_of(pooled ? 0 : static_cast<uint64_t>(det_category[i]),
                                     static_cast<uint32_t>(det_image[i]));
      }
    });
  }
  size_t next_key = 0;  // counting: the first linear key not yet passed
  const auto run_at = [&](size_t d) -> DetectionRun {
    if (d >= m) return {UINT64_MAX, m};
    if (!counting) {
      size_t end = d;
      while (end < m && dt_cell_key[end] == dt_cell_key[d]) ++end;
      return {dt_cell_key[d], end};
    }
    while (static_cast<size_t>(offsets.end(next_key)) <= d) ++next_key;  // keys without results
    if (pooled) {  // one cell per image: its categories' keys are consecutive
      const size_t image = next_key / num_categories;
      next_key = (image + 1) * num_categories;
      return {cell_key_of(0, image), static_cast<size_t>(offsets.end(next_key - 1))};
    }
    const size_t key = next_key++;
    return {cell_key_of(key / num_images, key % num_images), static_cast<size_t>(offsets.end(key))};
  };

  // Cells: runs of equal (cell category, image) in the GT entries and the detections, merged.
  const auto gt_key = [&](size_t e) {
    return cell_key_of(static_cast<uint64_t>(index.entry_cell_category[e]),
                       static_cast<uint32_t>(index.entry_image[e]));
  };
  const size_t num_gt = index.entry_image.size();
  const int64_t max_det = params.max_dets.empty() ? 0 : params.max_dets.back();
  table.category_begin.assign((pooled ? 1 : num_categories) + 1, 0);
  table.cells.reserve(num_gt + m);  // every cell holds a GT or a detection
  size_t g = 0, d = 0;
  DetectionRun run = run_at(0);
  while (g < num_gt || d < m) {
    const uint64_t key = std::min(g < num_gt ? gt_key(g) : UINT64_MAX, run.key);
    Cell cell;
    cell.image = static_cast<int32_t>(key & 0xffffffffu);
    cell.category = static_cast<int32_t>(key >> 32);
    cell.gt_begin = static_cast<int32_t>(g);
    while (g < num_gt && gt_key(g) == key) ++g;
    cell.gt_end = static_cast<int32_t>(g);
    cell.dt_begin = static_cast<int32_t>(d);
    if (run.key == key) {
      d = run.end;
      run = run_at(d);
    }
    cell.dt_end = static_cast<int32_t>(d);
    cell.num_slots = static_cast<int32_t>(std::min<int64_t>(cell.dt_end - cell.dt_begin, max_det));
    ++table.category_begin[static_cast<size_t>(cell.category) + 1];
    table.cells.push_back(cell);
  }
  for (size_t k = 0; k + 1 < table.category_begin.size(); ++k)
    table.category_begin[k + 1] += table.category_begin[k];
  counts.cells = table.cells.size();
  return table;
}

}  // namespace detrain::eval
