// Routing on the GPU (FORMATS.md section 4): one block per token; softmax_topk, topk_softmax, sigmoid_grouped; the
// shared expert's sigmoid gate; and the trivial grouping the shared expert uses (every token, in order).
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/launchers.h"

namespace moe::cuda {
namespace {

constexpr int kRouteThreads = 256;

// Picks the top-k of `score` (masked entries are -inf) in descending order, ties to the lower id. `score` is
// consumed: each pick is set to -inf.
__device__ void pick_top_k(float* score, int E, int k, int* out, float* sv, int* si) {
  for (int j = 0; j < k; ++j) {
    ArgMax a{-INFINITY, -1};
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      const float v = score[e];
      if (v != -INFINITY && v == v) {
        ArgMax c{v, e};
        if (better(c, a)) a = c;
      }
    }
    const ArgMax best = block_argmax(a, sv, si);
    if (threadIdx.x == 0) {
      out[j] = best.i;
      if (best.i >= 0) score[best.i] = -INFINITY;
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kRouteThreads) route_kernel(RouteArgs a) {
  const int t = blockIdx.x;
  const RouterParams& rp = a.router;
  const int E = rp.num_experts, K = rp.top_k;
  extern __shared__ float smem[];
  float* prob = smem;       // [E] the routing probability / sigmoid score (weights come from it)
  float* sel = smem + E;    // [E] the selection score (consumed by pick_top_k)
  __shared__ float sv[32];
  __shared__ int si[32];
  __shared__ int chosen[64];
  __shared__ float group_score[64];
  const float* l = a.logits + static_cast<size_t>(t) * E;

  if (rp.kind == Router::SoftmaxTopk) {
    float m = -INFINITY;
    for (int e = threadIdx.x; e < E; e += blockDim.x) m = fmaxf(m, l[e]);
    m = block_max(m, sv);
    float s = 0.0f;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      prob[e] = expf(l[e] - m);
      s += prob[e];
    }
    s = block_sum(s, sv);
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      prob[e] = prob[e] / s;
      sel[e] = prob[e];
    }
    __syncthreads();
    pick_top_k(sel, E, K, chosen, sv, si);
  } else if (rp.kind == Router::TopkSoftmax) {
    for (int e = threadIdx.x; e < E; e += blockDim.x) sel[e] = l[e];
    __syncthreads();
    pick_top_k(sel, E, K, chosen, sv, si);
  } else {
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      prob[e] = 1.0f / (1.0f + expf(-l[e]));
      sel[e] = prob[e] + (rp.bias ? rp.bias[e] : 0.0f);
    }
    __syncthreads();
    const int gsize = E / rp.n_group;
    for (int g = threadIdx.x; g < rp.n_group; g += blockDim.x) {
      float b1 = -INFINITY, b2 = -INFINITY;
      for (int e = g * gsize; e < (g + 1) * gsize; ++e) {
        const float v = sel[e];
        if (v > b1) {
          b2 = b1;
          b1 = v;
        } else if (v > b2) {
          b2 = v;
        }
      }
      group_score[g] = gsize >= 2 ? b1 + b2 : b1;
    }
    __syncthreads();
    __shared__ int keep[64];
    pick_top_k(group_score, rp.n_group, rp.topk_group, keep, sv, si);
    // Mask experts outside the kept groups.
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      const int g = e / gsize;
      bool kept = false;
      for (int j = 0; j < rp.topk_group; ++j) kept |= keep[j] == g;
      if (!kept) sel[e] = -INFINITY;
    }
    __syncthreads();
    pick_top_k(sel, E, K, chosen, sv, si);
  }

  if (threadIdx.x == 0) {
    int* ids = a.topk_ids + static_cast<size_t>(t) * K;
    float* w = a.topk_weights + static_cast<size_t>(t) * K;
    if (rp.kind == Router::TopkSoftmax) {
      const float m = l[chosen[0]];
      float s = 0.0f;
      for (int j = 0; j < K; ++j) s += expf(l[chosen[j]] - m);
      for (int j = 0; j < K; ++j) w[j] = expf(l[chosen[j]] - m) / s;
    } else {
      float s = 0.0f;
      for (int j = 0; j < K; ++j) s += prob[chosen[j]];
      for (int j = 0; j < K; ++j) {
        float v = rp.renormalize ? prob[chosen[j]] / s : prob[chosen[j]];
        if (rp.kind == Router::SigmoidGrouped) v *= rp.routed_scaling_factor;
        w[j] = v;
      }
    }
    for (int j = 0; j < K; ++j) ids[j] = chosen[j];
  }

  // The shared expert: every token, in order, with its sigmoid gate (1 when the layer has no gate).
  if (a.shared_gate_out) {
    float g = 1.0f;
    if (a.shared_gate_weight) {
      const uint16_t* x = a.x + static_cast<size_t>(t) * a.hidden;
      float s = 0.0f;
      for (int h = threadIdx.x; h < a.hidden; h += blockDim.x) s += bf16_to_f32(x[h]) * a.shared_gate_weight[h];
      s = block_sum(s, sv);
      g = 1.0f / (1.0f + expf(-s));
    }
    if (threadIdx.x == 0) {
      a.shared_gate_out[t] = g;
      a.shared_pairs[t] = t;
      if (t == 0) {
        a.shared_offsets[0] = 0;
        a.shared_offsets[1] = gridDim.x;
        a.shared_active[0] = 0;
        a.shared_num_active[0] = 1;
      }
    }
  }
}

}  // namespace

void launch_route(const RouteArgs& a, int M, cudaStream_t stream) {
  const size_t smem = 2 * sizeof(float) * static_cast<size_t>(a.router.num_experts);
  route_kernel<<<M, kRouteThreads, smem, stream>>>(a);
}

}  // namespace moe::cuda
