// COCO results JSON, parsed in one pass into columns, and the JSON writers; see coco_json.h.
// Ground truth goes through coco/'s annotation reader. Deliberate differences from pycocotools:
// ids must be integral, a keypoint evaluation needs keypoints on every result (pycocotools only
// fails when such a result meets a GT), and NaN/Infinity literals are refused.
#include "eval/coco_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "coco/json_cursor.h"
#include "coco/json_fields.h"
#include "common/errors.h"
#include "eval/coco_parallel.h"

namespace detrain::eval {

using coco::read_box;
using coco::read_id;
using coco::read_number;
using coco::read_numbers;
using coco::Where;

coco::ReadOptions ground_truth_read_options() {
  coco::ReadOptions options;
  options.kind = "ground-truth";
  options.require_categories = true;
  return options;
}

CocoGroundTruth parse_ground_truth_json(coco::JsonInput text, const std::string& source) {
  return coco::read_annotations(text, source, ground_truth_read_options());
}

CocoGroundTruth load_ground_truth_json(const std::string& path) {
  return coco::load_annotations(path, ground_truth_read_options());
}

namespace {

// One result object's members, before pycocotools' branch rules are applied.
struct ResultRecord {
  size_t at = 0;
  bool has_image = false, has_category = false, has_score = false, has_bbox = false;
  bool has_segmentation = false, has_keypoints = false;
  int64_t image_id = 0, category_id = 0;
  double score = 0;
  BoxXywh box;
  size_t box_values = 0;
  std::vector<double> keypoints;
};

void read_result(coco::JsonCursor& cursor, size_t index, bool want_keypoints, ResultRecord& r) {
  const Where where{"result", index};
  r.at = cursor.offset();
  if (cursor.peek() != '{') cursor.fail_type(where.record() + " must be an object");
  r.has_image = r.has_category = r.has_score = r.has_bbox = false;
  r.has_segmentation = r.has_keypoints = false;
  r.box_values = 0;
  cursor.object([&](std::string_view key) {
    switch (key.size()) {
      case 4:
        if (key == "bbox") {
          r.box_values = read_box(cursor, where, r.box);
          r.has_bbox = r.box_values > 0;
          return;
        }
        break;
      case 5:
        if (key == "score") {
          r.score = read_number(cursor, where, "score");
          r.has_score = true;
          return;
        }
        break;
      case 8:
        if (key == "image_id") {
          r.image_id = read_id(cursor, where, "image_id");
          r.has_image = true;
          return;
        }
        break;
      case 9:
        if (key == "keypoints") {
          r.has_keypoints = true;
          if (want_keypoints)
            read_numbers(cursor, where, "keypoints", r.keypoints);
          else
            cursor.skip_value();
          return;
        }
        break;
      case 11:
        if (key == "category_id") {
          r.category_id = read_id(cursor, where, "category_id");
          r.has_category = true;
          return;
        }
        break;
      case 12:
        if (key == "segmentation") r.has_segmentation = true;
        break;
    }
    cursor.skip_value();
  });
}

// How every result is read; pycocotools' loadRes decides it from the first result alone.
struct ResultsLayout {
  bool boxes = true;  // false: keypoint-only results, boxes from the point extent
  bool want_keypoints = false;
  int keypoints_per_instance = 0;
};

[[noreturn]] void fail_missing(coco::JsonCursor& cursor, const ResultRecord& r, size_t index,
                               const char* field) {
  cursor.fail_content("result " + std::to_string(index) + " has no '" + field + "'", r.at);
}

ResultsLayout decide_layout(coco::JsonCursor& cursor, const ResultRecord& first, IouType iou_type) {
  ResultsLayout layout;
  if (first.has_bbox) {
    layout.boxes = true;
  } else if (first.has_segmentation) {
    cursor.fail_content(
        "the first result carries 'segmentation' and no 'bbox': segmentation results are not "
        "supported (use bbox or keypoints)",
        first.at);
  } else if (first.has_keypoints) {
    layout.boxes = false;
  } else {
    cursor.fail_content(
        "result 0 has neither 'bbox' nor 'keypoints' (the first result decides how all results "
        "are read)",
        first.at);
  }
  layout.want_keypoints = iou_type == IouType::kKeypoints || !layout.boxes;
  if (layout.want_keypoints) {
    if (!first.has_keypoints) fail_missing(cursor, first, 0, "keypoints");
    if (first.keypoints.empty() || first.keypoints.size() % 3 != 0)
      cursor.fail_content("result 0: 'keypoints' must hold 3 values (x, y, v) per point, found " +
                              std::to_string(first.keypoints.size()),
                          first.at);
    layout.keypoints_per_instance = static_cast<int>(first.keypoints.size() / 3);
  }
  return layout;
}

// Every column sized for `n` results (keypoints: n * 3K values).
void resize_columns(CocoDetections& d, size_t n) {
  const size_t k3 = 3 * static_cast<size_t>(d.keypoints_per_instance);
  d.image_id.resize(n);
  d.category_id.resize(n);
  d.score.resize(n);
  d.bbox.resize(n);
  d.area.resize(n);
  d.keypoints.resize(n * k3);
}

// Moves `count` results from position `from` down to `to` (to <= from).
void move_results(CocoDetections& d, size_t from, size_t to, size_t count) {
  if (from == to || count == 0) return;
  const auto move = [&](auto& column, size_t width) {
    std::copy(column.begin() + static_cast<std::ptrdiff_t>(from * width),
              column.begin() + static_cast<std::ptrdiff_t>((from + count) * width),
              column.begin() + static_cast<std::ptrdiff_t>(to * width));
  };
  move(d.image_id, 1);
  move(d.category_id, 1);
  move(d.score, 1);
  move(d.bbox, 1);
  move(d.area, 1);
  move(d.keypoints, 3 * static_cast<size_t>(d.keypoints_per_instance));
}

// Checks one result against the layout and writes it at position `at` of the sized columns,
// with the fields CocoDetections::add / add_keypoints_only would give it.
void store_result(coco::JsonCursor& cursor, const ResultRecord& r, size_t index,
                  const ResultsLayout& layout, CocoDetections& dets, size_t at) {
  if (!r.has_image) fail_missing(cursor, r, index, "image_id");
  if (!r.has_category) fail_missing(cursor, r, index, "category_id");
  if (!r.has_score) fail_missing(cursor, r, index, "score");
  const size_t k3 = 3 * static_cast<size_t>(layout.keypoints_per_instance);
  if (layout.want_keypoints) {
    if (!r.has_keypoints) fail_missing(cursor, r, index, "keypoints");
    if (r.keypoints.size() != k3)
      cursor.fail_content("result " + std::to_string(index) + " has " +
                              std::to_string(r.keypoints.size()) +
                              " keypoint values; the first result has " + std::to_string(k3),
                          r.at);
  }
  BoxXywh box = r.box;
  if (!layout.boxes) {
    box = keypoint_extent(r.keypoints.data(), layout.keypoints_per_instance);
  } else {
    if (!r.has_bbox) fail_missing(cursor, r, index, "bbox");  // or an empty one
    if (r.box_values != 4)
      cursor.fail_content("result " + std::to_string(index) + ": 'bbox' has " +
                              std::to_string(r.box_values) + " values, expected [x, y, w, h]",
                          r.at);
  }
  dets.image_id[at] = r.image_id;
  dets.category_id[at] = r.category_id;
  dets.score[at] = r.score;
  dets.bbox[at] = box;
  dets.area[at] = box.w * box.h;
  if (k3 > 0) std::copy(r.keypoints.begin(), r.keypoints.end(), dets.keypoints.begin() + at * k3);
}

enum class RunEnd { kArrayClosed, kReachedStop, kOvershot, kFull };

struct Run {
  RunEnd end = RunEnd::kArrayClosed;
  size_t count = 0;  // results read
};

// Reads results from the cursor (at an element's first byte) into positions `at`, `at` + 1, ...
// (at most `room` of them) until the list closes, or until the cursor lands on byte `stop` right
// after a top-level comma. Passing `stop` without landing on it means `stop` was no element
// boundary (it lay inside a string or a nested value).
Run read_result_run(coco::JsonCursor& cursor, size_t stop, size_t first_index,
                    const ResultsLayout& layout, CocoDetections& dets, size_t at, size_t room) {
  ResultRecord r;
  Run run;
  for (size_t index = first_index;; ++index) {
    read_result(cursor, index, layout.want_keypoints, r);  // a non-object fails here
    if (run.count == room) {
      run.end = RunEnd::kFull;
      return run;
    }
    store_result(cursor, r, index, layout, dets, at + run.count);
    ++run.count;
    if (!cursor.comma_or_close(']')) {
      run.end = RunEnd::kArrayClosed;
      return run;
    }
    cursor.peek();
    if (cursor.offset() == stop) {
      run.end = RunEnd::kReachedStop;
      return run;
    }
    if (cursor.offset() > stop) {
      run.end = RunEnd::kOvershot;
      return run;
    }
  }
}

// The first '{' at or after `from` that follows "}" "," (whitespace allowed): a likely element
// start of the top-level list, verified later by the preceding chunk's parse.
size_t next_element_candidate(coco::JsonInput input, size_t from) {
  const std::string_view text(input.data(), input.size());
  const auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  for (size_t p = text.find('}', from); p != std::string_view::npos; p = text.find('}', p + 1)) {
    size_t q = p + 1;
    while (q < text.size() && is_space(text[q])) ++q;
    if (q >= text.size() || text[q] != ',') continue;
    ++q;
    while (q < text.size() && is_space(text[q])) ++q;
    if (q < text.size() && text[q] == '{') return q;
  }
  return std::string::npos;
}

// An upper bound on the results that start in [begin, end): each is an object, with its own '{'.
// Counted 16 bytes at a time (std::count goes byte by byte), in 8-bit lanes summed every 255
// blocks before they can overflow.
size_t results_bound(coco::JsonInput text, size_t begin, size_t end) {
  const char* p = text.data() + begin;
  const char* const stop = text.data() + end;
  size_t total = 0;
#if defined(__SSE2__)
  const __m128i brace = _mm_set1_epi8('{');
  while (stop - p >= 16) {
    __m128i lanes = _mm_setzero_si128();
    for (int block = 0; block < 255 && stop - p >= 16; ++block, p += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(bytes, brace));  // a match is -1
    }
    const __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
    total += static_cast<size_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#endif
  for (; p < stop; ++p) total += *p == '{';
  return total;
}

// Parses the results from byte `begin` on (result 1 on; result 0 is in place) in chunks on
// `threads` threads, each chunk starting at a candidate element boundary and writing straight
// into its own range of the columns, which are then closed up. Returns the number of results,
// or 0 when a boundary proves false or any chunk fails: the caller then parses sequentially,
// which also gives errors their exact result index.
size_t read_results_parallel(coco::JsonInput text, const std::string& source, size_t begin,
                             const ResultsLayout& layout, int threads, CocoDetections& dets) {
  constexpr size_t kMinChunk = size_t{2} << 20;
  const size_t remaining = text.size() - begin;
  const size_t chunks = std::min<size_t>(static_cast<size_t>(threads) * 4, remaining / kMinChunk);
  if (threads < 2 || chunks < 2) return 0;
  std::vector<size_t> starts = {begin};
  for (size_t i = 1; i < chunks; ++i) {
    const size_t candidate = next_element_candidate(text, begin + i * (remaining / chunks));
    if (candidate == std::string::npos) break;
    if (candidate > starts.back()) starts.push_back(candidate);
  }
  const size_t n = starts.size();
  std::vector<size_t> room(n), offset(n + 1, 1), count(n, 0);
  parallel_chunks(n, 1, threads, [&](int, size_t first, size_t last) {
    for (size_t c = first; c < last; ++c)
      room[c] = results_bound(text, starts[c], c + 1 == n ? text.size() : starts[c + 1]);
  });
  for (size_t c = 0; c < n; ++c) offset[c + 1] = offset[c] + room[c];
  resize_columns(dets, offset[n]);
  std::vector<uint8_t> ok(n, 0);
  parallel_chunks(n, 1, threads, [&](int, size_t first, size_t last) {
    for (size_t c = first; c < last; ++c) {
      const bool is_last = c + 1 == n;
      try {
        coco::JsonCursor cursor(text, source, starts[c]);
        const Run run = read_result_run(cursor, is_last ? std::string::npos : starts[c + 1], 0,
                                        layout, dets, offset[c], room[c]);
        count[c] = run.count;
        if (is_last) {
          cursor.expect_end();
          ok[c] = run.end == RunEnd::kArrayClosed;
        } else {
          ok[c] = run.end == RunEnd::kReachedStop;
        }
      } catch (const DataError&) {
        ok[c] = 0;
      }
    }
  });
  for (uint8_t good : ok)
    if (!good) return 0;
  size_t total = 1;
  for (size_t c = 0; c < n; ++c) {
    move_results(dets, offset[c], total, count[c]);
    total += count[c];
  }
  return total;
}

}  // namespace

CocoDetections parse_results_json(coco::JsonInput text, const std::string& source, IouType iou_type,
                                  int threads) {
  coco::JsonCursor cursor(text, source);
  CocoDetections dets;
  dets.source = source;
  if (cursor.peek() != '[')
    cursor.fail_type(
        "results must be a JSON list of objects (pycocotools: 'results in not an array of "
        "objects')");
  cursor.expect('[', "'['");
  if (cursor.consume(']')) {
    cursor.expect_end();
    return dets;
  }
  ResultRecord first;
  read_result(cursor, 0, /*want_keypoints=*/true, first);
  const ResultsLayout layout = decide_layout(cursor, first, iou_type);
  dets.keypoints_per_instance = layout.keypoints_per_instance;
  resize_columns(dets, 1);
  store_result(cursor, first, 0, layout, dets, 0);
  size_t total = 1;
  if (cursor.comma_or_close(']')) {
    cursor.peek();
    total = read_results_parallel(text, source, cursor.offset(), layout, resolve_threads(threads),
                                  dets);
    if (total == 0) {
      // Sized once from the bound, so no column is ever reallocated (and copied) while growing.
      const size_t room = results_bound(text, cursor.offset(), text.size());
      resize_columns(dets, 1 + room);
      const Run run = read_result_run(cursor, std::string::npos, 1, layout, dets, 1, room);
      if (run.end == RunEnd::kFull)  // cannot happen: every result has its own '{'
        throw std::logic_error("coco results: more results than '{' bytes");
      total = 1 + run.count;
      cursor.expect_end();
    }
  } else {
    cursor.expect_end();
  }
  resize_columns(dets, total);
  return dets;
}

CocoDetections load_results_json(const std::string& path, IouType iou_type, int threads) {
  return parse_results_json(coco::JsonFile(path), path, iou_type, threads);
}

namespace {

void append_double(std::string& out, double value) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, result.ptr);
}

