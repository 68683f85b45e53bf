// See tensorboard_summaries.h. Field numbers: Event {wall_time 1, step 2, file_version 3,
// summary 5, session_log 7}; SessionLog {status 1: START = 1}; Summary {value 1}; Summary.Value
// {tag 1, simple_value 2, image 4, tensor 8, metadata 9}; Summary.Image {height 1, width 2,
// colorspace 3, encoded_image_string 4}; SummaryMetadata {plugin_data 1: {plugin_name 1}};
// TensorProto {dtype 1: DT_STRING = 7, tensor_shape 2, string_val 8}.
#include "report/tensorboard_summaries.h"

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "common/atomic_file.h"
#include "common/protobuf_wire.h"

namespace detrain::report {

namespace {

ProtoWriter event_header(double wall_time, int64_t step) {
  ProtoWriter event;
  event.double_field(1, wall_time);
  if (step != 0) event.int_field(2, step);  // proto3: a zero step is the default, left out
  return event;
}

std::string summary_event(double wall_time, int64_t step, const std::vector<std::string>& values) {
  ProtoWriter summary;
  for (const auto& value : values) summary.bytes_field(1, value);
  ProtoWriter event = event_header(wall_time, step);
  event.bytes_field(5, summary.take());
  return event.take();
}

}  // namespace

std::string file_version_event(double wall_time) {
  ProtoWriter event = event_header(wall_time, 0);
  event.bytes_field(3, "brain.Event:2");
  return event.take();
}

std::string session_start_event(double wall_time, int64_t step) {
  ProtoWriter session;
  session.int_field(1, 1);  // START
  ProtoWriter event = event_header(wall_time, step);
  event.bytes_field(7, session.take());
  return event.take();
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars) {
  std::vector<std::string> values;
  for (const auto& [tag, value] : scalars) {
    ProtoWriter v;
    v.bytes_field(1, tag);
    v.float_field(2, static_cast<float>(value));
    values.push_back(v.take());
  }
  return summary_event(wall_time, step, values);
}

std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& markdown) {
  ProtoWriter plugin;
  plugin.bytes_field(1, "text");
  ProtoWriter metadata;
  metadata.bytes_field(1, plugin.take());
  ProtoWriter tensor;
  tensor.int_field(1, 7);     // DT_STRING
  tensor.bytes_field(2, "");  // a scalar: no dimensions
  tensor.bytes_field(8, markdown);
  ProtoWriter v;
  v.bytes_field(1, tag);
  v.bytes_field(8, tensor.take());
  v.bytes_field(9, metadata.take());
  return summary_event(wall_time, step, {v.take()});
}

std::string image_event(double wall_time, int64_t step, const std::string& tag,
                        const ImageSummary& image) {
  ProtoWriter img;
  img.int_field(1, image.height);
  img.int_field(2, image.width);
  img.int_field(3, image.colorspace);
  img.bytes_field(4, image.encoded);
  ProtoWriter v;
  v.bytes_field(1, tag);
  v.bytes_field(4, img.take());
  return summary_event(wall_time, step, {v.take()});
}

std::optional<ImageSummary> read_image_summary(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  ImageSummary out;
  out.encoded = read_file(path);
  const std::vector<uchar> bytes(out.encoded.begin(), out.encoded.end());
  const cv::Mat decoded = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
  if (decoded.empty()) return std::nullopt;
  out.height = decoded.rows;
  out.width = decoded.cols;
  out.colorspace = decoded.channels();
  return out;
}

}  // namespace detrain::report
