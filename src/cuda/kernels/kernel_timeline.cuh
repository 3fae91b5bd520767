#pragma once
// Device side of kernel_timeline.h. An instrumented kernel opens a KernelTimelineScope first thing, calls
// waited() after its pdl_wait(), and its translation unit defines its bind function once
// (MOE_KERNEL_TIMELINE_TU). Without MOE_KERNEL_TIMELINE all of it is empty.
#include <cuda_runtime.h>

#include "cuda/kernel_timeline.h"
#include "cuda/kernels/globaltimer.cuh"

#ifdef MOE_KERNEL_TIMELINE
namespace {
// One per translation unit (no relocatable device code): set by that unit's bind function.
__device__ moe::cuda::KernelTimelineBuffer* g_kernel_timeline = nullptr;
}  // namespace

// Defines void bind_kernel_timeline_NAME(KernelTimelineBuffer*), which points this unit's kernels at the
// buffer.
#define MOE_KERNEL_TIMELINE_TU(name)                          \
  namespace moe::cuda {                                       \
  void bind_kernel_timeline_##name(KernelTimelineBuffer* b) { \
    cudaMemcpyToSymbol(g_kernel_timeline, &b, sizeof(b));     \
  }                                                           \
  }

namespace moe::cuda {

class KernelTimelineScope {
 public:
  __device__ explicit KernelTimelineScope(TimelineKind kind) : kind_(kind) {
    if (threadIdx.x == 0 && g_kernel_timeline) {
      start_ = globaltimer();
      // Launches of one kind never overlap in the decode step (another kernel always runs between two of
      // them), so every block of a launch reads the same count: the last block of the previous launch
      // raised it before this launch could start.
      launch_ = __ldcg(&g_kernel_timeline->launches[kind]);
    }
  }
  __device__ void waited() {
    if (threadIdx.x == 0) waited_ = globaltimer();
  }
  // Thread 0 reached point i of the block's work (after a barrier, so the whole block has).
  __device__ void mark(int i) {
    if (threadIdx.x == 0 && i >= 0 && i < kKernelTimelineMarks) marks_[i] = globaltimer();
  }
  __device__ ~KernelTimelineScope() {
    KernelTimelineBuffer* b = g_kernel_timeline;
    if (threadIdx.x != 0 || !b) return;
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    const unsigned slot = atomicAdd(&b->count, 1u);
    static_assert(kKernelTimelineMarks == 4, "the record's marks are listed below");
    if (slot < kKernelTimelineRecords)
      b->rec[slot] = {start_,  waited_,        globaltimer(), kind_,
                      launch_, linear_block(), blocks,        {marks_[0], marks_[1], marks_[2], marks_[3]}};
    __threadfence();
    if (atomicAdd(&b->done[kind_], 1u) == blocks - 1) {  // the launch's last block
      b->done[kind_] = 0;
      __threadfence();
      atomicAdd(&b->launches[kind_], 1u);
    }
  }

 private:
  TimelineKind kind_;
  unsigned long long start_ = 0, waited_ = 0;
  unsigned long long marks_[kKernelTimelineMarks] = {};
  unsigned launch_ = 0;
};

}  // namespace moe::cuda
#else
#define MOE_KERNEL_TIMELINE_TU(name)                         \
  namespace moe::cuda {                                      \
  void bind_kernel_timeline_##name(KernelTimelineBuffer*) {} \
  }

namespace moe::cuda {
struct KernelTimelineScope {
  __device__ explicit KernelTimelineScope(TimelineKind) {}
  __device__ void waited() {}
  __device__ void mark(int) {}
};
}  // namespace moe::cuda
#endif
