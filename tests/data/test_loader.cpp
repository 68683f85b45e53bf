// The loader on the generated shapes data set: batch layout and target ranges, identical
// batches for any worker count and for a resumed epoch, rank sharding, val rect batches and
// their frames, corrupt JPEGs skipped and counted, and clean shutdown when a worker throws
// or the loader dies mid-epoch.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/errors.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/decode.h"
#include "data/loader.h"
#include "data/pipeline.h"
#include "data/synth.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  TempDir dir{"detrain-loader"};
  SynthSummary synth;
  DatasetInfo detect, pose;
  Fixture() {
    SynthOptions o;
    o.seed = 5;
    o.train_images = 14;
    o.val_images = 9;
    o.min_side = 96;
    o.max_side = 160;
    o.threads = 1;
    synth = write_synth_dataset(dir.file("synth"), o);
    detect = load_dataset(synth.detect_yaml);
    pose = load_dataset(synth.pose_yaml);
  }
};

LoaderOptions small(bool train, int64_t workers, int64_t batch = 4) {
  LoaderOptions o;
  o.batch = batch;
  o.workers = workers;
  o.prefetch = 2;
  o.seed = 11;
  o.train = train;
  o.imgsz = 128;
  return o;
}

std::vector<Batch> epoch_batches(Loader& loader, int64_t epoch, int64_t start = 0) {
  loader.start_epoch(epoch, start);
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

void require_same(const Batch& a, const Batch& b) {
  REQUIRE(a.index == b.index);
  CHECK(torch::equal(a.images, b.images));
  CHECK(torch::equal(a.batch_idx, b.batch_idx));
  CHECK(torch::equal(a.cls, b.cls));
  CHECK(torch::equal(a.boxes_xywhn, b.boxes_xywhn));
  CHECK(a.keypoints.defined() == b.keypoints.defined());
  if (a.keypoints.defined()) CHECK(torch::equal(a.keypoints, b.keypoints));
  CHECK(a.files == b.files);
}

}  // namespace

TEST_CASE("loader batches have the collate layout", "[unit][data][loader]") {
  Fixture f;
  Loader loader(f.pose, load_records(f.pose, "train").images, config::AugmentOptions{},
                small(true, 2));
  const auto batches = epoch_batches(loader, 0);
  REQUIRE(static_cast<int64_t>(batches.size()) == loader.batches_per_epoch());
  int64_t images = 0;
  for (const auto& b : batches) {
    images += b.size();
    CHECK(b.images.dtype() == torch::kUInt8);
    CHECK(b.images.size(1) == 3);
    CHECK(b.images.size(2) == 128);
    CHECK(b.images.size(3) == 128);
    const int64_t n = b.cls.size(0);
    CHECK(b.batch_idx.size(0) == n);
    CHECK(b.boxes_xywhn.sizes() == torch::IntArrayRef({n, 4}));
    REQUIRE(b.keypoints.defined());
    CHECK(b.keypoints.sizes() == torch::IntArrayRef({n, 17, 3}));
    if (n == 0) continue;
    CHECK(b.batch_idx.min().item<int64_t>() >= 0);
    CHECK(b.batch_idx.max().item<int64_t>() < b.size());
    CHECK(b.boxes_xywhn.min().item<float>() >= 0.f);
    CHECK(b.boxes_xywhn.max().item<float>() <= 1.f);
    CHECK(b.cls.max().item<int64_t>() == 0);  // person only
    CHECK(static_cast<int64_t>(b.frames.size()) == b.size());
  }
  CHECK(images == static_cast<int64_t>(loader.size()));
}

TEST_CASE("same seed gives identical batches for any worker count and on resume",
          "[unit][data][loader]") {
  Fixture f;
  const auto records = load_records(f.detect, "train").images;
  Loader inline_loader(f.detect, records, config::AugmentOptions{}, small(true, 0));
  Loader one(f.detect, records, config::AugmentOptions{}, small(true, 1));
  Loader three(f.detect, records, config::AugmentOptions{}, small(true, 3));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto a = epoch_batches(inline_loader, epoch);
    const auto b = epoch_batches(one, epoch);
    const auto c = epoch_batches(three, epoch);
    REQUIRE(a.size() == b.size());
    REQUIRE(a.size() == c.size());
    for (size_t i = 0; i < a.size(); ++i) {
      require_same(a[i], b[i]);
      require_same(a[i], c[i]);
    }
    // A resumed epoch continues with exactly the batches it would have produced.
    const auto resumed = epoch_batches(three, epoch, 2);
    REQUIRE(resumed.size() == a.size() - 2);
    for (size_t i = 0; i < resumed.size(); ++i) require_same(resumed[i], a[i + 2]);
  }
  // Epochs differ (shuffle and augmentation streams), and mosaic off changes the samples.
  const auto e0 = epoch_batches(three, 0), e1 = epoch_batches(three, 1);
  CHECK(e0[0].files != e1[0].files);
  three.set_mosaic(false);
  const auto no_mosaic = epoch_batches(three, 0);
  CHECK(no_mosaic[0].files == e0[0].files);
  CHECK_FALSE(torch::equal(no_mosaic[0].images, e0[0].images));
}

