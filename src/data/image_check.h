// Whether an image file is whole, checked at scan time so that a split only lists images that
// load: the header gives the size (data/image_size.h); a JPEG must also end with its
// end-of-image marker (FF D9) and a PNG with its IEND chunk, the two cheap tails that catch a
// truncated copy or download. A file whose tail is not the marker is decoded in full before it
// is refused (a JPEG with bytes after its marker is still whole), so only a file that does not
// decode is dropped. Ultralytics 8.4.190's verify_image_label runs PIL's verify and the same
// JPEG tail test, but rewrites a JPEG without the marker in place ("corrupt JPEG restored");
// detrain never writes into a data set, so such a file is dropped when it does not decode.
// Other formats (BMP, WebP, TIFF, ...) are checked by their header only. No LibTorch, no
// OpenCV: a decode goes through data/image_decoder.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace detrain::data {

struct ImageFileCheck {
  std::array<int32_t, 2> size{};  // width, height (EXIF orientation applied)
  std::string problem;            // "" when the image is whole, else why it cannot be used
  bool ok() const { return problem.empty(); }
};

// Checks `path` as above. Never throws for bad data (ImageNeedsDecoder passes through in a
// build without a decoder).
ImageFileCheck check_image_file(const std::string& path);

}  // namespace detrain::data
