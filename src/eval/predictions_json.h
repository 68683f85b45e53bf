// predictions.json: detections in COCO results format ([{"image_id", "category_id", "bbox",
// "score"(, "keypoints")}, ...]), written atomically and streamed record by record, so a
// 5,000-image validation with 300 detections each never builds one big string.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "eval/coco_record.h"

namespace detrain::eval {

// Numbers in shortest round-trip form: reading the file back gives the records' exact doubles.
void write_predictions_json(std::ostream& out, const std::vector<CocoRecord>& records);
// Atomic file write (IoError naming the path on failure).
void write_predictions_json(const std::string& path, const std::vector<CocoRecord>& records);

}  // namespace detrain::eval
