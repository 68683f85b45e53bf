// Ultralytics YOLO-format data sets: label rows accepted, reduced and rejected as 8.4.190's
// verify_image_label does (expected values are float32 numbers the reference printed for the
// same text, run by hand), label paths, split image lists, image sizes from headers, data
// YAMLs, and a fuzz loop over label text.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>

#include "common/errors.h"
#include "data/image_bytes.h"
#include "data/image_decoder.h"
#include "data/image_size.h"
#include "data/ultralytics_data_yaml.h"
#include "data/yolo_labels.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
using detrain::test::tiff_header;
using detrain::test::tiff_orientation;
using detrain::test::webp_with_orientation;
namespace fs = std::filesystem;

namespace {

const char* kSource = "labels/a.txt";

yolo::LabelFile detect(const std::string& text, int64_t nc = 5) {
  return yolo::parse_label_text(text, kSource, nc, 0, 0);
}

// A label value as the reference holds it: the float32 nearest the text.
double f32(double v) { return static_cast<float>(v); }

void check_row(const yolo::LabelRow& row, int cls, std::array<double, 4> xywh) {
  CHECK(row.cls == cls);
  for (size_t i = 0; i < 4; ++i) CHECK(row.xywhn[i] == xywh[i]);
}

// The one-line reason, which must name the file and line.
std::string corrupt_at(const std::string& text, int line, int64_t nc = 5) {
  const yolo::LabelFile f = detect(text, nc);
  CHECK(f.rows.empty());
  CHECK_THAT(f.corrupt, Catch::StartsWith(std::string(kSource) + ":" + std::to_string(line) + ":"));
  return f.corrupt;
}

std::string bytes_of(const std::vector<uchar>& v) { return std::string(v.begin(), v.end()); }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A JPEG of w x h with an Exif APP1 segment carrying `orientation` right after SOI.
std::string jpeg_with_orientation(int w, int h, int orientation, bool big_endian) {
  std::vector<uchar> jpg;
  cv::imencode(".jpg", cv::Mat(h, w, CV_8UC3, cv::Scalar(30, 60, 90)), jpg);
  const std::string payload =
      std::string("Exif\0\0", 6) + tiff_orientation(orientation, big_endian);
  const size_t length = payload.size() + 2;
  const std::string app1 = std::string("\xFF\xE1") + static_cast<char>(length >> 8) +
                           static_cast<char>(length & 0xFF) + payload;
  std::string bytes = bytes_of(jpg);
  return bytes.insert(2, app1);
}

uint32_t crc32(const std::string& data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A PNG of w x h with an eXIf chunk (valid CRC) right after IHDR.
std::string png_with_orientation(int w, int h, int orientation) {
  std::vector<uchar> png;
  cv::imencode(".png", cv::Mat(h, w, CV_8UC1, cv::Scalar(7)), png);
  const std::string body = "eXIf" + tiff_orientation(orientation, false);
  std::string chunk;
  const auto be32 = [&chunk](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) chunk += static_cast<char>((v >> s) & 0xFF);
  };
  be32(static_cast<uint32_t>(body.size() - 4));
  chunk += body;
  be32(crc32(body));
  std::string bytes = bytes_of(png);
  return bytes.insert(8 + 25, chunk);
}

}  // namespace

TEST_CASE("label paths follow img2label_paths", "[unit][data][yolo_labels]") {
  CHECK(yolo::label_path_for_image("/d/images/train/a.jpg") == "/d/labels/train/a.txt");
  CHECK(yolo::label_path_for_image("/x/images/y/images/b.PNG") == "/x/images/y/labels/b.txt");
  CHECK(yolo::label_path_for_image("rel/images/a.b.jpeg") == "rel/labels/a.b.txt");
  CHECK(yolo::label_path_for_image("/d/imgs/c.webp") == "/d/imgs/c.txt");
  CHECK(yolo::label_path_for_image("/d/myimages/c.jpg") == "/d/myimages/c.txt");
  CHECK(yolo::label_path_for_image("/d.v1/images/noext") == "/d.v1/labels/noext.txt");
}

