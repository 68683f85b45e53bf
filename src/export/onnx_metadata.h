// The metadata properties of an exported ONNX file, written the way Ultralytics 8.4.190's
// exporter writes them (each value is Python's str() of the value: names as a dict literal,
// imgsz and kpt_shape as lists, booleans as True / False), so that its AutoBackend, which
// ast.literal_evals names, imgsz, kpt_shape, args and end2end and int()s stride, batch and
// channels, loads the file as one of its own (`YOLO("x.onnx")`). docs/export.md has the table.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "export/onnx_export.h"

namespace detrain::exporter {

// The (key, value) pairs in the order they are written. `detections_rows`: the rows of an
// end2end model's `detections` output (max_det, or the anchor count where that is smaller).
std::vector<std::pair<std::string, std::string>> onnx_metadata(const model::YoloModelImpl& model,
                                                               const OnnxOptions& options,
                                                               int64_t detections_rows);

}  // namespace detrain::exporter
