// Large buffers that the evaluator and its results reader fill once (columns of every result,
// match outcomes, precision arrays): reserved with a request for transparent huge pages, so a
// fresh process takes one page fault per 2 MiB instead of one per 4 KiB. Without it a single
// `detrain eval` of 500k results spends about a fifth of its CPU time faulting in zeroed pages.
// Only a hint (Linux madvise; ignored where THP is off or unsupported): contents, and so
// results, never depend on it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace detrain::eval {

// Below this a buffer cannot hold a whole aligned 2 MiB page.
constexpr size_t kHugePageWorthBytes = size_t{4} << 20;

// Advises the whole pages inside [data, data + bytes) for huge pages.
inline void advise_huge_pages(const void* data, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  if (bytes < kHugePageWorthBytes) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// v.reserve(n), huge pages advised before anything touches the new buffer. For an empty vector
// (or one that must grow); its elements are unchanged.
template <class T, class Allocator>
void reserve_large(std::vector<T, Allocator>& v, size_t n) {
  if (n <= v.capacity()) return;
  v.reserve(n);
  advise_huge_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

// v.assign(n, value) into a huge-page-advised buffer.
// v.resize(n) into a huge-page-advised buffer (for a vector that is empty or must grow).
template <class T, class Allocator>
void resize_large(std::vector<T, Allocator>& v, size_t n) {
  reserve_large(v, n);
  v.resize(n);
}

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
