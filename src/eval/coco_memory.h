// Buffers that the evaluator and its results reader size once and then fill completely (columns
// of every result, match outcomes, precision arrays): allocated without a second zero fill.
//
// They get the kernel's default pages. Transparent huge pages were advised on them until
// 2026-12-04 and dropped: on the project's VMs, whose balloon reports free 2 MiB blocks back to
// the host, a fresh process faulting in huge pages paid more than it saved (one `detrain eval`
// of 500k results: evaluate + accumulate + summarize 0.116 s median with them, 0.084 s without;
// docs/perf/2026-12-04-evaluator-page-reporting.md).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace detrain::eval {

// An allocator whose resize() default-initialises new elements (no zeroing for plain numbers):
// for the evaluator's internal buffers whose every element is written before it is read, so
// that the kernel's freshly zeroed pages are not zeroed a second time.
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}  // NOLINT
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// A buffer that the code fills completely after sizing it.
template <class T>
using FillBuffer = std::vector<T, NoInitAllocator<T>>;

}  // namespace detrain::eval
