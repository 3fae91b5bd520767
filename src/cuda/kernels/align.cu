// The expert grouping as its own single-block kernel, for calls whose routing ran as a multi-block kernel
// (many pairs). Each warp counts and places the pairs of its own contiguous chunk in its own row of a shared
// histogram, so integer atomics only meet inside a warp: block_align's counters, shared by the whole block,
// took 55 us at M=4096 (32768 atomics on 128 counters; ncu), a warp-aggregated variant (__match_any_sync, no
// atomics) 93 us. The rows' prefix sums give every warp its place inside each expert. Positions inside an
// expert come from the atomics, so their order can vary between runs, but no pair's result depends on it.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels/block_align.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

constexpr int kWarps = kAlignThreads / 32;

__global__ void __launch_bounds__(kAlignThreads) align_kernel(AlignArgs a) {
  extern __shared__ int rows[];  // [kWarps][E]: warp w's count, then its next position, per expert
  __shared__ int warp_sums[33];
  const int E = a.num_experts, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < kWarps * E; i += kAlignThreads) rows[i] = 0;
  pdl_wait();
  pdl_trigger();
  __syncthreads();
  const int chunk = (a.n_pairs + kWarps - 1) / kWarps;
  const int p0 = min(a.n_pairs, warp * chunk), p1 = min(a.n_pairs, p0 + chunk);
  int* row = rows + warp * E;
  for (int p = p0 + lane; p < p1; p += 32) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) atomicAdd(&row[id], 1);
  }
  __syncthreads();
  const int e = threadIdx.x;
  int c = 0;
  if (e < E)
    for (int w = 0; w < kWarps; ++w) c += rows[w * E + e];
  const int start = write_expert_grouping(a, c, warp_sums);
  if (e < E)
    for (int w = 0, at = start; w < kWarps; ++w) {
      const int n = rows[w * E + e];
      rows[w * E + e] = at;
      at += n;
    }
  __syncthreads();
  for (int p = p0 + lane; p < p1; p += 32) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) a.sorted_pairs[atomicAdd(&row[id], 1)] = p;
  }
}

}  // namespace

void launch_align(const AlignArgs& a, cudaStream_t stream) {
  const int smem = kWarps * a.num_experts * static_cast<int>(sizeof(int));
  MOE_CUDA_CHECK(cudaFuncSetAttribute(align_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch_overlapped(align_kernel, dim3(1), dim3(kAlignThreads), smem, stream, a);
}

}  // namespace moe::cuda