void append_int(std::string& out, int64_t value) {
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, result.ptr);
}

void append_box(std::string& out, const BoxXywh& b) {
  out += '[';
  append_double(out, b.x);
  out += ", ";
  append_double(out, b.y);
  out += ", ";
  append_double(out, b.w);
  out += ", ";
  append_double(out, b.h);
  out += ']';
}

void append_values(std::string& out, const double* values, size_t n) {
  out += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    append_double(out, values[i]);
  }
  out += ']';
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

std::string results_to_json(const CocoDetections& d, bool with_bbox) {
  std::string out;
  const size_t k3 = 3 * static_cast<size_t>(d.keypoints_per_instance);
  out.reserve(d.size() * (96 + 8 * k3) + 2);
  out += '[';
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) out += ", ";
    out += "{\"image_id\": ";
    append_int(out, d.image_id[i]);
    out += ", \"category_id\": ";
    append_int(out, d.category_id[i]);
    if (with_bbox) {
      out += ", \"bbox\": ";
      append_box(out, d.bbox[i]);
    }
    if (k3 > 0) {
      out += ", \"keypoints\": ";
      append_values(out, &d.keypoints[i * k3], k3);
    }
    out += ", \"score\": ";
    append_double(out, d.score[i]);
    out += '}';
  }
  out += "]\n";
  return out;
}

