#pragma once
// The one-block prologue of a call of a few tokens (routing a warp per token, the shared expert's gate, x
// quantised for stage 1 by (token, group) items, the grouping by expert), as a device function: run by
// route.cu's own one-block kernel on the logits in global memory, and by the model's router GEMV
// (model/cuda/router_prologue.cu) on the logits its cluster gathered in shared memory, so both give the same
// bits. The pieces route_kernel (many blocks) shares are here too.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/block_align.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/warp_router.cuh"

namespace moe::cuda {

// Pairs the one-block prologue groups at most (its ids in shared memory).
constexpr int kSmallMaxPairs = 1024;

// Chunks of 8 elements a lane takes per trip of warp_shared_gate's loop: each trip's loads go out together
// (the element-by-element loop waited for a round trip every 4 elements of a lane: 56 trips for H = 7168,
// ~28 us of DeepSeek-shaped prologues at one token).
constexpr int kGateChunksPerTrip = 4;

// Token t's shared-expert gate, sigmoid(shared_gate . x), by one warp in a fixed order (each lane its chunks
// of 8 elements lane, lane + 32, ... in order, then a shuffle tree); 1 when there is no gate weight
// (DeepSeek's shared_experts).
__device__ __forceinline__ void warp_shared_gate(const RouteArgs& a, int t) {
  const int lane = threadIdx.x % 32;
  float g = 1.0f;
  if (a.shared_gate_weight) {
    const uint16_t* x = a.x + static_cast<size_t>(t) * a.hidden;
    const float* w = a.shared_gate_weight;
    float s = 0.0f;
    if (a.hidden % 8 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w)) % 16 == 0) {
      const int chunks = a.hidden / 8;
      for (int c0 = lane; c0 < chunks; c0 += 32 * kGateChunksPerTrip) {
        uint4 xv[kGateChunksPerTrip];
        float4 wv[kGateChunksPerTrip][2];
#pragma unroll
        for (int u = 0; u < kGateChunksPerTrip; ++u) {
          const int c = c0 + 32 * u;
          const bool live = c < chunks;
          xv[u] = live ? *reinterpret_cast<const uint4*>(x + 8 * c) : make_uint4(0, 0, 0, 0);
          wv[u][0] = live ? *reinterpret_cast<const float4*>(w + 8 * c) : make_float4(0, 0, 0, 0);
          wv[u][1] = live ? *reinterpret_cast<const float4*>(w + 8 * c + 4) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kGateChunksPerTrip; ++u) {
          const uint32_t xw[4] = {xv[u].x, xv[u].y, xv[u].z, xv[u].w};
          const float wf[8] = {wv[u][0].x, wv[u][0].y, wv[u][0].z, wv[u][0].w,
                               wv[u][1].x, wv[u][1].y, wv[u][1].z, wv[u][1].w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            s = fmaf(__uint_as_float(xw[i] << 16), wf[2 * i], s);
            s = fmaf(__uint_as_float(xw[i] & 0xffff0000u), wf[2 * i + 1], s);
          }
        }
      }
    } else {
      for (int h = lane; h < a.hidden; h += 32) s = fmaf(bf16_to_f32(x[h]), w[h], s);
    }
    s = warp_sum(s);
    g = 1.0f / (1.0f + expf(-s));
  }
  if (lane == 0) {
    a.shared_gate_out[t] = g;
    a.shared_pairs[t] = t;
  }
}

__device__ __forceinline__ void write_shared_grouping(const RouteArgs& a, int M) {
  a.shared_offsets[0] = 0;
  a.shared_offsets[1] = M;
  a.shared_active[0] = 0;
  a.shared_num_active[0] = 1;
}

// lane_group_bits' four values from fp32 rows in shared memory, each rounded to bf16 by f32_to_bf16, as the
// norm that wrote the rows rounded the bf16 copy it stored: the same bits as reading that copy back.
__device__ __forceinline__ uint2 lane_group_bits_f32(const float* src, int g0, int g1) {
  const int k = g0 + static_cast<int>(threadIdx.x % 32) * 4;
  if (k >= g1) return make_uint2(0u, 0u);
  const float4 v = *reinterpret_cast<const float4*>(src + k);
  return make_uint2(f32_to_bf16(v.x) | static_cast<uint32_t>(f32_to_bf16(v.y)) << 16,
                    f32_to_bf16(v.z) | static_cast<uint32_t>(f32_to_bf16(v.w)) << 16);
}

// Token t's group g (of `groups` a token) of fp8 codes and its scale, from every lane's lane_group_bits of it
// (a.x_codes set).
__device__ __forceinline__ void warp_store_fp8_group(const RouteArgs& a, int t, int g, const GroupGrid& grid,
                                                     int groups, uint2 raw) {
  const size_t row = static_cast<size_t>(t) * a.hidden;
  const float s = warp_fp8_codes_from_bits(raw, grid.begin(g), grid.end(g), a.x_codes + row);
  if (threadIdx.x % 32 == 0) a.x_scales[static_cast<size_t>(t) * groups + g] = s;
}

