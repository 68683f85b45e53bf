#include "data/yolo_labels.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "common/errors.h"

namespace detrain::data::yolo {
namespace {

namespace fs = std::filesystem;

// The reference's tolerances (verify_image_label): coordinates up to 1.01 and values down to
// -0.01 (the latter only while no width or height is negative) are accepted as rounding noise.
constexpr double kMaxCoordinate = 1.01;
constexpr double kMinValue = -0.01;

struct RawRow {
  int line = 0;
  std::vector<std::string> tokens;
};

// Decodes one code point the way Python's strict UTF-8 codec accepts it (no overlongs, no
// surrogates, nothing above U+10FFFF). Returns its length in bytes, 0 when invalid.
size_t decode_utf8(std::string_view s, size_t i, char32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k, unsigned lo, unsigned hi) {
    return i + k < s.size() && b(k) >= lo && b(k) <= hi;
  };
  const unsigned c0 = b(0);
  if (c0 < 0x80) {
    cp = c0;
    return 1;
  }
  if (c0 >= 0xC2 && c0 <= 0xDF && cont(1, 0x80, 0xBF)) {
    cp = ((c0 & 0x1F) << 6) | (b(1) & 0x3F);
    return 2;
  }
  if (c0 >= 0xE0 && c0 <= 0xEF) {
    const unsigned lo = c0 == 0xE0 ? 0xA0 : 0x80, hi = c0 == 0xED ? 0x9F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF)) return 0;
    cp = ((c0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return 3;
  }
  if (c0 >= 0xF0 && c0 <= 0xF4) {
    const unsigned lo = c0 == 0xF0 ? 0x90 : 0x80, hi = c0 == 0xF4 ? 0x8F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF) || !cont(3, 0x80, 0xBF)) return 0;
    cp = ((c0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    return 4;
  }
  return 0;
}

// str.splitlines() boundaries.
bool is_line_break(char32_t c) {
  return (c >= 0x0A && c <= 0x0D) || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 ||
         c == 0x2029;
}

// str.isspace(), which str.split() splits on.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Rows of tokens with their 1-based line numbers, blank lines dropped. Returns the byte offset
// of the first invalid UTF-8 sequence, or npos.
size_t split_rows(std::string_view text, std::vector<RawRow>& rows) {
  RawRow row;
  row.line = 1;
  std::string token;
  const auto end_token = [&] {
    if (!token.empty()) row.tokens.push_back(std::move(token));
    token.clear();
  };
  const auto end_line = [&] {
    end_token();
    if (!row.tokens.empty()) rows.push_back(std::move(row));
    row.tokens.clear();
    ++row.line;
  };
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const size_t n = decode_utf8(text, i, cp);
    if (n == 0) return i;
    if (is_line_break(cp)) {
      if (cp == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_line();
    } else if (is_space(cp)) {
      end_token();
    } else {
      token.append(text.substr(i, n));
    }
    i += n;
  }
  end_line();
  return std::string_view::npos;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// Digits with single underscores between them (Python's digitpart), appended to `out`.
bool digit_part(std::string_view s, size_t& i, std::string& out) {
  if (i >= s.size() || !is_digit(s[i])) return false;
  out += s[i++];
  while (i < s.size()) {
    if (is_digit(s[i])) {
      out += s[i++];
    } else if (s[i] == '_' && i + 1 < s.size() && is_digit(s[i + 1])) {
      ++i;
    } else {
      break;
    }
  }
  return true;
}

// Python's float() on an ASCII token (numpy's str -> float32 goes through it). Unicode digits,
// which Python also accepts, are refused.
bool parse_python_float(std::string_view s, double& value) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  const std::string_view rest = s.substr(i);
  if (iequals(rest, "inf") || iequals(rest, "infinity")) {
    value = negative ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (iequals(rest, "nan")) {
    value = std::nan("");
    return true;
  }
  std::string clean;
  const bool has_int = digit_part(s, i, clean);
  const long int_significant =
      static_cast<long>(clean.size() - std::min(clean.find_first_not_of('0'), clean.size()));
  long lead_frac_zeros = 0;
  bool has_frac = false;
  if (i < s.size() && s[i] == '.') {
    clean += s[i++];
    const size_t start = clean.size();
    has_frac = digit_part(s, i, clean);
    if (has_frac) {
      lead_frac_zeros =
          static_cast<long>(std::min(clean.find_first_not_of('0', start), clean.size()) - start);
    }
  }
  if (!has_int && !has_frac) return false;
  long exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean += s[i++];
    std::string exp_digits;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) exp_digits += s[i++];
    const size_t sign_len = exp_digits.size();
    if (!digit_part(s, i, exp_digits)) return false;
    clean += exp_digits;
    // Only the sign of the magnitude below matters; clamping keeps stol in range.
    std::string_view digits = std::string_view(exp_digits).substr(sign_len);
    digits.remove_prefix(std::min(digits.find_first_not_of('0'), digits.size()));
    exponent = digits.size() > 7 ? 100000000 : digits.empty() ? 0 : std::stol(std::string(digits));
    if (sign_len && exp_digits[0] == '-') exponent = -exponent;
  }
  if (i != s.size()) return false;
  const auto r = std::from_chars(clean.data(), clean.data() + clean.size(), value);
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow or underflow: which one follows from where the first significant digit sits.
    const long magnitude = exponent + (int_significant > 0 ? int_significant : -lead_frac_zeros);
    value = magnitude > 0 ? HUGE_VAL : 0.0;
  } else if (r.ec != std::errc() || r.ptr != clean.data() + clean.size()) {
    return false;
  }
  if (negative) value = -value;
  return true;
}

