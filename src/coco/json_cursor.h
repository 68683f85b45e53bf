// A validating pull parser for JSON (the COCO annotation and results files): walks a
// NUL-terminated buffer once, hands numbers to the caller as correctly rounded doubles (an ulp
// off would break score ties) and reports malformed input as DataError naming the source and
// byte offset. Beside its users, the COCO annotation reader and the evaluator's results reader.
// Strict RFC 8259 like Python's json module, except that NaN/Infinity literals (a Python extension)
// are refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace detrain::coco {

// Bytes followed by a NUL, which the tokenizer reads as its end sentinel instead of checking
// bounds in every loop: a std::string, a C string, or a JsonFile.
class JsonInput {
 public:
  JsonInput(const std::string& text) : data_(text.c_str()), size_(text.size()) {}  // NOLINT
  JsonInput(const char* text) : data_(text), size_(std::strlen(text)) {}           // NOLINT
  JsonInput(const char* nul_terminated, size_t size) : data_(nul_terminated), size_(size) {}
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_;
  size_t size_;
};

// A whole file as a JsonInput: mapped read-only and pre-faulted (no copy, no zero fill) when the
// byte after its end falls inside its last page (the kernel zero-fills that tail), read into a
// buffer otherwise. Throws IoError naming the path.
class JsonFile {
 public:
  explicit JsonFile(const std::string& path);
  ~JsonFile();
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;
  operator JsonInput() const { return {data_, size_}; }  // NOLINT
  size_t size() const { return size_; }

 private:
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  std::string buffer_;
  const char* data_ = "";
  size_t size_ = 0;
};

class JsonCursor {
 public:
  // `text` must outlive the cursor.
  JsonCursor(JsonInput text, std::string source);
  // Starts at byte `begin` of `text` (a value's first byte); offsets stay relative to `text`.
  JsonCursor(JsonInput text, std::string source, size_t begin);

  // Skips whitespace and returns the next character ('\0' at the end of input).
  char peek() {
    skip_ws();
    return *pos_;
  }
  // Consumes `c` after whitespace when it is next; returns whether it was.
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // Consumes `c` or fails with "expected <what>".
  void expect(char c, const char* what);

  // A string token; escapes are decoded (into internal scratch storage when present), so the
  // view is valid until the next string() call.
  std::string_view string();
  // A number token as a correctly rounded double.
  double number();
  // A number token that must be an integral value within int64 (`field` names it in errors).
  int64_t integer(const char* field);
  // A `true` or `false` literal.
  bool boolean();
  // Whether the next value (after whitespace) starts like a number token.
  bool number_next() {
    const char c = peek();
    return c == '-' || (c >= '0' && c <= '9');
  }
  // Skips any value (validating it). Nesting is limited to kMaxDepth levels.
  void skip_value();

  // Iterates an array: calls on_element() with the cursor at each element, which must consume
  // exactly that element.
  template <class F>
  void array(F&& on_element) {
    expect('[', "'['");
    if (consume(']')) return;
    do {
      on_element();
    } while (comma_or_close(']'));
  }
  // Iterates an object: calls on_member(key) with the cursor at the member's value.
  template <class F>
  void object(F&& on_member) {
    expect('{', "'{'");
    if (consume('}')) return;
    do {
      if (peek() != '"') fail("expected a string key");
      std::string_view key = string();
      expect(':', "':'");
      on_member(key);
    } while (comma_or_close('}'));
  }

  // After an element of an array or object: consumes ',' (true: another element follows) or
  // `close` (false); anything else is a syntax error.
  bool comma_or_close(char close);

  // Fails unless only whitespace remains.
  void expect_end();

  size_t offset() const { return static_cast<size_t>(pos_ - base_); }
  const std::string& source() const { return source_; }
  // Throws DataError "<source>: malformed JSON at byte <offset>: <what>".
  [[noreturn]] void fail(const std::string& what) const;
  // Throws DataError "<source>: <what>" for well-formed JSON with wrong content; names the byte
  // offset of the value just read so the record can be found.
  [[noreturn]] void fail_content(const std::string& what, size_t at) const;
  // The next value has the wrong type: fail_content(what) when a JSON value starts here,
  // otherwise the syntax error (a truncated file reports "unexpected end of input").
  [[noreturn]] void fail_type(const std::string& what);

  static constexpr int kMaxDepth = 256;

 private:
  void skip_ws() {
    while (*pos_ == ' ' || *pos_ == '\n' || *pos_ == '\r' || *pos_ == '\t') ++pos_;
  }
  void skip_value_at(int depth);
  void decode_escapes(const char* begin);
  uint32_t hex4();

  const char* base_;
  const char* pos_;
  const char* end_;
  std::string source_;
  std::string scratch_;
};

// Typed reads for record parsers: `name()` returns the field's name for the error ("images[3]
// 'width'"); it is called only on failure, so no text is built per value.
template <class Name>
double read_number(JsonCursor& cursor, Name&& name) {
  if (!cursor.number_next()) cursor.fail_type(name() + " must be a number");
  return cursor.number();
}
template <class Name>
int64_t read_integer(JsonCursor& cursor, const char* field, Name&& name) {
  if (!cursor.number_next()) cursor.fail_type(name() + " must be an integer");
  return cursor.integer(field);
}

}  // namespace detrain::coco
