// The evaluator's JSON layer: correctly rounded numbers, strict grammar with byte offsets in
// errors, COCO ground-truth fields, pycocotools' loadRes branch rules, and the writers.
#include <catch2/catch.hpp>
#include <charconv>
#include <cmath>
#include <cstring>

#include "coco/json_cursor.h"
#include "common/errors.h"
#include "common/rng.h"
#include "eval/coco_json.h"
#include "test_support.h"

using detrain::DataError;
using detrain::coco::JsonCursor;
using detrain::eval::IouType;

namespace {

// The DataError message a call throws ("" for none).
constexpr auto error_of = &detrain::test::thrown_message<DataError>;

double parse_number(const std::string& text) {
  JsonCursor cursor(text, "number.json");
  const double value = cursor.number();
  cursor.expect_end();
  return value;
}

std::string parse_error(const std::string& text) {
  return error_of([&] {
    JsonCursor cursor(text, "bad.json");
    cursor.skip_value();
    cursor.expect_end();
  });
}

const char* kGt = R"({"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2}],
 "categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"]}, {"id": 3, "name": "caf\u00e9"}],
 "annotations": [
  {"id": 10, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "area": 9.5, "iscrowd": 0,
   "segmentation": [[1, 2, 3, 4, 5, 6]], "num_keypoints": 1, "keypoints": [5, 6, 2, 0, 0, 0]},
  {"id": 11, "image_id": 2, "category_id": 3, "bbox": [0, 0, 10, 10], "iscrowd": true,
   "segmentation": {"size": [10, 10], "counts": "abc"}}
 ], "info": {"year": 2017}, "licenses": []})";

}  // namespace

TEST_CASE("coco json numbers are correctly rounded", "[unit][eval]") {
  // Expected bit patterns from Python's float() (David Gay's correctly rounded strtod).
  CHECK(parse_number("0.1") == 0x1.999999999999ap-4);
  CHECK(parse_number("0.30000000000000004") == 0x1.3333333333334p-2);
  CHECK(parse_number("9007199254740993") == 0x1p53);  // halfway: ties to even
  CHECK(parse_number("1.00000000000000011102230246251565404236316680908203125") == 1.0);
  CHECK(parse_number("1.00000000000000011102230246251565404236316680908203126") ==
        0x1.0000000000001p+0);
  CHECK(parse_number("2.2250738585072011e-308") == 0x0.fffffffffffffp-1022);
  CHECK(parse_number("4.9406564584124654e-324") == 0x0.0000000000001p-1022);
  CHECK(parse_number("123456789012345678901234567890") == 0x1.8ee90ff6c373ep+96);
  CHECK(parse_number("1.7976931348623158e308") == 0x1.fffffffffffffp+1023);
  CHECK(parse_number("3.0517578125e-05") == 0x1p-15);
  // Overflow and underflow as Python's float(): inf and 0.
  CHECK(parse_number("1.7976931348623159e308") == HUGE_VAL);
  CHECK(parse_number("-1e400") == -HUGE_VAL);
  CHECK(parse_number("2.4703282292062327e-324") == 0.0);
  CHECK(std::signbit(parse_number("-0")));
  CHECK(parse_number("-0.0e5") == 0.0);
  CHECK(parse_number("1E2") == 100.0);
  CHECK(parse_number("12e-1") == 1.2);
}

TEST_CASE("coco json numbers agree with from_chars and round-trip", "[unit][eval]") {
  detrain::Rng rng(7);
  char buf[64];
  for (int i = 0; i < 20000; ++i) {
    // Short decimals (the fast path) and long ones (the fallback), mixed exponents.
    const int digits = 1 + static_cast<int>(rng.below(19));
    std::string mantissa = std::to_string(1 + rng.below(9));
    for (int d = 1; d < digits; ++d) mantissa += static_cast<char>('0' + rng.below(10));
    if (rng.bernoulli(0.5)) mantissa.insert(1 + rng.below(mantissa.size()), ".");
    if (mantissa.back() == '.') mantissa += "5";
    if (rng.bernoulli(0.2)) mantissa = "0." + mantissa.substr(0, mantissa.find('.'));
    std::string text = (rng.bernoulli(0.3) ? "-" : "") + mantissa;
    if (rng.bernoulli(0.5)) text += "e" + std::to_string(static_cast<int>(rng.below(60)) - 30);
    double reference = 0;
    std::from_chars(text.data(), text.data() + text.size(), reference);
    INFO(text);
    REQUIRE(parse_number(text) == reference);

    // Shortest representation of a random double reads back to the same bits.
    uint64_t bits = rng.next_u64();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) continue;
    const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
    const std::string shortest(buf, end);
    INFO(shortest);
    REQUIRE(parse_number(shortest) == value);
  }
}

