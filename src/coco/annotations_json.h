// The one reader of COCO annotation files (instances / person_keypoints JSON): one validating
// pass straight into an AnnotationTable (no DOM, segmentation skipped). The loader and the
// evaluator read with the same grammar and the same field rules (finite numbers, integral ids,
// iscrowd 0/1/true/false, bbox of 4 values); ReadOptions says only which fields the consumer
// requires, so a file that both accept means the same thing to both.
#pragma once

#include <string>

#include "coco/annotations.h"
#include "coco/json_cursor.h"

namespace detrain::coco {

struct ReadOptions {
  const char* kind = "annotation";  // "a COCO <kind> file" in messages ("ground-truth": eval)
  bool require_categories = false;  // a 'categories' list must be there (the evaluator's ids)
  // Images need 'file_name' and positive integral 'width' and 'height' (the loader opens and
  // letterboxes them); without it those fields are skipped unread.
  bool image_files = false;
  // Annotations need 'bbox' (the loader's targets); without it a missing bbox is recorded in
  // ann_fields and the evaluator fails only if it evaluates that annotation.
  bool require_bbox = false;
  // K keypoints per annotation: -1 any (the first annotation with keypoints decides), 0 none
  // (the field is skipped unread), K > 0 exactly 3K values whenever the field is there.
  int keypoints = -1;
};

// Parses a COCO annotation file. Malformed JSON is a DataError naming `source` and the byte
// offset; a record without a required field names its list position (and id when known).
AnnotationTable read_annotations(JsonInput text, const std::string& source,
                                 const ReadOptions& options);
// The same from a file (IoError naming the path when it cannot be read).
AnnotationTable load_annotations(const std::string& path, const ReadOptions& options);

}  // namespace detrain::coco
