// Causal GQA prefill attention on tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate),
// FlashAttention-2 style. A block of 4 warps takes one head and a 64-row query tile of one sequence
// (kPrefillTile); each warp owns 16 query rows, holds their q in registers as bf16 A fragments (scaled by
// log2(e) / sqrt(D): the softmax runs in base 2) and its output in fp32 accumulators. Keys stream through
// shared memory 64 at a time, double-buffered with cp.async straight from the bf16 KV pages (16-byte chunks
// XOR-swizzled by row, so the ldmatrix reads of a warp hit distinct banks). Per chunk: S = q K^T (fp32),
// causal mask, online softmax (row max and sum in fp32 across the 4 lanes that share a row), then P V with P
// as the A operand (the accumulator layout of S is the A-fragment layout of P). Chunks wholly past a warp's
// last position are skipped. Rows past the sequence's last are computed on a clamped copy and never written.
//
// Precision: K and V are bf16 in the cache, so only q and P need rounding to feed the tensor cores. Each is
// split into two bf16 terms (x = hi + lo, lo = bf16(x - hi): about 16 significant bits) multiplied in turn,
// which keeps scores and outputs within fp32 rounding of the CPU reference. With one bf16 term the model
// tests measured top-1 agreement below their bounds (bf16 0.984, fp8 0.936: fp8 models turn small differences
// into whole fp8 steps downstream).
#include <cuda_bf16.h>

#include "cuda/kernels/mma_sm80.cuh"
#include "model/cuda/attention_prefill_tc.h"
#include "model/cuda/bf16_split.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/flash_fragments.cuh"
#include "model/cuda/kernel_attributes.h"

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps, kRows = 16 * kWarps, kKeys = 64;
static_assert(kRows == kPrefillTile, "one block per host query tile");

template <int D>
constexpr size_t tc_smem_bytes() {
  return 2 /* stages */ * 2 /* K, V */ * static_cast<size_t>(kKeys) * D * 2;
}

// Byte offset of 16-byte chunk c of key row `key` in a [kKeys][D] bf16 buffer.
template <int D>
__device__ __forceinline__ uint32_t kv_offset(int key, int c) {
  return static_cast<uint32_t>(key * D * 2 + ((c ^ (key & 7)) << 4));
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    prefill_tc_kernel(const float* q, StepMetaDev meta, const int32_t* tiles, KvCacheDev kv, int layer,
                      int heads, float* ctx_f32, uint16_t* ctx_bf16) {
  constexpr int kChunks = D / 8, kBuf = kKeys * D * 2;
  extern __shared__ __align__(128) uint8_t smem[];  // [stage][K | V][kKeys][D] bf16, swizzled
  pdl_wait();
  pdl_trigger();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int seq = tiles[2 * blockIdx.x], row0 = tiles[2 * blockIdx.x + 1], h = blockIdx.y;
  const int first = meta.seq_first[seq], kv_len = meta.seq_kv_len[seq];
  const int start = meta.token_pos[first];
  const int last_row = first + (kv_len - start) - 1;
  const int kvh = h / (heads / kv.kv_heads);
  const int n_keys = start + (min(row0 + kRows - 1, last_row) - first) + 1;
  const int kv_dim = kv.kv_heads * D;
  const uint16_t* layer_base = kv.data + layer * kv.layer_stride();
  const int32_t* pages = meta.page_table + static_cast<int64_t>(seq) * meta.max_pages;
  const int64_t q_stride = static_cast<int64_t>(heads) * D;

  // This thread's two rows (g and g + 8 of the warp's 16), clamped for reading, and their positions.
  const int wrow0 = row0 + 16 * warp;
  const int row_lo = min(wrow0 + g, last_row), row_hi = min(wrow0 + g + 8, last_row);
  const int pos_lo = start + (row_lo - first), pos_hi = start + (row_hi - first);
  const int warp_last_pos = start + (min(wrow0 + 15, last_row) - first);
  const bool warp_live = wrow0 <= last_row;

  uint32_t qa[D / 16][4], qa_lo[D / 16][4];
  {
    const float qs = 1.4426950408889634f / sqrtf(static_cast<float>(D));
    const float* qlo = q + row_lo * q_stride + static_cast<int64_t>(h) * D + 2 * t;
    const float* qhi = q + row_hi * q_stride + static_cast<int64_t>(h) * D + 2 * t;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const float2 a = *reinterpret_cast<const float2*>(qlo + 16 * kk);
      const float2 b = *reinterpret_cast<const float2*>(qhi + 16 * kk);
      const float2 c = *reinterpret_cast<const float2*>(qlo + 16 * kk + 8);
      const float2 d = *reinterpret_cast<const float2*>(qhi + 16 * kk + 8);
      split_bf16(a.x * qs, a.y * qs, qa[kk][0], qa_lo[kk][0]);
      split_bf16(b.x * qs, b.y * qs, qa[kk][1], qa_lo[kk][1]);
      split_bf16(c.x * qs, c.y * qs, qa[kk][2], qa_lo[kk][2]);
      split_bf16(d.x * qs, d.y * qs, qa[kk][3], qa_lo[kk][3]);
    }
  }

  const auto load_chunk = [&](int stage, int kc) {
    const uint32_t kb = cuda::smem_addr(smem + stage * 2 * kBuf), vb = kb + kBuf;
    for (int i = threadIdx.x; i < kKeys * kChunks; i += kThreads) {
      const int key = i / kChunks, c = i % kChunks, j = kc + key;
      const bool ok = j < n_keys;
      const uint16_t* krow = layer_base;  // a valid address even when nothing is read
      if (ok)
        krow += static_cast<int64_t>(pages[j / kv.page_size]) * kv.page_stride() +
                static_cast<int64_t>(j % kv.page_size) * kv_dim + kvh * D;
      cuda::cp_async16(kb + kv_offset<D>(key, c), krow + c * 8, ok);
      cuda::cp_async16(vb + kv_offset<D>(key, c),
                       krow + (ok ? static_cast<int64_t>(kv.page_size) * kv_dim : 0) + c * 8, ok);
    }
    cuda::cp_async_commit();
  };

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;
  const int n_chunks = (n_keys + kKeys - 1) / kKeys;
  load_chunk(0, 0);
  for (int ci = 0; ci < n_chunks; ++ci) {
    if (ci + 1 < n_chunks) {
      load_chunk((ci + 1) & 1, (ci + 1) * kKeys);
      cuda::cp_async_wait<1>();
    } else {
      cuda::cp_async_wait<0>();
    }
    __syncthreads();
    const int kc = ci * kKeys;
    if (warp_live && kc <= warp_last_pos) {
      const uint32_t kb = cuda::smem_addr(smem + (ci & 1) * 2 * kBuf), vb = kb + kBuf;
      float s[kKeys / 8][4];
      qk_mma(s, qa, qa_lo, [&](int key, int c) { return kb + kv_offset<D>(key, c); });
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = kc + 8 * j + 2 * t + e;
          if (key > pos_lo) s[j][e] = -INFINITY;
          if (key > pos_hi) s[j][2 + e] = -INFINITY;
        }
      }
      // Finite from the first chunk on: key 0 is never masked.
      uint32_t pa[kKeys / 16][4], pa_lo[kKeys / 16][4];
      softmax_step<true>(s, m_lo, m_hi, l_lo, l_hi, o, pa, pa_lo);
      pv_mma(o, pa, pa_lo, [&](int key, int c) { return vb + kv_offset<D>(key, c); });
    }
    __syncthreads();  // this stage is refilled two chunks on
  }
  if (!warp_live) return;
