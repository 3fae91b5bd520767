#pragma once
// One token's routing computed by one warp (FORMATS.md section 4): the E logits live in registers, 32 per
// lane at most (E <= 1024), lane l holding experts l, l + 32, ... Reductions are fixed shuffle trees, so the
// result is deterministic; ties go to the lower expert id.
#include <cuda_runtime.h>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/router_kinds.h"
#include "cuda/moe_params.h"

namespace moe::cuda {

// An unsigned key that orders floats as their values do (-0 and +0 alike), so that a warp's maximum is one
// hardware reduction (__reduce_max_sync) instead of a five-step shuffle tree; key_value inverts it.
__device__ __forceinline__ unsigned order_key(float v) {
  const unsigned b = __float_as_uint(v + 0.0f);  // -0 + 0 = +0
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}
__device__ __forceinline__ float key_value(unsigned key) {
  return __uint_as_float(key & 0x80000000u ? key & 0x7fffffffu : ~key);
}

// One step of a shuffle tree over (best, second best) pairs: this lane's pair merged with lane ^ off's (max
// and min are exact, so any tree gives every lane the same two values).
__device__ __forceinline__ void merge_top2_xor(float& b1, float& b2, int off) {
  const float o1 = __shfl_xor_sync(kFullMask, b1, off), o2 = __shfl_xor_sync(kFullMask, b2, off);
  const float hi = fmaxf(b1, o1), lo = fmaxf(fminf(b1, o1), fmaxf(b2, o2));
  b1 = hi;
  b2 = lo;
}

// SigmoidGrouped's group stage for groups of exactly 32 experts (E = 32 * n_group <= 32 *
// kMaxExpertsPerLane): lane l's sel[j] is expert j * 32 + l, so group j is slot j of every lane. Each group's
// two best selection scores by one shuffle tree over all groups at once; then the topk_group best groups
// (ties to the lower group, groups of -inf never) picked the same way in every lane; sel of the other groups'
// experts -> -inf.
template <int kMaxExpertsPerLane>
__device__ __forceinline__ void sel_groups_of_32(const RouterParams& rp, float (&sel)[kMaxExpertsPerLane]) {
  float b1[kMaxExpertsPerLane], b2[kMaxExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kMaxExpertsPerLane; ++j) {
    b1[j] = sel[j] > -INFINITY ? sel[j] : -INFINITY;  // as the general loop's first `v > b1` (NaN stays out)
    b2[j] = -INFINITY;
  }
  for (int off = 16; off > 0; off /= 2)
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) merge_top2_xor(b1[j], b2[j], off);
  float score[kMaxExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kMaxExpertsPerLane; ++j) score[j] = j < rp.n_group ? b1[j] + b2[j] : -INFINITY;
  unsigned keep = 0;
  for (int k = 0; k < rp.topk_group; ++k) {
    int best = -1;
    float best_v = -INFINITY;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const bool open = score[j] != -INFINITY && !((keep >> j) & 1u);
      if (open && (best < 0 || score[j] > best_v)) {
        best = j;
        best_v = score[j];
      }
    }
    if (best >= 0) keep |= 1u << best;
  }
#pragma unroll
  for (int j = 0; j < kMaxExpertsPerLane; ++j)
    if (j < rp.n_group && !((keep >> j) & 1u)) sel[j] = -INFINITY;
}

