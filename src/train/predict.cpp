// See predict.h. The images go through the validation loader (letterboxed rect batches), so
// prediction sees exactly what validation sees.
#include "train/predict.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "compat/torch_compat.h"
#include "data/coco_records.h"
#include "data/decode.h"
#include "data/loader.h"
#include "eval/postprocess.h"
#include "eval/predictions_json.h"
#include "eval/validate.h"
#include "train/plots.h"
#include "train/precision.h"

namespace detrain::train {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> image_files(const std::string& source) {
  if (!fs::exists(source))
    throw IoError(source + " does not exist; pass an image file or a directory of images");
  if (!fs::is_directory(source)) return {source};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(source)) {
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp")
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw DataError(source + " holds no .jpg, .jpeg, .png or .bmp images");
  return files;
}

}  // namespace

PredictSummary predict_images(model::YoloModelImpl& model, const config::Experiment& x,
                              const data::DatasetInfo* dataset, const std::string& source,
                              const std::string& out_dir) {
  PredictSummary summary;
  summary.out_dir = out_dir;
  ensure_writable_dir(out_dir);

  // Records without labels; image ids are positions in the sorted file list.
  std::vector<data::ImageRecord> records;
  nlohmann::ordered_json images = nlohmann::ordered_json::array();
  for (const std::string& file : image_files(source)) {
    const data::DecodedImage probe = data::load_image(file, 0, false);
    if (!probe.ok()) {
      spdlog::warn("{}: skipped, it does not decode ({})", file, probe.error);
      ++summary.unreadable;
      continue;
    }
    data::ImageRecord r;
    r.file = fs::absolute(file).string();
    r.image_id = static_cast<int64_t>(records.size());
    r.width = probe.source_width;
    r.height = probe.source_height;
    images.push_back(
        {{"id", r.image_id}, {"file_name", file}, {"width", r.width}, {"height", r.height}});
    records.push_back(std::move(r));
  }
  if (records.empty()) throw DataError(source + ": no image decoded");

  data::DatasetInfo info = dataset ? *dataset : data::DatasetInfo{};
  if (info.names.empty())
    for (int64_t c = 0; c < model.arch().nc; ++c) {
      info.names.push_back(std::to_string(c));
      info.coco_ids.push_back(c);
    }
  if (model.head()->options().pose()) {
    info.kpt_count = model.arch().kpt_shape[0];
    info.kpt_dims = model.arch().kpt_shape[1];
  }
  data::LoaderOptions lo =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/false);
  lo.batch = std::min<int64_t>(lo.batch, 8);
  lo.stride = static_cast<int>(model.max_stride());
  data::Loader loader(info, records, x.augment, lo);
  loader.start_epoch(0, 0);

  const torch::Device device = compat::parse_device(x.runtime.device);
  const bool bf16 =
      effective_precision(parse_precision(x.train.precision), device) == Precision::kBf16;
  const eval::NmsOptions nms = eval::nms_options(x.val, /*predict=*/true);
  MosaicStyle style;
  style.names = info.names;
  style.kpt_count = static_cast<int>(info.kpt_count);
  style.skeleton = info.skeleton;
  style.min_score = static_cast<float>(nms.conf);
  style.max_images = 1;

  torch::NoGradGuard no_grad;
  model.eval();
  model.to(device);
  std::vector<eval::CocoRecord> results;
  while (std::optional<data::Batch> batch = loader.next()) {
    const std::vector<eval::ImageDetections> dets =
        eval::detect_batch(model, batch->images, nms, bf16, device);
    for (size_t i = 0; i < dets.size(); ++i) {
      const eval::ImageFrame& frame = batch->frames[i];
      const eval::ImageDetections original = eval::to_original_pixels(dets[i], frame);
      for (auto& r : eval::to_coco_records(original, frame.image_id, info.coco_ids))
        results.push_back(std::move(r));
      summary.detections += original.size();

      const data::ImageRecord& record = records[static_cast<size_t>(frame.image_id)];
      PlotImage tile;
      tile.image = data::load_image(record.file, 0, false).bgr;
      tile.title = fs::path(record.file).filename().string();
      if (original.size() > 0) {
        const torch::Tensor b = original.boxes_xyxy.to(torch::kFloat).contiguous();  // [N, 4]
        const torch::Tensor s = original.scores.to(torch::kFloat).contiguous();      // [N]
        const torch::Tensor c = original.classes.to(torch::kLong).contiguous();      // [N]
        for (int64_t n = 0; n < original.size(); ++n) {
          const float* p = b.data_ptr<float>() + 4 * n;
          tile.boxes_xyxy.push_back({p[0], p[1], p[2], p[3]});
          tile.scores.push_back(s.data_ptr<float>()[n]);
          tile.classes.push_back(static_cast<int>(c.data_ptr<int64_t>()[n]));
        }
        if (original.keypoints.defined()) {
          const torch::Tensor k = original.keypoints.to(torch::kFloat).contiguous();
          tile.keypoints.assign(k.data_ptr<float>(), k.data_ptr<float>() + k.numel());
        }
      }
      style.max_size = std::max(tile.image.cols, tile.image.rows);
      const std::string name = fs::path(record.file).stem().string() + ".jpg";
      save_batch_mosaic({tile}, style, (fs::path(out_dir) / name).string());
      ++summary.images;
    }
  }
  eval::write_predictions_json((fs::path(out_dir) / "predictions.json").string(), results);
  write_file_atomic((fs::path(out_dir) / "images.json").string(), images.dump(1) + "\n");
  return summary;
}

}  // namespace detrain::train