std::string ground_truth_to_json(const CocoGroundTruth& gt) {
  std::string out;
  out.reserve(gt.num_annotations() * 160 + gt.image_ids.size() * 16 + 1024);
  out += "{\"images\": [";
  for (size_t i = 0; i < gt.image_ids.size(); ++i) {
    if (i) out += ", ";
    out += "{\"id\": ";
    append_int(out, gt.image_ids[i]);
    out += '}';
  }
  out += "], \"categories\": [";
  for (size_t i = 0; i < gt.categories.size(); ++i) {
    if (i) out += ", ";
    out += "{\"id\": ";
    append_int(out, gt.categories[i].id);
    out += ", \"name\": ";
    append_json_string(out, gt.categories[i].name);
    out += '}';
  }
  out += "], \"annotations\": [";
  const size_t k3 = 3 * static_cast<size_t>(gt.keypoints_per_instance);
  for (size_t i = 0; i < gt.num_annotations(); ++i) {
    if (i) out += ", ";
    out += "{\"id\": ";
    append_int(out, gt.ann_id[i]);
    out += ", \"image_id\": ";
    append_int(out, gt.ann_image_id[i]);
    out += ", \"category_id\": ";
    append_int(out, gt.ann_category_id[i]);
    const uint8_t fields = gt.ann_fields[i];
    if (fields & kGtBbox) {
      out += ", \"bbox\": ";
      append_box(out, gt.ann_bbox[i]);
    }
    if (fields & kGtArea) {
      out += ", \"area\": ";
      append_double(out, gt.ann_area[i]);
    }
    if (fields & kGtIscrowd) {
      out += ", \"iscrowd\": ";
      out += gt.ann_iscrowd[i] ? '1' : '0';
    }
    if (k3 > 0 && (fields & kGtKeypoints)) {
      out += ", \"keypoints\": ";
      append_values(out, &gt.ann_keypoints[i * k3], k3);
    }
    if (fields & kGtNumKeypoints && (k3 > 0 || gt.ann_num_keypoints[i] != 0)) {
      out += ", \"num_keypoints\": ";
      append_int(out, gt.ann_num_keypoints[i]);
    }
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace detrain::eval
