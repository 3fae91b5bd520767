// Decode attention: one query token per sequence over its whole KV, split into `splits` contiguous parts so
// that short batches still fill the GPU (split-K / flash-decoding), then a combine of the parts' (max, sum,
// output). Lengths come from device memory, so a captured graph serves every context length.
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

constexpr int kUnroll = 4;

// One warp per (split, head, sequence); lane holds head_dim/32 contiguous dims.
template <int D>
__global__ void __launch_bounds__(32) decode_kernel(const float* q, StepMetaDev meta, KvCacheDev kv,
                                                    int layer, int heads, int splits, float* partial) {
  constexpr int E = D / 32;
  const int split = blockIdx.x, h = blockIdx.y, b = blockIdx.z, lane = threadIdx.x;
  const int kv_len = meta.seq_kv_len[b];
  const int chunk = (kv_len + splits - 1) / splits;
  const int j0 = min(kv_len, split * chunk), j1 = min(kv_len, j0 + chunk);
  const int kvh = h / (heads / kv.kv_heads), kv_dim = kv.kv_heads * D;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  const float* qr = q + static_cast<int64_t>(meta.seq_first[b]) * heads * D + static_cast<int64_t>(h) * D;
  float qv[E], o[E];
#pragma unroll
  for (int e = 0; e < E; ++e) qv[e] = qr[lane * E + e] * scale, o[e] = 0.0f;
  const uint16_t* layer_base = kv.data + layer * kv.layer_stride();
  const int32_t* pages = meta.page_table + static_cast<int64_t>(b) * meta.max_pages;
  const int64_t v_off = static_cast<int64_t>(kv.page_size) * kv_dim;
  float m = -INFINITY, l = 0.0f;
  for (int j = j0; j < j1; j += kUnroll) {
    const uint16_t* base[kUnroll];
    float s[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int jj = min(j + u, j1 - 1);
      base[u] = layer_base + pages[jj / kv.page_size] * kv.page_stride() +
                static_cast<int64_t>(jj % kv.page_size) * kv_dim + kvh * D + lane * E;
      float acc = 0.0f;
#pragma unroll
      for (int e = 0; e < E; ++e) acc += qv[e] * bf16_to_f32(base[u][e]);
      s[u] = acc;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s[u] = warp_sum(s[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (j + u >= j1) break;
      const float m_new = fmaxf(m, s[u]);
      const float alpha = expf(m - m_new), p = expf(s[u] - m_new);
      l = l * alpha + p;
#pragma unroll
      for (int e = 0; e < E; ++e) o[e] = o[e] * alpha + p * bf16_to_f32(base[u][v_off + e]);
      m = m_new;
    }
  }
  float* out = partial + ((static_cast<int64_t>(b) * heads + h) * splits + split) * (D + 2);
#pragma unroll
  for (int e = 0; e < E; ++e) out[lane * E + e] = o[e];
  if (lane == 0) out[D] = m, out[D + 1] = l;
}

__global__ void combine_kernel(const float* partial, int heads, int splits, int D, float* ctx_f32,
                               uint16_t* ctx_bf16, StepMetaDev meta) {
  const int h = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
  const float* p = partial + (static_cast<int64_t>(b) * heads + h) * splits * (D + 2);
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, p[s * (D + 2) + D]);
  float num = 0.0f, den = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float* ps = p + s * (D + 2);
    if (ps[D + 1] == 0.0f) continue;  // an empty split
    const float w = expf(ps[D] - mx);
    num += w * ps[d];
    den += w * ps[D + 1];
  }
  const int64_t at = static_cast<int64_t>(meta.seq_first[b]) * heads * D + static_cast<int64_t>(h) * D + d;
  const float v = num / den;
  if (ctx_f32) ctx_f32[at] = v;
  if (ctx_bf16) ctx_bf16[at] = f32_to_bf16(v);
}

template <int D>
void launch(const float* q, const StepMetaDev& meta, int B, const KvCacheDev& kv, int layer, int heads,
            int splits, float* partial, cudaStream_t s) {
  decode_kernel<D>
      <<<dim3(static_cast<unsigned>(splits), static_cast<unsigned>(heads), static_cast<unsigned>(B)), 32, 0,
         s>>>(q, meta, kv, layer, heads, splits, partial);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void attention_decode(const float* q, const StepMetaDev& meta, int B, const KvCacheDev& kv, int layer,
                      int heads, int splits, float* partial, float* ctx_f32, uint16_t* ctx_bf16,
                      cudaStream_t s) {
  if (B == 0) return;
  switch (kv.head_dim) {
    case 32:
      launch<32>(q, meta, B, kv, layer, heads, splits, partial, s);
      break;
    case 64:
      launch<64>(q, meta, B, kv, layer, heads, splits, partial, s);
      break;
    case 128:
      launch<128>(q, meta, B, kv, layer, heads, splits, partial, s);
      break;
    case 256:
      launch<256>(q, meta, B, kv, layer, heads, splits, partial, s);
      break;
    default:
      fail_input("cuda attention: head_dim ", kv.head_dim, " is not supported (32, 64, 128, 256)");
  }
  combine_kernel<<<dim3(static_cast<unsigned>(heads), static_cast<unsigned>(B)), kv.head_dim, 0, s>>>(
      partial, heads, splits, kv.head_dim, ctx_f32, ctx_bf16, meta);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace moe::model::gpu
