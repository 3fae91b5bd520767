// Causal GQA attention for prefill (any number of new tokens per sequence, over all of its cached positions).
// Head dims 64 and 128 run on tensor cores (attention_prefill_tc.cu). The others take this fp32 CUDA-core
// kernel: a block takes 16 query rows (a quarter of a host tile) of one sequence and one head and walks the
// keys in chunks of 32 held in shared memory (bf16 pages widened to fp32), with an online softmax in fp32.
// Rows past the sequence's last are computed on a clamped copy and never written.
#include "core/env_flag.h"
#include "model/cuda/attention_prefill_tc.h"
#include "model/cuda/common.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

constexpr int kTile = 16, kChunk = 32, kThreads = 128;
constexpr int kSubTiles = kPrefillTile / kTile;  // blocks per host tile
static_assert(kPrefillTile % kTile == 0);

template <int D>
constexpr size_t prefill_smem_bytes() {
  return sizeof(float) * (kTile * D + kChunk * (D + 1) + kChunk * D + kTile * kChunk);
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    prefill_kernel(const float* q, StepMetaDev meta, const int32_t* tiles, KvCacheDev kv, int layer,
                   int heads, float* ctx_f32, uint16_t* ctx_bf16) {
  extern __shared__ float sm[];
  pdl_wait();
  pdl_trigger();
  float* Qs = sm;                     // [kTile][D], pre-scaled
  float* Ks = Qs + kTile * D;         // [kChunk][D + 1] (padded: lanes read different rows)
  float* Vs = Ks + kChunk * (D + 1);  // [kChunk][D]
  float* Ps = Vs + kChunk * D;        // [kTile][kChunk]
  constexpr int kPer = D / 8;
  const int tid = threadIdx.x, r = tid / 8, c8 = tid % 8;
  const int tile = blockIdx.x / kSubTiles, h = blockIdx.y;
  const int seq = tiles[2 * tile], row0 = tiles[2 * tile + 1] + kTile * (blockIdx.x % kSubTiles);
  const int first = meta.seq_first[seq], kv_len = meta.seq_kv_len[seq];
  const int start = meta.token_pos[first];
  const int last_row = first + (kv_len - start) - 1;
  if (row0 > last_row) return;  // the host tile's last rows are past the sequence
  const int kvh = h / (heads / kv.kv_heads);
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  const int64_t q_stride = static_cast<int64_t>(heads) * D;
  for (int i = tid; i < kTile * D; i += kThreads) {
    const int row = min(row0 + i / D, last_row);
    Qs[i] = q[row * q_stride + static_cast<int64_t>(h) * D + i % D] * scale;
  }
  const int my_row = min(row0 + r, last_row);
  const int my_pos = start + (my_row - first);
  const int n_keys = start + (min(row0 + kTile - 1, last_row) - first) + 1;
  const int kv_dim = kv.kv_heads * D;
  const uint16_t* layer_base = kv.data + layer * kv.layer_stride();
  const int32_t* pages = meta.page_table + static_cast<int64_t>(seq) * meta.max_pages;

  float o[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) o[k] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int kc = 0; kc < n_keys; kc += kChunk) {
    __syncthreads();
    for (int i = tid; i < kChunk * D; i += kThreads) {
      const int c = i / D, d = i % D, j = kc + c;
      float kval = 0.0f, vval = 0.0f;
      if (j < n_keys) {
        const uint16_t* base = layer_base + pages[j / kv.page_size] * kv.page_stride() +
                               static_cast<int64_t>(j % kv.page_size) * kv_dim + kvh * D + d;
        kval = bf16_to_f32(base[0]);
        vval = bf16_to_f32(base[static_cast<int64_t>(kv.page_size) * kv_dim]);
      }
      Ks[c * (D + 1) + d] = kval;
      Vs[c * D + d] = vval;
    }
    __syncthreads();
    // Each q element is read once for the thread's four keys.
    float s[kChunk / 8];
#pragma unroll
    for (int jj = 0; jj < kChunk / 8; ++jj) s[jj] = 0.0f;
#pragma unroll 4
    for (int d = 0; d < D; ++d) {
      const float qd = Qs[r * D + d];
#pragma unroll
      for (int jj = 0; jj < kChunk / 8; ++jj) s[jj] += qd * Ks[(c8 + 8 * jj) * (D + 1) + d];
    }
    float mx = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < kChunk / 8; ++jj) {
      if (kc + c8 + 8 * jj > my_pos) s[jj] = -INFINITY;
      mx = fmaxf(mx, s[jj]);
    }
    for (int off = 1; off < 8; off *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    const float m_new = fmaxf(m, mx);  // finite: key 0 is in the first chunk and never masked
    float sum = 0.0f;
#pragma unroll
    for (int jj = 0; jj < kChunk / 8; ++jj) {
      const float p = expf(s[jj] - m_new);
      Ps[r * kChunk + c8 + 8 * jj] = p;
      sum += p;
    }
    for (int off = 1; off < 8; off *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const float alpha = expf(m - m_new);
    l = l * alpha + sum;
    m = m_new;
    __syncwarp();
#pragma unroll
    for (int k = 0; k < kPer; ++k) o[k] *= alpha;
    for (int c = 0; c < kChunk; ++c) {
      const float p = Ps[r * kChunk + c];
#pragma unroll
      for (int k = 0; k < kPer; ++k) o[k] += p * Vs[c * D + c8 + 8 * k];
    }
  }
  const int row = row0 + r;
  if (row > last_row) return;
  const float inv = 1.0f / l;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t at = row * q_stride + static_cast<int64_t>(h) * D + c8 + 8 * k;
    const float v = o[k] * inv;
    if (ctx_f32) ctx_f32[at] = v;
    if (ctx_bf16) ctx_bf16[at] = f32_to_bf16(v);
  }
}

template <int D>
void launch(const float* q, const StepMetaDev& meta, const int32_t* tiles, int num_tiles,
            const KvCacheDev& kv, int layer, int heads, float* ctx_f32, uint16_t* ctx_bf16, cudaStream_t s) {
  constexpr size_t smem = prefill_smem_bytes<D>();
  allow_dynamic_smem(reinterpret_cast<const void*>(prefill_kernel<D>), static_cast<int>(smem));
  launch_pdl(prefill_kernel<D>,
             dim3(static_cast<unsigned>(num_tiles * kSubTiles), static_cast<unsigned>(heads)), kThreads, smem,
             s, q, meta, tiles, kv, layer, heads, ctx_f32, ctx_bf16);
}

}  // namespace

void attention_prefill(const float* q, const StepMetaDev& meta, const int32_t* tiles, int num_tiles,
                       const KvCacheDev& kv, int layer, int heads, float* ctx_f32, uint16_t* ctx_bf16,
                       cudaStream_t s) {
  if (num_tiles == 0) return;
  // MOE_ATTENTION_PREFILL_CORES=1 keeps every head dim on the CUDA-core kernel (to compare the two).
  static const bool cores_only = env_flag("MOE_ATTENTION_PREFILL_CORES");
  if (!cores_only && prefill_tc_supports(kv.head_dim))
    return attention_prefill_tc(q, meta, tiles, num_tiles, kv, layer, heads, ctx_f32, ctx_bf16, s);
  with_head_dim(kv.head_dim, [&](auto d) {
    launch<decltype(d)::value>(q, meta, tiles, num_tiles, kv, layer, heads, ctx_f32, ctx_bf16, s);
  });
}

}  // namespace moe::model::gpu
