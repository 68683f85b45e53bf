// The MuSGD census of a model's parameters: matrix parameters, their exact (shape, dtype,
// device) keys inside each optimizer group, and the row/column buckets of upstream's batched
// Newton-Schulz (`detrain model info` prints it; the optimizer benchmarks size themselves by it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/param_info.h"

namespace detrain::optim {

struct CensusKey {
  int group = 0;               // optimizer group index 0..7 (group_index)
  std::vector<int64_t> shape;  // exact tensor shape
  std::string dtype, device;
  int64_t count = 0;  // matrices sharing the key (stacked into one batched Newton-Schulz)
};

struct GroupCensus {
  int group = 0;
  std::string name;        // group_name
  int64_t tensors = 0;     // trainable parameter tensors in the group
  int64_t parameters = 0;  // their elements
  int64_t matrices = 0;    // ndim >= 2
  int64_t keys = 0;        // distinct (shape, dtype, device) among the matrices
};

struct Census {
  int64_t tensors = 0;              // all parameter tensors
  int64_t matrices = 0;             // trainable, ndim >= 2 (what Muon orthogonalises)
  int64_t frozen_matrices = 0;      // ndim >= 2 but frozen (the DFL projection)
  int64_t distinct_shapes = 0;      // distinct (shape, dtype, device) over all matrices
  int64_t keys = 0;                 // distinct (group, shape, dtype, device)
  int64_t row_buckets = 0;          // distinct min(rows, cols) of the (out, in*kh*kw) views
  int64_t col_buckets = 0;          // distinct max(rows, cols)
  std::vector<GroupCensus> groups;  // the 8 optimizer groups, in order (empty ones included)
  std::vector<CensusKey> buckets;   // every key, largest count first

  double matrices_per_shape() const;
  double matrices_per_key() const;
};

// The census of parameters as the MuSGD optimizer routes them (Muon on).
Census census(const std::vector<model::ParamInfo>& params);

}  // namespace detrain::optim