TEST_CASE("detection rows hold the reference's float32 values", "[unit][data][yolo_labels]") {
  const yolo::LabelFile f = detect("0 0.5 0.5 0.2 0.3\n1 0.1 0.2 0.05 0.05\n");
  REQUIRE(f.corrupt.empty());
  REQUIRE(f.rows.size() == 2);
  CHECK_FALSE(f.missing);
  CHECK_FALSE(f.empty);
  CHECK(f.warnings.empty());
  // ultralytics 8.4.190 verify_image_label, run by hand: 0.20000000298023224, 0.30000001192092896
  check_row(f.rows[0], 0, {0.5, 0.5, 0.20000000298023224, 0.30000001192092896});
  check_row(f.rows[1], 1, {f32(0.1), f32(0.2), f32(0.05), f32(0.05)});
  CHECK(f.rows[0].keypoints.empty());
  // Class 1.0 is an integer; Python's float() syntax: underscores, exponents, any whitespace
  // (here a no-break space and a tab), CRLF, a BOM and blank lines.
  check_row(detect("1.0 0.5 0.5 0.2 0.2").rows.at(0), 1, {0.5, 0.5, f32(0.2), f32(0.2)});
  const yolo::LabelFile odd = detect("\xEF\xBB\xBF\n0\xC2\xA0+.5 5e-1\t0.2_5 1E-1\r\n\r\n  \n");
  REQUIRE(odd.corrupt.empty());
  check_row(odd.rows.at(0), 0, {0.5, 0.5, 0.25, f32(0.1)});
}

TEST_CASE("polygon rows become their bounding boxes", "[unit][data][yolo_labels]") {
  // x 0.1..0.4, y 0.2..0.7: centre (0.25, 0.45), size 0.3 x 0.5, in float32 arithmetic.
  // ultralytics 8.4.190 verify_image_label, run by hand: 0.25 0.44999998807907104
  // 0.30000001192092896 0.5
  yolo::LabelFile f = detect("0 0.1 0.2 0.4 0.2 0.3 0.7\n");
  REQUIRE(f.corrupt.empty());
  CHECK(f.polygons == 1);
  check_row(f.rows.at(0), 0, {0.25, 0.44999998807907104, 0.30000001192092896, 0.5});
  // Four points, x 0.6..0.9 and y 0.1..0.95. Same source:
  // 0.75 0.5249999761581421 0.2999999523162842 0.8499999642372131
  f = detect("2 0.9 0.8 0.6 0.3 0.7 0.95 0.65 0.1\n");
  REQUIRE(f.corrupt.empty());
  check_row(f.rows.at(0), 2, {0.75, 0.5249999761581421, 0.2999999523162842, 0.8499999642372131});
  // A lone point (3 columns) beside a polygon is a zero-size box.
  f = detect("1 0.3 0.4\n0 0.1 0.2 0.4 0.2 0.3 0.7\n");
  REQUIRE(f.corrupt.empty());
  CHECK(f.polygons == 2);
  check_row(f.rows.at(0), 1, {f32(0.3), f32(0.4), 0.0, 0.0});
  // Points outside the image count only through the box they give: x -0.5..0.5 -> cx 0, w 1.
  // ultralytics 8.4.190 verify_image_label, run by hand: 0.0 0.4000000059604645 1.0
  // 0.40000003576278687 (0.6f - 0.2f)
  f = detect("0 -0.5 0.2 0.5 0.2 0.5 0.6\n");
  REQUIRE(f.corrupt.empty());
  check_row(f.rows.at(0), 0, {0.0, 0.4000000059604645, 1.0, 0.40000003576278687});
}