#pragma unroll
  for (int off = 1; off < 4; off *= 2) {
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, off);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, off);
  }
  const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;
  const auto store = [&](int row, float inv, float v0, float v1, int d) {
    if (row > last_row) return;
    const int64_t at = row * q_stride + static_cast<int64_t>(h) * D + d;
    if (ctx_f32) *reinterpret_cast<float2*>(ctx_f32 + at) = make_float2(v0 * inv, v1 * inv);
    if (ctx_bf16) *reinterpret_cast<uint32_t*>(ctx_bf16 + at) = pack_bf16(v0 * inv, v1 * inv);
  };
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    store(wrow0 + g, inv_lo, o[n][0], o[n][1], 8 * n + 2 * t);
    store(wrow0 + g + 8, inv_hi, o[n][2], o[n][3], 8 * n + 2 * t);
  }
}

template <int D>
void launch(const float* q, const StepMetaDev& meta, const int32_t* tiles, int num_tiles,
            const KvCacheDev& kv, int layer, int heads, float* ctx_f32, uint16_t* ctx_bf16, cudaStream_t s) {
  constexpr size_t smem = tc_smem_bytes<D>();
  allow_dynamic_smem(reinterpret_cast<const void*>(prefill_tc_kernel<D>), static_cast<int>(smem));
  launch_pdl(prefill_tc_kernel<D>, dim3(static_cast<unsigned>(num_tiles), static_cast<unsigned>(heads)),
             kThreads, smem, s, q, meta, tiles, kv, layer, heads, ctx_f32, ctx_bf16);
}

}  // namespace

bool prefill_tc_supports(int head_dim) {
  return head_dim == 64 || head_dim == 128;
}

void attention_prefill_tc(const float* q, const StepMetaDev& meta, const int32_t* tiles, int num_tiles,
                          const KvCacheDev& kv, int layer, int heads, float* ctx_f32, uint16_t* ctx_bf16,
                          cudaStream_t s) {
  if (kv.head_dim == 64) return launch<64>(q, meta, tiles, num_tiles, kv, layer, heads, ctx_f32, ctx_bf16, s);
  launch<128>(q, meta, tiles, num_tiles, kv, layer, heads, ctx_f32, ctx_bf16, s);
}

}  // namespace moe::model::gpu
