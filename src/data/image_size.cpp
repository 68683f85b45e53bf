#include "data/image_size.h"

#include <fstream>
#include <optional>
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

// The value of `tag` in IFD0 of a TIFF block (a single BYTE, SHORT or LONG, signed or not), or
// nullopt when it is absent, a list, of another type or unreadable.
std::optional<uint32_t> ifd0_value(std::string tiff, uint32_t tag) {
  if (tiff.compare(0, 6, std::string("Exif\0\0", 6)) == 0) tiff.erase(0, 6);
  if (tiff.size() < 8) return std::nullopt;
  const bool little = tiff.compare(0, 4, "II*\0", 4) == 0;
  if (!little && tiff.compare(0, 4, "MM\0*", 4) != 0) return std::nullopt;
  const auto get = [&](size_t at, int bytes) {
    return little ? le(tiff, at, bytes) : be(tiff, at, bytes);
  };
  const uint64_t ifd = get(4, 4);
  if (ifd + 2 > tiff.size()) return std::nullopt;
  const uint32_t count = get(ifd, 2);
  for (uint32_t k = 0; k < count; ++k) {
    const uint64_t e = ifd + 2 + 12ull * k;
    if (e + 12 > tiff.size()) return std::nullopt;
    if (get(e, 2) != tag) continue;
    const uint32_t type = get(e + 2, 2);
    if (get(e + 4, 4) != 1) return std::nullopt;  // a list of values
    // BYTE, SBYTE: 1 byte; SHORT, SSHORT: 2; LONG, SLONG: 4, each at the start of the field.
    if (type == 1 || type == 6) return get(e + 8, 1);
    if (type == 3 || type == 8) return get(e + 8, 2);
    if (type == 4 || type == 9) return get(e + 8, 4);
    return std::nullopt;
  }
  return std::nullopt;
}

// Orientation tag (0x0112) of IFD0 in a TIFF block; 1 (upright) when absent or unreadable.
int exif_orientation(const std::string& tiff) {
  return static_cast<int>(ifd0_value(tiff, 0x0112).value_or(1));
}

// Orientations that turn the image a quarter (5-8). Ultralytics 8.4.190's exif_size swaps the
// sides of such a JPEG, MPO or PNG, but decodes a WebP or TIFF with one (cv2.imread's answer, which
// varies by OpenCV version): for those two the header readers below give up and the image is
// decoded.
bool quarter_turn(int orientation) { return orientation >= 5 && orientation <= 8; }

Size oriented(uint32_t width, uint32_t height, int orientation) {
  const Size s{static_cast<int32_t>(width), static_cast<int32_t>(height)};
  return quarter_turn(orientation) ? Size{s[1], s[0]} : s;
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

// RIFF WebP: a simple lossy (VP8) or lossless (VP8L) bitstream, or the extended format (VP8X:
// canvas size, optional EXIF chunk), as libwebp's WebPGetFeatures, which Pillow uses, reads it.
std::optional<Size> webp_size(std::istream& in) {
  std::string buf;
  if (!read_exact(in, buf, 30) || buf.compare(0, 4, "RIFF") != 0 ||
      buf.compare(8, 4, "WEBP") != 0) {
    return std::nullopt;
  }
  const std::string chunk = buf.substr(12, 4);
  uint32_t width = 0, height = 0;
  if (chunk == "VP8 ") {
    // A 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and height (2 scale bits).
    if (be(buf, 23, 3) != 0x9d012a) return std::nullopt;
    width = le(buf, 26, 2) & 0x3fff;
    height = le(buf, 28, 2) & 0x3fff;
  } else if (chunk == "VP8L") {
    if (static_cast<unsigned char>(buf[20]) != 0x2f) return std::nullopt;  // signature
    const uint32_t bits = le(buf, 21, 4);
    width = (bits & 0x3fff) + 1;
    height = ((bits >> 14) & 0x3fff) + 1;
  } else if (chunk == "VP8X") {
    width = le(buf, 24, 3) + 1;
    height = le(buf, 27, 3) + 1;
    if (buf[20] & 0x08) {  // has an EXIF chunk: find it among the chunks after VP8X
      in.seekg(12 + 8 + 10);
      for (std::string head; read_exact(in, head, 8);) {
        const std::streamoff length = le(head, 4, 4);
        if (head.compare(0, 4, "EXIF") == 0) {
          if (length <= kMaxExifBytes && read_exact(in, buf, length) &&
              quarter_turn(exif_orientation(buf))) {
            return std::nullopt;
          }
          break;
        }
        if (!in.seekg(length + (length & 1), std::ios::cur)) break;  // chunks are padded
      }
    }
  } else {
    return std::nullopt;
  }
  if (width == 0 || height == 0) return std::nullopt;
  return Size{static_cast<int32_t>(width), static_cast<int32_t>(height)};
}

// Classic TIFF (not BigTIFF): ImageWidth and ImageLength of IFD0, the first image, which is the
// size Pillow reports.
std::optional<Size> tiff_size(std::istream& in) {
  constexpr uint32_t kMaxEntries = 4096;
  std::string header, count_bytes, entries;
  if (!read_exact(in, header, 8)) return std::nullopt;
  const bool little = header.compare(0, 4, "II*\0", 4) == 0;
  const auto get = [&](const std::string& b, size_t at, int bytes) {
    return little ? le(b, at, bytes) : be(b, at, bytes);
  };
  if (!in.seekg(get(header, 4, 4)) || !read_exact(in, count_bytes, 2)) return std::nullopt;
  const uint32_t count = get(count_bytes, 0, 2);
  if (count > kMaxEntries || !read_exact(in, entries, 12 * static_cast<std::streamoff>(count)))
    return std::nullopt;
  // The same IFD as a TIFF block of its own (IFD0 right after the header), for ifd0_value.
  std::string block = header.substr(0, 4);
  block += little ? std::string("\x08\0\0\0", 4) : std::string("\0\0\0\x08", 4);
  block += count_bytes + entries;
  const auto width = ifd0_value(block, 256), height = ifd0_value(block, 257);
  if (!width || !height || *width == 0 || *height == 0 || *width > INT32_MAX ||
      *height > INT32_MAX || quarter_turn(exif_orientation(block))) {
    return std::nullopt;
  }
  return Size{static_cast<int32_t>(*width), static_cast<int32_t>(*height)};
}

}  // namespace

std::optional<std::array<int32_t, 2>> read_image_size(const std::string& path) {
  try {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    if (!in.read(magic, 2)) return std::nullopt;
    in.read(magic + 2, 2);  // may be short: a 2-byte file is no image of any kind
    in.clear();
    in.seekg(0);
    if (magic[0] == '\xFF' && magic[1] == '\xD8') {
      in.seekg(2);
      return jpeg_size(in);
    }
    if (magic[0] == '\x89' && magic[1] == 'P') return png_size(in);
    if (magic[0] == 'B' && magic[1] == 'M') return bmp_size(in);
    if (std::string(magic, 4) == "RIFF") return webp_size(in);
    if (std::string(magic, 4) == std::string("II*\0", 4) ||
        std::string(magic, 4) == std::string("MM\0*", 4)) {
      return tiff_size(in);
    }
  } catch (const std::exception&) {
    // A stream that fails in an unexpected way is an unparsable header, not an error.
  }
  return std::nullopt;
}

}  // namespace detrain::data
