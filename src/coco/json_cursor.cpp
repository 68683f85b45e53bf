// JSON tokenizer for the COCO loaders; see json_cursor.h. Numbers take Clinger's exact fast
// path (mantissa <= 2^53, |exponent| <= 22: one correctly rounded multiply or divide) and fall back
// to std::from_chars, which libstdc++ 12 implements with correct rounding.
#include "coco/json_cursor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/errors.h"

namespace detrain::coco {

namespace {

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string describe_char(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned char>(c));
  return buf;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// The most a pipe may deliver before it is taken for an endless stream.
constexpr size_t kMaxPipedBytes = size_t{4} << 30;

}  // namespace

JsonFile::JsonFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot read " + path + ": " + std::strerror(errno));
  struct stat info {};
  const long page = ::sysconf(_SC_PAGESIZE);
  const bool stat_ok = ::fstat(fd, &info) == 0;
  // Devices (/dev/zero) and directories never end like a JSON file; pipes may, up to a cap.
  if (stat_ok && !S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode)) {
    ::close(fd);
    throw IoError("cannot read " + path + ": " +
                  (S_ISDIR(info.st_mode) ? "it is a directory" : "not a regular file") +
                  " (pass a COCO JSON file)");
  }
  if (stat_ok && S_ISREG(info.st_mode) && info.st_size > 0 && page > 0 &&
      info.st_size % page != 0) {
    const size_t size = static_cast<size_t>(info.st_size);
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (mapping != MAP_FAILED) {
      ::close(fd);
      mapping_ = mapping;
      mapping_size_ = size;
      data_ = static_cast<const char*>(mapping);
      size_ = size;
      return;
    }
  }
  // Page-aligned sizes, pipes and special files: read until EOF.
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw IoError("cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    buffer_.append(chunk, static_cast<size_t>(n));
    if (buffer_.size() > kMaxPipedBytes) {
      ::close(fd);
      throw IoError("cannot read " + path + ": more than " + std::to_string(kMaxPipedBytes >> 30) +
                    " GiB from a pipe (write the JSON to a file)");
    }
  }
  ::close(fd);
  data_ = buffer_.c_str();
  size_ = buffer_.size();
}

JsonFile::~JsonFile() {
  if (mapping_) ::munmap(mapping_, mapping_size_);
}

JsonCursor::JsonCursor(JsonInput text, std::string source)
    : base_(text.data()),
      pos_(text.data()),
      end_(text.data() + text.size()),
      source_(std::move(source)) {}

JsonCursor::JsonCursor(JsonInput text, std::string source, size_t begin)
    : JsonCursor(text, std::move(source)) {
  pos_ = base_ + std::min(begin, text.size());
}

void JsonCursor::fail(const std::string& what) const {
  size_t line = 1;
  const char* line_start = base_;
  for (const char* p = base_; p < pos_; ++p)
    if (*p == '\n') {
      ++line;
      line_start = p + 1;
    }
  throw DataError(source_ + ": malformed JSON at byte " + std::to_string(offset()) + " (line " +
                  std::to_string(line) + ", column " + std::to_string(pos_ - line_start + 1) +
                  "): " + what);
}

void JsonCursor::fail_content(const std::string& what, size_t at) const {
  throw DataError(source_ + ": " + what + " (at byte " + std::to_string(at) + ")");
}

void JsonCursor::fail_type(const std::string& what) {
  const char c = peek();
  const bool value_start = c == '"' || c == '{' || c == '[' || c == 't' || c == 'f' || c == 'n' ||
                           c == '-' || (c >= '0' && c <= '9');
  if (!value_start) skip_value();  // throws the syntax error
  fail_content(what, offset());
}

void JsonCursor::expect(char c, const char* what) {
  if (peek() == c) {
    ++pos_;
    return;
  }
  if (pos_ >= end_) fail(std::string("unexpected end of input, expected ") + what);
  fail(std::string("expected ") + what + ", found " + describe_char(*pos_));
}

