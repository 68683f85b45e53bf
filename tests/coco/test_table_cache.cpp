// The records cache (coco/table_cache.h): a table read back from the cache equals the parsed one
// field for field, a changed file or other read options make it stale, a damaged cache is
// detected and replaced, and a cache that cannot be written never stops the read. Hash64 gives
// the same value however its input is split.
#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "coco/annotations_json.h"
#include "coco/table_cache.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/hash64.h"
#include "test_support.h"

using namespace detrain;
using detrain::test::TempDir;

namespace {

// Keypoints (K = 2), a crowd box, an annotation without keypoints, non-ASCII and empty-looking
// names, ids past 32 bits.
const char* kFile = R"({
  "images": [
    {"id": 4000000000123, "file_name": "dir/\u00e9t\u00e9.jpg", "width": 640, "height": 480},
    {"id": 2, "file_name": "b.jpg", "width": 10, "height": 20}
  ],
  "categories": [{"id": 1, "name": "person"}, {"id": 90, "name": "tooth brush"}],
  "annotations": [
    {"id": 9, "image_id": 4000000000123, "category_id": 1, "bbox": [1.5, 2.25, 30, 40],
     "area": 1200.5, "iscrowd": 0, "num_keypoints": 2, "keypoints": [3, 4, 2, 5, 6, 1]},
    {"id": 10, "image_id": 2, "category_id": 90, "bbox": [0, 0, 5, 5], "area": 25,
     "iscrowd": 1},
    {"id": 11, "image_id": 2, "category_id": 1, "bbox": [1, 1, 2, 3], "area": 6,
     "iscrowd": 0, "num_keypoints": 0, "keypoints": [0, 0, 0, 0, 0, 0]}
  ]
})";

coco::ReadOptions loader_options() {
  coco::ReadOptions o;
  o.image_files = true;
  o.require_bbox = true;
  o.keypoints = 2;
  return o;
}

void require_same(const coco::AnnotationTable& a, const coco::AnnotationTable& b) {
  CHECK(a.source == b.source);
  CHECK(a.image_ids == b.image_ids);
  CHECK(a.image_files == b.image_files);
  CHECK(a.image_widths == b.image_widths);
  CHECK(a.image_heights == b.image_heights);
  REQUIRE(a.categories.size() == b.categories.size());
  for (size_t i = 0; i < a.categories.size(); ++i) {
    CHECK(a.categories[i].id == b.categories[i].id);
    CHECK(a.categories[i].name == b.categories[i].name);
  }
  CHECK(a.keypoints_per_instance == b.keypoints_per_instance);
  CHECK(a.ann_id == b.ann_id);
  CHECK(a.ann_image_id == b.ann_image_id);
  CHECK(a.ann_category_id == b.ann_category_id);
  REQUIRE(a.ann_bbox.size() == b.ann_bbox.size());
  for (size_t i = 0; i < a.ann_bbox.size(); ++i) {
    CHECK(a.ann_bbox[i].x == b.ann_bbox[i].x);
    CHECK(a.ann_bbox[i].y == b.ann_bbox[i].y);
    CHECK(a.ann_bbox[i].w == b.ann_bbox[i].w);
    CHECK(a.ann_bbox[i].h == b.ann_bbox[i].h);
  }
  CHECK(a.ann_area == b.ann_area);
  CHECK(a.ann_iscrowd == b.ann_iscrowd);
  CHECK(a.ann_num_keypoints == b.ann_num_keypoints);
  CHECK(a.ann_keypoints == b.ann_keypoints);
  CHECK(a.ann_fields == b.ann_fields);
}

}  // namespace

TEST_CASE("Hash64 is the same over any split of its input and sees every byte", "[unit][coco]") {
  std::string bytes(1000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131 + 7) % 251);
  const uint64_t whole = hash64(bytes.data(), bytes.size());
  for (const size_t piece : {1, 3, 31, 32, 33, 100, 999}) {
    Hash64 h;
    for (size_t at = 0; at < bytes.size(); at += piece)
      h.update(bytes.data() + at, std::min(piece, bytes.size() - at));
    CHECK(h.digest() == whole);
  }
  for (const size_t at : {0, 31, 32, 500, 999}) {
    std::string changed = bytes;
    changed[at] ^= 1;
    CHECK(hash64(changed.data(), changed.size()) != whole);
  }
  CHECK(hash64(bytes.data(), 999) != whole);  // the length counts too
  CHECK(hash64(bytes.data(), bytes.size(), 1) != whole);
}

