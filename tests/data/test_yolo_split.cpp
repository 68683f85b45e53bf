// YOLO-format splits (Ultralytics data YAML + txt labels) as COCO annotation tables: a small
// written data set checks ids, pixel boxes, areas, dropped files, backgrounds and the records
// cache; coco-mini's YOLO copy (made by Ultralytics 8.4.190's convert_coco, tests/golden/
// pt_fixtures.py) checks that its table is coco-mini's COCO JSON minus crowd regions, and that
// the built-in evaluator scores the same detections the same against both.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <sstream>

#include "coco/keypoint_sigmas.h"
#include "common/errors.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/yolo_split.h"
#include "eval/coco_eval.h"
#include "log_capture.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
using detrain::test::write_text;
namespace fs = std::filesystem;

namespace {

void write_image(const std::string& path, int width, int height) {
  fs::create_directories(fs::path(path).parent_path());
  REQUIRE(cv::imwrite(path, cv::Mat(height, width, CV_8UC3, cv::Scalar(40, 90, 200))));
}

// images/train: 7.jpg (64x48, a duplicated box row), 9.png (32x40, no label file), 11.jpg
// (class 5 >= nc: the whole image is dropped, as the reference drops it).
std::string small_detect_set(const TempDir& dir) {
  write_image(dir.file("images/train/7.jpg"), 64, 48);
  write_image(dir.file("images/train/9.png"), 32, 40);
  write_image(dir.file("images/train/11.jpg"), 20, 20);
  write_text(dir.file("labels/train/7.txt"),
             "1 0.5 0.5 0.25 0.5\n1 0.5 0.5 0.25 0.5\n0 0.25 0.75 0.5 0.5\n");
  write_text(dir.file("labels/train/11.txt"), "5 0.5 0.5 0.1 0.1\n");
  const std::string yaml = dir.file("data.yaml");
  write_text(yaml, "path: " + dir.path() +
                       "\ntrain: images/train\nval: images/train\nnames: [cat, dog]\n");
  return yaml;
}

// Non-crowd annotations per image id, sorted, with category names in place of ids.
std::map<int64_t, std::vector<std::pair<std::string, std::array<double, 4>>>> boxes_by_image(
    const coco::AnnotationTable& t) {
  std::map<int64_t, std::string> name_of;
  for (const auto& c : t.categories) name_of[c.id] = c.name;
  std::map<int64_t, std::vector<std::pair<std::string, std::array<double, 4>>>> out;
  for (size_t i = 0; i < t.num_annotations(); ++i) {
    if (t.ann_iscrowd[i]) continue;
    const auto& b = t.ann_bbox[i];
    out[t.ann_image_id[i]].push_back({name_of.at(t.ann_category_id[i]), {b.x, b.y, b.w, b.h}});
  }
  for (auto& [id, v] : out) std::sort(v.begin(), v.end());
  return out;
}

}  // namespace

TEST_CASE("a YOLO split becomes a COCO table: pixel boxes, ids from stems, dropped files",
          "[unit][data][yolo]") {
  TempDir dir("yolo-split");
  const DatasetInfo info = load_dataset(small_detect_set(dir));
  CHECK(info.format == DataFormat::kYolo);
  CHECK(info.task == "detect");
  CHECK(info.names == std::vector<std::string>{"cat", "dog"});
  CHECK(info.coco_ids == std::vector<int64_t>{0, 1});

  const coco::AnnotationTable t = read_split(info, "train", record_read_options(info));
  // 11.jpg is dropped (class 5 with nc 2); ids are the numeric stems, in sorted-path order.
  REQUIRE(t.num_images() == 2);
  CHECK(t.image_ids == std::vector<int64_t>{7, 9});
  CHECK(t.image_files[0] == fs::path(dir.file("images/train/7.jpg")).lexically_normal().string());
  CHECK(t.image_widths == std::vector<int64_t>{64, 32});
  CHECK(t.image_heights == std::vector<int64_t>{48, 40});
  REQUIRE(t.categories.size() == 2);
  CHECK(t.categories[1].id == 1);
  CHECK(t.categories[1].name == "dog");
  // The duplicate row is removed; boxes in pixels of the 64x48 image (exact: dyadic values).
  // The rows come out in the reference's np.unique order once a duplicate is removed.
  REQUIRE(t.num_annotations() == 2);
  CHECK(t.ann_category_id == std::vector<int64_t>{0, 1});
  CHECK(t.ann_bbox[1].x == 24.0);
  CHECK(t.ann_bbox[1].y == 12.0);
  CHECK(t.ann_bbox[1].w == 16.0);
  CHECK(t.ann_bbox[1].h == 24.0);
  CHECK(t.ann_area[1] == 16.0 * 24.0);  // box area: labels carry no masks
  CHECK(t.ann_bbox[0].x == 0.0);
  CHECK(t.ann_bbox[0].y == 24.0);
  CHECK(t.ann_iscrowd == std::vector<uint8_t>{0, 0});

  const Records records = build_records(t, info, info.split("train"));
  REQUIRE(records.images.size() == 2);
  CHECK(records.images[0].file == t.image_files[0]);
  CHECK(records.images[0].boxes_xyxy_px.size() == 2);
  CHECK(records.images[1].boxes_xyxy_px.empty());  // 9.png: a background
  CHECK(records.stats.backgrounds == 1);
}

