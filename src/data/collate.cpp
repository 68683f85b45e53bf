// Collate; see collate.h. Unlike the reference's torch collate_fn, images go straight from
// the BGR samples into the planes of one (optionally pinned) batch tensor, no per-image tensors.
#include "data/collate.h"

#include <opencv2/core.hpp>
#include <opencv2/core/hal/hal.hpp>
#include <opencv2/imgproc.hpp>
#include <utility>

#include "common/errors.h"

namespace detrain::data {

Batch Batch::to(const torch::Device& device) const {
  Batch out = *this;
  auto move = [&](torch::Tensor& t) {
    if (t.defined()) t = t.to(device, /*non_blocking=*/true);
  };
  move(out.images);
  move(out.batch_idx);
  move(out.cls);
  move(out.boxes_xywhn);
  move(out.keypoints);
  return out;
}

namespace {

// One BGR sample into batch image `base` as planes R, G, B (or B, G, R when the sample keeps
// BGR): OpenCV's vectorised deinterleave, twice as fast here as mixChannels with a channel map.
void write_planes(const Sample& s, uint8_t* base, int h, int w) {
  const size_t plane = static_cast<size_t>(h) * w;
  uint8_t* planes[3] = {base + 2 * plane, base + plane, base};
  if (s.keep_bgr) std::swap(planes[0], planes[2]);
  if (s.image.isContinuous()) {
    cv::hal::split8u(s.image.data, planes, static_cast<int>(plane), 3);
  } else {
    for (int y = 0; y < h; ++y) {
      const size_t offset = static_cast<size_t>(y) * w;
      uint8_t* rows[3] = {planes[0] + offset, planes[1] + offset, planes[2] + offset};
      cv::hal::split8u(s.image.ptr<uint8_t>(y), rows, w, 3);
    }
  }
}

// The same into a channels-last batch image: interleaved RGB (or BGR) pixels, row by row.
void write_pixels(const Sample& s, uint8_t* base, int h, int w) {
  cv::Mat out(h, w, CV_8UC3, base);  // a view of the batch tensor's memory
  if (s.keep_bgr)
    s.image.copyTo(out);
  else
    cv::cvtColor(s.image, out, cv::COLOR_BGR2RGB);
}

}  // namespace

Batch collate(const std::vector<Sample>& samples, bool pin_memory, bool channels_last) {
  TORCH_CHECK(!samples.empty(), "collate: no samples");
  const int h = samples[0].height(), w = samples[0].width();
  const int64_t b = static_cast<int64_t>(samples.size());
  const int64_t k = samples[0].kpt_count;
  int64_t n = 0;
  for (const auto& s : samples) {
    if (s.height() != h || s.width() != w || s.image.type() != CV_8UC3)
      throw DataError("collate: sample " + s.file + " is " + std::to_string(s.width()) + "x" +
                      std::to_string(s.height()) + ", the batch is " + std::to_string(w) + "x" +
                      std::to_string(h) + " (every sample of a batch needs one size)");
    n += static_cast<int64_t>(s.size());
  }
  Batch batch;
  batch.images = torch::empty(
      {b, 3, h, w},
      torch::TensorOptions()
          .dtype(torch::kUInt8)
          .pinned_memory(pin_memory)
          .memory_format(channels_last ? torch::MemoryFormat::ChannelsLast
                                       : torch::MemoryFormat::Contiguous));  // [B, 3, H, W]
  batch.batch_idx = torch::empty({n}, torch::kInt64);                        // [N]
  batch.cls = torch::empty({n}, torch::kInt64);                              // [N]
  batch.boxes_xywhn = torch::empty({n, 4}, torch::kFloat32);                 // [N, 4]
  if (k > 0) batch.keypoints = torch::empty({n, k, 3}, torch::kFloat32);     // [N, K, 3]
  auto* images = batch.images.data_ptr<uint8_t>();
  auto* batch_idx = batch.batch_idx.data_ptr<int64_t>();
  auto* cls = batch.cls.data_ptr<int64_t>();
  auto* boxes = batch.boxes_xywhn.data_ptr<float>();
  float* kpts = k > 0 ? batch.keypoints.data_ptr<float>() : nullptr;
  const size_t plane = static_cast<size_t>(h) * w;
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  int64_t row = 0;
  for (int64_t i = 0; i < b; ++i) {
    const Sample& s = samples[static_cast<size_t>(i)];
    uint8_t* base = images + static_cast<size_t>(i) * 3 * plane;
    if (channels_last)
      write_pixels(s, base, h, w);
    else
      write_planes(s, base, h, w);
    for (size_t j = 0; j < s.size(); ++j, ++row) {
      const auto& box = s.boxes_xyxy_px[j];
      batch_idx[row] = i;
      cls[row] = s.classes[j];
      boxes[row * 4 + 0] = (box[0] + box[2]) / 2 / fw;
      boxes[row * 4 + 1] = (box[1] + box[3]) / 2 / fh;
      boxes[row * 4 + 2] = (box[2] - box[0]) / fw;
      boxes[row * 4 + 3] = (box[3] - box[1]) / fh;
      for (int64_t p = 0; p < k; ++p) {
        const float* src = s.keypoints_px.data() + (j * k + p) * 3;
        float* dst = kpts + (row * k + p) * 3;
        dst[0] = src[0] / fw;
        dst[1] = src[1] / fh;
        dst[2] = src[2];
      }
    }
    geometry::ImageFrame frame;
    frame.image_id = s.image_id;
    frame.orig_width = s.orig_width;
    frame.orig_height = s.orig_height;
    frame.ratio_x = s.placement.ratio_x;
    frame.ratio_y = s.placement.ratio_y;
    frame.pad_left = s.placement.pad_left;
    frame.pad_top = s.placement.pad_top;
    batch.frames.push_back(frame);
    batch.files.push_back(s.file);
  }
  return batch;
}

}  // namespace detrain::data