TEST_CASE("an annotation table survives the records cache field for field", "[unit][coco]") {
  const coco::AnnotationTable parsed = coco::read_annotations(kFile, "t.json", loader_options());
  coco::TableCacheKey key{123, 456, 789, coco::describe(loader_options())};
  const std::string bytes = coco::encode_table_cache(key, parsed);
  coco::AnnotationTable back;
  std::string why;
  REQUIRE(coco::decode_table_cache(bytes.data(), bytes.size(), key, &back, &why));
  back.source = parsed.source;
  require_same(parsed, back);

  SECTION("another key is stale") {
    std::vector<coco::TableCacheKey> others(4, key);
    others[0].file_size += 1;
    others[1].file_mtime_ns += 1;
    others[2].file_hash ^= 1;
    others[3].read_options += "x";
    for (const auto& other : others) {
      CHECK_FALSE(coco::decode_table_cache(bytes.data(), bytes.size(), other, &back, &why));
      CHECK(why == "stale");
    }
  }
  SECTION("damage is detected, never read") {
    for (const size_t cut : {size_t(0), size_t(5), bytes.size() / 2, bytes.size() - 1}) {
      CHECK_FALSE(coco::decode_table_cache(bytes.data(), cut, key, &back, &why));
      CHECK(why.rfind("corrupt", 0) == 0);
    }
    std::string flipped = bytes;
    flipped[flipped.size() - 3] ^= 0x40;
    CHECK_FALSE(coco::decode_table_cache(flipped.data(), flipped.size(), key, &back, &why));
    CHECK(why == "corrupt: its bytes do not match their hash");
  }
}

TEST_CASE("load_annotations_cached parses once, then reads the cache until the file changes",
          "[unit][coco]") {
  TempDir dir("table-cache");
  const std::string json = dir.file("a.json"), cache = dir.file("a.cache");
  test::write_text(json, kFile);
  const coco::AnnotationTable parsed = coco::load_annotations(json, loader_options());

  coco::TableCacheUse use;
  require_same(coco::load_annotations_cached(json, loader_options(), cache, &use), parsed);
  CHECK_FALSE(use.hit);
  CHECK(use.miss == "absent");
  CHECK(use.written);
  REQUIRE(std::filesystem::exists(cache));

  require_same(coco::load_annotations_cached(json, loader_options(), cache, &use), parsed);
  CHECK(use.hit);
  CHECK_FALSE(use.written);

  SECTION("other read options: stale, re-parsed with them") {
    coco::ReadOptions eval_like = loader_options();
    eval_like.require_categories = true;
    coco::load_annotations_cached(json, eval_like, cache, &use);
    CHECK(use.miss == "stale");
    CHECK(use.written);
  }
  SECTION("an edited file (same size, new bytes) is re-parsed") {
    std::string edited = kFile;
    edited.replace(edited.find("\"b.jpg\""), 7, "\"c.jpg\"");
    test::write_text(json, edited);
    const coco::AnnotationTable table =
        coco::load_annotations_cached(json, loader_options(), cache, &use);
    CHECK(use.miss == "stale");
    CHECK(table.image_files[1] == "c.jpg");
    coco::load_annotations_cached(json, loader_options(), cache, &use);
    CHECK(use.hit);
  }
  SECTION("a damaged cache is replaced") {
    const std::string good = read_file(cache);
    write_file_atomic(cache, good.substr(0, good.size() / 2));
    require_same(coco::load_annotations_cached(json, loader_options(), cache, &use), parsed);
    CHECK(use.miss.rfind("corrupt", 0) == 0);
    CHECK(use.written);
    CHECK(read_file(cache) == good);
  }
  SECTION("a cache that cannot be written does not stop the read") {
    const std::string nowhere = dir.file("no/such/folder/a.cache");
    require_same(coco::load_annotations_cached(json, loader_options(), nowhere, &use), parsed);
    CHECK_FALSE(use.written);
    CHECK_FALSE(use.write_error.empty());
  }
  SECTION("a malformed file fails as without a cache, and leaves the old cache alone") {
    const std::string good = read_file(cache);
    test::write_text(json, "{\"images\": [");
    CHECK_THROWS_AS(coco::load_annotations_cached(json, loader_options(), cache, &use), DataError);
    CHECK(read_file(cache) == good);
  }
}

TEST_CASE("the records cache key of a large file sees an edit that keeps its size and time",
          "[unit][coco]") {
  // Past 2 MiB + 62 x 64 KiB the key hashes samples: the first and last MiB and 62 pieces
  // between. An edit inside the first MiB with the modification time put back (cp -p, rsync -t)
  // still changes the key.
  TempDir dir("table-cache-large");
  const std::string json = dir.file("big.json"), cache = dir.file("big.cache");
  std::string text = kFile;
  text.insert(text.size() - 2, ",\n  \"padding\": \"" + std::string(8 << 20, 'x') + "\"");
  test::write_text(json, text);
  coco::TableCacheUse use;
  coco::load_annotations_cached(json, loader_options(), cache, &use);
  REQUIRE(use.written);
  struct stat st {};
  REQUIRE(::stat(json.c_str(), &st) == 0);
  std::string edited = text;
  edited.replace(edited.find("\"b.jpg\""), 7, "\"c.jpg\"");
  test::write_text(json, edited);
  const timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, json.c_str(), times, 0) == 0);
  const coco::AnnotationTable table =
      coco::load_annotations_cached(json, loader_options(), cache, &use);
  CHECK(use.miss == "stale");
  CHECK(table.image_files[1] == "c.jpg");
}