TEST_CASE("duplicate rows are removed with one warning", "[unit][data][yolo_labels]") {
  yolo::LabelFile f = detect("1 0.5 0.5 0.2 0.2\n0 0.3 0.3 0.1 0.1\n1 0.5 0.5 0.2 0.2\n");
  REQUIRE(f.corrupt.empty());
  CHECK(f.duplicates_removed == 1);
  REQUIRE(f.warnings.size() == 1);
  CHECK_THAT(f.warnings[0], Catch::StartsWith(kSource) && Catch::Contains("1 duplicate row"));
  // The reference (np.unique) returns the kept rows sorted, here class 0 first.
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[0].cls == 0);
  CHECK(f.rows[1].cls == 1);
  // 0.5000000001 is 0.5 in float32, so these rows are equal too.
  CHECK(detect("0 0.5 0.5 0.2 0.2\n0 0.5000000001 0.5 0.2 0.2\n").duplicates_removed == 1);
  // Without duplicates the file order stays.
  f = detect("1 0.5 0.5 0.2 0.2\n0 0.3 0.3 0.1 0.1\n");
  CHECK(f.rows.at(0).cls == 1);
  CHECK(f.warnings.empty());
  // Distinct polygons with the same class and box are both kept; a repeated polygon is not.
  f = detect("0 0.1 0.1 0.5 0.1 0.5 0.5\n0 0.1 0.1 0.5 0.5 0.1 0.5\n");
  CHECK(f.rows.size() == 2);
  CHECK(f.duplicates_removed == 0);
  f = detect("1 0.1 0.1 0.5 0.1 0.5 0.5\n0 0.2 0.2 0.3 0.3 0.3 0.2\n1 0.1 0.1 0.5 0.1 0.5 0.5\n");
  CHECK(f.duplicates_removed == 1);
  CHECK(f.polygons == 2);
  // ultralytics 8.4.190 verify_image_label, run by hand: row 0 is class 0, box 0.25 0.25
  // 0.10000000894069672 0.10000000894069672.
  REQUIRE(f.rows.size() == 2);
  check_row(f.rows[0], 0, {0.25, 0.25, 0.10000000894069672, 0.10000000894069672});
}

TEST_CASE("the reference's tolerances for coordinates and negatives", "[unit][data][yolo_labels]") {
  // ultralytics 8.4.190 verify_image_label, run by hand: 1.01 and -0.01 pass, 1.0101, -0.0101
  // and a negative width (even -0.001) drop the image; -0.0 is not negative.
  CHECK(detect("0 1.01 0.5 0.2 0.2").corrupt.empty());
  CHECK(detect("0 -0.01 0.5 0.2 0.2").corrupt.empty());
  CHECK(detect("0 -0.005 0.5 0.2 0.2\n0 0.5 0.5 0.1 -0.0\n").corrupt.empty());
  CHECK_THAT(corrupt_at("0 1.0101 0.5 0.2 0.2", 1), Catch::Contains("normalised"));
  CHECK_THAT(corrupt_at("0 0.5 0.5 0.2 0.2\n0 -0.0101 0.5 0.2 0.2", 2),
             Catch::Contains("negative"));
  CHECK_THAT(corrupt_at("\n0 0.5 0.5 -0.001 0.2", 2), Catch::Contains("negative"));
}

TEST_CASE("defective rows drop the image, naming file and line", "[unit][data][yolo_labels]") {
  CHECK_THAT(corrupt_at("0 0.5 0.5 0.2 0.2\n\n0 0.5 0.5 0.2 0.2 0.1\n", 3),
             Catch::Contains("6 columns, expected 5"));
  CHECK_THAT(corrupt_at("0 0.5 0.5 0.2\n", 1), Catch::Contains("4 columns, expected 5"));
  CHECK_THAT(corrupt_at("0 0.5 0.5 0.2 0.2\n7 0.5 0.5 0.2 0.2\n", 2),
             Catch::Contains("class 7 >= nc 5") && Catch::Contains("names"));
  CHECK_THAT(corrupt_at("1.5 0.5 0.5 0.2 0.2", 1), Catch::Contains("not an integer"));
  CHECK_THAT(corrupt_at("0 abc 0.5 0.2 0.2", 1), Catch::Contains("'abc' is not a number"));
  CHECK_THAT(corrupt_at("0 0x1 0.5 0.2 0.2", 1), Catch::Contains("not a number"));
  CHECK_THAT(corrupt_at("0 1__0 0.5 0.2 0.2", 1), Catch::Contains("not a number"));
  CHECK_THAT(corrupt_at("0 nan 0.5 0.2 0.2", 1), Catch::Contains("finite"));
  CHECK_THAT(corrupt_at("0 0.5 0.5 0.2 1e39", 1), Catch::Contains("finite"));
  CHECK_THAT(corrupt_at("0 0.5 0.5 0.2 0.2\n0 0.1 0.1 0.2 0.2 0.3 0.3\n", 1),
             Catch::Contains("polygon"));
  CHECK_THAT(corrupt_at("0 0.1 0.1 0.2 0.2 0.3 0.3\n0 0.1 0.1 0.2 0.2 0.3 0.3 0.4\n", 2),
             Catch::Contains("7 polygon coordinates"));
  CHECK_THAT(corrupt_at("0 0.1 0.1 0.2 0.2 0.3 0.3\n4\n", 2), Catch::Contains("0 polygon"));
  // Not UTF-8: the reference's decoder fails, so the image is dropped (no line to name).
  const yolo::LabelFile bad = detect("0 0.5 0.5 0.2 0.2\xFF\n");
  CHECK_THAT(bad.corrupt, Catch::StartsWith(std::string(kSource) + ": not UTF-8"));
  CHECK(bad.rows.empty());
}