TEST_CASE("coco json grammar errors name the file and byte offset", "[unit][eval]") {
  CHECK(parse_error("[1, 2,]").find("bad.json: malformed JSON at byte 6") != std::string::npos);
  CHECK(parse_error("{\"a\" 1}").find("at byte 5") != std::string::npos);
  CHECK(parse_error("[1 2]").find("expected ',' or ']'") != std::string::npos);
  CHECK(parse_error("\n\n  [01]").find("(line 3, column 5)") != std::string::npos);
  for (const char* bad : {"01",      "1.",          ".5",    "+1",
                          "1e",      "-",           "tru",   "nul",
                          "NaN",     "Infinity",    "\"abc", "\"a\x01\"",
                          "\"\\x\"", "\"\\u12g4\"", "[] x",  "{\"a\":}",
                          "{1: 2}",  "[",           "",      "\xef\xbb\xbf[]"}) {
    INFO(bad);
    CHECK_FALSE(parse_error(bad).empty());
  }
  // Nesting is bounded instead of recursing without limit.
  CHECK(parse_error(std::string(100000, '[')).find("nesting deeper than") != std::string::npos);
  // Valid values of every kind.
  CHECK(
      parse_error(
          R"({"a": [true, false, null, -1.5e-3, "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"], "b": {}})")
          .empty());
}

TEST_CASE("coco json strings decode escapes", "[unit][eval]") {
  const std::string text = R"("caf\u00e9 \ud83d\ude00 \"q\" \\ \/ tab\t")";
  JsonCursor cursor(text, "s.json");
  CHECK(cursor.string() == "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\ / tab\t");
}

TEST_CASE("coco ground truth json reads COCO fields", "[unit][eval]") {
  const auto gt = detrain::eval::parse_ground_truth_json(kGt, "gt.json");
  REQUIRE(gt.image_ids == std::vector<int64_t>{1, 2});
  REQUIRE(gt.categories.size() == 2);
  CHECK(gt.categories[1].name == "caf\xc3\xa9");
  REQUIRE(gt.num_annotations() == 2);
  CHECK(gt.ann_id[0] == 10);
  CHECK(gt.ann_bbox[0].w == 3);
  CHECK(gt.ann_area[0] == 9.5);
  CHECK(gt.keypoints_per_instance == 2);
  CHECK(gt.ann_keypoints[0] == 5);
  CHECK(gt.ann_num_keypoints[0] == 1);
  CHECK(gt.ann_iscrowd[1] == 1);
  // The second annotation has no area and no keypoints: recorded, checked only if evaluated.
  CHECK((gt.ann_fields[1] & detrain::eval::kGtArea) == 0);
  CHECK((gt.ann_fields[1] & detrain::eval::kGtKeypoints) == 0);
  CHECK((gt.ann_fields[0] & detrain::eval::kGtAllFields) == detrain::eval::kGtAllFields);
}

TEST_CASE("coco ground truth json rejects bad records", "[unit][eval]") {
  const auto error = [](const std::string& text) {
    return error_of([&] { detrain::eval::parse_ground_truth_json(text, "gt.json"); });
  };
  CHECK(error("[]").find("must be a JSON object") != std::string::npos);
  CHECK(error(R"({"categories": []})").find("no 'images'") != std::string::npos);
  CHECK(error(R"({"images": []})").find("no 'categories'") != std::string::npos);
  CHECK(error(R"({"images": [{"file": 1}], "categories": []})").find("images[0] has no 'id'") !=
        std::string::npos);
  CHECK(error(R"({"images": [], "categories": [], "annotations": [{"id": 4, "category_id": 1}]})")
            .find("(id 4) has no 'image_id'") != std::string::npos);
  CHECK(error(R"({"images": [], "categories": [], "annotations": [
      {"id": 4, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3]}]})")
            .find("annotation id 4: 'bbox' has 3 values") != std::string::npos);
  CHECK(error(R"({"images": [], "categories": [], "annotations": [
      {"id": 4, "image_id": 1, "category_id": 1, "iscrowd": 2}]})")
            .find("'iscrowd' must be 0 or 1") != std::string::npos);
  CHECK(error(R"({"images": [{"id": 1.5}], "categories": []})").find("'id' must be an integer") !=
        std::string::npos);
  CHECK(error(R"({"images": [{"id": "7"}], "categories": []})")
            .find("images[0] 'id' must be an integer") != std::string::npos);
  // An integral float id is an integer, as Python's dict lookups treat it.
  CHECK(
      detrain::eval::parse_ground_truth_json(R"({"images": [{"id": 3.0}], "categories": []})", "g")
          .image_ids[0] == 3);
  // A repeated key keeps the last value, as Python's json does.
  CHECK(detrain::eval::parse_ground_truth_json(
            R"({"images": [{"id": 1, "id": 2}], "categories": []})", "g")
            .image_ids[0] == 2);
}

