// The machine-wide decoded image store (data/mapped_image_cache.h) and data.cache=ram|disk in
// the loader. Two stores opened on one file stand for two ranks: flock locks belong to the open
// file, so two opens in one process see each other exactly as two processes do.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "common/errors.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/mapped_image_cache.h"
#include "data/synth.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

cv::Mat image(int rows, int cols, int seed) {
  cv::Mat m(rows, cols, CV_8UC3);
  cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(256));
  m.at<cv::Vec3b>(0, 0) = cv::Vec3b(static_cast<uint8_t>(seed), 0, 0);
  return m;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() &&
         cv::countNonZero(cv::Mat(a != b).reshape(1)) == 0;
}

MappedCacheOptions options(const std::string& path, uint64_t key, uint64_t capacity,
                           bool remove = false) {
  MappedCacheOptions o;
  o.path = path;
  o.key = key;
  o.capacity_bytes = capacity;
  o.remove_when_done = remove;
  return o;
}

// DETRAIN_CACHE_DIR pointed at a fresh folder for one test, restored after.
struct CacheDirScope {
  TempDir dir{"detrain-cache-dir"};
  test::ScopedEnv env{"DETRAIN_CACHE_DIR", dir.path()};
};

}  // namespace

TEST_CASE("a mapped image store is shared by everyone who opens its file", "[unit][data]") {
  TempDir dir("mapped-cache");
  const std::string path = dir.file("images");
  const cv::Mat a = image(48, 64, 1), b = image(30, 20, 2);
  MappedImageCache first(options(path, 7, 1 << 20), 3);
  CHECK_FALSE(first.reused());
  CHECK(first.get(0).empty());
  first.put(0, a);
  first.put(0, b);  // a slot is written once
  CHECK(same(first.get(0), a));
  {
    MappedImageCache second(options(path, 7, 1 << 20), 3);  // another rank
    CHECK(second.reused());
    CHECK(same(second.get(0), a));
    second.put(2, b(cv::Rect(2, 3, 10, 12)));  // a region (rows not contiguous)
    CHECK(same(first.get(2), b(cv::Rect(2, 3, 10, 12))));
    CHECK(first.size() == 2);
    CHECK(second.bytes() == 48 * 64 * 3 + 12 * 10 * 3);
    // A third user with other images or settings cannot share the file while it is in use.
    CHECK_THROWS_AS(MappedImageCache(options(path, 8, 1 << 20), 3), IoError);
  }
  CHECK(first.get(1).empty());
  CHECK(first.get(-1).empty());
  CHECK(first.get(3).empty());
  first.put(5, a);  // out of range: ignored
}

TEST_CASE("a disk store is reused with its key and rebuilt with another", "[unit][data]") {
  TempDir dir("mapped-cache");
  const std::string path = dir.file("images");
  const cv::Mat a = image(16, 16, 3);
  {
    MappedImageCache made(options(path, 11, 1 << 16), 2);
    made.put(1, a);
  }
  REQUIRE(fs::exists(path));
  {
    MappedImageCache again(options(path, 11, 1 << 20), 2);  // the creator's capacity stays
    CHECK(again.reused());
    CHECK(again.capacity() == 1 << 16);
    CHECK(same(again.get(1), a));
  }
  MappedImageCache other(options(path, 12, 1 << 16), 2);
  CHECK_FALSE(other.reused());
  CHECK(other.get(1).empty());
  CHECK(other.size() == 0);
}

TEST_CASE("a ram store is removed by its last user", "[unit][data]") {
  TempDir dir("mapped-cache");
  const std::string path = dir.file("images");
  auto first = std::make_unique<MappedImageCache>(options(path, 5, 1 << 16, true), 1);
  auto second = std::make_unique<MappedImageCache>(options(path, 5, 1 << 16, true), 1);
  first.reset();
  CHECK(fs::exists(path));  // the other rank still has it
  second.reset();
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("images beyond a store's capacity are declined, not fatal", "[unit][data]") {
  TempDir dir("mapped-cache");
  // One page: the first 40 x 30 image (3600 bytes) fits, the second does not.
  MappedImageCache small(options(dir.file("images"), 1, 4096), 2);
  small.put(0, image(30, 40, 1));
  small.put(1, image(30, 40, 2));
  CHECK_FALSE(small.get(0).empty());
  CHECK(small.get(1).empty());
  CHECK(small.declined() == 1);
  CHECK(small.write_error().empty());  // full, not failed
  CHECK_THROWS_AS(MappedImageCache(options(dir.file("no/such/dir/images"), 1, 4096), 1), IoError);
}

TEST_CASE("data.cache=disk: the second loader decodes nothing and yields the same batches",
          "[unit][data][loader]") {
  CacheDirScope cache_dir;
  TempDir dir("detrain-loader-disk");
  SynthOptions so;
  so.seed = 5;
  so.train_images = 12;
  so.val_images = 4;
  so.min_side = 96;
  so.max_side = 160;
  so.threads = 1;
  const DatasetInfo info = load_dataset(write_synth_dataset(dir.file("synth"), so).detect_yaml);
  const auto records = load_records(info, "train").images;
  LoaderOptions o;
  o.batch = 4;
  o.workers = 2;
  o.prefetch = 2;
  o.seed = 11;
  o.imgsz = 128;
  const auto epoch = [](Loader& loader) {
    loader.start_epoch(0);
    std::vector<Batch> out;
    while (auto b = loader.next()) out.push_back(std::move(*b));
    return out;
  };
  Loader plain(info, records, config::AugmentOptions{}, o);
  const auto expected = epoch(plain);
  o.cache = "disk";
  int64_t first_decodes = 0;
  {
    Loader first(info, records, config::AugmentOptions{}, o);
    const auto got = epoch(first);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(torch::equal(got[i].images, expected[i].images));
    first_decodes = first.stats().decodes;
    CHECK(first.stats().cached_images == records.size());
  }
  // Every image at least once (two workers may decode one image at the same moment).
  CHECK(first_decodes >= static_cast<int64_t>(records.size()));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(cache_dir.dir.path()))
    files += e.path().string().find(".detrain-images-128") != std::string::npos;
  CHECK(files == 1);
  Loader second(info, records, config::AugmentOptions{}, o);
  const auto again = epoch(second);
  REQUIRE(again.size() == expected.size());
  for (size_t i = 0; i < again.size(); ++i)
    CHECK(torch::equal(again[i].images, expected[i].images));
  CHECK(second.stats().decodes == 0);

  // Letterbox without mosaic, with no augmentation at all (the warp is the identity), and
  // validation: every path that could edit a cached image in place (the mapping is read-only,
  // so an edit would fault) copies it first.
  config::AugmentOptions none;
  none.mosaic = 0;
  none.degrees = none.translate = none.scale = none.shear = none.perspective = 0;
  none.hsv_h = none.hsv_s = none.hsv_v = 0;
  none.fliplr = none.flipud = 0;
  Loader plain_letterbox(info, records, none, o);
  plain_letterbox.set_mosaic(false);
  CHECK(epoch(plain_letterbox).size() == expected.size());
  LoaderOptions val = o;
  val.train = false;
  for (int run = 0; run < 2; ++run) {
    Loader v(info, load_records(info, "val").images, none, val);
    const auto batches = epoch(v);
    CHECK_FALSE(batches.empty());
    if (run == 1) CHECK(v.stats().decodes == 0);
  }
}
