#pragma once
// Points every instrumented translation unit's kernels at the kernel timeline's buffer
// (cuda/kernel_timeline.h; measuring builds only, a no-op otherwise).
#include "cuda/kernel_timeline.h"

namespace moe::model::gpu {

void bind_kernel_timelines(cuda::KernelTimelineBuffer* buffer);

}  // namespace moe::model::gpu