TEST_CASE("coco results json follows loadRes branches", "[unit][eval]") {
  using detrain::eval::parse_results_json;
  SECTION("boxes: area is w * h, given ids and areas are ignored") {
    const auto d = parse_results_json(
        R"([{"image_id": 1, "category_id": 2, "bbox": [1.5, 2, 3, 4.5], "score": 0.5,
             "area": 99, "id": 7}, {"image_id": 2, "category_id": 2, "bbox": [0, 0, 1, 1], "score": 1}])",
        "r.json", IouType::kBbox);
    REQUIRE(d.size() == 2);
    CHECK(d.area[0] == 13.5);
    CHECK(d.bbox[0].x == 1.5);
    CHECK(d.score[1] == 1.0);
  }
  SECTION("keypoints with boxes keep the box area (detectron2 results)") {
    const auto d = parse_results_json(
        R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 3], "score": 0.5,
             "keypoints": [10, 10, 1, 20, 30, 1]}])",
        "r.json", IouType::kKeypoints);
    CHECK(d.keypoints_per_instance == 2);
    CHECK(d.area[0] == 6);
  }
  SECTION("keypoint-only results take the extent of all points, (0, 0) included") {
    const auto d = parse_results_json(
        R"([{"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [],
             "keypoints": [10, 20, 1, 30, 50, 0, 0, 0, 0]}])",
        "r.json", IouType::kKeypoints);
    CHECK(d.bbox[0].x == 0);
    CHECK(d.bbox[0].w == 30);
    CHECK(d.bbox[0].h == 50);
    CHECK(d.area[0] == 1500);
  }
  SECTION("bbox evaluation of keypoint-only results uses the extent boxes") {
    const auto d = parse_results_json(
        R"([{"image_id": 1, "category_id": 1, "score": 0.5, "keypoints": [1, 2, 1, 4, 8, 1]}])",
        "r.json", IouType::kBbox);
    CHECK(d.area[0] == 18);
  }
  SECTION("an empty list is an empty result set") {
    CHECK(parse_results_json(" [ ] ", "r.json", IouType::kBbox).size() == 0);
  }
}

TEST_CASE("coco results json rejects bad results", "[unit][eval]") {
  const auto error = [](const std::string& text, IouType type = IouType::kBbox) {
    return error_of([&] { detrain::eval::parse_results_json(text, "r.json", type); });
  };
  CHECK(error("{}").find("results must be a JSON list") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "segmentation": {}, "score": 1}])")
            .find("segmentation results are not supported") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "score": 1}])")
            .find("neither 'bbox' nor 'keypoints'") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1},
                  {"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}])")
            .find("result 1 has no 'score'") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1},
                  {"image_id": 1, "category_id": 1, "keypoints": [1, 1, 1], "score": 1}])")
            .find("result 1 has no 'bbox'") != std::string::npos);
  // A truncated file is a syntax error at its end, not a type error.
  CHECK(
      error(R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0,)")
          .find("r.json: malformed JSON at byte 49 (line 1, column 50): unexpected end of input") !=
      std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1], "score": 1}])")
            .find("has 3 values") != std::string::npos);
  CHECK(error(R"([{"image_id": 1.5, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}])")
            .find("'image_id' must be an integer") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": "high"}])")
            .find("result 0 'score' must be a number") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "keypoints": [1, 1, 1], "score": 1},
                  {"image_id": 1, "category_id": 1, "keypoints": [1, 1, 1, 2, 2, 2], "score": 1}])",
              IouType::kKeypoints)
            .find("result 1 has 6 keypoint values") != std::string::npos);
  CHECK(error(R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}])",
              IouType::kKeypoints)
            .find("result 0 has no 'keypoints'") != std::string::npos);
  CHECK_THROWS_AS(
      detrain::eval::load_results_json("/nonexistent/detrain/results.json", IouType::kBbox),
      detrain::IoError);
}

