// Ultralytics YOLO-format labels (one .txt per image, `class cx cy w h [keypoints]`, normalised)
// and the image lists of a split, with the acceptance rules of Ultralytics 8.4.190
// (verify_image_label, img2label_paths, get_img_files), so that a data set trains on the same
// rows here as there. Plain C++: no LibTorch, no OpenCV.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace detrain::data::yolo {

// The reference's rule: the last "/images/" component becomes "/labels/" and the extension
// becomes ".txt" (a path without an "/images/" component keeps its folder).
std::string label_path_for_image(const std::string& image_path);

struct LabelRow {
  int32_t cls = 0;
  std::array<double, 4> xywhn{};
  // kpt_count * kpt_dims normalised values as in the file; empty for detect.
  std::vector<double> keypoints;
};

// Values are the float32 numbers the reference computes with, widened to double: the same
// rows are accepted, deduplicated and reduced to boxes here as there.
struct LabelFile {
  std::vector<LabelRow> rows;
  bool missing = false;  // no label file: a background image (reference: "nm")
  bool empty = false;    // file with no rows ("ne")
  int polygons = 0;      // rows that were polygons reduced to boxes
  int duplicates_removed = 0;
  // "" or the one-line reason the whole image is dropped, naming file and line.
  std::string corrupt;
  std::vector<std::string> warnings;  // one line each, naming the file
};

// `source` names the text in messages. kpt_count 0 reads detection rows (polygons become
// boxes); kpt_count > 0 reads pose rows of 5 + kpt_count * kpt_dims columns (kpt_dims 2 or 3,
// else std::invalid_argument). `boxes_only` is the reference's box task on a pose data set:
// rows of exactly 5 + kpt_count * kpt_dims columns keep their box and lose their keypoints.
// Never throws on any text.
LabelFile parse_label_text(const std::string& text, const std::string& source, int64_t nc,
                           int64_t kpt_count, int64_t kpt_dims, bool boxes_only = false);

// A missing path (or one that is not a file) gives missing=true; an unreadable file throws
// IoError.
LabelFile read_label_file(const std::string& path, int64_t nc, int64_t kpt_count, int64_t kpt_dims,
                          bool boxes_only = false);

// kpt_count * 3 values (x, y, visibility). With kpt_dims 2 the visibility is the reference's
// mask: 0 where x or y is negative, else 1.
std::vector<double> keypoints_xyv(const LabelRow& row, int64_t kpt_count, int64_t kpt_dims);

// True when the text after the path's last '.' is, lower-cased, one of the reference's
// IMG_FORMATS (avif bmp dng heic heif jp2 jpeg jpg mpo png tif tiff webp).
bool has_image_extension(const std::string& path);

// The images of a split, as get_img_files: each source is a directory (searched recursively,
// hidden entries skipped), a .txt list (one path per line; "./x" is relative to the list's
// folder, other relative lines to the working directory) or an image file. Sorted by bytes,
// as the reference sorts. Throws DataError naming `context` when a source does not exist,
// a list is unreadable, or no image is found.
std::vector<std::string> list_split_images(const std::vector<std::string>& sources,
                                           const std::string& context);

}  // namespace detrain::data::yolo