TEST_CASE("YOLO image ids: numeric stems when unique, else 1..n", "[unit][data][yolo]") {
  CHECK(yolo_image_ids({"/a/000000000139.jpg", "/b/42.png"}) == std::vector<int64_t>{139, 42});
  CHECK(yolo_image_ids({"/a/1.jpg", "/b/01.jpg"}) == std::vector<int64_t>{1, 2});  // both are 1
  CHECK(yolo_image_ids({"/a/1.jpg", "/a/cat.jpg"}) == std::vector<int64_t>{1, 2});
  CHECK(yolo_image_ids({"/a/-3.jpg"}) == std::vector<int64_t>{1});
}

TEST_CASE("YOLO records cache: written, read back equal, stale when a label changes",
          "[unit][data][yolo]") {
  TempDir dir("yolo-cache");
  test::ScopedEnv cache_dir("DETRAIN_CACHE_DIR", dir.file("cache"));
  const DatasetInfo info = load_dataset(small_detect_set(dir));
  const auto read = record_read_options(info);
  std::string use;
  const coco::AnnotationTable first = read_split(info, "train", read, true, &use);
  CHECK(use == "written");
  const coco::AnnotationTable second = read_split(info, "train", read, true, &use);
  CHECK(use == "read");
  CHECK(second.image_ids == first.image_ids);
  CHECK(second.image_files == first.image_files);
  CHECK(second.ann_category_id == first.ann_category_id);
  REQUIRE(second.ann_bbox.size() == first.ann_bbox.size());
  for (size_t i = 0; i < first.ann_bbox.size(); ++i)
    CHECK(second.ann_bbox[i].x == first.ann_bbox[i].x);
  CHECK(second.categories.size() == 2);

  // A changed label file (other size) makes the cache stale: the new rows are read.
  write_text(dir.file("labels/train/9.txt"), "0 0.5 0.5 0.5 0.5\n");
  const coco::AnnotationTable third = read_split(info, "train", read, true, &use);
  CHECK(use == "written");
  CHECK(third.num_annotations() == first.num_annotations() + 1);
}

TEST_CASE("YOLO pose split: keypoints in pixels, visibility, OKS sigmas", "[unit][data][yolo]") {
  TempDir dir("yolo-pose");
  write_image(dir.file("images/val/3.jpg"), 100, 50);
  // Two keypoints with visibility: (0.5, 0.5, 2) and an unlabelled (0, 0, 0).
  write_text(dir.file("labels/val/3.txt"), "0 0.5 0.5 0.5 0.5 0.5 0.5 2 0 0 0\n");
  const std::string yaml = dir.file("pose.yaml");
  write_text(yaml, "path: " + dir.path() +
                       "\ntrain: images/val\nval: images/val\nkpt_shape: [2, 3]\n"
                       "flip_idx: [1, 0]\nnames: {0: person}\n");
  const DatasetInfo info = load_dataset(yaml);
  CHECK(info.task == "pose");
  CHECK(info.kpt_count == 2);
  CHECK(info.oks_sigmas == std::vector<double>{0.5, 0.5});  // the reference's 1/K for K != 17
  const coco::AnnotationTable t = read_split(info, "val", record_read_options(info));
  REQUIRE(t.num_annotations() == 1);
  CHECK(t.keypoints_per_instance == 2);
  CHECK(t.ann_keypoints == std::vector<double>{50, 25, 2, 0, 0, 0});
  CHECK(t.ann_num_keypoints[0] == 1);
  // No segment in a label: COCO's person area is estimated as 0.53 of the 50 x 25 box (the
  // OKS scale; the detection test above keeps the box's own area).
  CHECK(t.ann_area[0] == 50.0 * 25.0 * 0.53);
}

