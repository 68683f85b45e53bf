#include "data/image_size.h"

#include <fstream>
#include <string>

namespace detrain::data {
namespace {

using Size = std::array<int32_t, 2>;

// An EXIF block larger than this is not read; its orientation is then taken as upright.
constexpr std::streamoff kMaxExifBytes = 1 << 20;

uint32_t be(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

uint32_t le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

bool read_exact(std::istream& in, std::string& buf, std::streamoff n) {
  if (n < 0) return false;
  buf.resize(static_cast<size_t>(n));
  return n == 0 || static_cast<bool>(in.read(buf.data(), n));
}

// Orientation tag (0x0112) of IFD0 in a TIFF block; 1 (upright) when absent or unreadable.
int exif_orientation(std::string tiff) {
  if (tiff.compare(0, 6, std::string("Exif\0\0", 6)) == 0) tiff.erase(0, 6);
  if (tiff.size() < 8) return 1;
  const bool little = tiff.compare(0, 4, "II*\0", 4) == 0;
  if (!little && tiff.compare(0, 4, "MM\0*", 4) != 0) return 1;
  const auto get = [&](size_t at, int bytes) {
    return little ? le(tiff, at, bytes) : be(tiff, at, bytes);
  };
  const uint64_t ifd = get(4, 4);
  if (ifd + 2 > tiff.size()) return 1;
  const uint32_t count = get(ifd, 2);
  for (uint32_t k = 0; k < count; ++k) {
    const uint64_t e = ifd + 2 + 12ull * k;
    if (e + 12 > tiff.size()) return 1;
    if (get(e, 2) != 0x0112) continue;
    const uint32_t type = get(e + 2, 2);
    if (get(e + 4, 4) != 1) return 1;  // a list of values is no orientation
    // BYTE, SBYTE: 1 byte; SHORT, SSHORT: 2; LONG, SLONG: 4, each at the start of the field.
    if (type == 1 || type == 6) return static_cast<int>(get(e + 8, 1));
    if (type == 3 || type == 8) return static_cast<int>(get(e + 8, 2));
    if (type == 4 || type == 9) return static_cast<int>(get(e + 8, 4));
    return 1;
  }
  return 1;
}

Size oriented(uint32_t width, uint32_t height, int orientation) {
  const Size s{static_cast<int32_t>(width), static_cast<int32_t>(height)};
  return orientation >= 5 && orientation <= 8 ? Size{s[1], s[0]} : s;
}

bool is_sof(int m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

// Walks the marker segments up to the start of scan, seeking over their payloads.
std::optional<Size> jpeg_size(std::istream& in) {
  uint32_t width = 0, height = 0;
  int orientation = 1;
  bool have_exif = false;
  std::string buf;
  for (;;) {
    int c = in.get();
    // Like Pillow, tolerate junk and fill bytes before a marker.
    for (int junk = 0; c != 0xFF; ++junk) {
      if (c == EOF || junk > 65536) return std::nullopt;
      c = in.get();
    }
    while (c == 0xFF) c = in.get();
    if (c == EOF) return std::nullopt;
    if (c == 0xD9) return std::nullopt;  // end of image before any scan
    if (c == 0xDA) break;
    if (c == 0x00 || c == 0x01 || c == 0xD8 || (c >= 0xD0 && c <= 0xD7)) continue;
    if (!read_exact(in, buf, 2)) return std::nullopt;
    const std::streamoff payload = static_cast<std::streamoff>(be(buf, 0, 2)) - 2;
    if (payload < 0) return std::nullopt;
    if (is_sof(c)) {
      if (payload < 5 || !read_exact(in, buf, payload)) return std::nullopt;
      height = be(buf, 1, 2);
      width = be(buf, 3, 2);
    } else if (c == 0xE1 && !have_exif && payload >= 6) {
      if (!read_exact(in, buf, payload)) return std::nullopt;
      // Pillow keeps the first Exif APP1 segment; later ones only append to it.
      if (buf.compare(0, 6, std::string("Exif\0\0", 6)) == 0) {
        have_exif = true;
        orientation = exif_orientation(buf);
      }
    } else if (!in.seekg(payload, std::ios::cur)) {
      return std::nullopt;
    }
  }
  if (width == 0 || height == 0) return std::nullopt;  // height 0: defined later by DNL
  return oriented(width, height, orientation);
}

std::optional<Size> png_size(std::istream& in) {
  std::string buf;
  if (!read_exact(in, buf, 24) || buf.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) != 0 ||
      buf.compare(12, 4, "IHDR") != 0) {
    return std::nullopt;
  }
  const uint32_t width = be(buf, 16, 4), height = be(buf, 20, 4);
  if (width == 0 || height == 0 || width > INT32_MAX || height > INT32_MAX) return std::nullopt;
  in.seekg(8 + 8 + 13 + 4);  // signature, IHDR length + type, its data, its CRC
  int orientation = 1;
  // Pillow reads eXIf when it precedes IDAT; one after the image data is not applied.
  for (std::string head; read_exact(in, head, 8);) {
    const std::streamoff length = be(head, 0, 4);
    const std::string type = head.substr(4);
    if (type == "IDAT" || type == "IEND") break;
    if (type == "eXIf" && length <= kMaxExifBytes) {
      if (!read_exact(in, buf, length)) break;
      orientation = exif_orientation(buf);
      break;
    }
    if (!in.seekg(length + 4, std::ios::cur)) break;
  }
  return oriented(width, height, orientation);
}

std::optional<Size> bmp_size(std::istream& in) {
  std::string buf;
  if (!read_exact(in, buf, 26)) return std::nullopt;
  const uint32_t header = le(buf, 14, 4);
  if (header == 12) {
    const uint32_t width = le(buf, 18, 2), height = le(buf, 20, 2);
    if (width == 0 || height == 0) return std::nullopt;
    return Size{static_cast<int32_t>(width), static_cast<int32_t>(height)};
  }
  if (header < 16) return std::nullopt;
  const auto width = static_cast<int32_t>(le(buf, 18, 4));
  const auto height = static_cast<int32_t>(le(buf, 22, 4));  // negative: rows top-down
  if (width <= 0 || height == 0 || height == INT32_MIN) return std::nullopt;
  return Size{width, height < 0 ? -height : height};
}

}  // namespace

std::optional<std::array<int32_t, 2>> read_image_size(const std::string& path) {
  try {
    std::ifstream in(path, std::ios::binary);
    char magic[2] = {};
    if (!in.read(magic, 2)) return std::nullopt;
    in.seekg(0);
    if (magic[0] == '\xFF' && magic[1] == '\xD8') {
      in.seekg(2);
      return jpeg_size(in);
    }
    if (magic[0] == '\x89' && magic[1] == 'P') return png_size(in);
    if (magic[0] == 'B' && magic[1] == 'M') return bmp_size(in);
  } catch (const std::exception&) {
    // A stream that fails in an unexpected way is an unparsable header, not an error.
  }
  return std::nullopt;
}

}  // namespace detrain::data
