// TensorBoard's Event messages (tensorboard/compat/proto/event.proto and summary.proto, field
// numbers as TensorBoard 2.18 defines them), encoded with common/protobuf_wire.h: the file
// version, the SessionLog START that tells readers a run restarted, and summaries of scalars
// (simple_value), text (the text plugin's string tensor) and encoded images. Only writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace detrain::report {

// "brain.Event:2": the event format readers expect first in every file.
std::string file_version_event(double wall_time);

// SessionLog{status: START} at `step`. Readers of format 2 (EventAccumulator) then drop every
// event they have already read with a step >= `step`, from every tag: what a process that
// restarted from an earlier point wrote past it.
std::string session_start_event(double wall_time, int64_t step);

// One Summary of scalars (tag, value), all at `step`; values are stored as float32.
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars);

// A text-plugin summary: `markdown` as a scalar DT_STRING tensor with plugin name "text".
std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& markdown);

// An image as TensorBoard stores it: its encoded file bytes (PNG or JPEG) and their size.
struct ImageSummary {
  int32_t height = 0, width = 0;
  int32_t colorspace = 0;  // channels: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA
  std::string encoded;     // the file's bytes
};
std::string image_event(double wall_time, int64_t step, const std::string& tag,
                        const ImageSummary& image);

// The image file at `path` with its size and channels (decoded once to learn them), or nullopt
// when it is missing or no image.
std::optional<ImageSummary> read_image_summary(const std::string& path);

}  // namespace detrain::report