TEST_CASE("17 keypoints without oks_sigmas get pycocotools' COCO sigmas, bit for bit",
          "[unit][data][yolo]") {
  TempDir dir("yolo-coco-pose");
  write_image(dir.file("images/val/1.jpg"), 64, 48);
  const std::string yaml = dir.file("pose.yaml");
  write_text(yaml, "path: " + dir.path() +
                       "\ntrain: images/val\nval: images/val\nkpt_shape: [17, 3]\n"
                       "flip_idx: [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15]\n"
                       "names: {0: person}\n");
  const DatasetInfo info = load_dataset(yaml);
  // The loader, the evaluator's defaults and pycocotools' np.array([.26, ...]) / 10.0 agree; the
  // decimal 0.026 (the old loader default) is one ulp below.
  CHECK(info.oks_sigmas == eval::CocoParams::defaults(eval::IouType::kKeypoints).keypoint_sigmas);
  REQUIRE(info.oks_sigmas.size() == 17);
  CHECK(info.oks_sigmas[0] == .26 / 10.0);
  CHECK(info.oks_sigmas[0] != 0.026);
  CHECK(info.oks_sigmas[11] == 1.07 / 10.0);
}

// Occurrences of `needle` in `text`.
size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST_CASE("YOLO scan drops a truncated JPEG and a garbage file with one warning each, every run",
          "[unit][data][yolo]") {
  TempDir dir("yolo-broken");
  test::ScopedEnv cache_dir("DETRAIN_CACHE_DIR", dir.file("cache"));
  write_image(dir.file("images/val/1.jpg"), 64, 48);
  write_image(dir.file("images/val/2.jpg"), 64, 48);
  write_image(dir.file("images/val/4.jpg"), 40, 40);
  {
    // 2.jpg: cut halfway through its entropy-coded data (after the start-of-scan marker), so
    // the header is intact and the header reader alone accepts it.
    std::ifstream in(dir.file("images/val/2.jpg"), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const size_t scan = bytes.find("\xff\xda");
    REQUIRE(scan != std::string::npos);
    std::ofstream out(dir.file("images/val/2.jpg"), std::ios::binary | std::ios::trunc);
    out << bytes.substr(0, scan + (bytes.size() - scan) / 2);
    // 4.jpg: whole, with bytes after its end marker (some cameras append data): kept.
    std::ofstream tail(dir.file("images/val/4.jpg"), std::ios::binary | std::ios::app);
    tail << "trailing bytes";
  }
  write_text(dir.file("images/val/3.jpg"), "<html>not an image</html>\n");  // garbage
  for (const char* stem : {"1", "2", "3", "4"})
    write_text(dir.file(std::string("labels/val/") + stem + ".txt"),
               "0 0.5 0.5 0.25 0.5\n0 0.5 0.5 0.25 0.5\n");  // a duplicate row each
  const std::string yaml = dir.file("data.yaml");
  write_text(yaml, "path: " + dir.path() + "\ntrain: images/val\nval: images/val\nnames: [cat]\n");
  const DatasetInfo info = load_dataset(yaml);
  for (const std::string expected_cache : {"written", "read"}) {
    INFO("records cache " << expected_cache);
    std::ostringstream log;
    std::string use;
    coco::AnnotationTable t;
    {
      test::LogCapture capture(log);
      t = read_split(info, "val", record_read_options(info), true, &use);
    }
    CHECK(use == expected_cache);
    // Kept: 1 and 4, each with its one box left after the duplicate is removed.
    CHECK(t.image_ids == std::vector<int64_t>{1, 4});
    CHECK(t.num_annotations() == 2);
    const std::string text = log.str();
    INFO(text);
    CHECK(count_of(text, "2.jpg: truncated or damaged JPEG") == 1);
    CHECK(count_of(text, "3.jpg: cannot be read as an image") == 1);
    CHECK(count_of(text, "4.jpg") == 0);
    // The label files' own warnings (the duplicate rows of the kept images) every run too.
    CHECK(count_of(text, "1.txt: 1 duplicate row") == 1);
    CHECK(count_of(text, "4.txt: 1 duplicate row") == 1);
    CHECK(count_of(text, "2 corrupt dropped") == 1);  // the counts say so
  }
}

TEST_CASE("YOLO split errors name the YAML and split", "[unit][data][yolo]") {
  TempDir dir("yolo-bad");
  write_image(dir.file("images/val/1.jpg"), 20, 20);
  write_text(dir.file("data.yaml"),
             "path: " + dir.path() + "\ntrain: images/missing\nval: images/val\nnames: [a]\n");
  const DatasetInfo info = load_dataset(dir.file("data.yaml"));
  CHECK_THROWS_WITH(read_split(info, "train", record_read_options(info)),
                    Catch::Contains("data.yaml (train)") && Catch::Contains("images/missing"));
  // Every image corrupt: a clear error, not an empty data set.
  write_text(dir.file("labels/val/1.txt"), "3 0.5 0.5 0.1 0.1\n");
  CHECK_THROWS_WITH(read_split(info, "val", record_read_options(info)),
                    Catch::Contains("every image was dropped"));
}

TEST_CASE("a COCO descriptor whose image folder does not exist says so", "[unit][data]") {
  TempDir dir("coco-no-images");
  write_text(dir.file("ann.json"),
             R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
                 "annotations": [], "categories": [{"id": 1, "name": "x"}]})");
  write_text(dir.file("d.yaml"), "path: " + dir.path() +
                                     "\ntrain: {annotations: ann.json, images: nowhere}\n"
                                     "val: {annotations: ann.json, images: nowhere}\n"
                                     "classes: [{id: 1, name: x}]\n");
  const DatasetInfo info = load_dataset(dir.file("d.yaml"));
  CHECK_THROWS_WITH(load_records(info, "val"),
                    Catch::Contains("image folder") && Catch::Contains("nowhere") &&
                        Catch::Contains("does not exist") && !Catch::Contains("skip_missing"));
}

