// See onnx_export.h. Walks the layer table like YoloModelImpl::head_inputs, then the head.
#include "export/onnx_export.h"

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/version.h"
#include "export/onnx_head.h"
#include "export/onnx_metadata.h"

namespace detrain::exporter {

namespace {

// IR version that each opset first shipped with (onnx/helper.py's VERSION_TABLE).
int64_t ir_version_for(int64_t opset) {
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

std::vector<Value> head_inputs(EmitContext& ctx, model::YoloModelImpl& model, const Value& images) {
  const auto& rows = model.rows();
  std::vector<Value> outputs(rows.size());
  auto input_of = [&](int f, size_t i) { return f < 0 ? images : outputs.at(f); };
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const std::string path = "model." + std::to_string(i);
    auto layer = model.layer(i);
    if (auto* concat = layer->as<model::ConcatImpl>()) {
      std::vector<Value> parts;
      for (int f : rows[i].from) parts.push_back(input_of(f, i));
      outputs[i] = emit_concat(ctx, parts, concat->dim(), path);
    } else {
      outputs[i] = emit_module(ctx, *layer, input_of(rows[i].from.at(0), i), path);
    }
  }
  std::vector<Value> feats;
  for (int f : rows.back().from) feats.push_back(outputs.at(f));
  return feats;
}

OnnxValueInfo value_info(const std::string& name, const torch::Tensor& sample,
                         const OnnxOptions& o) {
  OnnxValueInfo v;
  v.name = name;
  v.type = OnnxType::kFloat;
  for (int64_t d = 0; d < sample.dim(); ++d) {
    if (d == 0)
      v.dims.push_back(o.dynamic ? OnnxValueInfo::Dim{-1, "batch"}
                                 : OnnxValueInfo::Dim{o.batch, ""});
    else
      v.dims.push_back({sample.size(d), ""});
  }
  return v;
}

}  // namespace

void check_onnx_options(const model::YoloModelImpl& model, const OnnxOptions& o) {
  const int64_t stride = model.max_stride();
  if (o.imgsz <= 0 || o.imgsz % stride != 0)
    throw Error(ExitCode::kUsage,
                "--imgsz " + std::to_string(o.imgsz) + " is not a multiple of " +
                    model.arch().name() + "'s stride " + std::to_string(stride) +
                    "; pass e.g. --imgsz " +
                    std::to_string(std::max<int64_t>(1, o.imgsz / stride) * stride));
  if (o.opset < kMinOpset || o.opset > kMaxOpset)
    throw Error(ExitCode::kUsage, "--opset " + std::to_string(o.opset) +
                                      " is not supported; pass " + std::to_string(kMinOpset) +
                                      " to " + std::to_string(kMaxOpset));
  if (o.batch < 1) throw Error(ExitCode::kUsage, "--batch must be at least 1");
}

OnnxModel build_onnx(model::YoloModelImpl& model, const OnnxOptions& o) {
  TORCH_CHECK(model.fused(), "build_onnx needs a fused model");
  check_onnx_options(model, o);
  torch::NoGradGuard no_grad;
  GraphBuilder graph(o.opset);
  EmitContext ctx{graph, o.half ? torch::kHalf : torch::kFloat};
  const torch::Tensor sample = torch::rand({1, 3, o.imgsz, o.imgsz});
  Value images{"images", sample};
  if (o.half)
    images = {graph.op("Cast", {images.name}, {OnnxAttribute::of_int("to", 10)}, "images"), sample};
  const auto feats = head_inputs(ctx, model, images);
  const size_t head_index = model.rows().size() - 1;
  const HeadGraph head =
      emit_head(ctx, *model.head(), feats, o.max_det, "model." + std::to_string(head_index));
  const Value& output = model.arch().end2end ? head.detections : head.decoded;
  const std::string output_name = model.arch().end2end ? "detections" : "predictions";
  graph.rename_output(output.name, output_name);

  OnnxModel m;
  m.ir_version = ir_version_for(o.opset);
  m.opset = o.opset;
  m.producer_name = "detrain";
  m.producer_version = version_string();
  m.graph.name = model.arch().name();
  m.graph.nodes = std::move(graph.graph().nodes);
  m.graph.initializers = std::move(graph.graph().initializers);
  m.graph.inputs.push_back(value_info("images", sample, o));
  m.graph.outputs.push_back(value_info(output_name, output.sample, o));
  m.metadata = onnx_metadata(model, o, model.arch().end2end ? output.sample.size(1) : 0);
  return m;
}

void export_onnx(model::YoloModelImpl& model, const OnnxOptions& options, const std::string& path) {
  check_onnx_options(model, options);
  model.fuse();
  write_file_atomic(path, serialize(build_onnx(model, options)));
}

}  // namespace detrain::exporter
