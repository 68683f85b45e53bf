// Row argument checks; see row_checks.h. The widths inside a block follow layers.cpp:
// hidden = int(c2 * e), attention heads = max(c / 64, 1), C3k's inner C3 at e = 0.5.
#include "model/row_checks.h"

#include <algorithm>
#include <string>

#include "config/model_options.h"

namespace detrain::model {

namespace {

void check_widths(const RowArgs& a) {
  a.integer_in(0, "the input width", 1, 1, kMaxRowChannels);
  a.integer_in(1, "the output width (after scaling)", 1, 1, kMaxRowChannels);
}

// c_out x c_in/g x k x k weights within kMaxConvWeights.
void check_conv_size(const RowArgs& a, int64_t c1, int64_t c2, int64_t k, int64_t g) {
  const double weights = static_cast<double>(c2) * static_cast<double>(c1 / g) * k * k;
  if (weights > static_cast<double>(kMaxConvWeights))
    throw a.out_of_range("the convolution size",
                         std::to_string(c2) + "x" + std::to_string(c1 / g) + "x" +
                             std::to_string(k) + "x" + std::to_string(k),
                         "at most " + std::to_string(kMaxConvWeights) + " weights");
}

int64_t check_stride(const RowArgs& a, size_t i) {
  const int64_t s = a.integer(i, 1);
  if (s != 1 && s != 2 && s != 4 && s != 8)
    throw a.out_of_range("stride", std::to_string(s), "1, 2, 4 or 8");
  return s;
}

// Groups must divide both widths of every convolution they apply to.
void check_groups(const RowArgs& a, size_t i, std::initializer_list<int64_t> widths) {
  const int64_t g = a.integer_in(i, "groups", 1, 1, kMaxRowChannels);
  for (int64_t w : widths)
    if (w % g != 0)
      throw a.out_of_range("groups", std::to_string(g),
                           "a divisor of the block width " + std::to_string(w));
}

// int(c * e) channels, at least one.
int64_t check_hidden(const RowArgs& a, size_t i, int64_t c, double fallback) {
  const double e = a.real_in(i, "the expansion e", fallback, 0.0, 4.0);
  const int64_t hidden = static_cast<int64_t>(static_cast<double>(c) * e);
  if (hidden < 1)
    throw a.out_of_range("the expansion e", repr(Arg::real(e)),
                         "at least 1/" + std::to_string(c) + " (int(width * e) >= 1)");
  return hidden;
}

// Attention over `c` channels with max(c / 64, 1) heads of at least 2 channels each.
void check_attention(const RowArgs& a, int64_t c) {
  const int64_t heads = std::max<int64_t>(c / 64, 1);
  if (c % heads != 0 || c / heads < 2)
    throw a.out_of_range("the attention width", std::to_string(c),
                         "2 or more channels that divide into max(width / 64, 1) heads");
}

}  // namespace

void check_conv(const RowArgs& a) {
  check_widths(a);
  const int64_t k = a.integer_in(2, "kernel", 1, 1, kMaxKernel, /*odd=*/true);
  check_stride(a, 3);
  const int64_t d = a.integer_in(6, "dilation", 1, 1, 4);
  if (a.has(4) && a.integer(4, 0) != d * (k - 1) / 2)
    throw a.out_of_range("padding", std::to_string(a.integer(4, 0)),
                         "None or d * (k - 1) / 2 = " + std::to_string(d * (k - 1) / 2));
  check_groups(a, 5, {a.integer(0, 1), a.integer(1, 1)});
  check_conv_size(a, a.integer(0, 1), a.integer(1, 1), k, a.integer(5, 1));
}

void check_dwconv(const RowArgs& a) {
  check_widths(a);
  a.integer_in(2, "kernel", 1, 1, kMaxKernel, /*odd=*/true);
  check_stride(a, 3);
  a.integer_in(4, "dilation", 1, 1, 4);
}

void check_bottleneck(const RowArgs& a) {
  check_widths(a);
  const int64_t c2 = a.integer(1, 1);
  const auto [k1, k2] = a.pair(4, {3, 3});
  for (int64_t k : {k1, k2})
    if (k < 1 || k > kMaxKernel || k % 2 == 0)
      throw a.out_of_range("kernel", std::to_string(k),
                           "odd values 1 to " + std::to_string(kMaxKernel));
  const int64_t hidden = check_hidden(a, 5, c2, 0.5);
  check_groups(a, 3, {hidden, c2});
  check_conv_size(a, a.integer(0, 1), hidden, k1, 1);
  check_conv_size(a, hidden, c2, k2, a.integer(3, 1));
}

void check_c2f(const RowArgs& a) {
  check_widths(a);
  a.integer_in(2, "repeats", 1, 1, kMaxRepeats);
  const int64_t hidden = check_hidden(a, 5, a.integer(1, 1), 0.5);
  check_groups(a, 4, {hidden});
}

void check_c3k2(const RowArgs& a) {
  check_widths(a);
  a.integer_in(2, "repeats", 1, 1, kMaxRepeats);
  const int64_t hidden = check_hidden(a, 4, a.integer(1, 1), 0.5);
  if (a.flag(5, false)) check_attention(a, hidden);
  // C3k blocks split `hidden` once more, at e = 0.5.
  const int64_t inner = a.flag(3, false) ? hidden / 2 : hidden;
  if (inner < 1) throw a.out_of_range("the C3k block width", std::to_string(inner), "at least 1");
  check_groups(a, 6, {inner});
}

void check_sppf(const RowArgs& a) {
  check_widths(a);
  if (a.integer(0, 1) < 2)
    throw a.out_of_range("the input width", std::to_string(a.integer(0, 1)), "2 or more");
  a.integer_in(2, "kernel", 5, 1, kMaxKernel, /*odd=*/true);
  a.integer_in(3, "n (poolings)", 3, 1, 8);
}

void check_c2psa(const RowArgs& a) {
  check_widths(a);
  a.integer_in(2, "repeats", 1, 1, kMaxRepeats);
  check_attention(a, check_hidden(a, 3, a.integer(0, 1), 0.5));
}

void check_concat(const RowArgs& a) {
  const int64_t dim = a.integer(0, 1);
  if (dim != 1) throw a.out_of_range("the dimension", std::to_string(dim), "1 (channels)");
}

void check_nothing(const RowArgs&) {}

void check_head(const RowArgs& a, int64_t nc, size_t inputs) {
  a.integer_in(0, "nc (classes)", nc, 1, config::kMaxClasses);
  if (inputs < 1)
    throw a.out_of_range("the number of inputs", std::to_string(inputs), "1 or more layers");
}

}  // namespace detrain::model