float to_float32(double d) {
  // Beyond FLT_MAX plus half an ulp, round-to-nearest gives infinity (as numpy's cast does).
  if (std::isfinite(d) && std::fabs(d) >= 0x1.ffffffp127) return d > 0 ? HUGE_VALF : -HUGE_VALF;
  return static_cast<float>(d);
}

std::string number_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  return std::string(buf, r.ptr);
}

// A token fit for a one-line message: cut on a UTF-8 boundary, control bytes shown as '?'.
std::string quoted_token(const std::string& t) {
  size_t end = std::min<size_t>(t.size(), 40);
  while (end < t.size() && end > 0 && (static_cast<unsigned char>(t[end]) & 0xC0) == 0x80) --end;
  std::string shown = t.substr(0, end);
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  }
  return "'" + shown + (end < t.size() ? "...'" : "'");
}

class Parser {
 public:
  Parser(const std::string& source, int64_t nc, int64_t kpt_count, int64_t kpt_dims)
      : source_(source), nc_(nc), kpt_count_(kpt_count), kpt_dims_(kpt_dims) {}

  LabelFile parse(const std::string& text, bool boxes_only);

 private:
  bool fail(int line, const std::string& what) {
    out_.corrupt = source_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what;
    return false;
  }
  bool number(const RawRow& row, size_t column, float& value);
  bool read_polygons(const std::vector<RawRow>& raw);
  bool read_rows(const std::vector<RawRow>& raw, size_t columns);
  bool check_values();
  void remove_duplicates();

  const std::string& source_;
  const int64_t nc_, kpt_count_, kpt_dims_;
  bool pose_ = false;
  LabelFile out_;
  std::vector<int> lines_;                        // per row
  std::vector<std::vector<float>> values_;        // per row: class, box, keypoints
  std::vector<std::vector<float>> polygon_keys_;  // per row in polygon files: class, points
};

bool Parser::number(const RawRow& row, size_t column, float& value) {
  double d = 0;
  if (!parse_python_float(row.tokens[column], d)) {
    return fail(row.line, "column " + std::to_string(column + 1) + " " +
                              quoted_token(row.tokens[column]) +
                              " is not a number; rows hold numbers separated by spaces");
  }
  value = to_float32(d);
  // The reference lets +inf through in pose boxes and visibilities; no label means that.
  if (!std::isfinite(value)) {
    return fail(row.line, "column " + std::to_string(column + 1) + " " +
                              quoted_token(row.tokens[column]) +
                              " is not a finite number (float32); fix the row");
  }
  return true;
}

