// Host side of kernel_timeline.h: the buffer (allocated once, when the build records and MOE_KERNEL_TIMELINE
// is set) and the per-layer report. A .cu file so that it sees the measuring build's CUDA defines.
#include "cuda/kernel_timeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "cuda/cuda_check.h"

namespace moe::cuda {

bool kernel_timeline_compiled() {
#ifdef MOE_KERNEL_TIMELINE
  return true;
#else
  return false;
#endif
}

KernelTimelineBuffer* kernel_timeline_buffer() {
  static KernelTimelineBuffer* buffer = [] {
    KernelTimelineBuffer* p = nullptr;
    if (kernel_timeline_compiled() && std::getenv("MOE_KERNEL_TIMELINE")) {
      MOE_CUDA_CHECK(cudaMalloc(&p, sizeof(KernelTimelineBuffer)));
      MOE_CUDA_CHECK(cudaMemset(p, 0, sizeof(KernelTimelineBuffer)));
    }
    return p;
  }();
  return buffer;
}

void kernel_timeline_reset() {
  if (KernelTimelineBuffer* b = kernel_timeline_buffer()) {
    MOE_CUDA_CHECK(cudaDeviceSynchronize());
    MOE_CUDA_CHECK(cudaMemset(b, 0, offsetof(KernelTimelineBuffer, rec)));
  }
}

std::vector<KernelTimelineRecord> kernel_timeline_records() {
  KernelTimelineBuffer* b = kernel_timeline_buffer();
  if (!b) return {};
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned count = 0;
  MOE_CUDA_CHECK(cudaMemcpy(&count, &b->count, sizeof(count), cudaMemcpyDeviceToHost));
  count = std::min(count, kKernelTimelineRecords);
  std::vector<KernelTimelineRecord> rec(count);
  MOE_CUDA_CHECK(
      cudaMemcpy(rec.data(), b->rec, count * sizeof(KernelTimelineRecord), cudaMemcpyDeviceToHost));
  return rec;
}

void kernel_timeline_report(std::FILE* out) {
  if (kernel_timeline_buffer())
    write_kernel_timeline_report(out, summarize_kernel_timeline(kernel_timeline_records()));
}

// Each instrumented translation unit's bind function (MOE_KERNEL_TIMELINE_TU): no relocatable device code, so
// each has its own device pointer.
void bind_kernel_timeline_route(KernelTimelineBuffer*);
void bind_kernel_timeline_expert_swap_ab(KernelTimelineBuffer*);
void bind_kernel_timeline_combine(KernelTimelineBuffer*);
void bind_kernel_timeline_align(KernelTimelineBuffer*);
void bind_kernel_timeline_expert_wgmma_swap(KernelTimelineBuffer*);

void bind_op_kernel_timelines() {
  KernelTimelineBuffer* b = kernel_timeline_buffer();
  if (!b) return;
  bind_kernel_timeline_route(b);
  bind_kernel_timeline_expert_swap_ab(b);
  bind_kernel_timeline_combine(b);
  bind_kernel_timeline_align(b);
  bind_kernel_timeline_expert_wgmma_swap(b);
}

}  // namespace moe::cuda
