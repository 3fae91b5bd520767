// Decode attention: one query token per sequence over its whole KV (flash-decoding). A block takes one
// (sequence, KV head, split of the keys) and all the query heads that share that KV head (GQA: up to
// kMaxHeadsPerBlock of them), so each key and value row is read once for the whole group. Inside a block a
// warp takes 32 keys at a time, one key per lane: the lane's scores for every head of the group need no
// shuffles, and the P·V step reads each value row coalesced. The split's result (unnormalised output, running
// max, sum) goes to `partial`; the last block to finish a (sequence, KV head) combines all splits in split
// order, so the result does not depend on which block is last. Lengths come from device memory, so a
// captured graph serves every context length.
#include "cuda/kernels/weight_decode.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps, kMaxHeadsPerBlock = 8, kValueBatch = 16;

// Two bf16 values (one 32-bit word) widened to fp32, as decode16<Bf16> does for eight.
__device__ __forceinline__ void widen_pair(uint32_t w, float* f) {
  f[0] = __uint_as_float(w << 16), f[1] = __uint_as_float(w & 0xffff0000u);
}

// E consecutive bf16 values widened to fp32 (E = head_dim / 32: 1, 2, 4 or 8).
template <int E>
__device__ __forceinline__ void load_bf16(const uint16_t* p, float* f) {
  if constexpr (E == 8) {
    cuda::decode16<cuda::WFormat::Bf16>(*reinterpret_cast<const uint4*>(p), f);
  } else if constexpr (E == 4) {
    const uint2 w = *reinterpret_cast<const uint2*>(p);
    widen_pair(w.x, f), widen_pair(w.y, f + 2);
  } else if constexpr (E == 2) {
    widen_pair(*reinterpret_cast<const uint32_t*>(p), f);
  } else {
    f[0] = bf16_to_f32(*p);
  }
}

struct DecodeArgs {
  const float* q;
  StepMetaDev meta;
  KvCacheDev kv;
  int layer, heads, splits;
  float* partial;  // [B, heads, splits, D + 2]
  int* counters;   // [B, kv_heads, sub-groups], zeroed by this step's qk_norm_rope_store
  float* ctx_f32;
  uint16_t* ctx_bf16;
};

template <int D, int kHeads>
struct SplitShared {
  alignas(16) float q[kHeads][D];  // pre-scaled queries of the block's heads
  float p[kWarps][kHeads][32];     // one tile's probabilities, per warp
  float m[kWarps][kHeads], l[kWarps][kHeads];
  float o[kWarps][kHeads][D];
  int last;
};

template <int kHeads>
struct CombineShared {
  float w[kHeads][kAttentionMaxSplits];  // split maxima, then their weights
  float l[kHeads][kAttentionMaxSplits];
  float inv_den[kHeads];
};

// Split `split`'s partial result for heads [h0, h0 + nh) into `partial`.
template <int D, int kHeads>
__device__ void attend_split(const DecodeArgs& a, int b, int kvh, int h0, int nh, int split,
                             SplitShared<D, kHeads>& sh) {
  constexpr int E = D / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const KvCacheDev& kv = a.kv;
  const int kv_len = a.meta.seq_kv_len[b];
  const int chunk = (kv_len + a.splits - 1) / a.splits;
  const int j0 = min(kv_len, split * chunk), j1 = min(kv_len, j0 + chunk);
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  const float* qr =
      a.q + static_cast<int64_t>(a.meta.seq_first[b]) * a.heads * D + static_cast<int64_t>(h0) * D;
  for (int i = threadIdx.x; i < kHeads * D; i += kThreads)
    sh.q[i / D][i % D] = i / D < nh ? qr[i] * scale : 0.0f;
  __syncthreads();

  const uint16_t* layer_base = kv.data + a.layer * kv.layer_stride();
  const int32_t* pages = a.meta.page_table + static_cast<int64_t>(b) * a.meta.max_pages;
  const int64_t kv_dim = static_cast<int64_t>(kv.kv_heads) * D, v_off = kv.page_size * kv_dim;
  float m[kHeads], l[kHeads], o[kHeads][E];
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) o[g][e] = 0.0f;
  }
  for (int t0 = j0 + warp * 32; t0 < j1; t0 += kWarps * 32) {
    const int j = min(t0 + lane, j1 - 1);
    const int64_t row = static_cast<int64_t>(pages[j / kv.page_size]) * kv.page_stride() +
                        (j % kv.page_size) * kv_dim + static_cast<int64_t>(kvh) * D;
    float s[kHeads];
#pragma unroll
    for (int g = 0; g < kHeads; ++g) s[g] = 0.0f;
    // The key row's loads all issued before any is used (kKeyBatch 16-byte pieces at a time): issued one by
    // one next to their use, they would wait on DRAM one after another.
    const uint4* krow = reinterpret_cast<const uint4*>(layer_base + row);
    constexpr int kKeyBatch = D / 8 < 16 ? D / 8 : 16;
#pragma unroll
    for (int c0 = 0; c0 < D / 8; c0 += kKeyBatch) {
      uint4 kw[kKeyBatch];
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) kw[u] = krow[c0 + u];
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u) {
        float k[8];
        cuda::decode16<cuda::WFormat::Bf16>(kw[u], k);
#pragma unroll
        for (int g = 0; g < kHeads; ++g) {
          const float4 qa = *reinterpret_cast<const float4*>(&sh.q[g][8 * (c0 + u)]);
          const float4 qb = *reinterpret_cast<const float4*>(&sh.q[g][8 * (c0 + u) + 4]);
          s[g] = fmaf(qa.x, k[0], s[g]), s[g] = fmaf(qa.y, k[1], s[g]), s[g] = fmaf(qa.z, k[2], s[g]);
          s[g] = fmaf(qa.w, k[3], s[g]), s[g] = fmaf(qb.x, k[4], s[g]), s[g] = fmaf(qb.y, k[5], s[g]);
          s[g] = fmaf(qb.z, k[6], s[g]), s[g] = fmaf(qb.w, k[7], s[g]);
        }
      }
    }
    const bool valid = t0 + lane < j1;
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      const float sv = valid ? s[g] : -INFINITY;
      const float m_new = fmaxf(m[g], warp_max(sv));  // lane 0's key is always valid: finite
      const float alpha = expf(m[g] - m_new), p = expf(sv - m_new);
      l[g] = l[g] * alpha + warp_sum(p);