bool Parser::read_polygons(const std::vector<RawRow>& raw) {
  for (const RawRow& row : raw) {
    if (row.tokens.size() == 5) {
      return fail(row.line,
                  "a box row (5 columns) in a file of polygon rows (more than 6 columns); write "
                  "every object of an image in the same form");
    }
  }
  for (const RawRow& row : raw) {
    std::vector<float> key(row.tokens.size());
    for (size_t c = 0; c < row.tokens.size(); ++c) {
      if (!number(row, c, key[c])) return false;
    }
    const size_t coords = row.tokens.size() - 1;
    if (coords == 0 || coords % 2 != 0) {
      return fail(row.line, std::to_string(coords) +
                                " polygon coordinates; polygon rows are `class x1 y1 x2 y2 ...` "
                                "with an even number of coordinates");
    }
    float x1 = key[1], y1 = key[2], x2 = key[1], y2 = key[2];
    for (size_t c = 1; c + 1 < key.size(); c += 2) {
      x1 = std::min(x1, key[c]);
      x2 = std::max(x2, key[c]);
      y1 = std::min(y1, key[c + 1]);
      y2 = std::max(y2, key[c + 1]);
    }
    // float32 arithmetic, as segments2boxes + xyxy2xywh compute it.
    values_.push_back({key[0], (x1 + x2) / 2.0f, (y1 + y2) / 2.0f, x2 - x1, y2 - y1});
    lines_.push_back(row.line);
    polygon_keys_.push_back(std::move(key));
  }
  return true;
}

bool Parser::read_rows(const std::vector<RawRow>& raw, size_t columns) {
  const std::string layout =
      pose_ ? "class cx cy w h, then " + std::to_string(kpt_count_) + " keypoints of " +
                  (kpt_dims_ == 3 ? "x y visibility" : "x y") + " (kpt_shape [" +
                  std::to_string(kpt_count_) + ", " + std::to_string(kpt_dims_) + "])"
            : "class cx cy w h";
  for (const RawRow& row : raw) {
    if (row.tokens.size() != columns) {
      return fail(row.line, std::to_string(row.tokens.size()) + " columns, expected " +
                                std::to_string(columns) + " (" + layout + ")");
    }
    std::vector<float> v(columns);
    for (size_t c = 0; c < columns; ++c) {
      if (!number(row, c, v[c])) return false;
    }
    values_.push_back(std::move(v));
    lines_.push_back(row.line);
  }
  return true;
}

bool Parser::check_values() {
  const size_t dims = static_cast<size_t>(kpt_dims_);
  const auto is_point = [&](size_t c) { return pose_ ? c >= 5 && (c - 5) % dims < 2 : c >= 1; };
  for (size_t r = 0; r < values_.size(); ++r) {
    const std::vector<float>& v = values_[r];
    // Pose rows are checked on their keypoints only, as the reference does.
    for (size_t c = 0; c < v.size(); ++c) {
      if (is_point(c) && v[c] > kMaxCoordinate) {
        return fail(lines_[r], "coordinate " + number_text(v[c]) + " (column " +
                                   std::to_string(c + 1) +
                                   ") > 1: labels are normalised (pixels / image size), 0-1");
      }
    }
  }
  for (size_t r = 0; r < values_.size(); ++r) {
    const std::vector<float>& v = values_[r];
    for (size_t c = 0; c < v.size(); ++c) {
      if (v[c] < kMinValue || ((c == 3 || c == 4) && v[c] < 0)) {
        return fail(lines_[r], "negative value " + number_text(v[c]) + " (column " +
                                   std::to_string(c + 1) +
                                   "); classes, boxes and keypoints must be >= 0");
      }
    }
  }
  for (size_t r = 0; r < values_.size(); ++r) {
    if (std::fmod(values_[r][0], 1.0f) != 0) {
      return fail(lines_[r], "class " + number_text(values_[r][0]) +
                                 " is not an integer; the first column is a class index");
    }
  }
  for (size_t r = 0; r < values_.size(); ++r) {
    const double cls = values_[r][0];
    if (!(cls < static_cast<double>(nc_)) || cls > INT32_MAX) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f", cls);
      return fail(lines_[r], std::string("class ") + buf + " >= nc " + std::to_string(nc_) +
                                 ": classes are 0-" + std::to_string(nc_ - 1) +
                                 "; fix the label or add the class to the data YAML's names");
    }
  }
  return true;
}