TEST_CASE("empty and missing label files are backgrounds", "[unit][data][yolo_labels]") {
  for (const char* text : {"", "  \n\n", "\xEF\xBB\xBF\r\n"}) {
    const yolo::LabelFile f = detect(text);
    CHECK(f.empty);
    CHECK_FALSE(f.missing);
    CHECK(f.rows.empty());
    CHECK(f.corrupt.empty());
  }
  TempDir dir("yolo_labels");
  const yolo::LabelFile missing = yolo::read_label_file(dir.file("nope.txt"), 5, 0, 0);
  CHECK(missing.missing);
  CHECK_FALSE(missing.empty);
  fs::create_directories(dir.file("adir.txt"));
  CHECK(yolo::read_label_file(dir.file("adir.txt"), 5, 0, 0).missing);
  test::write_text(dir.file("a.txt"), "3 0.5 0.5 0.2 0.2\n9 0.5 0.5 0.2 0.2\n");
  const yolo::LabelFile bad = yolo::read_label_file(dir.file("a.txt"), 5, 0, 0);
  CHECK_THAT(bad.corrupt, Catch::StartsWith(dir.file("a.txt") + ":2: class 9"));
  CHECK(yolo::read_label_file(dir.file("a.txt"), 10, 0, 0).rows.size() == 2);
}

TEST_CASE("pose rows with 3 and 2 keypoint dims", "[unit][data][yolo_labels]") {
  const auto pose = [](const std::string& text, int64_t dims) {
    return yolo::parse_label_text(text, kSource, 1, 2, dims);
  };
  yolo::LabelFile f = pose("0 0.5 0.5 0.2 0.2 0.4 0.4 2 0.6 0.6 0\n", 3);
  REQUIRE(f.corrupt.empty());
  REQUIRE(f.rows.size() == 1);
  CHECK(f.rows[0].keypoints == std::vector<double>{f32(0.4), f32(0.4), 2, f32(0.6), f32(0.6), 0});
  CHECK(yolo::keypoints_xyv(f.rows[0], 2, 3) == f.rows[0].keypoints);
  // ultralytics 8.4.190 verify_image_label, run by hand: a pose box is not range-checked (cx 1.5
  // passes), a keypoint is (1.02 fails), a visibility of -0.005 or 5 passes.
  CHECK(pose("0 1.5 0.5 0.2 0.2 0.4 0.4 2 0.6 0.6 0", 3).rows.at(0).xywhn[0] == 1.5);
  CHECK_THAT(pose("0 0.5 0.5 0.2 0.2 1.02 0.4 2 0.6 0.6 0", 3).corrupt,
             Catch::StartsWith(std::string(kSource) + ":1: coordinate 1.02"));
  CHECK(pose("0 0.5 0.5 0.2 0.2 0.4 0.4 -0.005 0.6 0.6 5", 3).corrupt.empty());
  CHECK_THAT(pose("0 0.5 0.5 0.2 0.2 0.4 0.4 2", 3).corrupt,
             Catch::Contains(":1: 8 columns, expected 11") && Catch::Contains("kpt_shape [2, 3]"));
  // More than 6 columns is not a polygon in a pose set.
  CHECK_THAT(pose("0 0.5 0.5 0.2 0.2 0.4 0.4 2 0.6 0.6 0 0.1 0.2", 3).corrupt,
             Catch::Contains("13 columns"));
  // Dims 2: a keypoint with a negative coordinate (within -0.01) is invisible. Same source:
  // keypoints (0.4, 0.4, 1) and (-0.005, 0.6, 0).
  f = pose("0 0.5 0.5 0.2 0.2 0.4 0.4 -0.005 0.6\n", 2);
  REQUIRE(f.corrupt.empty());
  CHECK(f.rows.at(0).keypoints.size() == 4);
  CHECK(yolo::keypoints_xyv(f.rows[0], 2, 2) ==
        std::vector<double>{f32(0.4), f32(0.4), 1, f32(-0.005), f32(0.6), 0});
  CHECK_THAT(pose("0 0.5 0.5 0.2 0.2 0.4 0.4 -0.5 0.6", 2).corrupt, Catch::Contains("negative"));
  // A box task on a pose set keeps the boxes of full pose rows.
  f = yolo::parse_label_text("0 0.5 0.5 0.2 0.2 0.4 0.4 2 0.6 0.6 0\n0 0.1 0.1 0.2 0.2\n", kSource,
                             1, 2, 3, /*boxes_only=*/true);
  REQUIRE(f.corrupt.empty());
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[0].keypoints.empty());
  CHECK_THROWS_AS(yolo::parse_label_text("", kSource, 1, 2, 4), std::invalid_argument);
}

