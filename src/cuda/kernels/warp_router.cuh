#pragma once
// One token's routing computed by one warp (FORMATS.md section 4): the E logits live in registers, 32 per
// lane at most (E <= 1024), lane l holding experts l, l + 32, ... Reductions are fixed shuffle trees, so the
// result is deterministic; ties go to the lower expert id.
#include <cuda_runtime.h>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/moe_params.h"

namespace moe::cuda {

// Writes ids[0..K) (descending selection score; local ids, -1 for another rank's expert) and weights[0..K),
// and returns pick `lane`'s id to lanes below K (-1 to the others), so a caller needs no read-back of ids.
// kMaxExpertsPerLane * 32 >= E: instantiated for 4, 8, 16 and 32 so small expert counts keep everything in
// registers.
template <int kMaxExpertsPerLane>
__device__ __forceinline__ int warp_route(const RouterParams& rp, const float* logits, int* ids,
                                          float* weights) {
  const int lane = threadIdx.x % 32, E = rp.num_experts, K = rp.top_k;
  float prob[kMaxExpertsPerLane], sel[kMaxExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kMaxExpertsPerLane; ++j) {
    const int e = j * 32 + lane;
    prob[j] = e < E ? logits[e] : -INFINITY;
  }
  if (rp.kind == Router::SoftmaxTopk) {
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) m = fmaxf(m, prob[j]);
    m = warp_max(m);
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
  } else if (rp.kind == Router::TopkSoftmax) {
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) sel[j] = prob[j];
  } else {
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const int e = j * 32 + lane;
      prob[j] = e < E ? 1.0f / (1.0f + expf(-prob[j])) : 0.0f;
      sel[j] = e < E ? prob[j] + (rp.bias ? rp.bias[e] : 0.0f) : -INFINITY;
    }
    // Group scores: the sum of each group's two best selection scores; lane g keeps group g's.
    const int gsize = E / rp.n_group;
    float my_group = -INFINITY;
    for (int g = 0; g < rp.n_group; ++g) {
      float b1 = -INFINITY, b2 = -INFINITY;
#pragma unroll
      for (int j = 0; j < kMaxExpertsPerLane; ++j) {
        const int e = j * 32 + lane;
        if (e < E && e / gsize == g) {
          const float v = sel[j];
          if (v > b1) {
            b2 = b1;
            b1 = v;
          } else if (v > b2) {
            b2 = v;
          }
        }
      }
      for (int off = 16; off > 0; off /= 2) {
        const float o1 = __shfl_xor_sync(kFullMask, b1, off), o2 = __shfl_xor_sync(kFullMask, b2, off);
        const float hi = fmaxf(b1, o1), lo = fmaxf(fminf(b1, o1), fmaxf(b2, o2));
        b1 = hi;
        b2 = lo;
      }
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
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const int e = j * 32 + lane;
      if (e < E && !((keep >> (e / gsize)) & 1u)) sel[j] = -INFINITY;
    }
  }

  // Top-K picks; lane k keeps pick k's id and routing value.
  int my_id = -1;
  float my_p = 0.0f;
  for (int k = 0; k < K; ++k) {
    ArgMax a{-INFINITY, -1};
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      const ArgMax c{sel[j], sel[j] != -INFINITY && sel[j] == sel[j] ? j * 32 + lane : -1};
      if (better(c, a)) a = c;
    }
    const ArgMax best = warp_argmax(a);
    float pv = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxExpertsPerLane; ++j) {
      if (j * 32 + lane == best.i) {
        pv = prob[j];
        sel[j] = -INFINITY;
      }
    }
    pv = __shfl_sync(kFullMask, pv, best.i >= 0 ? best.i % 32 : 0);
    if (lane == k) {
      my_id = best.i;
      my_p = pv;
    }
  }
  float w;
  if (rp.kind == Router::TopkSoftmax) {
    const float m = __shfl_sync(kFullMask, my_p, 0);  // pick 0 has the largest logit
    const float ex = lane < K ? expf(my_p - m) : 0.0f;
    w = ex / warp_sum(ex);
  } else {
    const float s = warp_sum(lane < K ? my_p : 0.0f);
    w = rp.renormalize ? my_p / s : my_p;
    if (rp.kind == Router::SigmoidGrouped) w *= rp.routed_scaling_factor;
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
