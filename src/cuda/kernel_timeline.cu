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

void kernel_timeline_report(std::FILE* out) {
  KernelTimelineBuffer* b = kernel_timeline_buffer();
  if (!b) return;
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned count = 0;
  MOE_CUDA_CHECK(cudaMemcpy(&count, &b->count, sizeof(count), cudaMemcpyDeviceToHost));
  count = std::min(count, kKernelTimelineRecords);
  std::vector<KernelTimelineRecord> rec(count);
  MOE_CUDA_CHECK(
      cudaMemcpy(rec.data(), b->rec, count * sizeof(KernelTimelineRecord), cudaMemcpyDeviceToHost));
  const KernelTimelineSummary sum = summarize_kernel_timeline(rec);
  std::fprintf(out, "kernel timeline: %zu block records, %zu whole launches, %zu decode layers\n",
               sum.records, sum.launches, sum.layers);
  if (sum.rows.empty()) return;
  std::fprintf(out,
               "  us after the layer's first block start, median over the %d layers of the common shape:\n",
               sum.shape_layers);
  std::fprintf(out, "  %-12s %7s %9s %9s %9s %8s %8s\n", "launch", "blocks", "start", "1st wait", "last wait",
               "end", "span");
  for (const KernelTimelineRow& r : sum.rows)
    std::fprintf(out, "  %-12s %7u %9.2f %9.2f %9.2f %8.2f %8.2f\n", kernel_timeline_kind_name(r.kind),
                 r.blocks, r.start, r.first_wait, r.last_wait, r.end, r.span);
  std::fprintf(out, "  layer (first start to the combine's end): %.2f us\n", sum.layer_us);
  // The phases of the launches that mark them (the kernels' mark() calls say what each mark is): when the
  // last block reached each, and in brackets the time since the previous mark (the first: since the last
  // wait; the end: since the last mark).
  for (const KernelTimelineRow& r : sum.rows) {
    if (r.marks[0] < 0) continue;
    std::fprintf(out, "  %-12s marks (last block to reach each):", kernel_timeline_kind_name(r.kind));
    double prev = r.last_wait;
    for (double m : r.marks) {
      if (m < 0) continue;
      std::fprintf(out, " %7.2f (+%.2f)", m, m - prev);
      prev = m;
    }
    std::fprintf(out, ", end (+%.2f)\n", r.end - prev);
  }
}

}  // namespace moe::cuda
