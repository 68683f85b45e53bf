// Decode and resize; see decode.h. Truncated JPEGs are failures here (libjpeg and the
// reference only warn and restore them).
#include "data/decode.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#ifdef DETRAIN_WITH_TURBOJPEG
#include <turbojpeg.h>
#endif

#include "data/image_decoder.h"

namespace detrain::data {

namespace {

bool is_jpeg(const std::vector<uint8_t>& b) {
  return b.size() > 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

#ifdef DETRAIN_WITH_TURBOJPEG
struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};

DecodedImage decode_turbo(const std::vector<uint8_t>& bytes, int min_long_side) {
  DecodedImage out;
  // A handle per call: cheap next to the decode, and no state shared between loader threads.
  std::unique_ptr<void, TjDeleter> handle(tjInitDecompress());
  if (!handle) {
    out.error = "cannot create a JPEG decoder";
    return out;
  }
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), bytes.data(), static_cast<unsigned long>(bytes.size()),
                          &width, &height, &subsamp, &colorspace) != 0) {
    out.error = tjGetErrorStr2(handle.get());
    return out;
  }
  int scaled_w = width, scaled_h = height;
  if (min_long_side > 0) {
    int count = 0;
    const tjscalingfactor* factors = tjGetScalingFactors(&count);
    for (int i = 0; i < count; ++i) {
      const int w = TJSCALED(width, factors[i]), h = TJSCALED(height, factors[i]);
      if (factors[i].num <= factors[i].denom && std::max(w, h) >= min_long_side &&
          w * h < scaled_w * scaled_h) {
        scaled_w = w;
        scaled_h = h;
      }
    }
  }
  cv::Mat bgr(scaled_h, scaled_w, CV_8UC3);
  // STOPONWARNING: a truncated or damaged file is a failure, not a half-grey image.
  if (tjDecompress2(handle.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), bgr.data,
                    scaled_w, static_cast<int>(bgr.step), scaled_h, TJPF_BGR,
                    TJFLAG_STOPONWARNING) != 0) {
    out.error = tjGetErrorStr2(handle.get());
    return out;
  }
  out.bgr = bgr;
  out.source_width = width;
  out.source_height = height;
  return out;
}
#endif

}  // namespace

bool read_file_bytes(const std::string& path, std::vector<uint8_t>& out) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return false;
  if (std::fseek(f.get(), 0, SEEK_END) != 0) return false;
  const long size = std::ftell(f.get());
  if (size < 0 || std::fseek(f.get(), 0, SEEK_SET) != 0) return false;
  out.resize(static_cast<size_t>(size));
  return std::fread(out.data(), 1, out.size(), f.get()) == out.size();
}

DecodedImage decode_image(const std::vector<uint8_t>& bytes, int min_long_side) {
  DecodedImage out;
  if (bytes.empty()) {
    out.error = "empty file";
    return out;
  }
#ifdef DETRAIN_WITH_TURBOJPEG
  if (is_jpeg(bytes)) return decode_turbo(bytes, min_long_side);
#else
  (void)min_long_side;
#endif
  try {
    out.bgr = cv::imdecode(bytes, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    out.error = e.what();
  }
  if (out.bgr.empty() && out.error.empty()) out.error = "not a decodable image";
  // libjpeg (through OpenCV) only warns about a missing end marker; refuse such files too.
  if (out.ok() && is_jpeg(bytes) &&
      !(bytes.size() > 2 && bytes[bytes.size() - 2] == 0xFF && bytes.back() == 0xD9)) {
    out.bgr.release();
    out.error = "truncated JPEG (no end marker)";
  }
  out.source_width = out.bgr.cols;
  out.source_height = out.bgr.rows;
  return out;
}

cv::Size resized_size(int width, int height, int long_side) {
  const double r = static_cast<double>(long_side) / std::max(height, width);
  return {std::min(static_cast<int>(std::ceil(width * r)), long_side),
          std::min(static_cast<int>(std::ceil(height * r)), long_side)};
}

DecodedImage load_image(const std::string& path, int long_side, bool exact) {
  std::vector<uint8_t> bytes;
  if (!read_file_bytes(path, bytes)) return {cv::Mat(), "cannot read the file", 0, 0};
  DecodedImage img = decode_image(bytes, exact ? 0 : long_side);
  if (!img.ok() || long_side <= 0) return img;
  // The target follows from the stored size (as in the reference); a DCT-reduced decode only
  // changes what is resized.
  const int h = img.source_height, w = img.source_width;
  const double r = static_cast<double>(long_side) / std::max(h, w);
  if (r == 1.0 && img.bgr.cols == w && img.bgr.rows == h) return img;
  cv::Mat resized;
  // INTER_LINEAR either way: 8.4.190's load_image no longer shrinks val images with INTER_AREA.
  cv::resize(img.bgr, resized, resized_size(w, h, long_side), 0, 0, cv::INTER_LINEAR);
  img.bgr = resized;
  return img;
}

std::optional<std::array<int32_t, 2>> decoded_image_size(const std::string& path) {
  std::vector<uint8_t> bytes;
  if (!read_file_bytes(path, bytes)) return std::nullopt;
  const DecodedImage decoded = decode_image(bytes);
  if (!decoded.ok()) return std::nullopt;
  return std::array<int32_t, 2>{decoded.source_width, decoded.source_height};
}

}  // namespace detrain::data
