// One bind call per instrumented translation unit (each has its own device pointer: no relocatable device
// code), for the decode step's kernels of the model and of the MoE op.
#include "model/cuda/kernel_timeline_bind.h"

namespace moe::cuda {
void bind_kernel_timeline_fp8_linear(KernelTimelineBuffer*);
void bind_kernel_timeline_fp8_gemv_compact(KernelTimelineBuffer*);
void bind_kernel_timeline_fp8_gemv_mma(KernelTimelineBuffer*);
void bind_kernel_timeline_f32_gemv(KernelTimelineBuffer*);
void bind_kernel_timeline_router_prologue(KernelTimelineBuffer*);
void bind_kernel_timeline_attention_decode(KernelTimelineBuffer*);
}  // namespace moe::cuda

namespace moe::model::gpu {

void bind_kernel_timelines(cuda::KernelTimelineBuffer* buffer) {
  cuda::bind_kernel_timeline_fp8_linear(buffer);
  cuda::bind_kernel_timeline_fp8_gemv_compact(buffer);
  cuda::bind_kernel_timeline_fp8_gemv_mma(buffer);
  cuda::bind_kernel_timeline_f32_gemv(buffer);
  cuda::bind_kernel_timeline_router_prologue(buffer);
  cuda::bind_kernel_timeline_attention_decode(buffer);
  cuda::bind_op_kernel_timelines();  // the MoE op's own (the same buffer: kernel_timeline_buffer())
}

}  // namespace moe::model::gpu
