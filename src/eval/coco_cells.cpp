// Cell grouping for the evaluator; see coco_cells.h. Orders reproduce pycocotools' _prepare():
// getAnnIds walks image ids ascending and each image's annotations in file order, loadAnns maps
// every id to the last annotation carrying it, and useCats=0 pools categories ascending.
#include "eval/coco_cells.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/errors.h"

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

// Stable counting sort of items by a key in [0, buckets): returns the bucket offsets
// ([buckets + 1]) and fills `order` with item positions grouped by key, original order kept.
template <class KeyOf>
std::vector<int32_t> bucket_by(size_t n, size_t buckets, KeyOf key_of,
                               std::vector<int32_t>& order) {
  std::vector<int32_t> begin(buckets + 1, 0);
  for (size_t i = 0; i < n; ++i) ++begin[static_cast<size_t>(key_of(i)) + 1];
  for (size_t b = 0; b < buckets; ++b) begin[b + 1] += begin[b];
  std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
  order.resize(n);
  for (size_t i = 0; i < n; ++i)
    order[static_cast<size_t>(fill[static_cast<size_t>(key_of(i))]++)] = static_cast<int32_t>(i);
  return begin;
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
  index.gt_categories = IdLookup(gt_category_ids);
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
  std::vector<int32_t> image_of(n);
  for (size_t j = 0; j < n; ++j) image_of[j] = index.eval_images.find(gt.ann_image_id[j]);
  std::vector<int32_t> kept;
  for (size_t j = 0; j < n; ++j)
    if (image_of[j] >= 0) kept.push_back(static_cast<int32_t>(j));
  std::vector<int32_t> walk_order;
  bucket_by(
      kept.size(), num_images, [&](size_t i) { return image_of[static_cast<size_t>(kept[i])]; },
      walk_order);

  struct Entry {
    int32_t image, category, annotation;
  };
  std::vector<Entry> entries;
  entries.reserve(kept.size());
  for (size_t w = 0; w < walk_order.size(); ++w) {
    const size_t j = static_cast<size_t>(kept[static_cast<size_t>(walk_order[w])]);
    if (params.use_cats && index.eval_categories.find(gt.ann_category_id[j]) < 0) continue;
    const size_t r = static_cast<size_t>(resolved[j]);
    const int32_t image = index.eval_images.find(gt.ann_image_id[r]);
    const int32_t category = index.eval_categories.find(gt.ann_category_id[r]);
    if (image < 0 || category < 0) continue;  // lands in a cell that is never evaluated
    require_fields(gt, r, params.iou_type);
    entries.push_back({image, category, static_cast<int32_t>(r)});
  }

  // Cell order: by image, then category, keeping the walk order inside a cell.
  std::vector<int32_t> order;
  index.image_begin = bucket_by(
      entries.size(), num_images, [&](size_t i) { return entries[i].image; }, order);
  for (size_t i = 0; i < num_images; ++i)
    std::stable_sort(order.begin() + index.image_begin[i], order.begin() + index.image_begin[i + 1],
                     [&](int32_t a, int32_t b) {
                       return entries[static_cast<size_t>(a)].category <
                              entries[static_cast<size_t>(b)].category;
                     });

  const size_t num_entries = entries.size();
  index.entry_category.resize(num_entries);
  index.entry_annotation.resize(num_entries);
  index.box.resize(num_entries);
  index.area.resize(num_entries);
  index.crowd.resize(num_entries);
  index.ignore.resize(num_entries);
  index.id_is_zero.resize(num_entries);
  for (size_t e = 0; e < num_entries; ++e) {
    const Entry& entry = entries[static_cast<size_t>(order[e])];
    const size_t a = static_cast<size_t>(entry.annotation);
    index.entry_category[e] = entry.category;
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

CellTable build_cells(const GtIndex& index, const CocoDetections& dets, const CocoParams& params,
                      CocoEvalCounts& counts) {
  const size_t n = dets.size();
  const size_t num_images = index.image_ids.size();
  std::vector<int32_t> det_image(n), det_category(n);
  size_t in_cells = 0;
  for (size_t i = 0; i < n; ++i) {
    det_image[i] = -1;
    if (index.all_images.find(dets.image_id[i]) < 0)
      throw DataError(dets.source + ": result " + std::to_string(i) + " has image_id " +
                      std::to_string(dets.image_id[i]) +
                      ", which is not an image of the ground truth (pycocotools: 'Results do not "
                      "correspond to current coco set'); evaluate against the matching GT file");
    const BoxXywh& b = dets.bbox[i];
    if (std::isnan(dets.score[i]) || std::isnan(b.x) || std::isnan(b.y) || std::isnan(b.w) ||
        std::isnan(b.h))
      throw DataError(dets.source + ": result " + std::to_string(i) + " has a NaN score or box");
    const int32_t image = index.eval_images.find(dets.image_id[i]);
    if (image < 0) continue;
    if (index.gt_categories.find(dets.category_id[i]) < 0) {
      if (counts.dropped_unknown_category++ == 0)
        counts.first_unknown_category = dets.category_id[i];
      continue;
    }
    const int32_t category = index.eval_categories.find(dets.category_id[i]);
    if (category < 0) continue;
    det_image[i] = image;
    det_category[i] = category;
    ++in_cells;
  }
  counts.detections = n;
  counts.detections_in_cells = in_cells;

  // Detections by image (file order kept), then by category inside each image.
  std::vector<int32_t> kept;
  kept.reserve(in_cells);
  for (size_t i = 0; i < n; ++i)
    if (det_image[i] >= 0) kept.push_back(static_cast<int32_t>(i));
  std::vector<int32_t> order;
  const std::vector<int32_t> dt_image_begin = bucket_by(
      kept.size(), num_images, [&](size_t i) { return det_image[static_cast<size_t>(kept[i])]; },
      order);
  CellTable table;
  table.dt_entries.resize(kept.size());
  for (size_t i = 0; i < kept.size(); ++i)
    table.dt_entries[i] = kept[static_cast<size_t>(order[i])];
  for (size_t i = 0; i < num_images; ++i)
    std::stable_sort(table.dt_entries.begin() + dt_image_begin[i],
                     table.dt_entries.begin() + dt_image_begin[i + 1], [&](int32_t a, int32_t b) {
                       return det_category[static_cast<size_t>(a)] <
                              det_category[static_cast<size_t>(b)];
                     });

  // Merge the GT and detection runs of each image into cells (image-major).
  std::vector<Cell> by_image;
  const bool pooled = !params.use_cats;
  for (size_t i = 0; i < num_images; ++i) {
    int32_t g = index.image_begin[i];
    const int32_t g_end = index.image_begin[i + 1];
    int64_t d = dt_image_begin[i];
    const int64_t d_end = dt_image_begin[i + 1];
    if (pooled) {
      if (g < g_end || d < d_end)
        by_image.push_back({static_cast<int32_t>(i), 0, g, g_end, d, d_end, 0, 0});
      continue;
    }
    while (g < g_end || d < d_end) {
      const int32_t gc = g < g_end ? index.entry_category[static_cast<size_t>(g)] : INT32_MAX;
      const int32_t dc =
          d < d_end ? det_category[static_cast<size_t>(table.dt_entries[static_cast<size_t>(d)])]
                    : INT32_MAX;
      const int32_t category = std::min(gc, dc);
      Cell cell{static_cast<int32_t>(i), category, g, g, d, d, 0, 0};
      while (cell.gt_end < g_end &&
             index.entry_category[static_cast<size_t>(cell.gt_end)] == category)
        ++cell.gt_end;
      while (
          cell.dt_end < d_end &&
          det_category[static_cast<size_t>(table.dt_entries[static_cast<size_t>(cell.dt_end)])] ==
              category)
        ++cell.dt_end;
      g = cell.gt_end;
      d = cell.dt_end;
      by_image.push_back(cell);
    }
  }

  // Category-major order, images ascending inside; slots after the maxDets cut.
  const size_t num_categories = pooled ? 1 : index.category_ids.size();
  std::vector<int32_t> cell_order;
  table.category_begin = bucket_by(
      by_image.size(), num_categories, [&](size_t c) { return by_image[c].category; }, cell_order);
  const int64_t max_det = params.max_dets.empty() ? 0 : params.max_dets.back();
  table.cells.resize(by_image.size());
  int64_t slot = 0;
  for (size_t c = 0; c < by_image.size(); ++c) {
    Cell cell = by_image[static_cast<size_t>(cell_order[c])];
    cell.slot_begin = slot;
    cell.num_slots = static_cast<int32_t>(std::min<int64_t>(cell.dt_end - cell.dt_begin, max_det));
    slot += cell.num_slots;
    table.cells[c] = cell;
  }
  table.num_slots = slot;
  counts.cells = table.cells.size();
  return table;
}

}  // namespace detrain::eval
