// Image files built byte by byte for the header-reader tests: EXIF orientation blocks, TIFF
// headers and extended WebP files, whose fields OpenCV's writers do not let a test choose.
#pragma once

#include <cstdint>
#include <string>

namespace detrain::test {

// A TIFF block with one IFD0 entry: Orientation (SHORT).
std::string tiff_orientation(int orientation, bool big_endian);

// A little-endian TIFF header and IFD0 with ImageWidth, ImageLength and Orientation as SHORTs
// (no pixels: the header reader needs none).
std::string tiff_header(int w, int h, int orientation);

// A simple lossy WebP (RIFF, VP8 chunk, e.g. cv::imencode's) rewrapped as the extended format:
// VP8X with the EXIF flag, the same VP8 chunk, then an EXIF chunk holding `orientation`.
std::string webp_with_orientation(const std::string& simple, int w, int h, int orientation);

}  // namespace detrain::test
