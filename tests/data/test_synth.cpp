// The synthetic data set: files and COCO structure, boxes and keypoints consistent with the
// images, visibility flags, descriptors in the data pipeline's format, and determinism
// (same seed and any thread count: identical bytes).
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "coco/keypoint_sigmas.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "data/dataset.h"
#include "data/synth.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

SynthOptions small_options(uint64_t seed, int threads) {
  SynthOptions o;
  o.seed = seed;
  o.train_images = 12;
  o.val_images = 6;
  o.min_side = 96;
  o.max_side = 160;
  o.threads = threads;
  return o;
}

nlohmann::json load(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

}  // namespace

TEST_CASE("synth writes COCO files whose boxes and keypoints fit the images", "[unit][data]") {
  TempDir dir;
  const SynthSummary s = write_synth_dataset(dir.file("synth"), small_options(3, 2));
  CHECK(s.images == 18);
  CHECK(s.instances >= 18);  // at least one object per image
  CHECK(fs::exists(s.detect_yaml));
  CHECK(fs::exists(s.pose_yaml));

  int64_t persons = 0, instances = 0, occluded = 0;
  for (const char* split : {"train", "val"}) {
    const auto inst = load(s.root + "/annotations/instances_" + std::string(split) + ".json");
    const auto kpts =
        load(s.root + "/annotations/person_keypoints_" + std::string(split) + ".json");
    REQUIRE(inst["categories"].size() == 5);
    CHECK(inst["categories"][0]["name"] == "person");
    CHECK(inst["categories"][0]["id"] == 1);
    REQUIRE(kpts["categories"].size() == 1);
    CHECK(kpts["categories"][0]["keypoints"].size() == 17);
    CHECK(kpts["categories"][0]["skeleton"][0] == nlohmann::json({16, 14}));  // 1-based
    CHECK(inst["images"] == kpts["images"]);

    std::map<int64_t, std::pair<int, int>> size_of;
    for (const auto& img : inst["images"]) {
      const cv::Mat m =
          cv::imread(s.root + "/images/" + split + "/" + img["file_name"].get<std::string>());
      REQUIRE_FALSE(m.empty());
      CHECK(m.cols == img["width"]);
      CHECK(m.rows == img["height"]);
      CHECK(m.cols >= 96);
      CHECK(m.cols <= 160);
      size_of[img["id"]] = {m.cols, m.rows};
    }
    std::set<int64_t> ids;
    std::map<int64_t, std::vector<nlohmann::json>> anns_of_image;
    for (const auto& a : inst["annotations"]) anns_of_image[a["image_id"]].push_back(a);
    // v = 1 (labelled, not visible) only where an object drawn later (a higher id) covers it.
    auto covered_later = [&](const nlohmann::json& person, double x, double y) {
      for (const auto& other : anns_of_image[person["image_id"]]) {
        const auto& b = other["bbox"];
        if (other["id"] > person["id"] && x >= b[0].get<double>() && y >= b[1].get<double>() &&
            x <= b[0].get<double>() + b[2].get<double>() &&
            y <= b[1].get<double>() + b[3].get<double>())
          return true;
      }
      return false;
    };
    for (const auto& a : inst["annotations"]) {
      ++instances;
      CHECK(ids.insert(a["id"].get<int64_t>()).second);
      const auto [w, h] = size_of.at(a["image_id"]);
      const auto& b = a["bbox"];
      CHECK(b[0].get<double>() >= 0);
      CHECK(b[1].get<double>() >= 0);
      CHECK(b[2].get<double>() >= 4);
      CHECK(b[3].get<double>() >= 4);
      CHECK(b[0].get<double>() + b[2].get<double>() <= w + 1e-9);
      CHECK(b[1].get<double>() + b[3].get<double>() <= h + 1e-9);
      CHECK(a["area"].get<double>() > 0);
      CHECK(a["category_id"].get<int>() >= 1);
      CHECK(a["category_id"].get<int>() <= 5);
      CHECK_FALSE(a.contains("keypoints"));
    }
    for (const auto& a : kpts["annotations"]) {
      ++persons;
      CHECK(a["category_id"] == 1);
      const auto& k = a["keypoints"];
      REQUIRE(k.size() == 51);
      const auto& b = a["bbox"];
      int labelled = 0;
      for (int i = 0; i < 17; ++i) {
        const double x = k[3 * i], y = k[3 * i + 1];
        const int v = k[3 * i + 2];
        CHECK((v == 0 || v == 1 || v == 2));
        if (v == 0) {
          CHECK(x == 0);  // COCO: unlabelled points are (0, 0, 0)
          CHECK(y == 0);
          continue;
        }
        ++labelled;
        if (v == 1) {
          ++occluded;
          CHECK(covered_later(a, x, y));
        }
        // Labelled keypoints lie in the person's box (boxes are rounded to 0.01 px).
        CHECK(x >= b[0].get<double>() - 0.01);
        CHECK(y >= b[1].get<double>() - 0.01);
        CHECK(x <= b[0].get<double>() + b[2].get<double>() + 0.01);
        CHECK(y <= b[1].get<double>() + b[3].get<double>() + 0.01);
      }
      CHECK(a["num_keypoints"] == labelled);
      // The figure's layout: the nose is above the hips, which are above the ankles, and the
      // person's left shoulder is on the image's right (facing the camera).
      if (k[2] == 2 && k[35] == 2 && k[47] == 2) {
        CHECK(k[1].get<double>() < k[34].get<double>());
        CHECK(k[34].get<double>() < k[46].get<double>());
      }
      if (k[17] > 0 && k[20] > 0) CHECK(k[15].get<double>() > k[18].get<double>());
    }
  }
  CHECK(persons == s.persons);
  CHECK(instances == s.instances);
  CHECK(persons > 0);
  CHECK(persons < instances);  // shapes too
  CHECK(occluded > 0);         // this seed has occluded keypoints (about 5% of all)
}

