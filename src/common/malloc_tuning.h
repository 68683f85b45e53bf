// Heap policy for the commands that run a model: freed tensor memory stays in the process for
// the next iteration instead of going back to the kernel. glibc's defaults return large blocks
// (mmap'ed ones at once, the heap top past 128 KiB), so every training step page-faults its
// activations back in, zero-filled: 124k-135k minor faults per yolo26n 640 px batch-4 step.
#pragma once

namespace detrain {

// Raises glibc's mmap threshold to its maximum (32 MiB on 64-bit: smaller blocks come from the
// reusable heap) and its trim threshold and top pad, unless the user set any MALLOC_*_
// tuning variable (then glibc's own reading of them stands). No-op without glibc. Returns true
// when it changed the policy.
bool keep_freed_memory_for_reuse();

}  // namespace detrain
