// Transform chains; see pipeline.h. The reference's Compose of transform objects becomes two
// plain functions; random draws come from per-sample streams instead of Python's `random`.
#include "data/pipeline.h"

#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "common/errors.h"
#include "common/rng.h"
#include "data/decode.h"
#include "data/flip.h"
#include "data/hsv.h"
#include "data/letterbox.h"
#include "data/mixup.h"
#include "data/mosaic.h"
#include "data/pad_value.h"
#include "data/random_affine.h"

namespace detrain::data {

namespace {

// Stream ids: the augmentation stream is separate from the shuffle stream of the loader.
constexpr uint64_t kAugmentStream = 0xa11;
constexpr uint64_t kMixupStream = 0xa12;
// Replacement attempts before a run of undecodable files becomes fatal.
constexpr int64_t kMaxReplacements = 64;

// CPU time of the calling thread: stage costs that a busy machine does not inflate.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// Transforms that edit pixels in place must not touch an image the cache still holds.
void own_image(Sample& s, const cv::Mat& shared) {
  if (s.image.data == shared.data) s.image = s.image.clone();
}

}  // namespace

ImageSource::ImageSource(const std::vector<ImageRecord>& records, int64_t kpt_count, int imgsz,
                         bool exact, DecodedImageStore* cache)
    : records_(records), kpt_count_(kpt_count), imgsz_(imgsz), exact_(exact), cache_(cache) {}

bool ImageSource::known_bad(int64_t index) const {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  return bad_.count(index) > 0;
}

void ImageSource::mark_bad(int64_t index, const std::string& error) {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  if (bad_.insert(index).second)
    spdlog::warn("skipping image {} ({}); it is replaced by the next image that decodes",
                 records_[static_cast<size_t>(index)].file, error);
}

int64_t ImageSource::corrupt_count() const {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  return static_cast<int64_t>(bad_.size());
}

Sample ImageSource::load(int64_t index) {
  const auto n = static_cast<int64_t>(records_.size());
  for (int64_t attempt = 0; attempt < std::min(n, kMaxReplacements); ++attempt) {
    const int64_t i = (index + attempt) % n;
    if (known_bad(i)) continue;
    cv::Mat image = cache_ ? cache_->get(i) : cv::Mat();
    if (image.empty()) {
      DecodedImage d = load_image(records_[static_cast<size_t>(i)].file, imgsz_, exact_);
      ++decodes_;
      if (!d.ok() && exact_)
        throw DataError(records_[static_cast<size_t>(i)].file + ": " + d.error +
                        "; the image passed the scan's check (header and end marker) but does not "
                        "decode: remove or replace it, then validate again");
      if (!d.ok()) {
        mark_bad(i, d.error);
        continue;
      }
      image = d.bgr;
      if (cache_) cache_->put(i, image);
    }
    return sample_from_record(records_[static_cast<size_t>(i)], kpt_count_, image, i);
  }
  throw DataError("no decodable image among " + std::to_string(std::min(n, kMaxReplacements)) +
                  " records from " + records_[static_cast<size_t>(index)].file +
                  " on; check the image files (see the warnings above)");
}

PartnerWindow partner_window(size_t mosaic_window, size_t position, size_t count) {
  const size_t size = mosaic_window == 0 ? count : std::min(mosaic_window, count);
  return {position + 1 >= size ? position + 1 - size : 0, std::max<size_t>(size, 1)};
}

namespace {

// Mosaic (or the loaded image) + random perspective: the reference's pre_transform.
Sample geometric_stage(ImageSource& source, const TrainChainOptions& o, bool mosaic,
                       const std::vector<int64_t>& order, size_t position, Rng& rng,
                       const std::function<void(double ChainTimes::*)>& lap) {
  const auto& aug = o.augment;
  const int s = o.imgsz;
  const int64_t index = order[position];
  if (mosaic && rng.bernoulli(aug.mosaic)) {
    std::array<Sample, 4> tiles;
    tiles[0] = source.load(index);
    // W positions ending at this one, or the first W early in an epoch: the reference's buffer
    // is still filling there and repeats one image across the mosaic.
    const PartnerWindow w = partner_window(o.mosaic_window, position, order.size());
    for (size_t t = 1; t < 4; ++t) tiles[t] = source.load(order[w.first + rng.below(w.size)]);
    lap(&ChainTimes::load);
    const auto [xc, yc] = draw_mosaic_center(rng, s);
    const AffineDraw draw = draw_affine(rng, aug, 2 * s, 2 * s, s, s);
    lap(&ChainTimes::place);
    return mosaic_warp({&tiles[0], &tiles[1], &tiles[2], &tiles[3]}, s, xc, yc, draw);
  }
  // Without mosaic, Ultralytics 8.4.190 warps the image as loaded (long side s) straight into
  // s x s, centred on its own centre (-w/2, -h/2: half a pixel for an odd side), where 8.4.41
  // letterboxed it to s x s first (whole-pixel pads).
  Sample sample = source.load(index);
  lap(&ChainTimes::load);
  const cv::Mat loaded = sample.image;
  const AffineDraw draw = draw_affine(rng, aug, loaded.cols, loaded.rows, s, s);
  lap(&ChainTimes::place);
  warp_sample(sample, draw, s, s);
  own_image(sample, loaded);
  return sample;
}

}  // namespace

Sample make_train_sample(ImageSource& source, const TrainChainOptions& o, bool mosaic,
                         const std::vector<int64_t>& order, size_t position, int64_t epoch,
                         ChainTimes* times) {
  const auto record = static_cast<uint64_t>(order[position]);
  Rng rng(o.seed, {kAugmentStream, static_cast<uint64_t>(epoch), record});
  const auto& aug = o.augment;
  double last = times ? thread_cpu_ms() : 0.0;
  const std::function<void(double ChainTimes::*)> lap = [&](double ChainTimes::*stage) {
    if (!times) return;
    const double now = thread_cpu_ms();
    times->*stage += now - last;
    last = now;
  };
  Sample sample = geometric_stage(source, o, mosaic, order, position, rng, lap);
  // MixUp goes with mosaic (close_mosaic turns both off); the partner is another position of
  // the window with its own stream.
  if (mosaic && aug.mixup > 0 && rng.bernoulli(aug.mixup)) {
    const PartnerWindow w = partner_window(o.mosaic_window, position, order.size());
    const size_t partner = w.first + rng.below(w.size);
    Rng partner_rng(o.seed, {kMixupStream, static_cast<uint64_t>(epoch), record});
    const Sample other = geometric_stage(source, o, mosaic, order, partner, partner_rng,
                                         [](double ChainTimes::*) {});
    mixup(sample, other, draw_beta(rng, 32.0, 32.0));
  }
  lap(&ChainTimes::warp);
  apply_hsv(sample.image, draw_hsv(rng, aug.hsv_h, aug.hsv_s, aug.hsv_v));
  lap(&ChainTimes::hsv);
  if (rng.bernoulli(aug.flipud)) flip_vertical(sample);
  const bool can_flip_lr = sample.kpt_count == 0 || !o.flip_idx.empty();
  if (rng.bernoulli(aug.fliplr) && can_flip_lr) flip_horizontal(sample, o.flip_idx);
  sample.keep_bgr = rng.bernoulli(aug.bgr);
  lap(&ChainTimes::flip);
  return sample;
}

Sample make_val_sample(ImageSource& source, int64_t index, int shape_h, int shape_w) {
  Sample sample = source.load(index);
  letterbox(sample, {shape_h, shape_w, false, true, kPadGrey});
  return sample;
}

RectBatches plan_rect_batches(const std::vector<ImageRecord>& records, int64_t batch, int imgsz,
                              int stride, double pad) {
  RectBatches plan;
  const size_t n = records.size();
  std::vector<double> ar(n);
  for (size_t i = 0; i < n; ++i) ar[i] = static_cast<double>(records[i].height) / records[i].width;
  plan.order.resize(n);
  std::iota(plan.order.begin(), plan.order.end(), 0);
  std::stable_sort(plan.order.begin(), plan.order.end(),
                   [&](int64_t a, int64_t b) { return ar[size_t(a)] < ar[size_t(b)]; });
  const auto b = static_cast<size_t>(batch);
  for (size_t start = 0; start < n; start += b) {
    double lo = 1e300, hi = 0;
    for (size_t j = start; j < std::min(n, start + b); ++j) {
      lo = std::min(lo, ar[size_t(plan.order[j])]);
      hi = std::max(hi, ar[size_t(plan.order[j])]);
    }
    double sh = 1, sw = 1;  // [h, w] relative to imgsz
    if (hi < 1)
      sh = hi;
    else if (lo > 1)
      sw = 1 / lo;
    plan.shapes_hw.push_back({static_cast<int>(std::ceil(sh * imgsz / stride + pad)) * stride,
                              static_cast<int>(std::ceil(sw * imgsz / stride + pad)) * stride});
  }
  return plan;
}

RectBatches plan_square_batches(size_t records, int64_t batch, int imgsz) {
  RectBatches plan;
  plan.order.resize(records);
  std::iota(plan.order.begin(), plan.order.end(), 0);
  const auto b = static_cast<size_t>(batch);
  for (size_t start = 0; start < records; start += b) plan.shapes_hw.push_back({imgsz, imgsz});
  return plan;
}

}  // namespace detrain::data
