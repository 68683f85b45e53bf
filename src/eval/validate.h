// Forwarding header: validation moved to infer/validate.h (module infer, namespace
// detrain::infer) so that eval stays the LibTorch-free COCO evaluator. Kept only while the
// trainer split is in flight, for files that still include this path or name these types as
// eval::...; include infer/validate.h and write infer:: instead, then delete this file. The
// layering test counts an include of this file as an edge to infer and lists who still uses it.
#pragma once

#include "infer/validate.h"

namespace detrain::eval {
using geometry::ImageFrame;
using infer::BatchObserver;
using infer::detect_batch;
using infer::end2end_postprocess;
using infer::ImageDetections;
using infer::nms_options;
using infer::nms_postprocess;
using infer::NmsOptions;
using infer::RawOutputObserver;
using infer::stats_table;
using infer::to_coco_records;
using infer::to_original_pixels;
using infer::ValBatch;
using infer::ValidationOptions;
using infer::ValidationResult;
using infer::Validator;
}  // namespace detrain::eval