TEST_CASE("split image lists from folders, txt lists and files", "[unit][data][yolo_labels]") {
  TempDir dir("yolo_split");
  for (const char* name : {"images/b.jpg", "images/a.PNG", "images/sub/c.jpeg", "images/notes.txt",
                           "images/.hidden.jpg", "images/.cache/d.jpg", "images/e.gif"}) {
    test::write_text(dir.file(name), "x");
  }
  const std::string images = dir.file("images");
  CHECK(yolo::list_split_images({images}, "d.yaml: train") ==
        std::vector<std::string>{images + "/a.PNG", images + "/b.jpg", images + "/sub/c.jpeg"});
  CHECK(yolo::list_split_images({images + "/"}, "ctx").size() == 3);

  // "./" lines are relative to the list's folder, others are kept as written; non-image lines
  // are dropped; the text is stripped as a whole, its lines are not. ultralytics 8.4.190
  // get_img_files, run by hand on this list: ' rel/5.jpg', '/abs/2.png', 'D/lists/4.tif',
  // 'D/lists/x/1.jpg', 'rel/3.bmp'.
  test::write_text(dir.file("lists/train.txt"),
                   "\xEF\xBB\xBF  ./x/1.jpg\r\n/abs/2.png\n rel/5.jpg\nrel/3.bmp\n\nreadme.md\n"
                   "./4.tif  \n");
  CHECK(yolo::list_split_images({dir.file("lists/train.txt"), images + "/b.jpg"}, "ctx") ==
        std::vector<std::string>{" rel/5.jpg", "/abs/2.png", images + "/b.jpg",
                                 dir.file("lists/4.tif"), dir.file("lists/x/1.jpg"), "rel/3.bmp"});

  const auto missing = [&] { yolo::list_split_images({images, dir.file("nope")}, "d.yaml: val"); };
  CHECK_THROWS_AS(missing(), DataError);
  CHECK_THROWS_WITH(missing(), Catch::StartsWith("d.yaml: val") && Catch::Contains("nope") &&
                                   Catch::Contains("does not exist"));
  fs::create_directories(dir.file("empty"));
  const auto none = [&] { yolo::list_split_images({dir.file("empty")}, "d.yaml: val"); };
  CHECK_THROWS_AS(none(), DataError);
  CHECK_THROWS_WITH(none(), Catch::StartsWith("d.yaml: val") && Catch::Contains("no images found"));
  CHECK(yolo::has_image_extension("a.JPG"));
  CHECK_FALSE(yolo::has_image_extension("a.jpg.txt"));
}

