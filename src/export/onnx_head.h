// ONNX nodes for a fused Detect / Pose / Pose26 head: the predicting branch's towers (one2one_*
// for end2end heads), the decoding of heads.cpp (DFL, anchors, strides, keypoints) and, for
// end2end heads, the top-k that makes the `detections` rows. Anchor grids become constants,
// so the graph is fixed to the export image size (the batch stays free).
#pragma once

#include <vector>

#include "export/onnx_modules.h"
#include "model/heads.h"

namespace detrain::exporter {

struct HeadGraph {
  Value decoded;     // [B, 4 + nc (+ K*ndim), A] float32, as EvalOutput::decoded
  Value detections;  // end2end: [B, k, 6 (+ K*ndim)] float32, as EvalOutput::detections
};

// `feats`: the head's inputs (P3, P4, P5) in ctx.dtype. Decoding runs in float32.
HeadGraph emit_head(EmitContext& ctx, model::HeadImpl& head, const std::vector<Value>& feats,
                    int64_t max_det, const std::string& path);

}  // namespace detrain::exporter
