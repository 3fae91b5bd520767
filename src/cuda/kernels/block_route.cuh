#pragma once
// The routing and expert grouping of a few tokens done inside a block of a stage kernel, so a decode call
// needs no prologue launch: every block of the swap-AB stage 1 (bf16 weights; swap_ab_routes_itself) routes
// the call's tokens itself (a warp per token, warp_route: the prologue's arithmetic; the other warps stage x
// meanwhile) and groups the pairs in shared memory. The grouping is stable (an expert's pairs in pair order,
// experts in id order), so every block derives the same one, and one block writes it, with the top-K ids and
// weights, where the later kernels of the call read them.
#include <cuda_runtime.h>

#include "cuda/kernels/launchers.h"
#include "cuda/kernels/warp_router.cuh"

namespace moe::cuda {

// Block routing serves calls of at most this many tokens and (token, slot) pairs.
constexpr int kBlockRouteMaxTokens = 8;
constexpr int kBlockRouteMaxPairs = 256;
// Experts per lane of its warp router: routers of up to 128 experts (every routed-only model we serve; one
// instantiation keeps the code that each block runs once small).
constexpr int kBlockRoutePerLane = 4;

// Shared memory: the call's grouping as the block sees it.
struct BlockRouting {
  int ids[kBlockRouteMaxPairs];        // pair p's local expert id (-1: another rank's expert)
  int first[kBlockRouteMaxPairs];      // 1 where pair p is its expert's first pair
  int below[kBlockRouteMaxPairs];      // valid pairs whose expert id is lower than pair p's
  int sorted[kBlockRouteMaxPairs];     // the valid pairs grouped by expert
  int active[kBlockRouteMaxPairs];     // the active experts in id order
  int begin[kBlockRouteMaxPairs + 1];  // active expert a's pairs are sorted[begin[a], begin[a + 1])
  float weights[kBlockRouteMaxPairs];  // scratch for the routing weights (the writer block stores them)
  int num_active;
};

// Where the writer block puts the call's routing for the later kernels (the prologue's outputs).
struct RouteOutputs {
  int* topk_ids;        // [M, K]
  float* topk_weights;  // [M, K]
  int* offsets;         // [E + 1]
  int* sorted_pairs;    // [valid pairs]
  int* active;          // [E], -1 past the active experts
  int* num_active;      // [1]
  int* slot_begin;      // [E + 1]
};

// Warps [0, M) route tokens [0, M) (logits [M, router E]) into s.ids; the writer block's warps also store the
// top-K ids and weights into `out`. The other warps are free meanwhile (the caller stages x with them).
// kPerLane: experts per lane of the warp router (32 * kPerLane >= router E).
template <int kPerLane>
__device__ inline void block_route_tokens(const RouterParams& rp, const float* logits, int M, bool writer,
                                          const RouteOutputs& out, BlockRouting& s) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, K = rp.top_k;
  if (warp >= M) return;
  int* ids = writer ? out.topk_ids + warp * K : s.ids + warp * K;
  float* weights = writer ? out.topk_weights + warp * K : s.weights + warp * K;
  const int id = warp_route<kPerLane>(rp, logits + static_cast<size_t>(warp) * rp.num_experts, ids, weights);
  __syncwarp();
  if (lane < K) s.ids[warp * K + lane] = id;
}

// After block_route_tokens and a __syncthreads(), by every thread: groups the M * K pairs into s; when
// `writer`, also stores the grouping into `out`. Ends with the grouping visible to the whole block.
__device__ inline void block_group(int M, int K, int E_local, bool writer, const RouteOutputs& out,
                                   BlockRouting& s) {
  const int n = M * K;
  // Pair p goes to position (valid pairs of lower experts) + (earlier pairs of its expert): a counting sort
  // by quadratic scans, which at n <= 256 costs less than the prologue's atomics and barriers, and is stable.
  const auto valid = [&](int id) { return id >= 0 && id < E_local; };
  for (int p = threadIdx.x; p < n; p += blockDim.x) {
    const int id = s.ids[p];
    int below = 0, before = 0;
    for (int q = 0; q < n; ++q) {
      const int o = s.ids[q];
      below += valid(o) && o < id;
      before += q < p && o == id;
    }
    s.first[p] = valid(id) && before == 0;
    s.below[p] = below;
    if (valid(id)) s.sorted[below + before] = p;
  }
  __syncthreads();
  for (int p = threadIdx.x; p < n; p += blockDim.x) {
    if (!s.first[p]) continue;
    int slot = 0;
    for (int q = 0; q < n; ++q) slot += s.first[q] && s.ids[q] < s.ids[p];
    s.active[slot] = s.ids[p];
    s.begin[slot] = s.below[p];
  }
  if (threadIdx.x == 0) {
    int active = 0, total = 0;
    for (int q = 0; q < n; ++q) {
      active += s.first[q];
      total += valid(s.ids[q]);
    }
    s.num_active = active;
    s.begin[active] = total;
  }
  __syncthreads();
  if (!writer) return;
  // The layout block_align writes: offsets over all local experts, active padded with -1.
  for (int e = threadIdx.x; e <= E_local; e += blockDim.x) {
    int below = 0;
    for (int q = 0; q < n; ++q) below += valid(s.ids[q]) && s.ids[q] < e;
    out.offsets[e] = below;
    if (e < E_local) out.active[e] = e < s.num_active ? s.active[e] : -1;
    out.slot_begin[e] = e <= s.num_active ? s.begin[e] : s.begin[s.num_active];
  }
  for (int i = threadIdx.x; i < s.begin[s.num_active]; i += blockDim.x) out.sorted_pairs[i] = s.sorted[i];
  if (threadIdx.x == 0) *out.num_active = s.num_active;
}

}  // namespace moe::cuda