TEST_CASE("image sizes from WebP and TIFF headers", "[unit][data][yolo_labels]") {
  TempDir dir("webp_tiff_size");
  cv::Mat img(30, 40, CV_8UC3);
  cv::randu(img, 0, 255);
  const std::array<int32_t, 2> size{40, 30};
  // OpenCV writes lossy WebP as VP8 and quality 101 as lossless VP8L; TIFF as little-endian.
  const std::vector<std::pair<std::string, std::vector<int>>> files = {
      {"lossy.webp", {cv::IMWRITE_WEBP_QUALITY, 90}},
      {"lossless.webp", {cv::IMWRITE_WEBP_QUALITY, 101}},
      {"a.tif", {}}};
  for (const auto& [name, params] : files) {
    if (!cv::haveImageWriter(dir.file(name))) continue;
    INFO(name);
    REQUIRE(cv::imwrite(dir.file(name), img, params));
    CHECK(read_image_size(dir.file(name)) == size);
    CHECK(data::decoded_image_size(dir.file(name)) == size);  // the decoder agrees
  }
  std::ifstream in(dir.file("lossy.webp"), std::ios::binary);
  const std::string lossy((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(lossy.compare(12, 4, "VP8 ") == 0);

  // Extended WebP and TIFF: upright or a half turn keep the header's size; a quarter turn has
  // none (ultralytics 8.4.190 exif_size decodes such WebP and TIFF files with cv2.imread).
  write_bytes(dir.file("o1.webp"), webp_with_orientation(lossy, 40, 30, 1));
  write_bytes(dir.file("o3.webp"), webp_with_orientation(lossy, 40, 30, 3));
  write_bytes(dir.file("o6.webp"), webp_with_orientation(lossy, 40, 30, 6));
  CHECK(read_image_size(dir.file("o1.webp")) == size);
  CHECK(read_image_size(dir.file("o3.webp")) == size);
  CHECK_FALSE(read_image_size(dir.file("o6.webp")).has_value());
  write_bytes(dir.file("o1.tif"), tiff_header(40, 30, 1));
  write_bytes(dir.file("o8.tif"), tiff_header(40, 30, 8));
  CHECK(read_image_size(dir.file("o1.tif")) == size);
  CHECK_FALSE(read_image_size(dir.file("o8.tif")).has_value());

  // Truncated headers have no size, and damage never crashes.
  write_bytes(dir.file("cut.webp"), lossy.substr(0, 20));
  CHECK_FALSE(read_image_size(dir.file("cut.webp")).has_value());
  write_bytes(dir.file("cut.tif"), tiff_header(40, 30, 1).substr(0, 20));
  CHECK_FALSE(read_image_size(dir.file("cut.tif")).has_value());
  std::mt19937 rng(11);
  for (const std::string& good :
       {webp_with_orientation(lossy, 40, 30, 1), tiff_header(40, 30, 1)}) {
    for (int i = 0; i < 200; ++i) {
      std::string bytes = good.substr(0, 5 + rng() % (good.size() - 5));
      for (int k = 0; k < 3; ++k) bytes[4 + rng() % (bytes.size() - 4)] = static_cast<char>(rng());
      write_bytes(dir.file("fuzz.bin"), bytes);
      CHECK_NOTHROW(read_image_size(dir.file("fuzz.bin")));
    }
  }
}

TEST_CASE("image sizes from JPEG, PNG and BMP headers", "[unit][data][yolo_labels]") {
  TempDir dir("yolo_size");
  const cv::Mat img(30, 40, CV_8UC3, cv::Scalar(10, 20, 30));
  for (const char* ext : {".jpg", ".png", ".bmp"}) {
    const std::string path = dir.file(std::string("a") + ext);
    REQUIRE(cv::imwrite(path, img));
    const auto size = read_image_size(path);
    REQUIRE(size.has_value());
    CHECK(*size == std::array<int32_t, 2>{40, 30});
  }
  // EXIF orientation 6 and 8 (quarter turns) swap width and height, 3 (half turn) does not.
  // ultralytics 8.4.190 exif_size, run by hand on the same bytes: (30, 40), (30, 40), (40, 30),
  // and (23, 17) for the PNG.
  write_bytes(dir.file("o6.jpg"), jpeg_with_orientation(40, 30, 6, false));
  write_bytes(dir.file("o8.jpg"), jpeg_with_orientation(40, 30, 8, true));
  write_bytes(dir.file("o3.jpg"), jpeg_with_orientation(40, 30, 3, false));
  write_bytes(dir.file("o8.png"), png_with_orientation(17, 23, 8));
  CHECK(read_image_size(dir.file("o6.jpg")) == std::array<int32_t, 2>{30, 40});
  CHECK(read_image_size(dir.file("o8.jpg")) == std::array<int32_t, 2>{30, 40});
  CHECK(read_image_size(dir.file("o3.jpg")) == std::array<int32_t, 2>{40, 30});
  CHECK(read_image_size(dir.file("o8.png")) == std::array<int32_t, 2>{23, 17});
  REQUIRE(cv::imread(dir.file("o6.jpg")).cols > 0);  // the spliced file is still a JPEG

  // Truncated, garbage and missing files have no size.
  std::ifstream in(dir.file("a.jpg"), std::ios::binary);
  const std::string jpg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_bytes(dir.file("cut.jpg"), jpg.substr(0, 100));
  CHECK_FALSE(read_image_size(dir.file("cut.jpg")).has_value());
  write_bytes(dir.file("cut.png"), "\x89PNG\r\n\x1a\n");
  CHECK_FALSE(read_image_size(dir.file("cut.png")).has_value());
  write_bytes(dir.file("junk.jpg"), "not an image at all");
  CHECK_FALSE(read_image_size(dir.file("junk.jpg")).has_value());
  CHECK_FALSE(read_image_size(dir.file("missing.jpg")).has_value());
  // Random damage to the header bytes may change the answer but never crashes.
  std::mt19937 rng(7);
  const std::string exif = jpeg_with_orientation(40, 30, 6, false);
  for (int i = 0; i < 300; ++i) {
    std::string bytes = exif.substr(0, 3 + rng() % 400);
    for (int k = 0; k < 4; ++k) bytes[2 + rng() % (bytes.size() - 2)] = static_cast<char>(rng());
    write_bytes(dir.file("fuzz.jpg"), bytes);
    CHECK_NOTHROW(read_image_size(dir.file("fuzz.jpg")));
  }
}

namespace {

struct YamlDir {
  TempDir dir{"yolo_yaml"};
  YamlDir() {
    for (const char* d : {"images/train", "images/val"}) fs::create_directories(dir.file(d));
  }
  UltralyticsDataYaml read(const std::string& text, const std::string& root = "") const {
    test::write_text(dir.file("d.yaml"), text);
    return read_ultralytics_data_yaml(YAML::LoadFile(dir.file("d.yaml")), dir.file("d.yaml"), root);
  }
  std::string error(const std::string& text) const {
    try {
      read(text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

}  // namespace

TEST_CASE("Ultralytics data YAMLs", "[unit][data][yolo_labels]") {
  const YamlDir y;
  const std::string root = fs::weakly_canonical(y.dir.path()).string();
  const std::string splits = "train: images/train\nval: images/val\n";
  UltralyticsDataYaml d = y.read(splits + "names: [person, car]\n");
  CHECK(d.yaml_path == y.dir.file("d.yaml"));
  CHECK(d.root == root);  // no `path`: the YAML's folder
  CHECK(d.train == std::vector<std::string>{root + "/images/train"});
  CHECK(d.val == std::vector<std::string>{root + "/images/val"});
  CHECK(d.test.empty());
  CHECK(d.names == std::vector<std::string>{"person", "car"});
  CHECK(d.kpt_count == 0);

  d = y.read("path: " + root +
             "\ntrain: [images/train, /abs/list.txt]\nval: images/val\n"
             "test: images/test\nnames: {1: car, 0: person}\nnc: 2\n");
  CHECK(d.names == std::vector<std::string>{"person", "car"});
  CHECK(d.train == std::vector<std::string>{root + "/images/train", "/abs/list.txt"});
  CHECK(d.test == std::vector<std::string>{root + "/images/test"});
  CHECK(y.read(splits + "nc: 3\n").names ==
        std::vector<std::string>{"class_0", "class_1", "class_2"});
  CHECK(y.read(splits + "nc: '2'\nnames: [a, b]\n").names.size() == 2);
  // A `path` relative to nothing in the working directory is taken from the YAML's folder; a
  // "../" that does not exist there is retried without it, as the reference does.
  d = y.read("path: images\ntrain: ../images/train\nval: val\nnames: [a]\n");
  CHECK(d.root == root + "/images");
  CHECK(d.train == std::vector<std::string>{root + "/images/train"});
  d = y.read("train: train\nval: val\nnames: [a]\n", y.dir.file("images"));
  CHECK(d.root == root + "/images");
  CHECK(d.val == std::vector<std::string>{root + "/images/val"});
  // `validation` stands in for a missing `val`.
  CHECK(y.read("train: images/train\nvalidation: images/val\nnames: [a]\n").val.size() == 1);

  d = y.read(splits + "names: [person]\nkpt_shape: [3, 3]\nflip_idx: [0, 2, 1]\n");
  CHECK(d.kpt_count == 3);
  CHECK(d.kpt_dims == 3);
  CHECK(d.flip_idx == std::vector<int64_t>{0, 2, 1});
  CHECK(y.read(splits + "names: [p]\nkpt_shape: [2, 2]\nflip_idx: []\n").flip_idx.empty());

  const auto fails = [&](const std::string& text, const std::string& key) {
    const std::string e = y.error(text);
    CHECK_THAT(e, Catch::StartsWith(y.dir.file("d.yaml") + ": '" + key + "'"));
  };
  fails(splits + "names: [a, b]\nnc: 3\n", "nc");
  fails(splits + "nc: 2.5\n", "nc");
  fails(splits + "names: {0: a, 2: b}\n", "names");
  fails(splits + "names: {a: x}\n", "names");
  fails(splits + "names: []\n", "names");
  fails(splits, "names");
  fails("train: images/train\nnames: [a]\n", "val");
  fails("val: images/val\nnames: [a]\n", "train");
  fails("train: {images: x}\nval: images/val\nnames: [a]\n", "train");
  // A val folder that is not there is bad data (exit 4, as a missing image folder), not a bad key.
  CHECK_THROWS_MATCHES(y.read("train: images/train\nval: images/nope\nnames: [a]\n"), DataError,
                       Catch::Matchers::Predicate<DataError>([&](const DataError& e) {
                         return std::string(e.what()).rfind(y.dir.file("d.yaml") + ": 'val'", 0) ==
                                0;
                       }));
  fails(splits + "names: [a]\nkpt_shape: [17, 4]\n", "kpt_shape");
  fails(splits + "names: [a]\nkpt_shape: 17\n", "kpt_shape");
  fails(splits + "names: [a]\nkpt_shape: [3, 3]\nflip_idx: [0, 1]\n", "flip_idx");
  fails(splits + "names: [a]\nkpt_shape: [3, 3]\nflip_idx: [0, 1, 3]\n", "flip_idx");

  CHECK(looks_like_ultralytics_data_yaml(YAML::Load(splits + "names: [a]")));
  CHECK(looks_like_ultralytics_data_yaml(YAML::Load("train: [a, b]\nnc: 1")));
  CHECK_FALSE(looks_like_ultralytics_data_yaml(
      YAML::Load("train: {annotations: a.json, images: x}\nclasses: [{id: 1, name: p}]")));
  CHECK_FALSE(looks_like_ultralytics_data_yaml(YAML::Load("train: a\n")));
  CHECK_FALSE(looks_like_ultralytics_data_yaml(YAML::Load("[1, 2]")));
}

TEST_CASE("label parsing survives random bytes and mutations", "[unit][data][yolo_labels]") {
  std::mt19937 rng(20240519);
  const auto check_invariants = [](const yolo::LabelFile& f, size_t values) {
    if (!f.corrupt.empty()) CHECK(f.rows.empty());
    for (const yolo::LabelRow& row : f.rows) {
      CHECK(row.cls >= 0);
      CHECK(row.keypoints.size() == values);
    }
  };
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    for (const auto& [k, d] : {std::pair<int64_t, int64_t>{0, 0}, {2, 2}, {1, 3}}) {
      yolo::LabelFile f;
      REQUIRE_NOTHROW(f = yolo::parse_label_text(bytes, kSource, 3, k, d));
      check_invariants(f, static_cast<size_t>(k * d));
    }
  }
  const std::string alphabet = "0123456789.-+eE_ \t\n\r\xC2\xA0naif";
  const std::vector<std::pair<std::string, int64_t>> seeds = {
      {"0 0.5 0.5 0.2 0.2\n1 0.1 0.2 0.05 0.05\n", 0},
      {"0 0.1 0.2 0.4 0.2 0.3 0.7\n1 0.5 0.5 0.6 0.6 0.7 0.5\n", 0},
      {"0 0.5 0.5 0.2 0.2 0.4 0.4 2 0.6 0.6 0\n", 2}};
  for (int i = 0; i < 2000; ++i) {
    const auto& [text, k] = seeds[i % seeds.size()];
    std::string t = text;
    for (int m = 1 + static_cast<int>(rng() % 4); m > 0; --m) {
      const size_t at = rng() % (t.size() + 1);
      switch (rng() % 3) {
        case 0:
          t.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (at < t.size()) t.erase(at, 1 + rng() % 3);
          break;
        default:
          if (at < t.size()) t[at] = alphabet[rng() % alphabet.size()];
      }
    }
    yolo::LabelFile f;
    REQUIRE_NOTHROW(f = yolo::parse_label_text(t, kSource, 2, k, k ? 3 : 0));
    check_invariants(f, static_cast<size_t>(k * 3));
    for (const yolo::LabelRow& row : f.rows) {
      CHECK(row.cls < 2);
      if (k == 0) {
        for (double v : row.xywhn) CHECK((v >= -0.01 && v <= 1.01));
      }
    }
  }
}