TEST_CASE("synth descriptors use the data pipeline's descriptor format", "[unit][data]") {
  TempDir dir;
  const SynthSummary s = write_synth_dataset(dir.file("d"), small_options(1, 1));
  const YAML::Node detect = YAML::LoadFile(s.detect_yaml);
  CHECK(detect["path"].as<std::string>() == s.root);
  CHECK(detect["task"].as<std::string>() == "detect");
  CHECK(detect["train"]["annotations"].as<std::string>() == "annotations/instances_train.json");
  CHECK(detect["val"]["images"].as<std::string>() == "images/val");
  REQUIRE(detect["classes"].size() == 5);
  CHECK(detect["classes"][3]["id"].as<int>() == 4);
  CHECK(detect["classes"][3]["name"].as<std::string>() == "triangle");
  CHECK_FALSE(detect["kpt_shape"]);
  for (const char* split : {"train", "val"})
    for (const char* key : {"annotations", "images"})
      CHECK(fs::exists(s.root + "/" + detect[split][key].as<std::string>()));

  const YAML::Node pose = YAML::LoadFile(s.pose_yaml);
  CHECK(pose["task"].as<std::string>() == "pose");
  CHECK(pose["keep_images"].as<std::string>() == "with_keypoints");
  CHECK(pose["train"]["annotations"].as<std::string>() ==
        "annotations/person_keypoints_train.json");
  REQUIRE(pose["classes"].size() == 1);
  CHECK(pose["kpt_shape"].as<std::vector<int>>() == std::vector<int>{17, 3});
  CHECK(pose["kpt_names"].size() == 17);
  const auto flip = pose["flip_idx"].as<std::vector<int>>();
  REQUIRE(flip.size() == 17);
  for (int i = 0; i < 17; ++i) CHECK(flip[flip[i]] == i);  // pairs swap
  // No sigmas written (six printed digits would round them): the loader's default is COCO's.
  CHECK_FALSE(pose["oks_sigmas"]);
  CHECK(detrain::data::load_dataset(s.pose_yaml).oks_sigmas == coco::person_keypoint_sigmas());
  for (const auto& limb : pose["skeleton"]) {
    const auto pair = limb.as<std::vector<int>>();
    REQUIRE(pair.size() == 2);
    CHECK(pair[0] >= 0);
    CHECK(pair[1] < 17);
  }
}

TEST_CASE("synth is deterministic whatever the thread count", "[unit][data]") {
  TempDir dir;
  const SynthSummary a = write_synth_dataset(dir.file("a"), small_options(5, 1));
  const SynthSummary b = write_synth_dataset(dir.file("b"), small_options(5, 3));
  const SynthSummary c = write_synth_dataset(dir.file("c"), small_options(6, 2));
  for (const char* file :
       {"annotations/instances_train.json", "annotations/person_keypoints_val.json",
        "images/train/0000001.jpg", "images/val/1000006.jpg"}) {
    INFO(file);
    CHECK(read_file(a.root + "/" + file) == read_file(b.root + "/" + file));
    CHECK(read_file(a.root + "/" + file) != read_file(c.root + "/" + file));
  }
}

TEST_CASE("synth rejects impossible options", "[unit][data]") {
  TempDir dir;
  SynthOptions o = small_options(0, 1);
  o.max_side = 50;
  o.min_side = 60;
  CHECK_THROWS_AS(write_synth_dataset(dir.file("x"), o), ConfigError);
  o = small_options(0, 1);
  o.val_images = 0;
  CHECK_THROWS_AS(write_synth_dataset(dir.file("x"), o), ConfigError);
  detrain::test::write_text(dir.file("file"), "x");
  CHECK_THROWS_AS(write_synth_dataset(dir.file("file"), small_options(0, 1)), IoError);
}
