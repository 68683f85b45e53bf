// See batch_plots.h.
#include "report/batch_plots.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/atomic_file.h"
#include "report/plots.h"

namespace detrain::report {

namespace {

// [3, H, W] uint8 RGB tensor -> BGR cv::Mat (a copy).
cv::Mat to_bgr(const torch::Tensor& chw_rgb) {
  const torch::Tensor hwc = chw_rgb.permute({1, 2, 0}).contiguous().cpu();  // [H, W, 3]
  cv::Mat rgb(static_cast<int>(hwc.size(0)), static_cast<int>(hwc.size(1)), CV_8UC3,
              hwc.data_ptr<uint8_t>());
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  return bgr;
}

MosaicStyle style_of(const data::DatasetInfo& dataset) {
  MosaicStyle style;
  style.names = dataset.names;
  style.kpt_count = static_cast<int>(dataset.kpt_count);
  style.skeleton = dataset.skeleton;
  return style;
}

}  // namespace

void set_predictions(PlotImage& tile, const infer::DetectionArrays& detections) {
  tile.boxes_xyxy = detections.boxes_xyxy;
  tile.scores = detections.scores;
  tile.classes.clear();
  for (const int64_t c : detections.classes) tile.classes.push_back(static_cast<int>(c));
  tile.keypoints = detections.keypoints;
}

cv::Mat draw_batch_targets(const data::Batch& batch, const data::DatasetInfo& dataset,
                           int max_images) {
  const int64_t b = batch.images.size(0);
  const float h = static_cast<float>(batch.images.size(2));
  const float w = static_cast<float>(batch.images.size(3));
  std::vector<PlotImage> tiles(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) tiles[i].image = to_bgr(batch.images[i]);
  for (size_t i = 0; i < tiles.size() && i < batch.files.size(); ++i)
    tiles[i].title = batch.files[i].substr(batch.files[i].find_last_of('/') + 1);
  const torch::Tensor idx = batch.batch_idx.cpu();
  const torch::Tensor cls = batch.cls.cpu();
  const torch::Tensor boxes = batch.boxes_xywhn.cpu().to(torch::kFloat);  // [N, 4]
  const torch::Tensor kpts =                                              // [N, K, 3]
      batch.keypoints.defined() ? batch.keypoints.cpu().to(torch::kFloat) : torch::Tensor();
  for (int64_t n = 0; n < idx.size(0); ++n) {
    PlotImage& t = tiles[static_cast<size_t>(idx[n].item<int64_t>())];
    const auto bx = boxes[n];
    const float cx = bx[0].item<float>() * w, cy = bx[1].item<float>() * h;
    const float bw = bx[2].item<float>() * w, bh = bx[3].item<float>() * h;
    t.boxes_xyxy.push_back({cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2});
    t.classes.push_back(static_cast<int>(cls[n].item<int64_t>()));
    if (kpts.defined()) {
      for (int64_t k = 0; k < kpts.size(1); ++k) {
        t.keypoints.push_back(kpts[n][k][0].item<float>() * w);
        t.keypoints.push_back(kpts[n][k][1].item<float>() * h);
        t.keypoints.push_back(kpts[n][k][2].item<float>());
      }
    }
  }
  MosaicStyle style = style_of(dataset);
  style.max_images = max_images > 0 ? max_images : static_cast<int>(b);
  return draw_batch_mosaic(tiles, style);
}

void save_train_batch_plot(const data::Batch& batch, const data::DatasetInfo& dataset,
                           const std::string& path) {
  std::vector<uint8_t> jpeg;
  cv::imencode(".jpg", draw_batch_targets(batch, dataset, kMaxSubplots), jpeg,
               {cv::IMWRITE_JPEG_QUALITY, 90});
  write_file_atomic(path, std::string(jpeg.begin(), jpeg.end()));
}

void save_val_prediction_plot(const infer::ValBatch& batch,
                              const std::vector<infer::ImageDetections>& detections,
                              const data::DatasetInfo& dataset,
                              const std::vector<std::string>& titles, const std::string& path) {
  std::vector<PlotImage> tiles(detections.size());
  for (size_t i = 0; i < detections.size(); ++i) {
    PlotImage& t = tiles[i];
    t.image = to_bgr(batch.images[static_cast<int64_t>(i)]);
    t.title = i < titles.size() ? titles[i] : "image " + std::to_string(batch.frames[i].image_id);
    set_predictions(t, infer::to_arrays(detections[i]));
  }
  save_batch_mosaic(tiles, style_of(dataset), path);
}

void save_val_labels_plot(const infer::ValBatch& batch,
                          const std::vector<const data::ImageRecord*>& records,
                          const data::DatasetInfo& dataset, const std::string& path) {
  std::vector<PlotImage> tiles(batch.frames.size());
  for (size_t i = 0; i < tiles.size(); ++i) {
    PlotImage& t = tiles[i];
    t.image = to_bgr(batch.images[static_cast<int64_t>(i)]);
    const data::ImageRecord* r = i < records.size() ? records[i] : nullptr;
    if (!r) continue;
    t.title = r->file.substr(r->file.find_last_of('/') + 1);
    const geometry::ImageFrame& f = batch.frames[i];
    auto x = [&](float v) { return static_cast<float>(v * f.ratio_x + f.pad_left); };
    auto y = [&](float v) { return static_cast<float>(v * f.ratio_y + f.pad_top); };
    for (size_t n = 0; n < r->boxes_xyxy_px.size(); ++n) {
      const auto& b = r->boxes_xyxy_px[n];
      t.boxes_xyxy.push_back({x(b[0]), y(b[1]), x(b[2]), y(b[3])});
      t.classes.push_back(r->classes[n]);
    }
    for (size_t k = 0; k + 2 < r->keypoints_px.size(); k += 3) {
      t.keypoints.push_back(x(r->keypoints_px[k]));
      t.keypoints.push_back(y(r->keypoints_px[k + 1]));
      t.keypoints.push_back(r->keypoints_px[k + 2]);
    }
  }
  save_batch_mosaic(tiles, style_of(dataset), path);
}

}  // namespace detrain::report