TEST_CASE("ranks see disjoint shards of the shuffled order", "[unit][data][loader]") {
  Fixture f;
  const auto records = load_records(f.detect, "train").images;  // 14 images
  std::multiset<std::string> seen;
  for (int64_t rank = 0; rank < 2; ++rank) {
    auto o = small(true, 1);
    o.rank = rank;
    o.world_size = 2;
    Loader loader(f.detect, records, config::AugmentOptions{}, o);
    CHECK(loader.batches_per_epoch() == 2);  // 7 images per rank, batch 4
    for (const auto& b : epoch_batches(loader, 3)) seen.insert(b.files.begin(), b.files.end());
  }
  CHECK(seen.size() == records.size());
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == records.size());
}

// val.rect=false: square imgsz batches in record order whose pixels are the training chain's
// without augmentation (mosaic, warp, HSV and flip all off) up to the resize filter: the
// geometry an overfit check needs.
TEST_CASE("square val batches reproduce the un-augmented training placement",
          "[unit][data][loader]") {
  Fixture f;
  const auto records = load_records(f.detect, "val").images;
  auto val_options = small(false, 1, 4);
  val_options.rect = false;
  Loader val(f.detect, records, config::AugmentOptions{}, val_options);
  config::AugmentOptions off;
  off.mosaic = off.hsv_h = off.hsv_s = off.hsv_v = off.translate = off.scale = off.fliplr = 0;
  Loader train(f.detect, records, off, small(true, 1, 4));
  std::map<std::string, torch::Tensor> train_pixels;
  for (const auto& b : epoch_batches(train, 0))
    for (size_t j = 0; j < b.files.size(); ++j) train_pixels[b.files[j]] = b.images[int64_t(j)];
  size_t position = 0, whole_pixel = 0;
  for (const auto& b : epoch_batches(val, 0)) {
    CHECK(b.images.size(2) == 128);
    CHECK(b.images.size(3) == 128);
    for (size_t j = 0; j < b.files.size(); ++j, ++position) {
      CHECK(b.files[j] == records[position].file);  // record order, not sorted by ratio
      const auto diff =
          (b.images[int64_t(j)].to(torch::kFloat) - train_pixels.at(b.files[j]).to(torch::kFloat))
              .abs();
      // Training without mosaic warps the loaded image from its own centre (Ultralytics
      // 8.4.190), validation letterboxes it with whole-pixel pads: the same placement when the
      // padding is even on both axes, where the pixels differ only by the decode (validation
      // decodes at full size as the reference, training may decode at a reduced DCT scale
      // before the same INTER_LINEAR resize: up to 58 levels at the synthetic shapes' sharp
      // edges, 2.3 on average, the most seen over runs), never a whole-pixel shift's ~255 at an
      // edge; half a pixel apart otherwise (an edge blends halfway).
      const auto r = records[position];
      const auto loaded = resized_size(r.width, r.height, 128);
      const bool even = (128 - loaded.width) % 2 == 0 && (128 - loaded.height) % 2 == 0;
      INFO(b.files[j] << " (" << loaded.width << "x" << loaded.height << "): max |val - train| "
                      << diff.max().item<float>() << ", mean " << diff.mean().item<float>());
      if (even) {
        ++whole_pixel;
        CHECK(diff.max().item<float>() <= 96);
        CHECK(diff.mean().item<float>() < 3.5);
      } else {
        CHECK(diff.max().item<float>() <= 128 + 8);
        CHECK(diff.mean().item<float>() < 4);
      }
    }
  }
  CHECK(position == records.size());
}

TEST_CASE("val batches are rect letterboxes with frames that map back", "[unit][data][loader]") {
  Fixture f;
  const auto records = load_records(f.detect, "val").images;
  Loader loader(f.detect, records, config::AugmentOptions{}, small(false, 2, 4));
  const RectBatches plan = plan_rect_batches(records, 4, 128);
  const auto batches = epoch_batches(loader, 0);
  REQUIRE(batches.size() == plan.shapes_hw.size());
  std::map<std::string, const ImageRecord*> by_file;
  for (const auto& r : records) by_file[r.file] = &r;
  double last_ratio = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& b = batches[i];
    CHECK(b.images.size(2) == plan.shapes_hw[i][0]);
    CHECK(b.images.size(3) == plan.shapes_hw[i][1]);
    CHECK(b.images.size(2) % 32 == 0);
    CHECK(b.images.size(3) % 32 == 0);
    for (size_t j = 0; j < b.files.size(); ++j) {
      const ImageRecord& r = *by_file.at(b.files[j]);
      const double ratio = double(r.height) / r.width;
      CHECK(ratio >= last_ratio);  // sorted by aspect ratio
      last_ratio = ratio;
      const auto& fr = b.frames[j];
      CHECK(fr.image_id == r.image_id);
      CHECK(fr.orig_width == r.width);
      // The long side fills imgsz (128) and the image sits centred in the batch shape.
      const double w_in = r.width * fr.ratio_x, h_in = r.height * fr.ratio_y;
      CHECK(std::max(w_in, h_in) == Approx(128).margin(1));
      CHECK(fr.pad_left == Approx((b.images.size(3) - w_in) / 2).margin(1));
      CHECK(fr.pad_top == Approx((b.images.size(2) - h_in) / 2).margin(1));
      // Boxes: input px -> original px through the frame lands on the record's boxes.
      for (int64_t t = 0; t < b.cls.size(0); ++t) {
        if (b.batch_idx[t].item<int64_t>() != int64_t(j)) continue;
        const float cx = b.boxes_xywhn[t][0].item<float>() * b.images.size(3);
        const double x_orig = (cx - fr.pad_left) / fr.ratio_x;
        bool matched = false;
        for (const auto& box : r.boxes_xyxy_px)
          matched |= std::abs((box[0] + box[2]) / 2 - x_orig) < 0.5;
        CHECK(matched);
      }
    }
  }
}

