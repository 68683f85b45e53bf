// numpy's float64 summation, reproduced to the bit: np.sum / np.mean over a contiguous array add
// blocks of 8192 elements (the ufunc buffer) one after another, each block summed pairwise (8
// interleaved partial sums up to 128 elements, recursive halves above). pycocotools' OKS and its
// stats are numpy sums, so a plain loop would differ in the last bits.
#pragma once

#include <cstddef>

namespace detrain::eval {

// numpy's pairwise_sum for one block of n elements.
inline double numpy_pairwise_block(const double* a, size_t n) {
  if (n < 8) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return numpy_pairwise_block(a, half) + numpy_pairwise_block(a + half, n - half);
}

// np.sum(a) for a contiguous float64 array.
inline double numpy_sum(const double* a, size_t n) {
  constexpr size_t kBufferSize = 8192;
  double sum = 0.0;
  for (size_t start = 0; start < n; start += kBufferSize)
    sum += numpy_pairwise_block(a + start, n - start < kBufferSize ? n - start : kBufferSize);
  return sum;
}

// np.mean(a): the sum divided by the count (a true division, not a reciprocal multiply).
inline double numpy_mean(const double* a, size_t n) {
  return numpy_sum(a, n) / static_cast<double>(n);
}

}  // namespace detrain::eval