#pragma unroll
      for (int e = 0; e < E; ++e) o[g][e] *= alpha;
      m[g] = m_new;
      sh.p[warp][g][lane] = p;
    }
    __syncwarp();
    // P·V over the tile's keys, kValueBatch value rows loaded at a time (independent loads in flight). Lanes
    // past the split's end point at its last key and have p = 0, so every batch is full.
    const int count = min(32, j1 - t0);
    for (int k0 = 0; k0 < count; k0 += kValueBatch) {
      float v[kValueBatch][E];
#pragma unroll
      for (int u = 0; u < kValueBatch; ++u)
        load_bf16<E>(layer_base + __shfl_sync(cuda::kFullMask, row, k0 + u) + v_off + lane * E, v[u]);
#pragma unroll
      for (int u = 0; u < kValueBatch; ++u)
#pragma unroll
        for (int g = 0; g < kHeads; ++g) {
          const float pk = sh.p[warp][g][k0 + u];
#pragma unroll
          for (int e = 0; e < E; ++e) o[g][e] = fmaf(pk, v[u][e], o[g][e]);
        }
    }
    __syncwarp();
  }
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    if (lane == 0) sh.m[warp][g] = m[g], sh.l[warp][g] = l[g];
#pragma unroll
    for (int e = 0; e < E; ++e) sh.o[warp][g][lane * E + e] = o[g][e];
  }
  __syncthreads();
  // The warps' pieces combined in warp order; a warp with no keys has l = 0 and is skipped.
  for (int i = threadIdx.x; i < nh * D; i += kThreads) {
    const int g = i / D, d = i % D;
    float mx = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sh.m[w][g]);
    float sum = 0.0f, out = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (sh.l[w][g] == 0.0f) continue;
      const float f = expf(sh.m[w][g] - mx);
      sum += f * sh.l[w][g];
      out += f * sh.o[w][g][d];
    }
    float* dst = a.partial + ((static_cast<int64_t>(b) * a.heads + h0 + g) * a.splits + split) * (D + 2);
    dst[d] = out;
    if (d == 0) dst[D] = mx, dst[D + 1] = sum;
  }
}