// Token t's activation group g for stage 1: fp8 codes + scale when the streaming path asks for them, else the
// dequantised values in xq (the GEMV path); nothing when neither is wanted (bf16 streamed straight from x).
// rows_f32: x in fp32 in shared memory ([M][hidden], 16-byte aligned), whose bf16 rounding is a.x (the
// codes then come without a round trip to global memory); null: from a.x.
__device__ __forceinline__ void warp_quantize_token_group(const RouteArgs& a, int t, int g,
                                                          const GroupGrid& grid, const float* rows_f32) {
  const size_t row = static_cast<size_t>(t) * a.hidden;
  if (a.x_codes) {
    const int g0 = grid.begin(g), g1 = grid.end(g);
    const uint2 raw =
        rows_f32 ? lane_group_bits_f32(rows_f32 + row, g0, g1) : lane_group_bits(a.x + row, g0, g1);
    warp_store_fp8_group(a, t, g, grid, grid.count(), raw);
  } else if (a.xq) {
    warp_load_quantize_group(a.quant, a.x + row, a.xq + row, grid.begin(g), grid.end(g));
  }
}

// Shared memory of prologue_small: the grouping's, and the pairs' expert ids.
struct PrologueShared {
  AlignShared align;
  int ids[kSmallMaxPairs];
};

// The whole prologue of M tokens (M * top_k <= kSmallMaxPairs) by one block of at least E threads, after
// its programmatic wait: logits [M, E] row-major, in global or shared memory. Marks the timeline's point
// `mark` (measuring builds) when warp 0 has routed its tokens, and `mark` + 1 when the routing and
// quantisation are done and the grouping starts. rows_f32:
// as warp_quantize_token_group takes it (the model's router kernel has x's rows in shared memory). kKind:
// warp_route's.
template <int kPerLane, int kKind = kAnyRouter>
__device__ __forceinline__ void prologue_small(const RouteArgs& a, const AlignArgs& al, int M,
                                               const float* logits, PrologueShared& s,
                                               KernelTimelineScope& timeline, int mark,
                                               const float* rows_f32 = nullptr) {
  for (int i = threadIdx.x; i < al.n_zero_ints; i += blockDim.x) al.zero_ints[i] = 0;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32, lane = threadIdx.x % 32;
  const int K = a.router.top_k, E = a.router.num_experts;
  for (int t = warp; t < M; t += warps) {
    const int id = warp_route<kPerLane, kKind>(a.router, logits + static_cast<size_t>(t) * E,
                                               a.topk_ids + static_cast<size_t>(t) * K,
                                               a.topk_weights + static_cast<size_t>(t) * K);
    if (lane < K) s.ids[t * K + lane] = id;
  }
  // Token t's shared-expert gate on warp M + t, beside the routing warps rather than after their routing.
  if (a.shared_gate_out)
    for (int t = 0; t < M; ++t)
      if ((M + t) % warps == warp) warp_shared_gate(a, t);
  timeline.mark(mark);  // thread 0's warp has routed (the block's other warps may still be routing)
  // Every (token, group) of the activations is quantised by some warp, in parallel; the items are dealt
  // from the last warp down, so the routing warps (the first M) start on them last.
  const GroupGrid grid(a.quant, a.hidden, 0);
  const int groups = grid.count(), items = M * groups;
  if (a.x_codes && !rows_f32) {
    // fp8 codes from x in global memory: a warp's next kQuantBatch items' loads go out together, then each is
    // quantised as warp_quantize_token_group does (the same items per warp, the same bits); one by one each
    // item waited for its own round trip (M=8 at Qwen3's H: 4 items a warp).
    constexpr int kQuantBatch = 4;
    for (int p0 = warps - 1 - warp; p0 < items; p0 += kQuantBatch * warps) {
      uint2 raw[kQuantBatch];
#pragma unroll
      for (int u = 0; u < kQuantBatch; ++u) {
        const int p = p0 + u * warps, t = p / groups, g = p % groups;
        raw[u] = p < items
                     ? lane_group_bits(a.x + static_cast<size_t>(t) * a.hidden, grid.begin(g), grid.end(g))
                     : make_uint2(0u, 0u);
      }
#pragma unroll
      for (int u = 0; u < kQuantBatch; ++u) {
        const int p = p0 + u * warps;
        if (p >= items) break;
        warp_store_fp8_group(a, p / groups, p % groups, grid, groups, raw[u]);
      }
    }
  } else {
    for (int p = warps - 1 - warp; p < items; p += warps)
      warp_quantize_token_group(a, p / groups, p % groups, grid, rows_f32);
  }
  if (a.shared_gate_out && threadIdx.x == 0) write_shared_grouping(a, M);
  __syncthreads();
  timeline.mark(mark + 1);
  block_align(s.ids, al, s.align);
}

}  // namespace moe::cuda