TEST_CASE("coco-mini's YOLO copy is its COCO JSON without crowd regions, and scores the same",
          "[parity][data][yolo]") {
  const auto shared = test::shared_data_or_skip("coco-mini");
  if (!shared) return;
  const DatasetInfo coco_info = load_dataset("data/coco-mini.yaml", *shared);
  const DatasetInfo yolo_info = load_dataset(test::golden("pt/coco-mini-yolo/detect.yaml"));
  REQUIRE(yolo_info.names == coco_info.names);
  const coco::AnnotationTable coco_table =
      read_split(coco_info, "val", record_read_options(coco_info));
  const coco::AnnotationTable yolo_table =
      read_split(yolo_info, "val", record_read_options(yolo_info));

  std::vector<int64_t> coco_ids = coco_table.image_ids, yolo_ids = yolo_table.image_ids;
  std::sort(coco_ids.begin(), coco_ids.end());
  std::sort(yolo_ids.begin(), yolo_ids.end());
  CHECK(yolo_ids == coco_ids);  // file stems are COCO's ids
  for (size_t i = 0; i < yolo_table.num_images(); ++i) {
    const auto row = std::find(coco_table.image_ids.begin(), coco_table.image_ids.end(),
                               yolo_table.image_ids[i]) -
                     coco_table.image_ids.begin();
    CHECK(yolo_table.image_widths[i] == coco_table.image_widths[row]);
    CHECK(yolo_table.image_heights[i] == coco_table.image_heights[row]);
  }
  const auto coco_boxes = boxes_by_image(coco_table), yolo_boxes = boxes_by_image(yolo_table);
  REQUIRE(coco_boxes.size() == yolo_boxes.size());
  size_t compared = 0;
  for (const auto& [id, want] : coco_boxes) {
    const auto& got = yolo_boxes.at(id);
    REQUIRE(got.size() == want.size());
    // Pair each COCO box with the closest unused YOLO box of its class (sorting cannot pair
    // them: a 0 in COCO can be -1e-4 after the labels' rounding).
    std::vector<bool> used(got.size(), false);
    for (const auto& [name, box] : want) {
      double best = 1e30;
      size_t best_j = 0;
      for (size_t j = 0; j < got.size(); ++j) {
        if (used[j] || got[j].first != name) continue;
        double d = 0;
        for (size_t c = 0; c < 4; ++c) d = std::max(d, std::abs(got[j].second[c] - box[c]));
        if (d < best) best = d, best_j = j;
      }
      INFO("image " << id << " " << name << " at " << box[0] << "," << box[1]);
      // convert_coco writes normalised values with 6 significant digits: <= 0.005 px on 640.
      CHECK(best < 0.01);
      used[best_j] = true;
      ++compared;
    }
  }
  CHECK(compared > 300);

  // The same detections against both: every GT box, and for each a copy shifted to an IoU of
  // 0.52..0.92 (0.02 away from every threshold, so the labels' rounding cannot flip a match),
  // with seeded random scores. The COCO side drops crowd regions and takes box areas, as YOLO
  // labels imply (docs/data.md): then all 12 stats agree exactly.
  coco::AnnotationTable coco_as_yolo;
  coco_as_yolo.categories = coco_table.categories;
  for (size_t i = 0; i < coco_table.num_images(); ++i)
    coco_as_yolo.add_image(coco_table.image_ids[i]);
  for (size_t i = 0; i < coco_table.num_annotations(); ++i) {
    if (coco_table.ann_iscrowd[i]) continue;
    coco::Annotation a;
    a.id = coco_table.ann_id[i];
    a.image_id = coco_table.ann_image_id[i];
    a.category_id = coco_table.ann_category_id[i];
    a.bbox = coco_table.ann_bbox[i];
    a.area = a.bbox.w * a.bbox.h;
    coco_as_yolo.add_annotation(a);
  }
  std::map<std::string, int64_t> yolo_category;
  for (const auto& c : yolo_table.categories) yolo_category[c.name] = c.id;
  std::map<int64_t, std::string> coco_name;
  for (const auto& c : coco_table.categories) coco_name[c.id] = c.name;
  eval::CocoDetections on_coco, on_yolo;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> score(0.05, 1.0);
  const double ious[] = {0.52, 0.62, 0.72, 0.82, 0.92};
  for (size_t i = 0; i < coco_as_yolo.num_annotations(); ++i) {
    const coco::BoxXywh b = coco_as_yolo.ann_bbox[i];
    const int64_t image = coco_as_yolo.ann_image_id[i], cat = coco_as_yolo.ann_category_id[i];
    const double iou = ious[i % 5];
    coco::BoxXywh shifted = b;
    shifted.x += b.w * (1 - iou) / (1 + iou);  // IoU of a box shifted by d along x: (w-d)/(w+d)
    for (const coco::BoxXywh& d : {b, shifted}) {
      const double s = score(rng);
      on_coco.add(image, cat, d, s);
      on_yolo.add(image, yolo_category.at(coco_name.at(cat)), d, s);
    }
  }
  const auto params = eval::CocoParams::defaults(eval::IouType::kBbox);
  const auto want = eval::evaluate_coco(coco_as_yolo, on_coco, params).stats;
  const auto got = eval::evaluate_coco(yolo_table, on_yolo, params).stats;
  CHECK(got == want);
  CHECK(want[0] > 0.3);  // a score that a wrong box or class mapping could not keep
}

