#pragma once
// One attention head's vector after the q/k/v projection: its per-head RMSNorm (Qwen3's q_norm / k_norm) and
// neox RoPE, done by one warp in registers: lane l holds elements l, l + 32, ... (E = head_dim / 32 of them).
// Prefill (qk_rope.cu) and decode (attention_decode.cu, inside the attention kernel) share it, so a token's q
// and k have the same bits either way. The caller loads the vectors, norm weights and rotation (HeadLane)
// first, all of a warp's at once: done one head after another, each head's dependent loads took a memory
// round trip of their own.
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {

// Rotation i pairs element i with i + D/2: for E >= 2 both are the same lane's (elements e and e + E/2); for
// E == 1 (D = 32) lane l < 16 pairs with lane l + 16.
template <int E>
constexpr int kRotations = E >= 2 ? E / 2 : 1;

// A lane's part of the token's rotation: cos and sin (times the YaRN scaling) of its rotation angles.
template <int E>
struct HeadRotation {
  float c[kRotations<E>], s[kRotations<E>];
};

template <int E>
__device__ __forceinline__ HeadRotation<E> head_rotation(const float* inv_freq, float scaling, int pos) {
  const int lane = threadIdx.x % 32;
  HeadRotation<E> r;
#pragma unroll
  for (int e = 0; e < kRotations<E>; ++e) {
    const int i = E >= 2 ? lane + 32 * e : lane % 16;
    const float angle = inv_freq[i] * static_cast<float>(pos);
    r.c[e] = cosf(angle) * scaling, r.s[e] = sinf(angle) * scaling;
  }
  return r;
}

// v (lane's elements of one head) = RoPE(RMSNorm(v)) with w the lane's norm weights; `norm` false skips the
// norm, `rope` false RoPE (v heads). All lanes of the warp take part.
template <int E>
__device__ __forceinline__ void head_norm_rope(float (&v)[E], const float (&w)[E], bool norm, float eps,
                                               bool rope, const HeadRotation<E>& rot) {
  constexpr int D = 32 * E;
  if (norm) {
    float ss = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) ss += v[e] * v[e];
    ss = warp_sum(ss);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(D) + eps);
#pragma unroll
    for (int e = 0; e < E; ++e) v[e] = w[e] * (v[e] * inv);
  }
  if (!rope) return;
  if constexpr (E >= 2) {
#pragma unroll
    for (int e = 0; e < E / 2; ++e) {
      const float a = v[e], b = v[e + E / 2];
      v[e] = a * rot.c[e] - b * rot.s[e];
      v[e + E / 2] = b * rot.c[e] + a * rot.s[e];
    }
  } else {
    const bool first = threadIdx.x % 32 < 16;
    const float other = __shfl_xor_sync(cuda::kFullMask, v[0], 16);
    const float a = first ? v[0] : other, b = first ? other : v[0];
    v[0] = first ? a * rot.c[0] - b * rot.s[0] : b * rot.c[0] + a * rot.s[0];
  }
}

// Lane's E elements of a D-vector in global memory.
template <int E>
__device__ __forceinline__ void load_lane_elements(const float* p, float (&v)[E]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int e = 0; e < E; ++e) v[e] = p[lane + 32 * e];
}

}  // namespace moe::model::gpu