bool JsonCursor::comma_or_close(char close) {
  const char c = peek();
  if (c == ',') {
    ++pos_;
    return true;
  }
  if (c == close) {
    ++pos_;
    return false;
  }
  if (pos_ >= end_) fail(std::string("unexpected end of input, expected ',' or '") + close + "'");
  fail(std::string("expected ',' or '") + close + "', found " + describe_char(c));
}

void JsonCursor::expect_end() {
  skip_ws();
  if (pos_ < end_) fail("unexpected data after the top-level value: " + describe_char(*pos_));
}

std::string_view JsonCursor::string() {
  skip_ws();
  if (*pos_ != '"') {
    if (pos_ >= end_) fail("unexpected end of input, expected a string");
    fail("expected a string, found " + describe_char(*pos_));
  }
  const char* begin = ++pos_;
  const char* p = begin;
  while (true) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"') {
      pos_ = p + 1;
      return {begin, static_cast<size_t>(p - begin)};
    }
    if (c == '\\') {
      pos_ = p;
      decode_escapes(begin);
      return scratch_;
    }
    if (c < 0x20) {
      pos_ = p;
      if (p >= end_) fail("unexpected end of input inside a string");
      fail("control character " + describe_char(static_cast<char>(c)) + " inside a string");
    }
    ++p;
  }
}

uint32_t JsonCursor::hex4() {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = *pos_;
    uint32_t digit;
    if (c >= '0' && c <= '9')
      digit = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      digit = static_cast<uint32_t>(c - 'A' + 10);
    else
      fail("invalid \\u escape (four hex digits expected)");
    value = value * 16 + digit;
    ++pos_;
  }
  return value;
}

// pos_ is at the first backslash; [begin, pos_) is plain text.
void JsonCursor::decode_escapes(const char* begin) {
  scratch_.assign(begin, pos_);
  while (true) {
    const unsigned char c = static_cast<unsigned char>(*pos_);
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c < 0x20) {
      if (pos_ >= end_) fail("unexpected end of input inside a string");
      fail("control character " + describe_char(static_cast<char>(c)) + " inside a string");
    }
    if (c != '\\') {
      scratch_ += static_cast<char>(c);
      ++pos_;
      continue;
    }
    ++pos_;
    const char e = *pos_++;
    switch (e) {
      case '"':
        scratch_ += '"';
        break;
      case '\\':
        scratch_ += '\\';
        break;
      case '/':
        scratch_ += '/';
        break;
      case 'b':
        scratch_ += '\b';
        break;
      case 'f':
        scratch_ += '\f';
        break;
      case 'n':
        scratch_ += '\n';
        break;
      case 'r':
        scratch_ += '\r';
        break;
      case 't':
        scratch_ += '\t';
        break;
      case 'u': {
        uint32_t cp = hex4();
        // A high surrogate followed by an escaped low surrogate is one code point; a lone
        // surrogate is kept as is (Python's json does the same).
        if (cp >= 0xd800 && cp < 0xdc00 && pos_[0] == '\\' && pos_[1] == 'u') {
          const char* save = pos_;
          pos_ += 2;
          const uint32_t low = hex4();
          if (low >= 0xdc00 && low < 0xe000)
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          else
            pos_ = save;
        }
        append_utf8(scratch_, cp);
        break;
      }
      default:
        --pos_;
        if (pos_ >= end_) fail("unexpected end of input inside a string");
        fail("invalid escape '\\" + std::string(1, e) + "' in a string");
    }
  }
}

