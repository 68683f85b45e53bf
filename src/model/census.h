// Model census: parameter and layer totals and GFLOPs (the MuSGD view of the parameters is
// optim/musgd_census.h: it routes parameters by optimizer group, which is optim's). GFLOPs
// count 2 x multiply-accumulates of convolutions, linears and attention matmuls; BN,
// activations and pooling are not counted (the reference's profiler adds BN, about 1% more).
#pragma once

#include <cstddef>
#include <cstdint>

namespace detrain::model {

class YoloModelImpl;

struct ModelTotals {
  int64_t layers = 0;      // leaf modules, counted as the reference's model_info counts them
  int64_t tensors = 0;     // parameter tensors (frozen included)
  int64_t parameters = 0;  // elements of all parameters
  int64_t gradients = 0;   // elements of trainable parameters
};
ModelTotals model_totals(const YoloModelImpl& model);

// Elements of every parameter of layer `index` (the table's params column).
int64_t layer_parameters(const YoloModelImpl& model, size_t index);

// GFLOPs of one image at imgsz x imgsz: the training graph (both branches, sigma heads) for an
// unfused model, the inference graph for a fused one. Runs one forward at 2 x the largest
// stride without touching BN statistics and scales exactly: convolutions grow with the area,
// attention products with its square.
double gflops(YoloModelImpl& model, int64_t imgsz);

}  // namespace detrain::model
