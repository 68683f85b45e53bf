// See image_check.h.
#include "data/image_check.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "data/image_decoder.h"
#include "data/image_size.h"

namespace detrain::data {

namespace {

// The first 8 and the last 12 bytes of a file (fewer when it is shorter); false when it cannot
// be read.
bool read_ends(const std::string& path, unsigned char head[8], unsigned char tail[12], long* size) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f || std::fseek(f.get(), 0, SEEK_END) != 0) return false;
  *size = std::ftell(f.get());
  if (*size < 0 || std::fseek(f.get(), 0, SEEK_SET) != 0) return false;
  std::memset(head, 0, 8);
  std::memset(tail, 0, 12);
  if (std::fread(head, 1, static_cast<size_t>(std::min(*size, 8L)), f.get()) !=
      static_cast<size_t>(std::min(*size, 8L)))
    return false;
  const long n = std::min(*size, 12L);
  if (std::fseek(f.get(), *size - n, SEEK_SET) != 0) return false;
  return std::fread(tail + (12 - n), 1, static_cast<size_t>(n), f.get()) == static_cast<size_t>(n);
}

}  // namespace

ImageFileCheck check_image_file(const std::string& path) {
  ImageFileCheck out;
  std::optional<std::array<int32_t, 2>> size = read_image_size(path);
  bool decoded = false;
  if (!size) {  // formats without a header reader here: decode once
    size = decoded_image_size(path);
    decoded = true;
  }
  if (!size) {
    out.problem = "cannot be read as an image (corrupt or unsupported)";
    return out;
  }
  out.size = *size;
  if (decoded) return out;
  unsigned char head[8], tail[12];
  long bytes = 0;
  if (!read_ends(path, head, tail, &bytes)) {
    out.problem = "cannot be read";
    return out;
  }
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  static const unsigned char kIend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
  const bool jpeg = bytes > 3 && head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff;
  const bool png = bytes >= 8 && std::memcmp(head, kPng, 8) == 0;
  const bool tail_ok = jpeg  ? tail[10] == 0xff && tail[11] == 0xd9
                       : png ? std::memcmp(tail, kIend, 12) == 0
                             : true;
  if (!tail_ok && !decoded_image_size(path))
    out.problem = jpeg
                      ? "truncated or damaged JPEG (no end-of-image marker, and it does not decode)"
                      : "truncated or damaged PNG (no IEND chunk, and it does not decode)";
  return out;
}

}  // namespace detrain::data
