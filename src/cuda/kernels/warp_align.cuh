#pragma once
// block_align's grouping for a call of at most 32 (token, slot) pairs, by one warp: a lane per pair, a run of
// experts per lane for the arrays over experts, warp shuffles for the two scans and no block barrier. The
// one-block prologue at M <= 4 (Qwen3-30B-A3B: up to 32 pairs) spent ~1.3 us grouping with block_align's
// barriers across its 512 threads (H200 timeline, session 21), but this measured slower still (H100, session
// 22: +2.05 us against +1.54), so it runs only with MOE_WARP_GROUPING=1. Writes exactly what block_align
// writes; an expert's pairs land in pair order (block_align's order varies, which no reader depends on).
#include <cuda_runtime.h>

#include "cuda/kernels/block_align.cuh"
#include "cuda/kernels/launchers.h"

namespace moe::cuda {

// Exclusive scan of one value per lane of a full warp; *total the warp's sum.
__device__ __forceinline__ int warp_exclusive_scan(int v, int* total) {
  const int lane = threadIdx.x % 32;
  int incl = v;
  for (int off = 1; off < 32; off *= 2) {
    const int o = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += o;
  }
  *total = __shfl_sync(0xffffffffu, incl, 31);
  return incl - v;
}

// By all 32 lanes of one warp, a.n_pairs <= kWarpAlignMaxPairs; `ids` complete and visible to the warp (in
// global or shared memory), s.counts and s.cursor this warp's scratch (E entries each).
__device__ __forceinline__ void warp_align(const int* ids, const AlignArgs& a, AlignShared& s) {
  const int E = a.num_experts, lane = threadIdx.x % 32;
  // Lane l owns experts [e0, e1): contiguous runs, so the scans over lanes keep the experts' order.
  const int per_lane = (E + 31) / 32, e0 = min(lane * per_lane, E), e1 = min(e0 + per_lane, E);
  for (int e = e0; e < e1; ++e) s.counts[e] = 0;
  const int id = lane < a.n_pairs ? ids[lane] : -1;
  const bool counted = id >= 0 && id < E;  // another rank's expert (EP) or no expert: left out
  __syncwarp();
  if (counted) atomicAdd(&s.counts[id], 1);
  __syncwarp();
  int pairs = 0, experts = 0;
  for (int e = e0; e < e1; ++e) {
    pairs += s.counts[e];
    experts += s.counts[e] > 0 ? 1 : 0;
  }
  int total = 0, active_total = 0;
  int start = warp_exclusive_scan(pairs, &total);
  int active_pos = warp_exclusive_scan(experts, &active_total);
  for (int e = e0; e < e1; ++e) {
    const int c = s.counts[e];
    a.offsets[e] = start;
    s.cursor[e] = start;
    if (c > 0) {
      a.active[active_pos] = e;
      a.slot_begin[active_pos] = start;
      ++active_pos;
    }
    start += c;
  }
  for (int i = active_total + lane; i < E; i += 32) a.active[i] = -1;  // stage blocks past these exit
  for (int i = active_total + lane; i <= E; i += 32) a.slot_begin[i] = total;
  if (lane == 0) {
    a.offsets[E] = total;
    *a.num_active = active_total;
  }
  __syncwarp();
  // A pair's place: its expert's first position plus the pairs of that expert on lower lanes.
  const unsigned same = __match_any_sync(0xffffffffu, id);
  if (counted) a.sorted_pairs[s.cursor[id] + __popc(same & ((1u << lane) - 1u))] = lane;
}

}  // namespace moe::cuda