TEST_CASE("coco json writers round-trip", "[unit][eval]") {
  detrain::eval::CocoDetections dets;
  dets.keypoints_per_instance = 2;
  const double points[6] = {1.25, 2, 1, 0.1, 0.30000000000000004, 0};
  dets.add(5, 3, {0.1, 1e-7, 12345.678, 1e300}, 0.1 + 0.2, points);
  dets.add(6, 3, {1, 2, 3, 4}, 1.0 / 3.0, points);
  const std::string text = detrain::eval::results_to_json(dets);
  const auto back = detrain::eval::parse_results_json(text, "r.json", IouType::kKeypoints);
  REQUIRE(back.size() == 2);
  CHECK(back.image_id == dets.image_id);
  CHECK(back.score == dets.score);
  CHECK(back.area == dets.area);
  CHECK(back.keypoints == dets.keypoints);
  CHECK(back.bbox[0].y == 1e-7);

  const auto gt = detrain::eval::parse_ground_truth_json(kGt, "gt.json");
  const auto gt_back =
      detrain::eval::parse_ground_truth_json(detrain::eval::ground_truth_to_json(gt), "gt2.json");
  CHECK(gt_back.image_ids == gt.image_ids);
  CHECK(gt_back.ann_id == gt.ann_id);
  CHECK(gt_back.ann_area == gt.ann_area);
  CHECK(gt_back.ann_iscrowd == gt.ann_iscrowd);
  CHECK(gt_back.ann_fields == gt.ann_fields);
  CHECK(gt_back.ann_keypoints == gt.ann_keypoints);
  CHECK(gt_back.categories[1].name == gt.categories[1].name);
}

TEST_CASE("coco results json parses large files in parallel chunks", "[unit][eval]") {
  using detrain::eval::parse_results_json;
  // ~6 MB: enough for several chunks. Half the results carry nested values and strings that
  // look like element boundaries ("}, {"), so some speculative chunk starts are false.
  const auto build = [](bool tricky, size_t bad_at) {
    std::string text = "[";
    for (size_t i = 0; i < 60000; ++i) {
      if (i) text += ", ";
      text += "{\"image_id\": " + std::to_string(i % 977) + ", \"category_id\": 3, \"bbox\": [" +
              std::to_string(i % 13) + ".25, 1, 2, 3], \"score\": 0." + std::to_string(i % 1000);
      if (tricky && i % 2) text += ", \"note\": \"}, {\", \"extra\": [{\"a\": 1}, {\"b\": [2]}]";
      if (i == bad_at) text += ", \"bbox\": [1, 2]";
      text += "}";
    }
    return text + "]";
  };
  for (bool tricky : {false, true}) {
    const std::string text = build(tricky, SIZE_MAX);
    const auto one = parse_results_json(text, "r.json", IouType::kBbox, 1);
    const auto four = parse_results_json(text, "r.json", IouType::kBbox, 4);
    REQUIRE(one.size() == 60000);
    CHECK(four.image_id == one.image_id);
    CHECK(four.score == one.score);
    CHECK(four.area == one.area);
    CHECK(four.bbox[59999].x == one.bbox[59999].x);
  }
  // An error deep in the file names its exact result, whatever the thread count.
  const std::string bad = build(false, 45123);
  for (int threads : {1, 4})
    CHECK(error_of([&] {
            parse_results_json(bad, "r.json", IouType::kBbox, threads);
          }).find("result 45123: 'bbox' has 2 values") != std::string::npos);
}

TEST_CASE("coco json files load whether or not their size is page aligned", "[unit][eval]") {
  detrain::test::TempDir dir("detrain-json-file");
  const std::string results =
      R"([{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}])";
  for (size_t size : {results.size(), size_t{4096}, size_t{8192}, size_t{8193}}) {
    // Trailing whitespace pads the file to `size` bytes; 4096 and 8192 take the read() path
    // (no byte after the end inside the mapping), the others are mapped.
    const std::string path = dir.file("r" + std::to_string(size) + ".json");
    detrain::test::write_text(path, results + std::string(size - results.size(), ' '));
    const auto d = detrain::eval::load_results_json(path, IouType::kBbox);
    REQUIRE(d.size() == 1);
    CHECK(d.area[0] == 12);
  }
  detrain::test::write_text(dir.file("truncated.json"), results.substr(0, 40));
  CHECK(error_of([&] {
          detrain::eval::load_results_json(dir.file("truncated.json"), IouType::kBbox);
        }).find("truncated.json: malformed JSON at byte 40") != std::string::npos);
}
