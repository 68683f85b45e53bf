// Image files built byte by byte; see image_bytes.h.
#include "data/image_bytes.h"

#include <utility>

namespace detrain::test {

std::string tiff_orientation(int orientation, bool big_endian) {
  const char o = static_cast<char>(orientation);
  if (big_endian) {
    return std::string("MM\0*\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0", 19) + o +
           std::string("\0\0\0\0\0\0", 6);
  }
  return std::string("II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0", 18) + o +
         std::string("\0\0\0\0\0\0\0", 7);
}

namespace {

void put_le(std::string& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::string tiff_header(int w, int h, int orientation) {
  std::string b("II*\0\x08\0\0\0", 8);
  put_le(b, 3, 2);
  for (const auto& [tag, value] : {std::pair{256, w}, {257, h}, {274, orientation}}) {
    put_le(b, static_cast<uint32_t>(tag), 2);
    put_le(b, 3, 2);  // SHORT
    put_le(b, 1, 4);  // one value
    put_le(b, static_cast<uint32_t>(value), 4);
  }
  put_le(b, 0, 4);  // no next IFD
  return b;
}

std::string webp_with_orientation(const std::string& simple, int w, int h, int orientation) {
  std::string body = "WEBPVP8X";
  put_le(body, 10, 4);
  body += std::string("\x08\0\0\0", 4);  // flags: EXIF; 3 reserved bytes
  put_le(body, static_cast<uint32_t>(w - 1), 3);
  put_le(body, static_cast<uint32_t>(h - 1), 3);
  body += simple.substr(12);  // the VP8 chunk, padded as written
  std::string exif = std::string("Exif\0\0", 6) + tiff_orientation(orientation, false);
  body += "EXIF";
  put_le(body, static_cast<uint32_t>(exif.size()), 4);
  if (exif.size() % 2) exif += '\0';
  body += exif;
  std::string riff = "RIFF";
  put_le(riff, static_cast<uint32_t>(body.size()), 4);
  return riff + body;
}

}  // namespace detrain::test