// All splits of heads [h0, h0 + nh) of sequence b combined into ctx, in split order. First each (head,
// split)'s weight exp(m_s - max) and the heads' denominators, into shared memory; then every thread sums its
// outputs over the splits with all its heads' loads of one split in flight together (the partials are in L2).
template <int D, int kHeads>
__device__ void combine_splits(const DecodeArgs& a, int b, int h0, int nh, CombineShared<kHeads>& cs) {
  const float* base = a.partial + (static_cast<int64_t>(b) * a.heads + h0) * a.splits * (D + 2);
  for (int i = threadIdx.x; i < nh * a.splits; i += kThreads) {
    const float* ps = base + static_cast<int64_t>(i) * (D + 2);  // head i / splits, split i % splits
    cs.w[i / a.splits][i % a.splits] = __ldcg(ps + D);
    cs.l[i / a.splits][i % a.splits] = __ldcg(ps + D + 1);
  }
  __syncthreads();
  if (threadIdx.x < nh) {
    const int g = threadIdx.x;
    float mx = -INFINITY;
    for (int s = 0; s < a.splits; ++s)
      if (cs.l[g][s] != 0.0f) mx = fmaxf(mx, cs.w[g][s]);
    float den = 0.0f;
    for (int s = 0; s < a.splits; ++s) {
      const float w = cs.l[g][s] != 0.0f ? expf(cs.w[g][s] - mx) : 0.0f;  // an empty split weighs nothing
      cs.w[g][s] = w;
      den += w * cs.l[g][s];
    }
    cs.inv_den[g] = 1.0f / den;
  }
  __syncthreads();
  constexpr int kItems = (kHeads * D + kThreads - 1) / kThreads;
  float num[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) num[k] = 0.0f;
  // kSplitBatch splits' loads in flight at once (one L2 round trip per batch, not per split); the sums still
  // run in split order.
  constexpr int kSplitBatch = 4;
  for (int s0 = 0; s0 < a.splits; s0 += kSplitBatch) {
    float part[kSplitBatch][kItems];
#pragma unroll
    for (int u = 0; u < kSplitBatch; ++u)
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int i = threadIdx.x + k * kThreads, g = i / D, s = s0 + u;
        part[u][k] = g < nh && s < a.splits
                         ? __ldcg(base + (static_cast<int64_t>(g) * a.splits + s) * (D + 2) + i % D)
                         : 0.0f;
      }
#pragma unroll
    for (int u = 0; u < kSplitBatch; ++u)
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int i = threadIdx.x + k * kThreads, g = i / D, s = s0 + u;
        if (g < nh && s < a.splits) num[k] += cs.w[g][s] * part[u][k];
      }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = threadIdx.x + k * kThreads, g = i / D;
    if (g >= nh) continue;
    const int64_t at = (static_cast<int64_t>(a.meta.seq_first[b]) * a.heads + h0 + g) * D + i % D;
    const float v = num[k] * cs.inv_den[g];
    if (a.ctx_f32) a.ctx_f32[at] = v;
    if (a.ctx_bf16) a.ctx_bf16[at] = f32_to_bf16(v);
  }
}

template <int D, int kHeads>
__global__ void __launch_bounds__(kThreads) decode_kernel(DecodeArgs a) {
  __shared__ SplitShared<D, kHeads> sh;
  __shared__ CombineShared<kHeads> cs;
  pdl_wait();
  pdl_trigger();
  const int split = blockIdx.x, b = blockIdx.z;
  const int group = a.heads / a.kv.kv_heads;
  const int sub_groups = (group + kHeads - 1) / kHeads;
  const int kvh = blockIdx.y / sub_groups, sub = blockIdx.y % sub_groups;
  const int h0 = kvh * group + sub * kHeads, nh = min(kHeads, group - sub * kHeads);
  attend_split<D, kHeads>(a, b, kvh, h0, nh, split, sh);
  // The last block of this (sequence, KV head, sub-group) to finish combines: integer counting, then reads
  // of the other blocks' partials from L2.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    sh.last = atomicAdd(a.counters + (static_cast<int64_t>(b) * gridDim.y + blockIdx.y), 1) == a.splits - 1;
  __syncthreads();
  if (!sh.last) return;
  __threadfence();
  combine_splits<D, kHeads>(a, b, h0, nh, cs);
}

template <int D>
void launch(const DecodeArgs& a, int B, cudaStream_t s) {
  const int group = a.heads / a.kv.kv_heads;
  const auto go = [&](auto heads_per_block) {
    constexpr int kHeads = decltype(heads_per_block)::value;
    const int sub_groups = (group + kHeads - 1) / kHeads;
    launch_pdl(decode_kernel<D, kHeads>,
               dim3(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv.kv_heads * sub_groups),
                    static_cast<unsigned>(B)),
               kThreads, 0, s, a);
  };
  if (group == 1)
    go(std::integral_constant<int, 1>{});
  else if (group <= 4)
    go(std::integral_constant<int, 4>{});
  else
    go(std::integral_constant<int, kMaxHeadsPerBlock>{});
}

}  // namespace

int attention_decode_counters(int B, int heads, int kv_heads) {
  const int group = heads / kv_heads;
  const int per_block = group == 1 ? 1 : group <= 4 ? 4 : kMaxHeadsPerBlock;
  return B * kv_heads * ((group + per_block - 1) / per_block);
}

void attention_decode(const float* q, const StepMetaDev& meta, int B, const KvCacheDev& kv, int layer,
                      int heads, int splits, float* partial, int* counters, float* ctx_f32,
                      uint16_t* ctx_bf16, cudaStream_t s) {
  if (B == 0) return;
  require(heads % kv.kv_heads == 0 && splits >= 1 && splits <= kAttentionMaxSplits,
          "attention_decode: heads ", heads, " kv heads ", kv.kv_heads, " splits ", splits);
  const DecodeArgs a{q, meta, kv, layer, heads, splits, partial, counters, ctx_f32, ctx_bf16};
  switch (kv.head_dim) {
    case 32:
      return launch<32>(a, B, s);
    case 64:
      return launch<64>(a, B, s);
    case 128:
      return launch<128>(a, B, s);
    case 256:
      return launch<256>(a, B, s);
    default:
      fail_input("cuda attention: head_dim ", kv.head_dim, " is not supported (32, 64, 128, 256)");
  }
}

}  // namespace moe::model::gpu