// Keeps the first of each group of equal rows. Only when something is removed do the rows
// come out in sorted order, as np.unique(..., return_index=True) leaves them.
void Parser::remove_duplicates() {
  const size_t n = values_.size();
  const auto unique_firsts = [n](auto less) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), less);
    std::vector<size_t> keep;
    for (size_t k = 0; k < n; ++k) {
      if (k == 0 || less(order[k - 1], order[k])) keep.push_back(order[k]);
    }
    return keep;
  };
  std::vector<size_t> keep =
      unique_firsts([this](size_t a, size_t b) { return values_[a] < values_[b]; });
  if (keep.size() < n && !polygon_keys_.empty()) {
    // Distinct polygons may share a class and box: compare the raw float32 bytes of class and
    // points instead (byte order, as Python compares the bytes objects).
    std::vector<std::string> bytes(n);
    for (size_t r = 0; r < n; ++r) {
      bytes[r].assign(reinterpret_cast<const char*>(polygon_keys_[r].data()),
                      polygon_keys_[r].size() * sizeof(float));
    }
    keep = unique_firsts([&bytes](size_t a, size_t b) { return bytes[a] < bytes[b]; });
  }
  if (keep.size() == n) return;
  std::vector<std::vector<float>> kept;
  for (size_t r : keep) kept.push_back(std::move(values_[r]));
  values_ = std::move(kept);
  out_.duplicates_removed = static_cast<int>(n - keep.size());
  out_.warnings.push_back(source_ + ": " + std::to_string(out_.duplicates_removed) +
                          " duplicate row" + (out_.duplicates_removed == 1 ? "" : "s") +
                          " removed (the first of each is kept)");
}

LabelFile Parser::parse(const std::string& text, bool boxes_only) {
  std::string_view body(text);
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // utf-8-sig
  std::vector<RawRow> raw;
  if (const size_t bad = split_rows(body, raw); bad != std::string_view::npos) {
    fail(0, "not UTF-8 text (invalid byte at offset " +
                std::to_string(bad + text.size() - body.size()) +
                "); save the label file as UTF-8");
    return out_;
  }
  const size_t pose_columns = 5 + static_cast<size_t>(kpt_count_ * kpt_dims_);
  if (kpt_count_ > 0 && boxes_only) {
    for (RawRow& row : raw) {
      if (row.tokens.size() == pose_columns) row.tokens.resize(5);
    }
  }
  if (raw.empty()) {
    out_.empty = true;
    return out_;
  }
  pose_ = kpt_count_ > 0 && !boxes_only;
  const bool polygons = !pose_ && std::any_of(raw.begin(), raw.end(),
                                              [](const RawRow& r) { return r.tokens.size() > 6; });
  const bool ok =
      (polygons ? read_polygons(raw) : read_rows(raw, pose_ ? pose_columns : 5)) && check_values();
  if (!ok) return out_;
  remove_duplicates();
  if (polygons) out_.polygons = static_cast<int>(values_.size());
  for (const std::vector<float>& v : values_) {
    LabelRow row;
    row.cls = static_cast<int32_t>(v[0]);
    for (size_t c = 0; c < 4; ++c) row.xywhn[c] = v[c + 1];
    if (pose_) row.keypoints.assign(v.begin() + 5, v.end());
    out_.rows.push_back(std::move(row));
  }
  return out_;
}

}  // namespace

std::string label_path_for_image(const std::string& image_path) {
  std::string path = image_path;
  if (const size_t at = path.rfind("/images/"); at != std::string::npos) {
    path.replace(at, 8, "/labels/");
  }
  const size_t dot = path.rfind('.'), slash = path.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) path.erase(dot);
  return path + ".txt";
}

LabelFile parse_label_text(const std::string& text, const std::string& source, int64_t nc,
                           int64_t kpt_count, int64_t kpt_dims, bool boxes_only) {
  if (kpt_count < 0 || (kpt_count > 0 && kpt_dims != 2 && kpt_dims != 3)) {
    throw std::invalid_argument("parse_label_text: kpt_shape [" + std::to_string(kpt_count) + ", " +
                                std::to_string(kpt_dims) + "] is not [K > 0, 2 or 3]");
  }
  return Parser(source, nc, kpt_count, kpt_dims).parse(text, boxes_only);
}

LabelFile read_label_file(const std::string& path, int64_t nc, int64_t kpt_count, int64_t kpt_dims,
                          bool boxes_only) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    LabelFile missing;
    missing.missing = true;
    return missing;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    throw IoError("cannot read label file " + path + ": " + std::strerror(errno) +
                  "; check its permissions");
  }
  return parse_label_text(text.str(), path, nc, kpt_count, kpt_dims, boxes_only);
}

std::vector<double> keypoints_xyv(const LabelRow& row, int64_t kpt_count, int64_t kpt_dims) {
  std::vector<double> out;
  if (kpt_count <= 0 || (kpt_dims != 2 && kpt_dims != 3) ||
      row.keypoints.size() != static_cast<size_t>(kpt_count * kpt_dims)) {
    return out;
  }
  out.reserve(static_cast<size_t>(kpt_count) * 3);
  for (size_t k = 0; k < static_cast<size_t>(kpt_count); ++k) {
    const double x = row.keypoints[k * kpt_dims], y = row.keypoints[k * kpt_dims + 1];
    const double v = kpt_dims == 3 ? row.keypoints[k * 3 + 2] : (x < 0 || y < 0 ? 0.0 : 1.0);
    out.insert(out.end(), {x, y, v});
  }
  return out;
}

