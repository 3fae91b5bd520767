// Prefill, after the fused q/k/v projection: per-head q/k RMSNorm, neox RoPE, and the store of k and v into
// the paged KV cache. One warp per (token, head slot); slots are the q heads, then the k heads, then the v
// heads. (Decode does the same inside its attention kernel: attention_decode.cu.)
#include "model/cuda/common.cuh"
#include "model/cuda/head_norm_rope.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 4;

template <int E>
__global__ void qk_rope_kernel(const float* qkv, int heads, int kv_heads, HeadNormRope nr, StepMetaDev meta,
                               KvCacheDev kv, int layer, float* q_out) {
  constexpr int D = 32 * E;
  pdl_wait();
  pdl_trigger();
  const int t = blockIdx.x, lane = threadIdx.x % 32;
  const int slot = blockIdx.y * kWarps + threadIdx.x / 32;
  const int slots = heads + 2 * kv_heads;
  if (slot >= slots) return;
  const bool is_q = slot < heads, is_k = !is_q && slot < heads + kv_heads;
  const float* norm = is_q ? nr.q_norm : is_k ? nr.k_norm : nullptr;
  const int pos = meta.token_pos[t];
  float v[E], w[E] = {};
  load_lane_elements<E>(qkv + (static_cast<int64_t>(t) * slots + slot) * D, v);
  if (norm) load_lane_elements<E>(norm, w);
  const HeadRotation<E> rot = head_rotation<E>(nr.inv_freq, nr.scaling, pos);
  head_norm_rope<E>(v, w, norm != nullptr, nr.eps, is_q || is_k, rot);
  if (is_q) {
    float* dst = q_out + (static_cast<int64_t>(t) * heads + slot) * D;
#pragma unroll
    for (int e = 0; e < E; ++e) dst[lane + 32 * e] = v[e];
    return;
  }
  const int seq = meta.token_seq[t];
  const int page = meta.page_table[static_cast<int64_t>(seq) * meta.max_pages + pos / kv.page_size];
  const int kvh = is_k ? slot - heads : slot - heads - kv_heads;
  uint16_t* dst = kv.data + layer * kv.layer_stride() + page * kv.page_stride() +
                  (is_k ? 0 : static_cast<int64_t>(kv.page_size) * kv_heads * D) +
                  static_cast<int64_t>(pos % kv.page_size) * kv_heads * D + static_cast<int64_t>(kvh) * D;
#pragma unroll
  for (int e = 0; e < E; ++e) dst[lane + 32 * e] = f32_to_bf16(v[e]);
}

}  // namespace

void qk_norm_rope_store(const float* qkv, int N, int heads, int kv_heads, int head_dim,
                        const HeadNormRope& nr, const StepMetaDev& meta, const KvCacheDev& kv, int layer,
                        float* q_out, cudaStream_t s) {
  if (N == 0) return;
  const dim3 grid(static_cast<unsigned>(N), blocks_for(heads + 2 * kv_heads, kWarps));
  with_head_dim(head_dim, [&](auto d) {
    constexpr int E = decltype(d)::value / 32;
    launch_pdl(qk_rope_kernel<E>, grid, 32 * kWarps, 0, s, qkv, heads, kv_heads, nr, meta, kv, layer, q_out);
  });
}

}  // namespace moe::model::gpu
