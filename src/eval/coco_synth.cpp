// Synthetic COCO cases; see coco_synth.h. Every image draws from its own seeded stream, so the
// output does not depend on generation order. The maths uses only +, -, *, / and sqrt (exactly
// rounded by IEEE 754), never libm's exp/log/pow/cos, whose last bits vary between libm builds
// and CPU paths: the parity tests' inputs are the same bytes on every machine.
#include "eval/coco_synth.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/rng.h"

namespace detrain::eval {

namespace {

// COCO's 80 category ids (1..90 without 12, 26, 29, 30, 45, 66, 68, 69, 71, 83).
std::vector<int64_t> category_ids(int count) {
  std::vector<int64_t> ids;
  const int gaps[] = {12, 26, 29, 30, 45, 66, 68, 69, 71, 83};
  for (int64_t id = 1; static_cast<int>(ids.size()) < count; ++id) {
    if (id <= 90 && std::find(std::begin(gaps), std::end(gaps), id) != std::end(gaps)) continue;
    ids.push_back(id);
  }
  return ids;
}

// Category index with COCO-like frequencies: a quarter persons, the rest skewed to low indices.
int draw_category(Rng& rng, int count) {
  if (count <= 1 || rng.bernoulli(0.25)) return 0;
  const double u = rng.uniform();
  const int k = 1 + static_cast<int>(u * u * (count - 1));
  return std::min(k, count - 1);
}

// Approximately standard normal (Irwin-Hall: four uniforms, rescaled to unit variance).
double gaussian(Rng& rng) {
  const double sum = rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform();
  return (sum - 2.0) * 1.7320508075688772;
}

// Size in [lo, hi] skewed towards lo: ~40% small, ~21% medium, ~39% large for [6, 400] px.
double skewed_size(Rng& rng, double lo, double hi) {
  const double u = rng.uniform();
  return lo + (hi - lo) * u * u * u;
}

// Width/height ratio in [0.43, 2.33], 1 at the centre.
double aspect_ratio(Rng& rng) {
  const double t = rng.uniform(-1.0, 1.0);
  return (1 + 0.4 * t) / (1 - 0.4 * t);
}

// A count with a geometric tail and the given mean (>= `least`).
int geometric_count(Rng& rng, int least, double mean, int cap) {
  const double extra = std::max(mean - least, 0.0);
  const double p = extra / (1 + extra);
  int count = least;
  while (count < cap && rng.bernoulli(p)) ++count;
  return count;
}

double round_to(double value, int decimals) {
  if (decimals <= 0) return value;
  double scale = 1;
  for (int d = 0; d < decimals; ++d) scale *= 10;  // exact powers of ten up to 1e22
  return std::round(value * scale) / scale;
}

BoxXywh round_box(const BoxXywh& b, int decimals) {
  return {round_to(b.x, decimals), round_to(b.y, decimals), round_to(b.w, decimals),
          round_to(b.h, decimals)};
}

// K points inside the annotation's box with COCO's visibility flags (0 unlabelled, 1 occluded,
// 2 visible) and the matching num_keypoints.
void add_synthetic_keypoints(GtAnnotation& a, int k, Rng& rng) {
  a.keypoints.assign(3 * static_cast<size_t>(k), 0.0);
  a.num_keypoints = 0;
  if (rng.bernoulli(0.1)) return;  // nobody labelled this person's points
  for (int j = 0; j < k; ++j) {
    if (rng.bernoulli(0.35)) continue;
    a.keypoints[3 * j] = round_to(a.bbox.x + rng.uniform() * a.bbox.w, 2);
    a.keypoints[3 * j + 1] = round_to(a.bbox.y + rng.uniform() * a.bbox.h, 2);
    a.keypoints[3 * j + 2] = rng.bernoulli(0.2) ? 1 : 2;
    ++a.num_keypoints;
  }
}

struct ImageExtent {
  double width = 640, height = 480;
};

}  // namespace

CocoGroundTruth synth_ground_truth(const SynthGtOptions& o) {
  CocoGroundTruth gt;
  gt.source = "<synthetic ground truth>";
  const std::vector<int64_t> cats = category_ids(o.categories);
  for (size_t k = 0; k < cats.size(); ++k)
    gt.add_category(cats[k], k == 0 ? "person" : "class" + std::to_string(cats[k]));
  int64_t next_id = 1;
  for (int i = 0; i < o.images; ++i) {
    Rng rng(o.seed, {0x67u, static_cast<uint64_t>(i)});
    Rng kp_rng(o.seed, {0x6bu, static_cast<uint64_t>(i)});        // its own stream: boxes unchanged
    const int64_t image_id = 139 + 97 * static_cast<int64_t>(i);  // sparse ids, like COCO's
    gt.add_image(image_id);
    const bool portrait = rng.bernoulli(0.25);
    const double width = portrait ? 480 : 640, height = portrait ? 640 : 480;
    // Most images hold a few objects, some many (COCO's long tail).
    const int count = geometric_count(rng, 1, o.objects_per_image, 80);
    for (int j = 0; j < count; ++j) {
      GtAnnotation a;
      a.id = next_id++;
      a.image_id = image_id;
      a.category_id = cats[static_cast<size_t>(draw_category(rng, static_cast<int>(cats.size())))];
      a.iscrowd = rng.bernoulli(o.crowd_fraction);
      double side = skewed_size(rng, 6, 400);  // sqrt of the box area, px
      if (a.iscrowd) side = std::max(side, 120.0);
      const double aspect = aspect_ratio(rng);
      const double w = std::min(side * std::sqrt(aspect), width);
      const double h = std::min(side / std::sqrt(aspect), height);
      const double x = rng.uniform() * (width - w), y = rng.uniform() * (height - h);
      a.bbox = round_box({x, y, w, h}, 2);
      // Mask area is smaller than the box (COCO's area is the segmentation's).
      a.area = round_to(a.bbox.w * a.bbox.h * rng.uniform(0.45, 0.85), 2);
      if (o.keypoints > 0) add_synthetic_keypoints(a, o.keypoints, kp_rng);
      gt.add_annotation(a);
    }
  }
  return gt;
}

CocoDetections synth_detections(const CocoGroundTruth& gt, const SynthDetOptions& o) {
  const int num_kp = o.keypoints ? gt.keypoints_per_instance : 0;
  const size_t k3 = 3 * static_cast<size_t>(num_kp);
  CocoDetections dets;
  dets.source = "<synthetic results>";
  dets.keypoints_per_instance = num_kp;

  std::vector<int64_t> cats;
  for (const auto& c : gt.categories) cats.push_back(c.id);
  if (cats.empty()) cats.push_back(1);
  // Annotations per image, file order.
  std::vector<std::vector<size_t>> by_image(gt.image_ids.size());
  {
    std::vector<std::pair<int64_t, size_t>> image_pos;
    for (size_t i = 0; i < gt.image_ids.size(); ++i) image_pos.push_back({gt.image_ids[i], i});
    std::sort(image_pos.begin(), image_pos.end());
    for (size_t a = 0; a < gt.num_annotations(); ++a) {
      auto it = std::lower_bound(image_pos.begin(), image_pos.end(),
                                 std::make_pair(gt.ann_image_id[a], size_t{0}));
      if (it != image_pos.end() && it->first == gt.ann_image_id[a])
        by_image[it->second].push_back(a);
    }
  }
  const std::vector<double> sigmas = coco_person_sigmas();

  struct Draft {
    int64_t category;
    BoxXywh box;
    double score;
    std::vector<double> keypoints;
  };
  std::vector<Draft> drafts;
  for (size_t i = 0; i < gt.image_ids.size(); ++i) {
    Rng rng(o.seed, {0x64u, static_cast<uint64_t>(i)});
    drafts.clear();
    ImageExtent extent;
    for (size_t a : by_image[i]) {
      const BoxXywh& b = gt.ann_bbox[a];
      extent.width = std::max(extent.width, b.x + b.w);
      extent.height = std::max(extent.height, b.y + b.h);
    }
    const auto random_keypoints = [&](const BoxXywh& box) {
      std::vector<double> kps(k3);
      for (int k = 0; k < num_kp; ++k) {
        const bool at_origin = rng.bernoulli(0.03);  // detectors emit (0, 0) for missed points
        kps[3 * k] = at_origin ? 0 : round_to(box.x + rng.uniform() * box.w, 2);
        kps[3 * k + 1] = at_origin ? 0 : round_to(box.y + rng.uniform() * box.h, 2);
        kps[3 * k + 2] = round_to(rng.uniform(), 3);
      }
      return kps;
    };
    const auto add_hit = [&](size_t a, double quality) {
      const BoxXywh& g = gt.ann_bbox[a];
      const double jitter = 0.04 + 0.2 * (1 - quality);
      const auto scale = [&] { return std::clamp(1 + jitter * gaussian(rng), 0.3, 3.0); };
      BoxXywh box{g.x + g.w * jitter * gaussian(rng), g.y + g.h * jitter * gaussian(rng),
                  g.w * scale(), g.h * scale()};
      box = round_box(box, o.box_decimals);
      int64_t category = gt.ann_category_id[a];
      if (rng.bernoulli(o.wrong_class_rate))
        category = cats[static_cast<size_t>(draw_category(rng, static_cast<int>(cats.size())))];
      const double score = std::clamp(quality * rng.uniform(0.6, 1.0), 0.0, 1.0);
      std::vector<double> kps;
      if (num_kp > 0) {
        const bool has_gt_points = (gt.ann_fields[a] & kGtKeypoints) != 0;
        kps = random_keypoints(box);
        const double scale = std::sqrt(std::max(gt.ann_area[a], 1.0)) * (0.5 + 2 * (1 - quality));
        for (int k = 0; k < num_kp && has_gt_points; ++k) {
          const double* gk = &gt.ann_keypoints[a * k3 + 3 * static_cast<size_t>(k)];
          if (gk[2] <= 0) continue;
          const double sigma = sigmas[static_cast<size_t>(k) % sigmas.size()];
          kps[3 * k] = round_to(gk[0] + scale * sigma * gaussian(rng), 2);
          kps[3 * k + 1] = round_to(gk[1] + scale * sigma * gaussian(rng), 2);
        }
      }
      drafts.push_back({category, box, score, std::move(kps)});
    };
    for (size_t a : by_image[i]) {
      if (!rng.bernoulli(o.hit_rate)) continue;
      const double quality = rng.uniform(0.3, 1.0);
      add_hit(a, quality);
      if (rng.bernoulli(o.duplicate_rate)) add_hit(a, quality * 0.6);
    }
    const auto add_false_positive = [&] {
      const double side = skewed_size(rng, 8, 300);
      const double aspect = aspect_ratio(rng);
      const double w = std::min(side * std::sqrt(aspect), extent.width);
      const double h = std::min(side / std::sqrt(aspect), extent.height);
      BoxXywh box{rng.uniform() * (extent.width - w), rng.uniform() * (extent.height - h), w, h};
      box = round_box(box, o.box_decimals);
      const int64_t category =
          cats[static_cast<size_t>(draw_category(rng, static_cast<int>(cats.size())))];
      const double u = rng.uniform();
      drafts.push_back(
          {category, box, 0.6 * u * u, num_kp ? random_keypoints(box) : std::vector<double>{}});
    };
    if (o.dets_per_image > 0) {
      while (static_cast<int>(drafts.size()) < o.dets_per_image) add_false_positive();
      if (static_cast<int>(drafts.size()) > o.dets_per_image) {
        std::stable_sort(drafts.begin(), drafts.end(),
                         [](const Draft& a, const Draft& b) { return a.score > b.score; });
        drafts.resize(static_cast<size_t>(o.dets_per_image));
      }
    } else {
      const int fps = geometric_count(rng, 0, o.false_positives_per_image, 1000);
      for (int f = 0; f < fps; ++f) add_false_positive();
    }
    // Results files are not sorted by score: shuffle (Fisher-Yates on this image's stream).
    for (size_t j = drafts.size(); j > 1; --j) std::swap(drafts[j - 1], drafts[rng.below(j)]);
    for (Draft& d : drafts) {
      const double score = o.score_decimals > 0 ? round_to(d.score, o.score_decimals)
                                                : static_cast<double>(static_cast<float>(d.score));
      if (rng.bernoulli(o.unknown_category_rate)) d.category = 100000 + d.category;
      if (num_kp == 0)
        dets.add(gt.image_ids[i], d.category, d.box, score);
      else if (o.keypoints_with_box)
        dets.add(gt.image_ids[i], d.category, d.box, score, d.keypoints.data());
      else
        dets.add_keypoints_only(gt.image_ids[i], d.category, score, d.keypoints.data());
    }
  }
  return dets;
}

}  // namespace detrain::eval
