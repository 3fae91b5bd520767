// Groups (token, slot) pairs by expert: counts, offsets, the pairs of each expert and the list of active experts.
// One block; every buffer it reads later it writes first (counters start from zero inside the kernel). Positions
// inside an expert come from integer atomics: the order can vary, but each pair's result never depends on its
// position, so outputs are bitwise stable.
#include <cuda_runtime.h>

#include "cuda/kernels/launchers.h"

namespace moe::cuda {
namespace {

constexpr int kAlignThreads = 1024;

// Exclusive scan of one value per thread (blockDim.x == kAlignThreads); returns the prefix, *total the sum.
__device__ int block_exclusive_scan(int v, int* warp_sums, int* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int incl = v;
  for (int off = 1; off < 32; off *= 2) {
    const int o = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += o;
  }
  __syncthreads();
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int w = warp_sums[lane];
    int wincl = w;
    for (int off = 1; off < 32; off *= 2) {
      const int o = __shfl_up_sync(0xffffffffu, wincl, off);
      if (lane >= off) wincl += o;
    }
    warp_sums[lane] = wincl - w;  // exclusive prefix of warp totals
    if (lane == 31) warp_sums[32] = wincl;
  }
  __syncthreads();
  *total = warp_sums[32];
  return warp_sums[warp] + incl - v;
}

__global__ void __launch_bounds__(kAlignThreads) align_kernel(AlignArgs a) {
  __shared__ int counts[kAlignThreads];
  __shared__ int cursor[kAlignThreads];
  __shared__ int warp_sums[33];
  const int E = a.num_experts, e = threadIdx.x;
  counts[e] = 0;
  __syncthreads();
  for (int p = threadIdx.x; p < a.n_pairs; p += blockDim.x) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) atomicAdd(&counts[id], 1);
  }
  __syncthreads();
  const int c = e < E ? counts[e] : 0;
  int total = 0;
  const int start = block_exclusive_scan(c, warp_sums, &total);
  int active_total = 0;
  const int active_pos = block_exclusive_scan(c > 0 ? 1 : 0, warp_sums, &active_total);
  if (e < E) {
    a.offsets[e] = start;
    cursor[e] = start;
    if (c > 0) a.active[active_pos] = e;
  }
  if (e == 0) {
    a.offsets[E] = total;
    *a.num_active = active_total;
  }
  __syncthreads();
  for (int p = threadIdx.x; p < a.n_pairs; p += blockDim.x) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) a.sorted_pairs[atomicAdd(&cursor[id], 1)] = p;
  }
}

}  // namespace

void launch_align(const AlignArgs& a, cudaStream_t stream) { align_kernel<<<1, kAlignThreads, 0, stream>>>(a); }

}  // namespace moe::cuda
