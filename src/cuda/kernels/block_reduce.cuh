#pragma once
// Deterministic block reductions: a fixed shuffle tree per warp, then warp results combined in warp order.
#include <cuda_runtime.h>

namespace moe::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// scratch: at least 32 floats of shared memory. All threads get the result.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  return total;
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = scratch[0];
  for (int w = 1; w < warps; ++w) m = fmaxf(m, scratch[w]);
  return m;
}

// (value, index) with ties to the lower index; NaN never wins.
struct ArgMax {
  float v;
  int i;
};

__device__ __forceinline__ bool better(const ArgMax& a, const ArgMax& b) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  return a.v > b.v || (a.v == b.v && a.i < b.i);
}

__device__ __forceinline__ ArgMax warp_argmax(ArgMax a) {
  for (int off = 16; off > 0; off /= 2) {
    ArgMax o{__shfl_xor_sync(kFullMask, a.v, off), __shfl_xor_sync(kFullMask, a.i, off)};
    if (better(o, a)) a = o;
  }
  return a;
}

// scratch_v / scratch_i: 32 entries each.
__device__ __forceinline__ ArgMax block_argmax(ArgMax a, float* scratch_v, int* scratch_i) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  a = warp_argmax(a);
  __syncthreads();
  if (lane == 0) {
    scratch_v[warp] = a.v;
    scratch_i[warp] = a.i;
  }
  __syncthreads();
  ArgMax best{scratch_v[0], scratch_i[0]};
  for (int w = 1; w < warps; ++w) {
    ArgMax o{scratch_v[w], scratch_i[w]};
    if (better(o, best)) best = o;
  }
  return best;
}

}  // namespace moe::cuda
