// The per-sample transform chains. Train: mosaic (p = augment.mosaic, partners drawn from a
// window of recent positions in the epoch order) or load + letterbox, then RandomPerspective,
// MixUp (p = augment.mixup), HSV, vertical and horizontal flips. Val: load (long side = imgsz)
// + letterbox to the batch's rect shape without scale-up. Every random draw comes from Rng
// streams named by (seed, epoch, record), so a sample never depends on which thread builds it.
#pragma once

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include "config/augment_options.h"
#include "data/coco_records.h"
#include "data/image_cache.h"
#include "data/sample.h"

namespace detrain::data {

// Loads record images (decode + long-side resize) through a shared cache. The scan drops files
// that are not whole (data/image_check.h); one that still fails to decode here (damaged inside,
// or changed since the scan) is, in training, warned about once, counted, and replaced by the
// next record that decodes, so an epoch never stops on it. Validation (`exact`) never replaces
// an image, which would score one image's predictions twice and another's not at all: the
// failure is a DataError naming the file.
class ImageSource {
 public:
  // `cache` may be null (no reuse). exact: full-size decodes, the reference's pixels, and no
  // replacement (val).
  ImageSource(const std::vector<ImageRecord>& records, int64_t kpt_count, int imgsz, bool exact,
              DecodedImageStore* cache);

  // Record `index` (or its replacement) as a sample in the resized image's pixels.
  Sample load(int64_t index);

  int64_t corrupt_count() const;
  int64_t decodes() const { return decodes_.load(); }
  const std::vector<ImageRecord>& records() const { return records_; }

 private:
  bool known_bad(int64_t index) const;
  void mark_bad(int64_t index, const std::string& error);

  const std::vector<ImageRecord>& records_;
  int64_t kpt_count_;
  int imgsz_;
  bool exact_;
  DecodedImageStore* cache_;
  mutable std::mutex bad_mutex_;
  std::set<int64_t> bad_;
  std::atomic<int64_t> decodes_{0};
};

struct TrainChainOptions {
  int imgsz = 640;
  config::AugmentOptions augment;
  std::vector<int64_t> flip_idx;  // [K]; empty with keypoints disables fliplr
  uint64_t seed = 0;
  // Mosaic partners come from the `mosaic_window` positions up to this one in the epoch order
  // (the first `mosaic_window` early in an epoch), like the reference's buffer of
  // min(n, 8 * batch, 1000) recent images; 0 draws from the whole set (its cache=ram case).
  size_t mosaic_window = 128;
};

// The epoch positions [first, first + size) that mosaic tiles and the MixUp partner of the sample
// at `position` are drawn from: the `mosaic_window` positions ending at it (the first ones early
// in an epoch), the whole epoch of `count` positions when `mosaic_window` is 0. One rule for both,
// so MixUp never pairs an image with itself because the window was read as 1.
struct PartnerWindow {
  size_t first = 0, size = 1;
};
PartnerWindow partner_window(size_t mosaic_window, size_t position, size_t count);

// CPU milliseconds of the calling thread per stage, summed over calls (`detrain bench loader`).
struct ChainTimes {
  double load = 0, place = 0, warp = 0, hsv = 0, flip = 0;
};

// The augmented sample at `position` of the epoch `order` (record indices). `times`, when
// given, accumulates the time of each stage.
Sample make_train_sample(ImageSource& source, const TrainChainOptions& options, bool mosaic,
                         const std::vector<int64_t>& order, size_t position, int64_t epoch,
                         ChainTimes* times = nullptr);

// The val sample of record `index`, letterboxed (no scale-up, centred) to shape_h x shape_w.
Sample make_val_sample(ImageSource& source, int64_t index, int shape_h, int shape_w);

// Val rect batches: records sorted by aspect ratio (h / w, stable) and one input shape per
// batch, ceil(ratio * imgsz / stride + pad) * stride, as the reference's set_rectangle.
struct RectBatches {
  std::vector<int64_t> order;                 // record indices in batch order
  std::vector<std::array<int, 2>> shapes_hw;  // [batches] input height, width
};
RectBatches plan_rect_batches(const std::vector<ImageRecord>& records, int64_t batch, int imgsz,
                              int stride = 32, double pad = 0.5);

// Square batches (`val.rect=false`): records in their order, every input imgsz x imgsz with no
// extra padding, so an image lands where the non-mosaic training letterbox puts it.
RectBatches plan_square_batches(size_t records, int64_t batch, int imgsz);

}  // namespace detrain::data
