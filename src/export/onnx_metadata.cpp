// See onnx_metadata.h. Keys and value forms from ultralytics/engine/exporter.py (8.4.190,
// Exporter.__call__'s self.metadata and export_onnx's str(v)) and what
// ultralytics/nn/backends/base.py's apply_metadata does with each.
#include "export/onnx_metadata.h"

#include "common/version.h"
#include "export/python_literal.h"

namespace detrain::exporter {

namespace {

// The exporter's args for format=onnx (its fmt_keys, in its order), as detrain exported.
std::string python_args(const model::ArchInfo& arch, const OnnxOptions& o) {
  return std::string("{'data': None, 'batch': ") + std::to_string(o.batch) +
         ", 'fraction': 1.0, 'quantize': " + (o.half ? "16" : "None") +
         // nms False asks for the NMS-free head (AutoBackend: end2end); None: NMS outside.
         ", 'nms': " + (arch.end2end ? "False" : "None") +
         ", 'dynamic': " + python_bool(o.dynamic) +
         ", 'simplify': False, 'opset': " + std::to_string(o.opset) + "}";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> onnx_metadata(const model::YoloModelImpl& model,
                                                               const OnnxOptions& o,
                                                               int64_t detections_rows) {
  const auto& arch = model.arch();
  const bool pose = arch.kpt_shape[0] > 0;
  std::vector<std::pair<std::string, std::string>> m{
      {"description", "detrain " + arch.name() + " model"},
      {"author", "detrain"},
      {"version", version_string()},
      {"stride", std::to_string(model.max_stride())},
      {"task", pose ? "pose" : "detect"},
      {"head", model.rows().back().module},  // Detect, Pose or Pose26, as the reference's class
      {"batch", std::to_string(o.batch)},
      {"imgsz", python_int_list({o.imgsz, o.imgsz})},
      {"names", python_names(arch.nc, o.names)},
      {"args", python_args(arch, o)},
      {"channels", "3"},
      {"end2end", python_bool(arch.end2end)}};
  if (pose) m.emplace_back("kpt_shape", python_int_list({arch.kpt_shape[0], arch.kpt_shape[1]}));
  // detrain's own keys, which AutoBackend only keeps as attributes nothing reads.
  m.emplace_back("arch", arch.name());
  m.emplace_back("strides", python_int_list(arch.strides));
  if (arch.end2end) m.emplace_back("max_det", std::to_string(detections_rows));
  return m;
}

}  // namespace detrain::exporter