double JsonCursor::number() {
  skip_ws();
  const char* const start = pos_;
  const char* p = pos_;
  const bool negative = *p == '-';
  if (negative) ++p;
  uint64_t mantissa = 0;
  int digits = 0;  // digits in the mantissa; > 19 leaves the fast path
  int fraction_digits = 0;
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (is_digit(*p)) {
      mantissa = mantissa * 10 + static_cast<uint64_t>(*p - '0');
      ++digits;
      ++p;
    }
  } else {
    pos_ = p;
    if (p >= end_) fail("unexpected end of input, expected a value");
    fail(negative ? "expected a digit after '-'" : "expected a value, found " + describe_char(*p));
  }
  if (*p == '.') {
    ++p;
    if (!is_digit(*p)) {
      pos_ = p;
      fail("expected a digit after '.'");
    }
    while (is_digit(*p)) {
      if (mantissa != 0 || *p != '0') {
        mantissa = mantissa * 10 + static_cast<uint64_t>(*p - '0');
        ++digits;
      }
      ++fraction_digits;
      ++p;
    }
  }
  int exponent = 0;
  if (*p == 'e' || *p == 'E') {
    ++p;
    const bool exponent_negative = *p == '-';
    if (*p == '+' || *p == '-') ++p;
    if (!is_digit(*p)) {
      pos_ = p;
      fail("expected a digit in the exponent");
    }
    while (is_digit(*p)) {
      if (exponent < 100000) exponent = exponent * 10 + (*p - '0');
      ++p;
    }
    if (exponent_negative) exponent = -exponent;
  }
  pos_ = p;
  if (digits <= 19) {
    if (mantissa == 0) return negative ? -0.0 : 0.0;
    const int e = exponent - fraction_digits;
    if (mantissa <= (uint64_t{1} << 53) && e >= -22 && e <= 22) {
      double value = static_cast<double>(mantissa);
      value = e < 0 ? value / kPow10[-e] : value * kPow10[e];
      return negative ? -value : value;
    }
  }
  double value = 0;
  const auto result = std::from_chars(start, p, value);
  if (result.ec == std::errc::result_out_of_range) {
    // Python's float() gives +-inf on overflow and 0 on underflow; glibc's strtod does too (with
    // correct rounding) and stops at the end of the validated token.
    value = std::strtod(start, nullptr);
  } else if (result.ec != std::errc() || result.ptr != p) {
    pos_ = start;
    fail("unreadable number");
  }
  return value;
}

int64_t JsonCursor::integer(const char* field) {
  skip_ws();
  const char* const start = pos_;
  // Fast path: up to 18 plain digits cannot overflow int64.
  const char* p = start + (*start == '-');
  int64_t magnitude = 0;
  const char* digits_begin = p;
  while (is_digit(*p) && p - digits_begin < 19) magnitude = magnitude * 10 + (*p++ - '0');
  const bool plain_short = p > digits_begin && p - digits_begin <= 18 &&
                           (*digits_begin != '0' || p - digits_begin == 1) && *p != '.' &&
                           *p != 'e' && *p != 'E' && !is_digit(*p);
  if (plain_short) {
    pos_ = p;
    return *start == '-' ? -magnitude : magnitude;
  }
  const double value = number();  // validates the token
  bool plain = true;
  for (const char* q = start; q < pos_; ++q)
    if (*q == '.' || *q == 'e' || *q == 'E') plain = false;
  if (plain) {
    int64_t exact = 0;
    const auto result = std::from_chars(start, pos_, exact);
    if (result.ec == std::errc() && result.ptr == pos_) return exact;
  } else if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 0x1p63) {
    return static_cast<int64_t>(value);
  }
  fail_content(std::string("'") + field + "' must be an integer within 64 bits, found " +
                   std::string(start, pos_),
               static_cast<size_t>(start - base_));
}

bool JsonCursor::boolean() {
  const char c = peek();
  const std::string_view word = c == 't' ? "true" : "false";
  // Compared byte by byte: a mismatch (the terminating NUL included) stops before the end.
  for (size_t i = 0; i < word.size(); ++i)
    if (pos_[i] != word[i]) {
      pos_ += i;
      fail("expected true or false");
    }
  pos_ += word.size();
  return c == 't';
}

void JsonCursor::skip_value() { skip_value_at(0); }

void JsonCursor::skip_value_at(int depth) {
  const char c = peek();
  switch (c) {
    case '{':
    case '[': {
      if (depth >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
      if (c == '{')
        object([&](std::string_view) { skip_value_at(depth + 1); });
      else
        array([&] { skip_value_at(depth + 1); });
      return;
    }
    case '"':
      string();
      return;
    case 't':
    case 'f':
      boolean();
      return;
    case 'n':
      for (const char expected : std::string_view("null")) {
        if (*pos_ != expected) fail("invalid literal (expected null)");
        ++pos_;
      }
      return;
    default:
      number();
  }
}

}  // namespace detrain::coco