TEST_CASE("coco-mini's YOLO pose copy carries COCO's keypoints", "[parity][data][yolo]") {
  const auto shared = test::shared_data_or_skip("coco-mini");
  if (!shared) return;
  const DatasetInfo coco_info = load_dataset("data/coco-mini-pose.yaml", *shared);
  const DatasetInfo yolo_info = load_dataset(test::golden("pt/coco-mini-yolo/pose.yaml"));
  // Neither names sigmas (as the reference's coco-pose.yaml): both get pycocotools' values.
  CHECK(yolo_info.oks_sigmas == coco::person_keypoint_sigmas());
  CHECK(coco_info.oks_sigmas == yolo_info.oks_sigmas);
  CHECK(yolo_info.flip_idx == coco_info.flip_idx);
  const auto coco_table = read_split(coco_info, "val", record_read_options(coco_info));
  const auto yolo_table = read_split(yolo_info, "val", record_read_options(yolo_info));
  // Each labelled non-crowd COCO person has a YOLO row with the same box and points.
  size_t matched = 0;
  for (size_t i = 0; i < coco_table.num_annotations(); ++i) {
    if (coco_table.ann_iscrowd[i] || coco_table.ann_num_keypoints[i] == 0) continue;
    const auto& b = coco_table.ann_bbox[i];
    for (size_t j = 0; j < yolo_table.num_annotations(); ++j) {
      const auto& y = yolo_table.ann_bbox[j];
      if (yolo_table.ann_image_id[j] != coco_table.ann_image_id[i] || std::abs(y.x - b.x) > 0.01 ||
          std::abs(y.y - b.y) > 0.01 || std::abs(y.w - b.w) > 0.01)
        continue;
      for (size_t k = 0; k < 17 * 3; k += 3) {
        const double* c = &coco_table.ann_keypoints[i * 51 + k];
        const double* p = &yolo_table.ann_keypoints[j * 51 + k];
        CHECK(p[2] == c[2]);
        if (c[2] > 0) {
          CHECK(std::abs(p[0] - c[0]) < 0.01);  // 6 significant digits, as above
          CHECK(std::abs(p[1] - c[1]) < 0.01);
        }
      }
      ++matched;
      break;
    }
  }
  CHECK(matched > 50);
}
