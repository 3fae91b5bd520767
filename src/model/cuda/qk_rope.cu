// After the fused q/k/v projection: per-head q/k RMSNorm, neox RoPE, and the store of k and v into the paged
// KV cache. One warp per (token, head slot); slots are the q heads, then the k heads, then the v heads.
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 4, kMaxHeadDim = 256;

__global__ void qk_rope_kernel(const float* qkv, int heads, int kv_heads, int D, const float* q_norm,
                               const float* k_norm, float eps, const float* inv_freq, float attn_scaling,
                               StepMetaDev meta, KvCacheDev kv, int layer, float* q_out, int* zero_counters,
                               int num_counters) {
  __shared__ float buf[kWarps][kMaxHeadDim];
  pdl_wait();
  pdl_trigger();
  if (zero_counters && blockIdx.x == 0 && blockIdx.y == 0)
    for (int i = threadIdx.x; i < num_counters; i += blockDim.x) zero_counters[i] = 0;
  const int t = blockIdx.x, lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int slot = blockIdx.y * kWarps + w;
  const int slots = heads + 2 * kv_heads;
  if (slot >= slots) return;
  const int width = slots * D;
  const float* src = qkv + static_cast<int64_t>(t) * width + static_cast<int64_t>(slot) * D;
  float* v = buf[w];
  for (int i = lane; i < D; i += 32) v[i] = src[i];
  __syncwarp();
  const bool is_q = slot < heads, is_k = !is_q && slot < heads + kv_heads;
  const float* norm_w = is_q ? q_norm : is_k ? k_norm : nullptr;
  if (norm_w) {
    float ss = 0.0f;
    for (int i = lane; i < D; i += 32) ss += v[i] * v[i];
    ss = warp_sum(ss);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(D) + eps);
    for (int i = lane; i < D; i += 32) v[i] = norm_w[i] * (v[i] * inv);
    __syncwarp();
  }
  const int pos = meta.token_pos[t];
  if (is_q || is_k) {
    const int half = D / 2;
    for (int i = lane; i < half; i += 32) {
      const float angle = inv_freq[i] * static_cast<float>(pos);
      const float c = cosf(angle) * attn_scaling, s = sinf(angle) * attn_scaling;
      const float a = v[i], b = v[i + half];
      v[i] = a * c - b * s;
      v[i + half] = b * c + a * s;
    }
    __syncwarp();
  }
  if (is_q) {
    float* dst = q_out + static_cast<int64_t>(t) * heads * D + static_cast<int64_t>(slot) * D;
    for (int i = lane; i < D; i += 32) dst[i] = v[i];
    return;
  }
  const int seq = meta.token_seq[t];
  const int page = meta.page_table[static_cast<int64_t>(seq) * meta.max_pages + pos / kv.page_size];
  const int kvh = is_k ? slot - heads : slot - heads - kv_heads;
  uint16_t* dst = kv.data + layer * kv.layer_stride() + page * kv.page_stride() +
                  (is_k ? 0 : static_cast<int64_t>(kv.page_size) * kv_heads * D) +
                  static_cast<int64_t>(pos % kv.page_size) * kv_heads * D + static_cast<int64_t>(kvh) * D;
  for (int i = lane; i < D; i += 32) dst[i] = f32_to_bf16(v[i]);
}

}  // namespace

void qk_norm_rope_store(const float* qkv, int N, int heads, int kv_heads, int head_dim, const float* q_norm,
                        const float* k_norm, float eps, const float* inv_freq, float attention_scaling,
                        const StepMetaDev& meta, const KvCacheDev& kv, int layer, float* q_out,
                        int* zero_counters, int num_counters, cudaStream_t s) {
  require(head_dim <= kMaxHeadDim && head_dim % 2 == 0, "qk_norm_rope_store: head_dim ", head_dim,
          " unsupported");
  if (N == 0) return;
  const dim3 grid(static_cast<unsigned>(N), blocks_for(heads + 2 * kv_heads, kWarps));
  launch_pdl(qk_rope_kernel, grid, 32 * kWarps, 0, s, qkv, heads, kv_heads, head_dim, q_norm, k_norm, eps,
             inv_freq, attention_scaling, meta, kv, layer, q_out, zero_counters, num_counters);
}

}  // namespace moe::model::gpu
