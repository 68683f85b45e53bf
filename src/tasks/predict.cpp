// See predict.h. Each image goes through the reference's predict letterbox
// (data/predict_letterbox.h), one at a time as `yolo predict` runs, so that boxes equal
// YOLO(weights).predict's.
#include "tasks/predict.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/timer.h"
#include "compat/torch_compat.h"
#include "data/coco_records.h"
#include "data/decode.h"
#include "data/predict_letterbox.h"
#include "eval/predictions_json.h"
#include "infer/postprocess.h"
#include "infer/validate.h"
#include "model/channels_last.h"
#include "model/precision.h"
#include "report/batch_plots.h"
#include "report/plots.h"
#include "tasks/predict_sources.h"

namespace detrain::tasks {

namespace fs = std::filesystem;

namespace {

// One source image ready for the model: decoded, letterboxed, RGB.
struct PreparedImage {
  data::DecodedImage decoded;
  data::PredictInput input;
  cv::Mat rgb;
};

// YOLO txt: one "class cx cy w h" line per detection, normalised to the image size; pose
// models add "x y score" per keypoint.
std::string yolo_txt(const infer::DetectionArrays& d, int64_t width, int64_t height) {
  std::string text;
  const double w = static_cast<double>(width), h = static_cast<double>(height);
  const size_t kvals = static_cast<size_t>(d.kpt_count) * 3;
  char buf[64];
  for (size_t n = 0; n < d.size(); ++n) {
    const auto& p = d.boxes_xyxy[n];
    std::snprintf(buf, sizeof buf, "%lld %.6f %.6f %.6f %.6f", static_cast<long long>(d.classes[n]),
                  (p[0] + p[2]) / 2 / w, (p[1] + p[3]) / 2 / h, (p[2] - p[0]) / w,
                  (p[3] - p[1]) / h);
    text += buf;
    const float* q = d.keypoints.data() + n * kvals;
    for (size_t j = 0; j < kvals; j += 3) {
      std::snprintf(buf, sizeof buf, " %.6f %.6f %.4f", q[j] / w, q[j + 1] / h, q[j + 2]);
      text += buf;
    }
    text += "\n";
  }
  return text;
}

}  // namespace

PredictSummary predict_images(model::YoloModelImpl& model, const config::Experiment& x,
                              const data::DatasetInfo* dataset, const std::string& source,
                              const std::string& out_dir, const PredictOptions& options) {
  PredictSummary summary;
  summary.out_dir = out_dir;
  ensure_writable_dir(out_dir);

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
  const torch::Device device = compat::parse_device(x.runtime.device);
  // fp32, as `yolo predict` runs by default, so that scores equal the reference's; BF16
  // autocast moves mid-range scores by about 0.02. train.precision=bf16-always asks for it.
  const bool bf16 = model::parse_precision(x.train.precision) == model::Precision::kBf16Always;
  const infer::NmsOptions nms = infer::nms_options(x.val, /*predict=*/true);
  // End-to-end models (YOLO26) predict with their one-to-many branch and NMS unless val.nms is
  // false (nms=False), as 8.4.190's predictor does (AutoBackend's end2end = args.nms is False).
  const bool one2one = !x.val.nms;
  if (model.head()->options().end2end)
    spdlog::info("end-to-end model: {}", one2one ? "the NMS-free one-to-one head (val.nms=false)"
                                                 : "the one-to-many branch and NMS (val.nms=true; "
                                                   "nms=False runs the NMS-free head)");
  const int stride = static_cast<int>(model.max_stride());
  // Drawn as the reference's Results.plot: every detection NMS kept, no file-name stamp.
  report::MosaicStyle style;
  style.names = info.names;
  style.kpt_count = static_cast<int>(info.kpt_count);
  style.skeleton = info.skeleton;
  torch::NoGradGuard no_grad;
  model.eval();
  model.to(device);
  const model::MemoryFormatDecision layout =
      model::choose_memory_format(x.runtime.memory_format, device);
  model.set_memory_format(layout.format);
  spdlog::debug("memory format {}", model::describe(layout));
  std::vector<eval::CocoRecord> results;
  // Image ids are positions among the decoded files of the sorted list.
  nlohmann::ordered_json images = nlohmann::ordered_json::array();
  OutputNames drawn(out_dir), labels((fs::path(out_dir) / "labels").string());
  if (options.save_txt) ensure_writable_dir((fs::path(out_dir) / "labels").string());
  // The next image is decoded and letterboxed while the model runs on this one.
  const std::vector<SourceImage> sources = source_images(source, options.recursive);
  const int imgsz = static_cast<int>(x.data.imgsz);
  auto prepare = [&sources, imgsz, stride](size_t i) {
    PreparedImage p;
    p.decoded = data::load_image(sources[i].file, 0, false);
    if (!p.decoded.ok()) return p;
    // One image at a time through the reference's predict letterbox (batch 1, as `yolo
    // predict` runs), so boxes equal YOLO(weights).predict's.
    p.input = data::predict_letterbox(p.decoded.bgr, imgsz, stride);
    cv::cvtColor(p.input.image, p.rgb, cv::COLOR_BGR2RGB);
    return p;
  };
  std::future<PreparedImage> next;
  if (!sources.empty()) next = std::async(std::launch::async, prepare, 0);
  for (size_t index = 0; index < sources.size(); ++index) {
    const Stopwatch clock;
    const SourceImage& source_image = sources[index];
    const std::string& file = source_image.file;
    PreparedImage prepared = next.get();
    if (index + 1 < sources.size()) next = std::async(std::launch::async, prepare, index + 1);
    const data::DecodedImage& decoded = prepared.decoded;
    if (!decoded.ok()) {
      spdlog::warn("{}: skipped, it does not decode ({})", file, decoded.error);
      ++summary.unreadable;
      continue;
    }
    const auto image_id = static_cast<int64_t>(images.size());
    images.push_back({{"id", image_id},
                      {"file_name", file},
                      {"width", decoded.bgr.cols},
                      {"height", decoded.bgr.rows}});
    data::PredictInput& input = prepared.input;
    input.frame.image_id = image_id;
    const cv::Mat& rgb = prepared.rgb;
    const torch::Tensor batch =
        torch::from_blob(rgb.data, {1, rgb.rows, rgb.cols, 3}, torch::kUInt8)
            .permute({0, 3, 1, 2})
            .contiguous(model::torch_memory_format(layout.format));  // [1, 3, H, W]
    const std::vector<infer::ImageDetections> dets =
        infer::detect_batch(model, batch, nms, one2one, bf16, device);
    const infer::ImageDetections original = infer::to_original_pixels(dets[0], input.frame);
    for (auto& r : infer::to_coco_records(original, image_id, info.coco_ids))
      results.push_back(std::move(r));
    summary.detections += original.size();
    const std::string& name = source_image.relative;
    spdlog::info("{}: {} detections, {:.0f} ms", name, original.size(), clock.millis());
    ++summary.images;
    if (!options.save_txt && !options.draw) continue;
    const infer::DetectionArrays arrays = infer::to_arrays(original);
    if (options.save_txt) {
      const std::string txt = labels.claim(name, ".txt");
      ensure_writable_dir(fs::path(txt).parent_path().string());
      write_file_atomic(txt, yolo_txt(arrays, decoded.bgr.cols, decoded.bgr.rows));
    }
    if (!options.draw) continue;
    report::PlotImage tile;
    tile.image = decoded.bgr;
    report::set_predictions(tile, arrays);
    const std::string out = drawn.claim(name);
    ensure_writable_dir(fs::path(out).parent_path().string());
    report::save_prediction(tile, style, out);
  }
  if (images.empty()) throw DataError(source + ": no image decoded");
  // Never over an earlier run's pair: predictions_2.json with images_2.json, and so on.
  const auto json = drawn.claim_together({"predictions.json", "images.json"});
  summary.predictions_json = json[0];
  summary.images_json = json[1];
  eval::write_predictions_json(summary.predictions_json, results);
  write_file_atomic(summary.images_json, images.dump(1) + "\n");
  return summary;
}

}  // namespace detrain::tasks
