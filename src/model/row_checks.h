// Argument checks for the rows of an architecture YAML, run on every row before any layer is
// built, so that a bad row is one ModelError naming the file, the row, the module, the
// argument and its allowed range instead of a LibTorch error, a division by zero or minutes of
// work on a kernel of 999. The ranges keep every layer buildable and its output the size the
// builder assumes (odd kernels with automatic padding, strides 1, 2, 4 or 8, widths that divide by
// their groups and attention heads). Each check takes the arguments as the module's constructor
// gets them: input width c1 and scaled output width c2 first (base modules), repeats third
// (repeat modules).
#pragma once

#include <cstdint>

#include "model/yaml_args.h"

namespace detrain::model {

// Widest layer output (channels) a row may ask for.
constexpr int64_t kMaxRowChannels = 16384;
// Largest kernel (Conv, DWConv, Bottleneck, SPPF).
constexpr int64_t kMaxKernel = 15;
// Most weights (elements) one convolution may hold: 2^28, 1 GiB in fp32.
constexpr int64_t kMaxConvWeights = int64_t{1} << 28;
// Most blocks a repeat module may chain.
constexpr int64_t kMaxRepeats = 64;

void check_conv(const RowArgs& a);        // Conv(c1, c2, k, s, p, g, d, act)
void check_dwconv(const RowArgs& a);      // DWConv(c1, c2, k, s, d, act)
void check_bottleneck(const RowArgs& a);  // Bottleneck(c1, c2, shortcut, g, k, e)
void check_c2f(const RowArgs& a);         // C2f(c1, c2, n, shortcut, g, e) and C3 alike
void check_c3k2(const RowArgs& a);        // C3k2(c1, c2, n, c3k, e, attn, g, shortcut)
void check_sppf(const RowArgs& a);        // SPPF(c1, c2, k, n, shortcut)
void check_c2psa(const RowArgs& a);       // C2PSA(c1, c2, n, e)
void check_concat(const RowArgs& a);      // Concat(dimension)
void check_nothing(const RowArgs& a);     // modules checked where they are read

// The head's class count (1 to config's model.nc maximum) and inputs (at least one).
void check_head(const RowArgs& a, int64_t nc, size_t inputs);

}  // namespace detrain::model
