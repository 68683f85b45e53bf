// The data loader: N worker threads build whole batches (samples + collate) ahead of the
// consumer, at most `prefetch` batches per worker, and next() hands them out in order whatever
// the worker count. One seed names the per-epoch shuffle and every sample's augmentation
// stream, so the same seed gives identical batches for 0, 1 or 8 workers. Training shards the
// shuffled order by rank (DistributedSampler style, padded by wrapping: rank r takes global
// positions r, r + world, ...; a sample's augmentation depends only on its record, epoch and
// global position, so N ranks of batch b see one process's batches of N*b); validation uses rect
// batches and shards them by batch. Threads, not processes (fork after LibTorch's OpenMP pool
// hangs); the destructor stops and joins them, and a worker's exception is rethrown by next().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/augment_options.h"
#include "config/data_options.h"
#include "data/collate.h"
#include "data/dataset.h"
#include "data/image_cache.h"
#include "data/pipeline.h"

namespace detrain::data {

struct LoaderOptions {
  int64_t batch = 16;
  int64_t workers = 2;   // 0: batches are built inside next()
  int64_t prefetch = 4;  // batches ready ahead, per worker
  uint64_t seed = 0;
  int64_t rank = 0;
  int64_t world_size = 1;
  bool train = true;  // augment + shuffle; false: val letterbox rect batches
  int imgsz = 640;
  std::string cache = "none";  // data.cache: none, ram or disk (data/image_store.h)
  bool pin_memory = false;     // page-locked images for non-blocking CUDA copies
  bool channels_last = false;  // images laid out for an nhwc model (runtime.memory_format)
  int stride = 32;             // val rect shapes are multiples of this
  bool rect = true;            // val: rect batches; false: square imgsz batches in record order

  // batch / workers / prefetch / imgsz / cache from data.*; val batches are twice data.batch.
  static LoaderOptions from(const config::DataOptions& data, uint64_t seed, bool train);
};

struct LoaderStats {
  int64_t corrupt_images = 0;  // files skipped because they did not decode
  int64_t decodes = 0;         // images decoded so far
  size_t cached_images = 0;
  size_t cached_bytes = 0;
};

// True when mosaic is on in `epoch` (0-based) of `epochs`: off for the last close_mosaic.
bool mosaic_active(int64_t epoch, int64_t epochs, int64_t close_mosaic);

class Loader {
 public:
  Loader(const DatasetInfo& info, std::vector<ImageRecord> records,
         const config::AugmentOptions& augment, const LoaderOptions& options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Plans epoch `epoch` and starts building from batch `start_batch` (a resumed run continues
  // mid-epoch with the batches it would have seen). Work of an earlier epoch is dropped.
  void start_epoch(int64_t epoch, int64_t start_batch = 0);
  // The next batch of the epoch in order, nullopt after the last. Rethrows a worker's error.
  std::optional<Batch> next();
  int64_t batches_per_epoch() const;
  // Mosaic (train only) for epochs started from now on (close_mosaic switches it off).
  void set_mosaic(bool enabled);
  bool mosaic() const;

  LoaderStats stats() const;
  size_t size() const { return records_.size(); }
  const std::vector<ImageRecord>& records() const { return records_; }

 private:
  struct Plan {
    uint64_t generation = 0;
    int64_t epoch = 0;
    bool mosaic = true;
    // Train: every rank's record indices in the global sample order (padded by wrapping to a
    // multiple of world_size), so mosaic windows see what a single process sees; val: this
    // rank's records.
    std::vector<int64_t> order;
    std::vector<size_t> positions;              // this rank's positions into order
    std::vector<int64_t> batch_start;           // [batches + 1] offsets into positions
    std::vector<std::array<int, 2>> shapes_hw;  // [batches] val input shapes
  };
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  Batch build(const Plan& plan, int64_t b);
  void worker_loop();
  std::shared_ptr<const Plan> make_plan(int64_t epoch) const;

  DatasetInfo info_;
  std::vector<ImageRecord> records_;
  config::AugmentOptions augment_;
  LoaderOptions options_;
  TrainChainOptions chain_;
  std::unique_ptr<DecodedImageStore> cache_;
  std::unique_ptr<ImageSource> source_;
  RectBatches rect_;  // val only

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // workers: a batch may be claimed, or stop
  std::condition_variable ready_cv_;  // consumer: a slot was filled
  std::shared_ptr<const Plan> plan_;
  bool mosaic_ = true;
  bool stop_ = false;
  uint64_t generation_ = 0;
  int64_t next_claim_ = 0;    // next batch a worker may build
  int64_t next_deliver_ = 0;  // next batch next() returns
  int64_t end_batch_ = 0;
  std::map<int64_t, Slot> slots_;
  std::vector<std::thread> threads_;
};

}  // namespace detrain::data
