// Postprocessing of head outputs; see postprocess.h. The candidate filter runs where the
// predictions are (GPU or CPU); rows, sorting and NMS run on the CPU over raw float memory.
#include "infer/postprocess.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>

#include "common/errors.h"

namespace detrain::infer {

using eval::CocoRecord;
using eval::RecordRounding;
using geometry::ImageFrame;

namespace {

// One NMS candidate: an input row (anchor) with one class.
struct Candidate {
  int64_t row;
  int64_t cls;
  float score;
};

ImageDetections empty_detections(int64_t num_kpt_values) {
  ImageDetections d;
  d.boxes_xyxy = torch::zeros({0, 4}, torch::kFloat);
  d.scores = torch::zeros({0}, torch::kFloat);
  d.classes = torch::zeros({0}, torch::kLong);
  if (num_kpt_values > 0) d.keypoints = torch::zeros({0, num_kpt_values / 3, 3}, torch::kFloat);
  return d;
}

double round_to(double value, int decimals) {
  if (decimals < 0) return value;
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// Candidates of one image, rows: [n, 4 + nc + E] float (boxes still cx, cy, w, h).
std::vector<Candidate> candidates_of(const float* rows, int64_t n, int64_t width, int64_t nc,
                                     const NmsOptions& o) {
  std::vector<Candidate> out;
  // fp32 comparison, as a float tensor against a Python float compares in the reference.
  const auto conf = static_cast<float>(o.conf);
  for (int64_t r = 0; r < n; ++r) {
    const float* s = rows + r * width + 4;
    if (o.multi_label) {
      for (int64_t c = 0; c < nc; ++c)
        if (s[c] > conf) out.push_back({r, c, s[c]});
    } else {
      const int64_t best = std::max_element(s, s + nc) - s;
      if (s[best] > conf) out.push_back({r, best, s[best]});
    }
  }
  return out;
}

// The `limit` highest-scoring candidates, ties broken by their order (the first `limit` of a
// stable descending sort), in their original order; selection instead of a full sort.
std::vector<Candidate> keep_best(std::vector<Candidate> cand, int64_t limit) {
  if (limit < 0 || static_cast<int64_t>(cand.size()) <= limit) return cand;
  if (limit == 0) return {};
  std::vector<float> scores(cand.size());
  for (size_t i = 0; i < cand.size(); ++i) scores[i] = cand[i].score;
  std::nth_element(scores.begin(), scores.begin() + (limit - 1), scores.end(), std::greater<>());
  const float threshold = scores[static_cast<size_t>(limit - 1)];
  int64_t above = 0;
  for (const auto& c : cand) above += c.score > threshold;
  int64_t ties_left = limit - above;
  std::vector<Candidate> kept;
  kept.reserve(static_cast<size_t>(limit));
  for (const auto& c : cand)
    if (c.score > threshold || (c.score == threshold && ties_left-- > 0)) kept.push_back(c);
  return kept;
}

}  // namespace

NmsOptions nms_options(const config::ValOptions& val, bool predict) {
  NmsOptions o;
  o.conf = predict ? val.predict_conf : val.conf;
  o.iou = val.iou;
  o.max_det = val.max_det;
  o.multi_label = predict ? false : val.multi_label;  // the reference's predictor: best class
  o.agnostic = val.agnostic_nms;
  return o;
}

std::vector<int64_t> greedy_nms(const torch::Tensor& boxes_xyxy, const std::vector<int64_t>& groups,
                                double iou_threshold, int64_t max_keep) {
  TORCH_CHECK(boxes_xyxy.dim() == 2 && boxes_xyxy.size(1) == 4, "greedy_nms: boxes must be [N, 4]");
  TORCH_CHECK(boxes_xyxy.device().is_cpu() && boxes_xyxy.scalar_type() == torch::kFloat &&
                  boxes_xyxy.is_contiguous(),
              "greedy_nms: boxes must be a contiguous float CPU tensor");
  const int64_t n = boxes_xyxy.size(0);
  TORCH_CHECK(groups.empty() || static_cast<int64_t>(groups.size()) == n,
              "greedy_nms: one group id per box");
  const float* b = boxes_xyxy.data_ptr<float>();
  std::vector<float> area(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    area[i] = (b[i * 4 + 2] - b[i * 4 + 0]) * (b[i * 4 + 3] - b[i * 4 + 1]);

  // Members of each group in score order, and each box's position in its group.
  std::vector<std::vector<int64_t>> members;
  std::vector<size_t> group_of(static_cast<size_t>(n), 0), position(static_cast<size_t>(n), 0);
  if (groups.empty()) {
    members.emplace_back(static_cast<size_t>(n));
    std::iota(members[0].begin(), members[0].end(), 0);
    std::iota(position.begin(), position.end(), 0);
  } else {
    std::vector<int64_t> ids = groups;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    members.resize(ids.size());
    for (int64_t i = 0; i < n; ++i) {
      const size_t g = std::lower_bound(ids.begin(), ids.end(), groups[i]) - ids.begin();
      group_of[i] = g;
      position[i] = members[g].size();
      members[g].push_back(i);
    }
  }

  std::vector<char> suppressed(static_cast<size_t>(n), 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (suppressed[i]) continue;
    keep.push_back(i);
    if (max_keep > 0 && static_cast<int64_t>(keep.size()) >= max_keep) break;
    const float ix1 = b[i * 4], iy1 = b[i * 4 + 1], ix2 = b[i * 4 + 2], iy2 = b[i * 4 + 3];
    const float iarea = area[i];
    const auto& list = members[group_of[i]];
    for (size_t p = position[i] + 1; p < list.size(); ++p) {
      const int64_t j = list[p];
      if (suppressed[j]) continue;
      const float w = std::max(0.0f, std::min(ix2, b[j * 4 + 2]) - std::max(ix1, b[j * 4]));
      const float h = std::max(0.0f, std::min(iy2, b[j * 4 + 3]) - std::max(iy1, b[j * 4 + 1]));
      const float inter = w * h;
      const float ovr = inter / (iarea + area[j] - inter);
      if (static_cast<double>(ovr) > iou_threshold) suppressed[j] = 1;
    }
  }
  return keep;
}

std::vector<ImageDetections> nms_postprocess(const torch::Tensor& decoded, int64_t nc,
                                             const NmsOptions& o) {
  TORCH_CHECK(decoded.dim() == 3 && decoded.size(1) >= 4 + nc && nc > 0,
              "nms_postprocess: decoded must be [B, 4 + nc + E, A] with nc = ", nc);
  const int64_t width = decoded.size(1);
  const int64_t extra = width - 4 - nc;  // K * 3 keypoint values
  TORCH_CHECK(extra % 3 == 0, "nms_postprocess: keypoint values must come in (x, y, v) triples");
  torch::NoGradGuard no_grad;
  const torch::Tensor x = decoded.detach().transpose(1, 2);           // [B, A, C]
  const torch::Tensor best = std::get<0>(x.narrow(2, 4, nc).max(2));  // [B, A]
  const torch::Tensor is_candidate = best > o.conf;                   // [B, A]

  std::vector<ImageDetections> out;
  for (int64_t img = 0; img < x.size(0); ++img) {
    const torch::Tensor rows =
        x[img].index({is_candidate[img]}).to(torch::kCPU, torch::kFloat).contiguous();  // [n, C]
    const float* r = rows.data_ptr<float>();
    std::vector<Candidate> cand =
        keep_best(candidates_of(r, rows.size(0), width, nc, o), o.max_nms);
    // Stable: ties keep (anchor, class) order, so results do not depend on the sort.
    std::stable_sort(cand.begin(), cand.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    const int64_t n = static_cast<int64_t>(cand.size());
    if (n == 0) {
      out.push_back(empty_detections(extra));
      continue;
    }

    // xywh -> xyxy as the reference computes it in fp32, then the class offset.
    torch::Tensor boxes = torch::empty({n, 4}, torch::kFloat);   // [n, 4]
    torch::Tensor offset = torch::empty({n, 4}, torch::kFloat);  // [n, 4]
    float* pb = boxes.data_ptr<float>();
    float* po = offset.data_ptr<float>();
    float lo = INFINITY, hi = -INFINITY;
    const float max_wh = static_cast<float>(o.max_wh);
    std::vector<int64_t> groups(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float* row = r + cand[i].row * width;
      const float dw = row[2] / 2, dh = row[3] / 2;
      pb[i * 4 + 0] = row[0] - dw;
      pb[i * 4 + 1] = row[1] - dh;
      pb[i * 4 + 2] = row[0] + dw;
      pb[i * 4 + 3] = row[1] + dh;
      const float shift = o.agnostic ? 0.0f : static_cast<float>(cand[i].cls) * max_wh;
      for (int k = 0; k < 4; ++k) {
        po[i * 4 + k] = pb[i * 4 + k] + shift;
        lo = std::min(lo, pb[i * 4 + k]);
        hi = std::max(hi, pb[i * 4 + k]);
      }
      groups[i] = cand[i].cls;
    }
    // Offset boxes of different classes cannot overlap when every box fits in max_wh; only
    // then is comparing within a class the same as comparing all offset boxes.
    const bool grouped = !o.agnostic && hi - lo <= max_wh;
    const std::vector<int64_t> keep =
        greedy_nms(offset, grouped ? groups : std::vector<int64_t>{}, o.iou, o.max_det);

    const int64_t m = static_cast<int64_t>(keep.size());
    ImageDetections d;
    d.boxes_xyxy = torch::empty({m, 4}, torch::kFloat);                           // [m, 4]
    d.scores = torch::empty({m}, torch::kFloat);                                  // [m]
    d.classes = torch::empty({m}, torch::kLong);                                  // [m]
    if (extra > 0) d.keypoints = torch::empty({m, extra / 3, 3}, torch::kFloat);  // [m, K, 3]
    for (int64_t k = 0; k < m; ++k) {
      const Candidate& c = cand[keep[k]];
      std::copy_n(pb + keep[k] * 4, 4, d.boxes_xyxy.data_ptr<float>() + k * 4);
      d.scores.data_ptr<float>()[k] = c.score;
      d.classes.data_ptr<int64_t>()[k] = c.cls;
      if (extra > 0)
        std::copy_n(r + c.row * width + 4 + nc, extra, d.keypoints.data_ptr<float>() + k * extra);
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<ImageDetections> end2end_postprocess(const torch::Tensor& detections, double conf,
                                                 int64_t max_det) {
  TORCH_CHECK(detections.dim() == 3 && detections.size(2) >= 6,
              "end2end_postprocess: detections must be [B, k, 6 + E]");
  const int64_t extra = detections.size(2) - 6;
  TORCH_CHECK(extra % 3 == 0, "end2end_postprocess: keypoint values must come in triples");
  torch::NoGradGuard no_grad;
  const torch::Tensor all = detections.detach().to(torch::kCPU, torch::kFloat);  // [B, k, 6 + E]
  std::vector<ImageDetections> out;
  for (int64_t img = 0; img < all.size(0); ++img) {
    torch::Tensor rows = all[img].index({all[img].select(1, 4) > conf});  // [n, 6 + E]
    if (max_det > 0 && rows.size(0) > max_det) rows = rows.narrow(0, 0, max_det);
    if (rows.size(0) == 0) {
      out.push_back(empty_detections(extra));
      continue;
    }
    ImageDetections d;
    d.boxes_xyxy = rows.narrow(1, 0, 4).contiguous();
    d.scores = rows.select(1, 4).contiguous();
    d.classes = rows.select(1, 5).round().to(torch::kLong);
    if (extra > 0) d.keypoints = rows.narrow(1, 6, extra).reshape({-1, extra / 3, 3}).contiguous();
    out.push_back(std::move(d));
  }
  return out;
}

ImageDetections to_original_pixels(const ImageDetections& det, const ImageFrame& f) {
  TORCH_CHECK(f.ratio_x > 0 && f.ratio_y > 0, "to_original_pixels: ratios must be positive");
  torch::NoGradGuard no_grad;
  auto unmap = [&](const torch::Tensor& xy) {                       // [..., 2] -> [..., 2]
    torch::Tensor x = (xy.select(-1, 0) - f.pad_left) / f.ratio_x;  // [...]
    torch::Tensor y = (xy.select(-1, 1) - f.pad_top) / f.ratio_y;   // [...]
    x = x.clamp(0.0, static_cast<double>(f.orig_width));
    y = y.clamp(0.0, static_cast<double>(f.orig_height));
    return torch::stack({x, y}, -1);
  };
  ImageDetections out;
  const torch::Tensor boxes = det.boxes_xyxy.to(torch::kCPU, torch::kFloat);  // [N, 4]
  out.boxes_xyxy = unmap(boxes.reshape({-1, 2, 2})).reshape({-1, 4}).contiguous();
  out.scores = det.scores.to(torch::kCPU, torch::kFloat).contiguous();
  out.classes = det.classes.to(torch::kCPU, torch::kLong).contiguous();
  if (det.keypoints.defined()) {
    const torch::Tensor k = det.keypoints.to(torch::kCPU, torch::kFloat);  // [N, K, 3]
    out.keypoints = torch::cat({unmap(k.narrow(2, 0, 2)), k.narrow(2, 2, 1)}, 2).contiguous();
  }
  return out;
}

DetectionArrays to_arrays(const ImageDetections& det) {
  DetectionArrays out;
  const int64_t n = det.size();
  if (n == 0) return out;
  const torch::Tensor boxes = det.boxes_xyxy.to(torch::kCPU, torch::kFloat).contiguous();  // [N, 4]
  const torch::Tensor scores = det.scores.to(torch::kCPU, torch::kFloat).contiguous();     // [N]
  const torch::Tensor classes = det.classes.to(torch::kCPU, torch::kLong).contiguous();    // [N]
  out.boxes_xyxy.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(boxes.data_ptr<float>() + i * 4, 4, out.boxes_xyxy[static_cast<size_t>(i)].data());
  out.scores.assign(scores.data_ptr<float>(), scores.data_ptr<float>() + n);
  out.classes.assign(classes.data_ptr<int64_t>(), classes.data_ptr<int64_t>() + n);
  if (det.keypoints.defined()) {
    const torch::Tensor k = det.keypoints.to(torch::kCPU, torch::kFloat).contiguous();  // [N, K, 3]
    out.kpt_count = k.size(1);
    out.keypoints.assign(k.data_ptr<float>(), k.data_ptr<float>() + k.numel());
  }
  return out;
}

std::vector<CocoRecord> to_coco_records(const ImageDetections& det, int64_t image_id,
                                        const std::vector<int64_t>& coco_ids,
                                        const RecordRounding& rounding) {
  const DetectionArrays d = to_arrays(det);
  std::vector<CocoRecord> out;
  out.reserve(d.size());
  const size_t kvals = static_cast<size_t>(d.kpt_count) * 3;
  for (size_t i = 0; i < d.size(); ++i) {
    const int64_t c = d.classes[i];
    if (c < 0 || c >= static_cast<int64_t>(coco_ids.size()))
      throw DataError("detection class " + std::to_string(c) + " has no COCO category id (the " +
                      "data set maps " + std::to_string(coco_ids.size()) +
                      " classes); model.nc and the data set disagree");
    CocoRecord rec;
    rec.image_id = image_id;
    rec.category_id = coco_ids[static_cast<size_t>(c)];
    const auto& b = d.boxes_xyxy[i];
    const double x1 = b[0], y1 = b[1], x2 = b[2], y2 = b[3];
    rec.bbox = {round_to(x1, rounding.box_decimals), round_to(y1, rounding.box_decimals),
                round_to(x2 - x1, rounding.box_decimals), round_to(y2 - y1, rounding.box_decimals)};
    rec.score = round_to(d.scores[i], rounding.score_decimals);
    if (kvals > 0) {
      const float* k = d.keypoints.data() + i * kvals;
      rec.keypoints.resize(kvals);
      for (size_t j = 0; j < kvals; j += 3) {
        rec.keypoints[j] = round_to(k[j], rounding.keypoint_decimals);
        rec.keypoints[j + 1] = round_to(k[j + 1], rounding.keypoint_decimals);
        rec.keypoints[j + 2] = round_to(k[j + 2], rounding.score_decimals);
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace detrain::infer
