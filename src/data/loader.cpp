// The loader; see loader.h. Batch-level parallelism (a worker builds a whole batch) instead of
// the reference's per-sample worker processes; ordering and seeding make it deterministic.
#include "data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/errors.h"
#include "common/rng.h"
#include "common/timer.h"
#include "compat/torch_compat.h"
#include "data/image_store.h"

namespace detrain::data {

namespace {

constexpr uint64_t kShuffleStream = 0x5f1;
// The reference's mosaic buffer: min(n, 8 * batch, 1000) recent images.
constexpr int64_t kWindowPerBatch = 8;
constexpr int64_t kMaxWindow = 1000;
}  // namespace

LoaderOptions LoaderOptions::from(const config::DataOptions& data, uint64_t seed, bool train) {
  LoaderOptions o;
  o.batch = train ? data.batch : 2 * data.batch;
  o.workers = data.workers;
  o.prefetch = data.prefetch;
  o.seed = seed;
  o.train = train;
  o.imgsz = static_cast<int>(data.imgsz);
  o.cache = data.cache;
  o.pin_memory = compat::cuda_available();
  return o;
}

bool mosaic_active(int64_t epoch, int64_t epochs, int64_t close_mosaic) {
  return epoch < epochs - close_mosaic;
}

Loader::Loader(const DatasetInfo& info, std::vector<ImageRecord> records,
               const config::AugmentOptions& augment, const LoaderOptions& options)
    : info_(info), records_(std::move(records)), augment_(augment), options_(options) {
  if (records_.empty())
    throw DataError(info_.yaml_path +
                    ": the split has no images to load (check the annotation "
                    "file and keep_images)");
  if (options_.batch < 1 || options_.world_size < 1 || options_.rank < 0 ||
      options_.rank >= options_.world_size)
    throw ConfigError("loader: need batch >= 1 and 0 <= rank < world_size");
  const auto n = static_cast<int64_t>(records_.size());
  const auto window =
      // Sized by the global batch, so N ranks draw mosaic partners like one process does.
      static_cast<size_t>(
          std::min({n, kWindowPerBatch * options_.batch * options_.world_size, kMaxWindow}));
  chain_.imgsz = options_.imgsz;
  chain_.augment = augment_;
  chain_.flip_idx = info_.flip_idx;
  chain_.seed = options_.seed;
  chain_.mosaic_window = window;
  if (options_.train && info_.has_keypoints() && info_.flip_idx.empty() && augment_.fliplr > 0)
    spdlog::warn("{} has keypoints but no flip_idx: horizontal flips are off", info_.yaml_path);

  const int64_t in_flight =
      (std::max<int64_t>(options_.workers, 1) * options_.prefetch + 2) * options_.batch;
  ImageStoreRequest store;
  store.cache = options_.cache;
  store.annotations = info_.split(options_.train ? "train" : "val").annotations;
  store.train = options_.train;
  store.imgsz = options_.imgsz;
  store.recent = window + static_cast<size_t>(in_flight);
  ImageStore opened = open_image_store(store, records_);
  if (!opened.summary.empty()) spdlog::info("{}", opened.summary);
  cache_ = std::move(opened.store);
  source_ = std::make_unique<ImageSource>(records_, info_.kpt_count, options_.imgsz,
                                          !options_.train, cache_.get());
  if (!options_.train)
    rect_ = options_.rect
                ? plan_rect_batches(records_, options_.batch, options_.imgsz, options_.stride)
                : plan_square_batches(records_.size(), options_.batch, options_.imgsz);
  for (int64_t i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::shared_ptr<const Loader::Plan> Loader::make_plan(int64_t epoch) const {
  auto plan = std::make_shared<Plan>();
  plan->epoch = epoch;
  plan->mosaic = mosaic_ && options_.train;
  const auto n = static_cast<int64_t>(records_.size());
  const int64_t world = options_.world_size, rank = options_.rank;
  if (options_.train) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    Rng rng(options_.seed, {kShuffleStream, static_cast<uint64_t>(epoch)});
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(perm[static_cast<size_t>(i)], perm[rng.below(static_cast<uint64_t>(i + 1))]);
    const int64_t per_rank = (n + world - 1) / world;
    for (int64_t j = 0; j < per_rank * world; ++j)
      plan->order.push_back(perm[static_cast<size_t>(j % n)]);
    for (int64_t j = 0; j < per_rank; ++j)
      plan->positions.push_back(static_cast<size_t>(j * world + rank));
    for (int64_t s = 0; s < per_rank; s += options_.batch) plan->batch_start.push_back(s);
    plan->batch_start.push_back(per_rank);
  } else {
    const auto batches = static_cast<int64_t>(rect_.shapes_hw.size());
    plan->batch_start.push_back(0);
    for (int64_t b = rank; b < batches; b += world) {
      const int64_t begin = b * options_.batch, end = std::min(n, begin + options_.batch);
      for (int64_t i = begin; i < end; ++i) {
        plan->positions.push_back(plan->order.size());
        plan->order.push_back(rect_.order[size_t(i)]);
      }
      plan->batch_start.push_back(static_cast<int64_t>(plan->order.size()));
      plan->shapes_hw.push_back(rect_.shapes_hw[size_t(b)]);
    }
  }
  return plan;
}

int64_t Loader::batches_per_epoch() const {
  const auto n = static_cast<int64_t>(records_.size());
  if (options_.train) {
    const int64_t per_rank = (n + options_.world_size - 1) / options_.world_size;
    return (per_rank + options_.batch - 1) / options_.batch;
  }
  const auto batches = static_cast<int64_t>(rect_.shapes_hw.size());
  return batches > options_.rank
             ? (batches - options_.rank + options_.world_size - 1) / options_.world_size
             : 0;
}

void Loader::set_mosaic(bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  mosaic_ = enabled;
}

bool Loader::mosaic() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mosaic_;
}

void Loader::start_epoch(int64_t epoch, int64_t start_batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto plan = std::const_pointer_cast<Plan>(make_plan(epoch));
  plan->generation = ++generation_;
  plan_ = plan;
  slots_.clear();
  end_batch_ = static_cast<int64_t>(plan_->batch_start.size()) - 1;
  next_claim_ = next_deliver_ = std::clamp<int64_t>(start_batch, 0, end_batch_);
  work_cv_.notify_all();
}

Batch Loader::build(const Plan& plan, int64_t b) {
  const auto begin = static_cast<size_t>(plan.batch_start[size_t(b)]);
  const auto end = static_cast<size_t>(plan.batch_start[size_t(b) + 1]);
  std::vector<Sample> samples;
  samples.reserve(end - begin);
  for (size_t k = begin; k < end; ++k) {
    const size_t pos = plan.positions[k];
    if (options_.train)
      samples.push_back(
          make_train_sample(*source_, chain_, plan.mosaic, plan.order, pos, plan.epoch));
    else
      samples.push_back(make_val_sample(*source_, plan.order[pos], plan.shapes_hw[size_t(b)][0],
                                        plan.shapes_hw[size_t(b)][1]));
  }
  Batch batch = collate(samples, options_.pin_memory, options_.channels_last);
  batch.index = b;
  return batch;
}

void Loader::worker_loop() {
  const int64_t ahead = std::max<int64_t>(options_.workers, 1) * options_.prefetch;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [&] {
      return stop_ || (plan_ && next_claim_ < end_batch_ && next_claim_ < next_deliver_ + ahead);
    });
    if (stop_) return;
    const std::shared_ptr<const Plan> plan = plan_;
    const int64_t b = next_claim_++;
    lock.unlock();
    Slot slot;
    try {
      slot.batch = build(*plan, b);
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
    if (plan->generation == generation_) {
      slots_[b] = std::move(slot);
      ready_cv_.notify_all();
    }
  }
}

std::optional<Batch> Loader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!plan_) throw DataError("loader: call start_epoch(epoch) before next()");
  if (next_deliver_ >= end_batch_) return std::nullopt;
  Stopwatch wait;
  const int64_t b = next_deliver_;
  Slot slot;
  if (threads_.empty()) {
    const std::shared_ptr<const Plan> plan = plan_;
    lock.unlock();
    try {
      slot.batch = build(*plan, b);
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
  } else {
    ready_cv_.wait(lock, [&] { return slots_.count(b) > 0; });
    slot = std::move(slots_[b]);
    slots_.erase(b);
  }
  ++next_deliver_;
  work_cv_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  slot.batch->data_wait_ms = wait.millis();
  return std::move(slot.batch);
}

LoaderStats Loader::stats() const {
  LoaderStats s;
  s.corrupt_images = source_->corrupt_count();
  s.decodes = source_->decodes();
  if (cache_) {
    s.cached_images = cache_->size();
    s.cached_bytes = cache_->bytes();
  }
  return s;
}

}  // namespace detrain::data