// Writes ids[0..K) (descending selection score; local ids, -1 for another rank's expert) and weights[0..K),
// and returns pick `lane`'s id to lanes below K (-1 to the others), so a caller needs no read-back of ids.
// kMaxExpertsPerLane * 32 >= E: instantiated for 4, 8, 16 and 32 so small expert counts keep everything in
// registers. kKind: the router kind when the caller knows it at compile time (router_kinds.h), else
// kAnyRouter.
template <int kMaxExpertsPerLane, int kKind = kAnyRouter>
__device__ __forceinline__ int warp_route(const RouterParams& rp, const float* logits, int* ids,
                                          float* weights) {
  const int lane = threadIdx.x % 32, E = rp.num_experts, K = rp.top_k;
  const Router kind = kKind == kAnyRouter ? rp.kind : static_cast<Router>(kKind);
  float prob[kMaxExpertsPerLane], sel[kMaxExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kMaxExpertsPerLane; ++j) {
    const int e = j * 32 + lane;
    prob[j] = e < E ? logits[e] : -INFINITY;
  }
  if (kind == Router::SoftmaxTopk) {
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) m = fmaxf(m, prob[j]);
    m = key_value(__reduce_max_sync(kFullMask, order_key(m)));  // the exact maximum, in one instruction
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      prob[j] = j * 32 + lane < E ? expf(prob[j] - m) : 0.0f;
      s += prob[j];
    }
    s = warp_sum(s);
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      prob[j] = prob[j] / s;
      sel[j] = j * 32 + lane < E ? prob[j] : -INFINITY;
    }
  } else if (kind == Router::TopkSoftmax) {
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) sel[j] = prob[j];
  } else {
    // The selection biases loaded together before the sigmoids: loaded inside their loop, each waited for its
    // own round trip (the division's slow-path branch splits the loop into blocks ptxas does not hoist loads
    // across: 8 dependent trips on DeepSeek-V3's routing warp).
    float bias[kMaxExpertsPerLane];
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const int e = j * 32 + lane;
      bias[j] = rp.bias && e < E ? rp.bias[e] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const int e = j * 32 + lane;
      prob[j] = e < E ? 1.0f / (1.0f + expf(-prob[j])) : 0.0f;
      sel[j] = e < E ? prob[j] + bias[j] : -INFINITY;
    }
    // Group scores: the sum of each group's two best selection scores; lane g keeps group g's. Each expert's
    // group once, before the loop over groups: a division by the run-time group size is ~20 dependent
    // instructions, and inside the loop the routing warp made 64 of them in a row (DeepSeek-V3's one-block
    // prologue at one token: 44 us under ncu, against 7 for Qwen3's softmax routing).
    const int gsize = E / rp.n_group;
    if (gsize == 32 && E == 32 * rp.n_group) {
      // Groups of 32 (DeepSeek-V3: 256 experts in 8): group j is every lane's expert j * 32 + lane, so all
      // groups' best two go through one shuffle tree together (5 dependent rounds where the loop below takes
      // 5 per group), every lane ends with every group's score, and the groups are picked lane by lane with
      // no shuffles. The same values and picks as the loop below (max / min are exact; the lowest group wins
      // a tie, a group of -inf is never kept).
      sel_groups_of_32<kMaxExpertsPerLane>(rp, sel);
    } else {
      int group[kMaxExpertsPerLane];
#pragma unroll
      for (int j = 0; j < kMaxExpertsPerLane; ++j)
        group[j] = j * 32 + lane < E ? (j * 32 + lane) / gsize : -1;
      float my_group = -INFINITY;
      for (int g = 0; g < rp.n_group; ++g) {
        float b1 = -INFINITY, b2 = -INFINITY;
#pragma unroll
        for (int j = 0; j < kMaxExpertsPerLane; ++j) {
          if (group[j] == g) {
            const float v = sel[j];
            if (v > b1) {
              b2 = b1;
              b1 = v;
            } else if (v > b2) {
              b2 = v;
            }
          }
        }
        for (int off = 16; off > 0; off /= 2) merge_top2_xor(b1, b2, off);
        if (lane == g) my_group = gsize >= 2 ? b1 + b2 : b1;
      }
      unsigned keep = 0;
      for (int k = 0; k < rp.topk_group; ++k) {
        const ArgMax best =
            warp_argmax(ArgMax{my_group, lane < rp.n_group && my_group != -INFINITY ? lane : -1});
        if (best.i >= 0) keep |= 1u << best.i;
        if (lane == best.i) my_group = -INFINITY;
      }
#pragma unroll
      for (int j = 0; j < kMaxExpertsPerLane; ++j)
        if (group[j] >= 0 && !((keep >> group[j]) & 1u)) sel[j] = -INFINITY;
    }
  }

  // Top-K picks; lane k keeps pick k's id and routing value. Each round is two warp reductions in hardware
  // (REDUX): the largest selection key, then the lowest expert id holding it, so ties go to the lower id as
  // in the reference. A shuffle-tree arg-max took ~190 instructions per pick, and the routing warp's chain
  // was the one-block prologue's whole time at one token (ncu: ~2.2k instructions on its critical path).
  unsigned key[kMaxExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kMaxExpertsPerLane; ++j)
    key[j] = sel[j] != -INFINITY && sel[j] == sel[j] ? order_key(sel[j]) : 0u;  // 0: never picked
  int my_id = -1;
  float my_p = 0.0f;
  for (int k = 0; k < K; ++k) {
    unsigned best = 0u;
    int best_j = 0;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      if (key[j] > best) {  // strict: the lowest j (the lowest id of this lane) keeps a tie
        best = key[j];
        best_j = j;
      }
    }
    const unsigned top = __reduce_max_sync(kFullMask, best);
    const unsigned mine = top != 0u && best == top ? static_cast<unsigned>(best_j * 32 + lane) : 0xffffffffu;
    const unsigned win = __reduce_min_sync(kFullMask, mine);
    const int id = top != 0u ? static_cast<int>(win) : -1;
    // Selects on each expert's own id, not an index id / 32: ptxas turned that form into a dynamic index and
    // put prob and key in local memory (32 bytes of stack in the router kernel, STL / LDL in every pick).
    float pv = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const bool hit = j * 32 + lane == id;  // never when id < 0
      pv = hit ? prob[j] : pv;
      key[j] = hit ? 0u : key[j];
    }
    pv = __shfl_sync(kFullMask, pv, id >= 0 ? id % 32 : 0);
    if (lane == k) {
      my_id = id;
      my_p = pv;
    }
  }
  float w;
  if (kind == Router::TopkSoftmax) {
    const float m = __shfl_sync(kFullMask, my_p, 0);  // pick 0 has the largest logit
    const float ex = lane < K ? expf(my_p - m) : 0.0f;
    w = ex / warp_sum(ex);
  } else {
    const float s = warp_sum(lane < K ? my_p : 0.0f);
    w = rp.renormalize ? my_p / s : my_p;
    if (kind == Router::SigmoidGrouped) w *= rp.routed_scaling_factor;
  }
  // Weights over all E picks (above), ids local to this rank (expert parallelism; the identity otherwise).
  const int local = my_id - rp.expert_begin;
  my_id = local >= 0 && local < rp.experts_local ? local : -1;
  if (lane < K) {
    ids[lane] = my_id;
    weights[lane] = w;
  }
  return lane < K ? my_id : -1;
}

}  // namespace moe::cuda
