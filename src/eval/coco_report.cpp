// Evaluation reports; see coco_report.h.
#include "eval/coco_report.h"

#include <charconv>
#include <cstdio>
#include <unordered_map>

namespace detrain::eval {

std::string shortest_double(double value) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  std::string text(buf, result.ptr);
  // Keep it recognisably a float in JSON ("1.0", not "1"), as Python's json writes it.
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

int64_t process_peak_rss_bytes() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (!status) return 0;
  char line[256];
  long long kib = 0;
  while (std::fgets(line, sizeof line, status))
    if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
  std::fclose(status);
  return static_cast<int64_t>(kib) * 1024;
}

namespace {

void append_members(std::string& out, const std::vector<std::pair<std::string, double>>& members) {
  for (size_t i = 0; i < members.size(); ++i) {
    if (i) out += ", ";
    out += "\"" + members[i].first + "\": " + shortest_double(members[i].second);
  }
}

}  // namespace

std::string stats_json(const CocoEvalResult& r,
                       const std::vector<std::pair<std::string, double>>& timing_s,
                       const std::vector<std::pair<std::string, double>>& process) {
  std::string out = "{\n  \"iou_type\": \"";
  out += iou_type_name(r.params.iou_type);
  out += "\",\n  \"stats\": [";
  for (size_t i = 0; i < r.stats.size(); ++i) {
    if (i) out += ", ";
    out += shortest_double(r.stats[i]);
  }
  out += "],\n  \"per_category_ap\": {";
  for (size_t k = 0; k < r.category_ids.size(); ++k) {
    if (k) out += ", ";
    out += "\"" + std::to_string(r.category_ids[k]) + "\": ";
    out += shortest_double(r.category_ap(static_cast<int>(k)));
  }
  out += "},\n  \"timing_s\": {";
  append_members(out, timing_s);
  if (!process.empty()) {
    out += "},\n  \"process\": {";
    append_members(out, process);
  }
  const CocoEvalCounts& c = r.counts;
  out += "},\n  \"counts\": {\"images\": " + std::to_string(c.images) +
         ", \"categories\": " + std::to_string(c.categories) +
         ", \"gt_annotations\": " + std::to_string(c.gt_annotations) +
         ", \"detections\": " + std::to_string(c.detections) +
         ", \"dropped_unknown_category\": " + std::to_string(c.dropped_unknown_category) + "}\n}\n";
  return out;
}

std::string per_category_table(const CocoEvalResult& r, const CocoGroundTruth& gt) {
  std::unordered_map<int64_t, std::string> names;
  for (const auto& c : gt.categories) names.emplace(c.id, c.name);
  size_t name_width = 8;
  for (int64_t id : r.category_ids) {
    auto it = names.find(id);
    if (it != names.end()) name_width = std::max(name_width, it->second.size());
  }
  name_width = std::min<size_t>(name_width, 32);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-*s %6s %7s %7s %7s %7s\n", static_cast<int>(name_width),
                "category", "id", "GT", "AP", "AP50", "AP75");
  out += line;
  const auto cell = [](double v) {
    char buf[16];
    if (v < 0)
      std::snprintf(buf, sizeof buf, "%7s", "-");
    else
      std::snprintf(buf, sizeof buf, "%7.3f", v);
    return std::string(buf);
  };
  for (size_t k = 0; k < r.category_ids.size(); ++k) {
    const int64_t id = r.category_ids[k];
    auto it = names.find(id);
    std::string name = id < 0 ? "(all)" : it != names.end() ? it->second : "";
    if (name.size() > name_width) name.resize(name_width);
    const int ki = static_cast<int>(k);
    std::snprintf(line, sizeof line, "%-*s %6lld %7lld", static_cast<int>(name_width), name.c_str(),
                  static_cast<long long>(id),
                  static_cast<long long>(k < r.gt_per_category.size() ? r.gt_per_category[k] : 0));
    out += line;
    out += " " + cell(r.category_ap(ki)) + " " + cell(r.category_ap(ki, 0.5)) + " " +
           cell(r.category_ap(ki, 0.75)) + "\n";
  }
  return out;
}

}  // namespace detrain::eval
