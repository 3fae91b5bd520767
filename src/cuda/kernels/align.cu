// The expert grouping as its own single-block kernel (used when routing ran as a multi-block kernel).
#include <cuda_runtime.h>

#include "cuda/kernels/block_align.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

__global__ void __launch_bounds__(kAlignThreads) align_kernel(AlignArgs a) {
  __shared__ AlignShared s;
  pdl_wait();
  pdl_trigger();
  block_align(a.topk_ids, a, s);
}

}  // namespace

void launch_align(const AlignArgs& a, cudaStream_t stream) {
  launch_overlapped(align_kernel, dim3(1), dim3(kAlignThreads), 0, stream, a);
}

}  // namespace moe::cuda
