// Split census; see split_stats.h.
#include "data/split_stats.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

namespace detrain::data {

namespace {

constexpr int kSizeBins = 7;
constexpr double kBinEdges[kSizeBins - 1] = {8, 16, 32, 64, 128, 256};
constexpr const char* kBinNames[kSizeBins] = {"< 8",    "8-16",    "16-32", "32-64",
                                              "64-128", "128-256", ">= 256"};

}  // namespace

SplitStats compute_stats(const Records& records, const DatasetInfo& info,
                         const ImageCheck& decodes) {
  SplitStats s;
  s.records = records.stats;
  s.instances_per_class.assign(size_t(info.nc()), 0);
  s.images_per_class.assign(size_t(info.nc()), 0);
  s.size_histogram.assign(kSizeBins, 0);
  if (decodes) s.corrupt_images = 0;
  const size_t k3 = size_t(info.kpt_count) * 3;
  for (const auto& r : records.images) {
    std::vector<uint8_t> present(size_t(info.nc()), 0);
    for (size_t i = 0; i < r.boxes_xyxy_px.size(); ++i) {
      const auto& b = r.boxes_xyxy_px[i];
      const auto c = size_t(r.classes[i]);
      ++s.instances_per_class[c];
      present[c] = 1;
      const double side = std::sqrt(double(b[2] - b[0]) * double(b[3] - b[1]));
      s.size_histogram[size_t(std::upper_bound(kBinEdges, kBinEdges + kSizeBins - 1, side) -
                              kBinEdges)]++;
      if (k3 == 0) continue;
      int64_t labelled = 0;
      for (size_t j = 2; j < k3; j += 3) labelled += r.keypoints_px[i * k3 + j] > 0;
      s.labelled_keypoints += labelled;
      s.keypoint_instances += labelled > 0;
    }
    for (size_t c = 0; c < present.size(); ++c) s.images_per_class[c] += present[c];
    if (decodes && !decodes(r.file)) {
      ++s.corrupt_images;
      if (s.corrupt_examples.size() < 5) s.corrupt_examples.push_back(r.file);
    }
  }
  return s;
}

std::string format_stats(const SplitStats& s, const DatasetInfo& info, const std::string& split) {
  const auto& r = s.records;
  std::string out = fmt::format("{} ({}): {} images, {} backgrounds (no targets), {} annotations\n",
                                info.yaml_path, split, r.images, r.backgrounds, r.annotations);
  out += fmt::format("  {:<4} {:<16} {:>6} {:>10} {:>7}\n", "idx", "class", "id", "instances",
                     "images");
  for (size_t c = 0; c < s.instances_per_class.size(); ++c)
    out += fmt::format("  {:<4} {:<16} {:>6} {:>10} {:>7}\n", c, info.names[c], info.coco_ids[c],
                       s.instances_per_class[c], s.images_per_class[c]);
  out += "  box size (sqrt(area), original px):";
  for (int i = 0; i < kSizeBins; ++i)
    out += fmt::format(" {} {}{}", kBinNames[i], s.size_histogram[size_t(i)],
                       i + 1 < kSizeBins ? "," : "\n");
  if (info.has_keypoints())
    out += fmt::format("  keypoints: {} instances with labelled keypoints, {} labelled points\n",
                       s.keypoint_instances, s.labelled_keypoints);
  out += fmt::format(
      "  problems: {} crowd regions (not targets), {} boxes clipped to their image, {} empty "
      "boxes dropped, {} images missing, {} filtered by keep_images",
      r.crowd, r.clipped, r.dropped_empty, r.images_missing, r.images_filtered);
  out += s.corrupt_images >= 0 ? fmt::format(", {} corrupt images\n", s.corrupt_images)
                               : ", images not decoded (--check-images decodes them)\n";
  for (const auto& f : s.corrupt_examples) out += "    corrupt: " + f + "\n";
  for (const auto& f : r.missing_examples) out += "    missing: " + f + "\n";
  out += fmt::format("  read in {:.2f} s{}\n", r.read_seconds,
                     r.records_cache.empty() ? "" : " (records cache: " + r.records_cache + ")");
  return out;
}

}  // namespace detrain::data