TEST_CASE("a corrupt JPEG is skipped, warned about and counted", "[unit][data][loader]") {
  Fixture f;
  auto records = load_records(f.detect, "train").images;
  {
    // Keep the header, drop the rest: a truncated JPEG.
    std::ifstream in(records[3].file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream out(records[3].file, std::ios::binary | std::ios::trunc);
    out << bytes.substr(0, bytes.size() / 3);
  }
  Loader loader(f.detect, records, config::AugmentOptions{}, small(true, 2));
  const auto batches = epoch_batches(loader, 0);
  CHECK(static_cast<int64_t>(batches.size()) == loader.batches_per_epoch());
  CHECK(loader.stats().corrupt_images == 1);
  for (const auto& b : batches)
    for (const auto& file : b.files) CHECK(file != records[3].file);
}

TEST_CASE("loader shuts down cleanly after a worker error and mid-epoch", "[unit][data][loader]") {
  Fixture f;
  auto records = load_records(f.detect, "train").images;
  for (auto& r : records) test::write_text(r.file, "not an image");
  {
    Loader loader(f.detect, records, config::AugmentOptions{}, small(true, 2));
    loader.start_epoch(0);
    CHECK_THROWS_AS(loader.next(), DataError);
  }  // destructor joins the workers: the test would hang here otherwise
  Fixture g;
  Loader busy(g.detect, load_records(g.detect, "train").images, config::AugmentOptions{},
              small(true, 2, 2));
  busy.start_epoch(0);
  REQUIRE(busy.next().has_value());
  CHECK_THROWS_AS(Loader(g.detect, {}, config::AugmentOptions{}, small(true, 1)), DataError);
}

TEST_CASE("RAM cache and close_mosaic change the work, not the batches", "[unit][data][loader]") {
  Fixture f;
  const auto records = load_records(f.detect, "train").images;
  auto cached_options = small(true, 2);
  cached_options.cache = "ram";
  Loader cached(f.detect, records, config::AugmentOptions{}, cached_options);
  Loader plain(f.detect, records, config::AugmentOptions{}, small(true, 2));
  const auto a = epoch_batches(cached, 1), b = epoch_batches(plain, 1);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) require_same(a[i], b[i]);
  CHECK(cached.stats().cached_images == records.size());
  CHECK(cached.stats().cached_bytes > 0);
  const int64_t decodes = cached.stats().decodes;
  epoch_batches(cached, 2);
  CHECK(cached.stats().decodes == decodes);  // the second epoch decodes nothing

  // close_mosaic 10 of 100 epochs: mosaic in epochs 0..89, off in 90..99.
  CHECK(mosaic_active(0, 100, 10));
  CHECK(mosaic_active(89, 100, 10));
  CHECK_FALSE(mosaic_active(90, 100, 10));
  CHECK(mosaic_active(5, 10, 0));
}

TEST_CASE("mosaic tiles and the MixUp partner come from one window rule", "[unit][data][loader]") {
  // mosaic_window 0: the whole epoch, for mosaic and MixUp alike (MixUp used to read 0 as a
  // window of 1, so every mixed image was mixed with itself).
  const auto whole = partner_window(0, 5, 100);
  CHECK(whole.first == 0);
  CHECK(whole.size == 100);
  // W positions ending at this one; the first W early in the epoch; never beyond the epoch.
  const auto recent = partner_window(10, 50, 100);
  CHECK(recent.first == 41);
  CHECK(recent.size == 10);
  const auto early = partner_window(10, 3, 100);
  CHECK(early.first == 0);
  CHECK(early.size == 10);
  CHECK(partner_window(128, 99, 100).size == 100);
  CHECK(partner_window(1, 7, 100).first == 7);  // a window of one is the image itself
  CHECK(partner_window(0, 0, 0).size == 1);     // never an empty range to draw from
}