bool has_image_extension(const std::string& path) {
  static const std::set<std::string> kFormats = {"avif", "bmp",  "dng", "heic", "heif",
                                                 "jp2",  "jpeg", "jpg", "mpo",  "png",
                                                 "tif",  "tiff", "webp"};
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = path.substr(dot + 1);
  if (ext.size() > 4) return false;
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kFormats.count(ext) > 0;
}

namespace {

bool is_hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// glob("<dir>/**/*.*", recursive=True): hidden names are skipped and directory links are
// followed, here once per real directory so that a link loop ends.
void walk(const fs::path& dir, std::set<fs::path>& seen, std::vector<std::string>& out) {
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  if (ec || !seen.insert(real).second) return;
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (is_hidden(p)) continue;
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      subdirs.push_back(p);
    } else if (has_image_extension(p.filename().string())) {
      out.push_back(p.string());
    }
  }
  for (const fs::path& sub : subdirs) walk(sub, seen, out);
}

void read_list(const fs::path& list, const std::string& context, std::vector<std::string>& out) {
  std::ifstream in(list, std::ios::binary);
  std::ostringstream buf;
  if (in) buf << in.rdbuf();
  if (!in || in.bad()) {
    throw DataError(context + ": cannot read the image list " + list.string() + ": " +
                    std::strerror(errno));
  }
  std::string text = buf.str();
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  std::string parent = list.parent_path().string();
  if (parent.empty()) parent = ".";
  if (parent.back() != '/') parent += '/';
  // As read().strip().splitlines(): the text is stripped, its lines are not.
  std::vector<std::pair<size_t, size_t>> cps;  // (offset, length) of each code point
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const size_t n = decode_utf8(text, i, cp);
    if (n == 0) {
      throw DataError(context + ": the image list " + list.string() +
                      " is not UTF-8 text (invalid byte at offset " + std::to_string(i) +
                      "); save it as UTF-8");
    }
    cps.emplace_back(i, n);
    i += n;
  }
  const auto code_point = [&](size_t k) {
    char32_t cp = 0;
    decode_utf8(text, cps[k].first, cp);
    return cp;
  };
  size_t first = 0, last = cps.size();
  while (first < last && is_space(code_point(first))) ++first;
  while (last > first && is_space(code_point(last - 1))) --last;
  std::string line;
  const auto end_line = [&] {
    if (line.compare(0, 2, "./") == 0) line = parent + line.substr(2);
    if (has_image_extension(line)) out.push_back(line);
    line.clear();
  };
  for (size_t k = first; k < last; ++k) {
    const char32_t cp = code_point(k);
    if (is_line_break(cp)) {
      if (cp == '\r' && k + 1 < last && code_point(k + 1) == '\n') ++k;
      end_line();
    } else {
      line.append(text, cps[k].first, cps[k].second);
    }
  }
  if (last > first) end_line();
}

}  // namespace

std::vector<std::string> list_split_images(const std::vector<std::string>& sources,
                                           const std::string& context) {
  std::vector<std::string> images;
  for (const std::string& source : sources) {
    // pathlib's spelling of the source: "a//b/./c/" -> "a/b/c".
    fs::path p;
    for (const fs::path& part : fs::path(source)) {
      if (part != "." && !part.empty()) p /= part;
    }
    if (p.empty()) p = ".";
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::set<fs::path> seen;
      walk(p, seen, images);
    } else if (fs::exists(p, ec)) {
      if (has_image_extension(p.string())) {
        images.push_back(p.string());
      } else {
        read_list(p, context, images);
      }
    } else {
      throw DataError(context + ": " + source +
                      " does not exist; give a folder of images, a .txt list of image paths or "
                      "an image, relative to the data set's `path`");
    }
  }
  if (images.empty()) {
    std::string listed;
    for (const std::string& s : sources) listed += (listed.empty() ? "" : ", ") + s;
    throw DataError(context + ": no images found in " + listed +
                    " (image files end in .avif .bmp .dng .heic .heif .jp2 .jpeg .jpg .mpo .png "
                    ".tif .tiff .webp)");
  }
  std::sort(images.begin(), images.end());
  return images;
}

}  // namespace detrain::data::yolo
