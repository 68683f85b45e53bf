// Inputs of the COCO evaluator tests; see coco_test_cases.h.
#include "coco_test_cases.h"

#include <cstdlib>
#include <stdexcept>

#include "common/atomic_file.h"
#include "eval/coco_json.h"
#include "eval/coco_synth.h"
#include "test_support.h"

namespace detrain::test {

void add_gt_box(eval::CocoGroundTruth& gt, int64_t id, int64_t image, int64_t category,
                eval::BoxXywh box, double area, bool crowd) {
  eval::GtAnnotation a;
  a.id = id;
  a.image_id = image;
  a.category_id = category;
  a.bbox = box;
  a.area = area;
  a.iscrowd = crowd;
  gt.add_annotation(a);
}

void keep_inputs(const EvalCase& c) {
  const char* dir = std::getenv("DETRAIN_EVAL_KEEP_INPUTS");
  if (!dir || !*dir) return;
  write_text(std::string(dir) + "/" + c.name + "/gt.json", c.gt_json);
  write_text(std::string(dir) + "/" + c.name + "/results.json", c.results_json);
}

eval::CocoEvalResult run_case(const EvalCase& c, int threads) {
  keep_inputs(c);
  const auto gt = eval::parse_ground_truth_json(c.gt_json, c.name + "/gt.json");
  const auto dets = eval::parse_results_json(c.results_json, c.name + "/results.json", c.iou_type);
  eval::CocoParams params = eval::CocoParams::defaults(c.iou_type);
  params.use_cats = c.use_cats;
  return eval::CocoEvaluator(gt, params, {threads}).evaluate(dets);
}

namespace {

std::optional<std::string> coco_mini_text(const std::string& file) {
  auto path = shared_data_or_skip("coco-mini/annotations/" + file);
  if (!path) return std::nullopt;
  return read_file(*path);
}

}  // namespace

// The detection options of each case are part of its definition: changing one changes the
// inputs and invalidates the pycocotools expectations recorded in test_coco_parity.cpp.
std::optional<EvalCase> coco_mini_case(const std::string& name) {
  EvalCase c;
  c.name = name;
  eval::SynthDetOptions options;
  std::string gt_file = "instances_val.json";
  bool with_bbox = true;
  if (name == "instances_bbox" || name == "instances_bbox_nocats") {
    options.seed = 11;
    options.unknown_category_rate = 0.02;
    c.use_cats = name == "instances_bbox";
  } else if (name == "instances_ties") {
    options.seed = 12;
    options.score_decimals = 1;  // heavy score ties, inside and across images
    options.box_decimals = 0;    // integer boxes: exact IoU ties and boundary areas
    options.false_positives_per_image = 6;
  } else if (name == "keypoints_with_box" || name == "keypoints_only") {
    gt_file = "person_keypoints_val.json";
    c.iou_type = eval::IouType::kKeypoints;
    options.keypoints = true;
    with_bbox = name == "keypoints_with_box";
    options.keypoints_with_box = with_bbox;
    options.seed = with_bbox ? 13 : 14;
    options.hit_rate = 0.9;
  } else {
    throw std::invalid_argument("unknown coco-mini case " + name);
  }
  auto gt_text = coco_mini_text(gt_file);
  if (!gt_text) return std::nullopt;
  c.gt_json = *gt_text;
  const auto gt = eval::parse_ground_truth_json(c.gt_json, gt_file);
  c.results_json = eval::results_to_json(eval::synth_detections(gt, options), with_bbox);
  return c;
}

EvalCase synthetic_case() {
  EvalCase c;
  c.name = "synthetic";
  eval::SynthGtOptions gt_options;
  gt_options.images = 300;
  gt_options.seed = 5;
  const auto gt = eval::synth_ground_truth(gt_options);
  eval::SynthDetOptions det_options;
  det_options.seed = 6;
  det_options.dets_per_image = 100;
  det_options.score_decimals = 3;
  c.gt_json = eval::ground_truth_to_json(gt);
  c.results_json = eval::results_to_json(eval::synth_detections(gt, det_options));
  return c;
}

// Every bbox quirk of the spec in four images: GT id 0 (its match is a false positive), a
// repeated annotation id (both entries read the last annotation), area exactly 1024 and 9216
// (closed ranges), a crowd absorbing two detections, equal-IoU GTs (the later one wins), a
// maxDets cut (12 detections in one cell), score ties inside and across images, a category
// without GT, an unknown category, `iscrowd: false`, the dead `ignore` field, and an
// annotation outside `images` without `iscrowd` (never read).
EvalCase quirks_bbox_case(bool use_cats) {
  EvalCase c;
  c.name = use_cats ? "quirks_bbox" : "quirks_bbox_nocats";
  c.use_cats = use_cats;
  c.gt_json = R"({"images": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}],
"categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "bird"}],
"annotations": [
{"id": 0, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0},
{"id": 5, "image_id": 1, "category_id": 1, "bbox": [100, 100, 32, 32], "area": 1024, "iscrowd": 0},
{"id": 6, "image_id": 1, "category_id": 1, "bbox": [200, 200, 100, 100], "area": 9216, "iscrowd": 1},
{"id": 7, "image_id": 2, "category_id": 2, "bbox": [50, 50, 40, 40], "area": 1600, "iscrowd": 0},
{"id": 7, "image_id": 2, "category_id": 2, "bbox": [300, 50, 40, 40], "area": 2000, "iscrowd": 0},
{"id": 9, "image_id": 3, "category_id": 1, "bbox": [0, 0, 96, 96], "area": 9216, "iscrowd": 0},
{"id": 10, "image_id": 3, "category_id": 2, "bbox": [10, 10, 10, 10], "area": 100, "iscrowd": 0},
{"id": 11, "image_id": 4, "category_id": 2, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": false},
{"id": 12, "image_id": 4, "category_id": 2, "bbox": [0, 0, 50, 50], "area": 2400, "iscrowd": 0},
{"id": 13, "image_id": 99, "category_id": 1, "bbox": [0, 0, 1, 1], "area": 1},
{"id": 14, "image_id": 4, "category_id": 1, "bbox": [400, 400, 20, 20], "area": 400, "iscrowd": 0, "ignore": 1},
{"id": 15, "image_id": 4, "category_id": 1, "bbox": [100, 100, 40, 40], "area": 900, "iscrowd": 0}
]})";
  std::string results = R"([
{"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
{"image_id": 1, "category_id": 1, "bbox": [100, 100, 32, 32], "score": 0.8},
{"image_id": 1, "category_id": 1, "bbox": [210, 210, 50, 50], "score": 0.8},
{"image_id": 1, "category_id": 1, "bbox": [250, 250, 20, 20], "score": 0.5},
{"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 21], "score": 0.3},
{"image_id": 2, "category_id": 2, "bbox": [300, 50, 40, 40], "score": 0.7},
{"image_id": 2, "category_id": 2, "bbox": [301, 50, 40, 40], "score": 0.7},
{"image_id": 2, "category_id": 2, "bbox": [50, 50, 40, 40], "score": 0.6},
{"image_id": 3, "category_id": 1, "bbox": [0, 0, 96, 96], "score": 0.6},
{"image_id": 3, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.95},
{"image_id": 3, "category_id": 99, "bbox": [0, 0, 10, 10], "score": 0.9},
{"image_id": 4, "category_id": 2, "bbox": [0, 0, 50, 50], "score": 0.65},
{"image_id": 4, "category_id": 2, "bbox": [0, 0, 50, 50], "score": 0.65},
{"image_id": 4, "category_id": 1, "bbox": [400, 400, 20, 20], "score": 0.4},
{"image_id": 4, "category_id": 1, "bbox": [100, 100, 40, 40], "score": 0.45},
{"image_id": 2, "category_id": 1, "bbox": [0, 0, 2000, 2000], "score": 0.99},
{"image_id": 1, "category_id": 2, "bbox": [10, 10, 20, 20], "score": 0.7})";
  // Eleven low-area false positives, then the match of GT 10 as the 12th detection of the cell.
  for (int i = 0; i < 11; ++i)
    results += ",\n{\"image_id\": 3, \"category_id\": 2, \"bbox\": [0, 0, 5, 5], \"score\": 0." +
               std::to_string(59 - i) + "}";
  results +=
      ",\n{\"image_id\": 3, \"category_id\": 2, \"bbox\": [10, 10, 10, 10], \"score\": 0.47}\n]";
  c.results_json = results;
  return c;
}

// Keypoint quirks: a GT with num_keypoints 0 (ignored; OKS from the enlarged box), a GT whose
// num_keypoints (3) disagrees with its all-zero visibility (not ignored, enlarged-box OKS), a
// crowd person region, GT id 0, points at (0, 0) in a result (they stretch a keypoint-only
// result's box), score ties. With `with_box` the results carry boxes (area = w * h), without
// they are keypoint-only (area from the point extent).
EvalCase quirks_keypoints_case(bool with_box) {
  constexpr int kPoints = 17;
  eval::CocoGroundTruth gt;
  for (int64_t image : {1, 2, 3}) gt.add_image(image);
  gt.add_category(1, "person");
  const auto person = [&](int64_t id, int64_t image, eval::BoxXywh box, double area, int visible,
                          int num_keypoints, bool crowd) {
    eval::GtAnnotation a;
    a.id = id;
    a.image_id = image;
    a.category_id = 1;
    a.bbox = box;
    a.area = area;
    a.iscrowd = crowd;
    a.num_keypoints = num_keypoints;
    a.keypoints.assign(3 * kPoints, 0.0);
    for (int k = 0; k < visible; ++k) {
      a.keypoints[3 * k] = box.x + 3 + 2 * k;
      a.keypoints[3 * k + 1] = box.y + 5 + 5 * k;
      a.keypoints[3 * k + 2] = 2;
    }
    gt.add_annotation(a);
  };
  person(1, 1, {100, 100, 50, 100}, 3000, 5, 5, false);
  person(2, 1, {300, 100, 40, 80}, 2000, 0, 0, false);
  person(3, 2, {50, 50, 60, 120}, 4000, 0, 3, false);
  person(4, 2, {200, 200, 200, 200}, 30000, 0, 0, true);
  person(5, 3, {10, 10, 100, 150}, 12000, 17, 17, false);
  person(0, 3, {300, 300, 30, 60}, 1500, 17, 17, false);

  eval::CocoDetections dets;
  dets.keypoints_per_instance = kPoints;
  const auto add = [&](int64_t image, double score, eval::BoxXywh box,
                       const std::vector<double>& points) {
    if (with_box)
      dets.add(image, 1, box, score, points.data());
    else
      dets.add_keypoints_only(image, 1, score, points.data());
  };
  // Points of GT `ann` shifted by (dx, dy) * k, invisible ones placed at `fill`.
  const auto near = [&](size_t ann, double dx, double dy, double fill_x, double fill_y) {
    std::vector<double> p(3 * kPoints);
    for (int k = 0; k < kPoints; ++k) {
      const double* g = &gt.ann_keypoints[ann * 3 * kPoints + 3 * static_cast<size_t>(k)];
      const bool visible = g[2] > 0;
      p[3 * k] = visible ? g[0] + dx * (k % 3) : fill_x;
      p[3 * k + 1] = visible ? g[1] + dy * (k % 2) : fill_y;
      p[3 * k + 2] = 1;
    }
    return p;
  };
  add(1, 0.9, {98, 102, 52, 96}, near(0, 1.5, -2, 120, 150));
  add(1, 0.8, {290, 90, 60, 100}, near(1, 0, 0, 320, 140));  // inside GT 2's enlarged box
  add(1, 0.7, {0, 0, 150, 200}, near(0, 4, 3, 0, 0));        // (0, 0) for invisible points
  add(2, 0.6, {40, 40, 80, 140}, near(2, 0, 0, 70, 100));    // inside GT 3's enlarged box
  add(2, 0.6, {250, 250, 50, 50}, near(3, 0, 0, 260, 280));  // inside the crowd region
  add(3, 0.5, {12, 8, 98, 150}, near(4, 2, 3, 0, 0));
  add(3, 0.55, {300, 300, 30, 60}, near(5, 0, 0, 0, 0));  // exactly GT id 0
  add(3, 0.4, {15, 15, 90, 140}, near(4, -6, 8, 0, 0));

  EvalCase c;
  c.name = with_box ? "quirks_keypoints_box" : "quirks_keypoints_only";
  c.iou_type = eval::IouType::kKeypoints;
  c.gt_json = eval::ground_truth_to_json(gt);
  c.results_json = eval::results_to_json(dets, with_box);
  return c;
}

}  // namespace detrain::test
