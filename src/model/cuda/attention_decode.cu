// Decode attention: one new token per sequence over its whole KV (flash-decoding). A block takes one
// (sequence, KV head, split of the keys) and all the query heads that share that KV head (GQA: up to
// kMaxHeadsPerBlock of them), so each key and value row is read once for the whole group. The block copies
// its keys' K and V rows into shared memory kTileKeys at a time (cp.async), its first tile before the
// predecessor wait: every key but the new token's was written by earlier steps, so that read overlaps the
// q/k/v projection still running. After the wait the block does the new token's q/k norms and RoPE itself
// (head_norm_rope.cuh; the block whose split holds the new key also stores its k and v into the cache).
// Then, for head_dim <= 128, its warps take 16 or 32 keys each on the tensor cores (attention_decode_tc.cuh);
// otherwise they take 32 / kLanes keys each on CUDA cores, kLanes lanes per key (a key's scores for
// every head of the group need only log2(kLanes) shuffles), and P·V reads each value row across the lanes.
// The loops stay rolled: each block runs once per SM, and the fully unrolled kernel before this one spent a
// quarter of its time fetching instructions. With 2 to 8 splits they are one thread block cluster: each sends
// its result (unnormalised output, running max, sum) for each head to that head's owner block through
// distributed shared memory, and the owners combine (session 20's timeline at batch 1 found the other way's
// counter and last-block combine 5.9 us of attention's 14). With more, the result goes to `partial` and the
// last block to finish a (sequence, KV head) combines all splits. Either way in split order, so the result
// does not depend on which block is last (with one split the block writes ctx itself). Lengths come from
// device memory, so a captured graph serves every context length.
#include <cooperative_groups.h>

#include <cstdlib>
#include <cstring>

#include "cuda/kernels/cluster_barrier.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/weight_decode.cuh"
#include "model/cuda/attention_decode_tc.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/head_norm_rope.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/launch.h"

MOE_KERNEL_TIMELINE_TU(attention_decode)

namespace moe::model::gpu {
namespace {

constexpr int kMaxHeadsPerBlock = 8, kTileKeys = 128;

// Lanes per key in the scores: each takes every kLanes-th 16-byte piece of the key row, so a warp scores
// 32 / kLanes keys and a block of kWarps = 4 * kLanes warps its 128 staged keys, with a quarter of the
// dependent FMAs per lane that one lane per key took (the kernel's time was those chains). 2 for head_dim
// 256, whose accumulators leave no room for 512 threads' registers.
template <int L>
constexpr int kWarps = 4 * L;
template <int L>
constexpr int kThreads = 32 * kWarps<L>;
template <int L>
constexpr int kKeysPerWarp = 32 / L;
// The most lanes per key a head_dim allows.
template <int D>
constexpr int kWideLanes = D <= 128 ? 4 : 2;
// Head dims the tensor-core loop takes: its fp32 accumulators and two-term q need ~2 D registers per lane.
template <int D>
constexpr bool kTcFits = D <= 128 && D % 16 == 0;

// A staged K or V row: head_dim bf16 values and 16 * kLanes bytes of padding, so a quarter warp's 16-byte
// reads (8 / kLanes keys, kLanes pieces each) fall in distinct banks.
template <int D, int L>
constexpr int kRowBytes = 2 * D + 16 * L;
template <int D, int L>
constexpr int kTileBytes = 2 * kTileKeys* kRowBytes<D, L>;  // K rows, then V rows

// In a cluster launch, the results that the cluster's blocks send this block (the owner of heads r, r +
// splits, ... of the group, r its rank): per owned head j and split s, slot j * splits + s of D values, then
// the split's maximum and sum (rows of D + 4 floats, so each row's values start 16-byte aligned). They sit in
// the dynamic shared memory after the staged tile, which the other blocks may write while this one still
// stages and reads its keys.
template <int D>
constexpr int kPushRow = D + 4;
template <int D, int kHeads>
constexpr int kPushBytes = static_cast<int>(sizeof(float)) *
                           (kHeads + kAttentionMaxClusterSplits - 1) * kPushRow<D>;
template <int D, int L>
__device__ __forceinline__ float* push_slots(uint8_t* tile) {
  return reinterpret_cast<float*>(tile + kTileBytes<D, L>);
}

using cuda::cluster_arrive_relaxed;
using cuda::cluster_wait;

struct DecodeArgs {
  const float* qkv;  // [B, (heads + 2 kv_heads) * D]
  HeadNormRope nr;
  StepMetaDev meta;
  KvCacheDev kv;
  int layer, heads, splits;
  float* partial;  // [B, heads, splits, D + 2]
  int* counters;   // [B, kv_heads, sub-groups], this layer's, zeroed by this step's embed_rows
  float* ctx_f32;
  uint16_t* ctx_bf16;
  // The splits of a (sequence, KV head, sub-group) are one thread block cluster: each split sends its result
  // for each head to that head's owner block through distributed shared memory, and the owners combine
  // (cluster_combine), instead of `partial`, a counter and the last block's reads from L2.
  bool cluster;
};

template <int D, int kHeads, int L>
struct SplitShared {
  alignas(16) float q[kHeads][D];  // the new token's queries of the block's heads, pre-scaled
  alignas(16) uint16_t k_new[D];   // its key and value as the cache stores them (bf16)
  alignas(16) uint16_t v_new[D];
  float p[kWarps<L>][kHeads][kKeysPerWarp<L>];  // one tile's probabilities, per warp
  float m[kWarps<L>][kHeads], l[kWarps<L>][kHeads];
  float f[kWarps<L>][kHeads];     // the warps' weights in the block's combine
  float mx[kHeads], sum[kHeads];  // each head's maximum and denominator over the warps
  int last;
};

template <int kHeads>
struct CombineShared {
  float w[kHeads][kAttentionMaxSplits];  // split maxima, then their weights
  float l[kHeads][kAttentionMaxSplits];
  float inv_den[kHeads];
};

template <int D, int kHeads, int L>
union BlockShared {
  SplitShared<D, kHeads, L> split;
  CombineShared<kHeads> combine;  // after the split's result is out
};

// Two bf16 values (one 32-bit word) widened to fp32, as decode16<Bf16> does for eight.
__device__ __forceinline__ void widen_pair(uint32_t w, float* f) {
  f[0] = __uint_as_float(w << 16), f[1] = __uint_as_float(w & 0xffff0000u);
}

// E consecutive bf16 values (E = head_dim / 32: 1, 2, 4 or 8) widened to fp32.
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

// Element offset of key j's K row in the layer (its V row is v_off further) for KV head kvh.
__device__ __forceinline__ int64_t key_row(const KvCacheDev& kv, const int32_t* pages, int j, int kvh) {
  return static_cast<int64_t>(pages[j / kv.page_size]) * kv.page_stride() +
         static_cast<int64_t>(j % kv.page_size) * kv.kv_heads * kv.head_dim +
         static_cast<int64_t>(kvh) * kv.head_dim;
}

// Keys [tb, tb + kTileKeys) ∩ [.., j1) of KV head kvh into the staged tile (asynchronously; one commit
// group). The new key's rows and rows past j1 are zero-filled: the new key is not in the cache yet (this
// kernel writes it), and a zero row past the end keeps P·V finite where p = 0. Warp w copies keys
// w * kKeys .. + kKeys - 1; lane k < kKeys finds key k's row once (a page-table read and a division by the
// page size) and the warp's pieces take it by shuffle: ncu counted the per-piece address arithmetic as a
// third of the tensor-core kernel's instructions.
template <int D, int L>
__device__ void stage_tile(uint8_t* tile, const uint16_t* layer_base, const KvCacheDev& kv,
                           const int32_t* pages, int kvh, int tb, int j1, int new_key, int64_t v_off) {
  constexpr int kPieces = D / 8;                // 16-byte pieces per row
  constexpr int kKeys = kTileKeys / kWarps<L>;  // keys per warp
  constexpr int kIters = kKeys * kPieces / 32;  // pieces per lane
  static_assert(kKeys <= 32 && kKeys * kPieces % 32 == 0, "stage geometry");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int mine = tb + warp * kKeys + lane;  // lane's key (lanes below kKeys)
  const bool mine_ok = lane < kKeys && mine < j1 && mine != new_key;
  const int64_t mine_row = mine_ok ? key_row(kv, pages, mine, kvh) : 0;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(tile)) +
                        static_cast<uint32_t>(warp * kKeys * kRowBytes<D, L>);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int i = it * 32 + lane, key = i / kPieces, c = i % kPieces;
    const int64_t row = __shfl_sync(cuda::kFullMask, mine_row, key);
    const bool ok = __shfl_sync(cuda::kFullMask, mine_ok, key);
    const uint16_t* src = layer_base + row + c * 8;
    const uint32_t dst = base + static_cast<uint32_t>(key * kRowBytes<D, L> + c * 16);
    cuda::cp_async16(dst, src, ok);
    cuda::cp_async16(dst + kTileKeys * kRowBytes<D, L>, src + v_off, ok);
  }
  cuda::cp_async_commit();
}

// What the new token's preparation needs that its predecessor does not write: its projection row's address
// (from the step's metadata), the lane's q/k norm weights and its rotation. Read before the programmatic
// wait, so after it only the projection row's own loads remain (the timeline put the preparation at 4.1 us
// after the wait when all of this came after it).
template <int E>
struct NewTokenInputs {
  const float* row;
  float qw[E], kw[E];
  HeadRotation<E> rot;
};

template <int E>
__device__ NewTokenInputs<E> new_token_inputs(const DecodeArgs& a, int b, int pos) {
  NewTokenInputs<E> in;
  in.row = a.qkv + static_cast<int64_t>(a.meta.seq_first[b]) * (a.heads + 2 * a.kv.kv_heads) * (32 * E);
#pragma unroll
  for (int e = 0; e < E; ++e) in.qw[e] = in.kw[e] = 0.0f;
  if (a.nr.q_norm) load_lane_elements<E>(a.nr.q_norm, in.qw);
  if (a.nr.k_norm) load_lane_elements<E>(a.nr.k_norm, in.kw);
  in.rot = head_rotation<E>(a.nr.inv_freq, a.nr.scaling, pos);
  return in;
}

// The new token's q (heads [h0, h0 + nh)), k and v of KV head kvh from its projection row, through
// head_norm_rope, into shared memory. Warp w takes items w, w + kWarps, ... (the q heads, then k, then v),
// and loads all of its items' inputs before the first reduction, so the whole step costs one round trip.
template <int D, int kHeads, int L>
__device__ void prepare_new_token(const DecodeArgs& a, const NewTokenInputs<D / 32>& in, int kvh, int h0,
                                  int nh, SplitShared<D, kHeads, L>& sh) {
  constexpr int E = D / 32, kItems = kHeads + 2, kPerWarp = (kItems + kWarps<L> - 1) / kWarps<L>;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int kv_heads = a.kv.kv_heads;
  const auto slot_of = [&](int item) {
    return item < kHeads ? h0 + item : item == kHeads ? a.heads + kvh : a.heads + kv_heads + kvh;
  };
  // An item is live when it is k, v or one of the block's nh real q heads.
  const auto live = [&](int item) { return item < kItems && (item >= kHeads || item < nh); };
  float v[kPerWarp][E];
#pragma unroll
  for (int u = 0; u < kPerWarp; ++u) {
    const int item = warp + u * kWarps<L>;
    if (live(item)) load_lane_elements<E>(in.row + static_cast<int64_t>(slot_of(item)) * D, v[u]);
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
#pragma unroll
  for (int u = 0; u < kPerWarp; ++u) {
    const int item = warp + u * kWarps<L>;
    if (item >= kItems) break;
    if (!live(item)) {  // an idle head slot of the block: zero queries
#pragma unroll
      for (int e = 0; e < E; ++e) sh.q[item][lane + 32 * e] = 0.0f;
      continue;
    }
    const bool is_q = item < kHeads, is_k = item == kHeads;
    if (is_q)
      head_norm_rope<E>(v[u], in.qw, a.nr.q_norm != nullptr, a.nr.eps, true, in.rot);
    else
      head_norm_rope<E>(v[u], in.kw, is_k && a.nr.k_norm != nullptr, a.nr.eps, is_k, in.rot);
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int i = lane + 32 * e;
      if (is_q)
        sh.q[item][i] = v[u][e] * scale;
      else
        (is_k ? sh.k_new : sh.v_new)[i] = f32_to_bf16(v[u][e]);
    }
  }
}

// Keys [j0, j1) on CUDA cores: warps of 32 / L keys, L lanes per key; leaves each warp's unnormalised output,
// max and sum in shared memory (the outputs over the tile, read by then) for the block's combine.
template <int D, int kHeads, int L>
__device__ void cuda_core_split_keys(SplitShared<D, kHeads, L>& sh, uint8_t* tile, const uint16_t* layer_base,
                                     const KvCacheDev& kv, const int32_t* pages, int kvh, int j0, int j1,
                                     int new_key, int64_t v_off) {
  constexpr int E = D / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float m[kHeads], l[kHeads], o[kHeads][E];
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) o[g][e] = 0.0f;
  }
  for (int tb = j0; tb < j1; tb += kTileKeys) {
    cuda::cp_async_wait<0>();
    __syncthreads();
    constexpr int kKeys = kKeysPerWarp<L>;
    const int t0 = tb + warp * kKeys;
    if (t0 < j1) {
      // Scores: lanes L * k .. L * k + L - 1 take key t0 + k against every head of the group, piece r,
      // r + L, ... each, then add their parts; the new key's row comes from sh.k_new.
      const int r = lane % L, key = lane / L, j = t0 + key;
      const uint8_t* krow = j == new_key ? reinterpret_cast<const uint8_t*>(sh.k_new)
                                         : tile + (warp * kKeys + key) * kRowBytes<D, L>;
      float s[kHeads];
#pragma unroll
      for (int g = 0; g < kHeads; ++g) s[g] = 0.0f;
#pragma unroll 2
      for (int c = r; c < D / 8; c += L) {
        float k[8];
        cuda::decode16<cuda::WFormat::Bf16>(*reinterpret_cast<const uint4*>(krow + 16 * c), k);
#pragma unroll
        for (int g = 0; g < kHeads; ++g) {
          const float4 qa = *reinterpret_cast<const float4*>(&sh.q[g][8 * c]);
          const float4 qb = *reinterpret_cast<const float4*>(&sh.q[g][8 * c + 4]);
          s[g] = fmaf(qa.x, k[0], s[g]), s[g] = fmaf(qa.y, k[1], s[g]), s[g] = fmaf(qa.z, k[2], s[g]);
          s[g] = fmaf(qa.w, k[3], s[g]), s[g] = fmaf(qb.x, k[4], s[g]), s[g] = fmaf(qb.y, k[5], s[g]);
          s[g] = fmaf(qb.z, k[6], s[g]), s[g] = fmaf(qb.w, k[7], s[g]);
        }
      }
#pragma unroll
      for (int g = 0; g < kHeads; ++g)
#pragma unroll
        for (int x = 1; x < L; x *= 2) s[g] += __shfl_xor_sync(cuda::kFullMask, s[g], x);
      const bool valid = j < j1;
#pragma unroll
      for (int g = 0; g < kHeads; ++g) {
        const float sv = valid ? s[g] : -INFINITY;
        const float m_new = fmaxf(m[g], warp_max(sv));  // lane 0's key is always valid: finite
        const float alpha = expf(m[g] - m_new), p = expf(sv - m_new);
        l[g] = l[g] * alpha + warp_sum(r == 0 ? p : 0.0f);  // each key once
#pragma unroll
        for (int e = 0; e < E; ++e) o[g][e] *= alpha;
        m[g] = m_new;
        if (r == 0) sh.p[warp][g][key] = p;
      }
      __syncwarp();
      // P·V over the warp's keys: lane's E dimensions of each value row.
      const int count = min(kKeys, j1 - t0);
      const uint8_t* vtile = tile + kTileKeys * kRowBytes<D, L> + warp * kKeys * kRowBytes<D, L>;
#pragma unroll 4
      for (int u = 0; u < count; ++u) {
        const uint16_t* vrow =
            t0 + u == new_key ? sh.v_new : reinterpret_cast<const uint16_t*>(vtile + u * kRowBytes<D, L>);
        float v[E];
        load_bf16<E>(vrow + lane * E, v);
#pragma unroll
        for (int g = 0; g < kHeads; ++g) {
          const float pk = sh.p[warp][g][u];
#pragma unroll
          for (int e = 0; e < E; ++e) o[g][e] = fmaf(pk, v[e], o[g][e]);
        }
      }
      __syncwarp();
    }
    __syncthreads();  // the tile is read: the next one may overwrite it
    if (tb + kTileKeys < j1)
      stage_tile<D, L>(tile, layer_base, kv, pages, kvh, tb + kTileKeys, j1, new_key, v_off);
  }
  float(*wo)[kHeads][D] = reinterpret_cast<float(*)[kHeads][D]>(tile);
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    if (lane == 0) sh.m[warp][g] = m[g], sh.l[warp][g] = l[g];
#pragma unroll
    for (int e = 0; e < E; ++e) wo[warp][g][lane * E + e] = o[g][e];
  }
}

// Split `split`'s result for heads [h0, h0 + nh): into `partial`, or straight into ctx when there is one
// split. kTc: the keys on the tensor cores (attention_decode_tc.cuh) in the block geometry of L = 1 or 2
// (4 or 8 warps).
template <int D, int kHeads, int L, bool kTc>
__device__ void attend_split(const DecodeArgs& a, int b, int kvh, int h0, int nh, int sub, int split,
                             SplitShared<D, kHeads, L>& sh, uint8_t* tile,
                             cuda::KernelTimelineScope& timeline) {
  const KvCacheDev& kv = a.kv;
  const int kv_len = a.meta.seq_kv_len[b];
  const int new_key = kv_len - 1;
  const int chunk = (kv_len + a.splits - 1) / a.splits;
  const int j0 = min(kv_len, split * chunk), j1 = min(kv_len, j0 + chunk);
  const uint16_t* layer_base = kv.data + a.layer * kv.layer_stride();
  const int32_t* pages = a.meta.page_table + static_cast<int64_t>(b) * a.meta.max_pages;
  const int64_t v_off = static_cast<int64_t>(kv.page_size) * kv.kv_heads * D;
  if (j0 < j1) stage_tile<D, L>(tile, layer_base, kv, pages, kvh, j0, j1, new_key, v_off);
  const NewTokenInputs<D / 32> in = new_token_inputs<D / 32>(a, b, new_key);
  // The block whose split holds the new key (the first sub-group of its KV head) stores it for later steps;
  // where, it reads from the page table (the step's metadata, as stage_tile does) before the wait: after the
  // barrier below, that read was one more round trip for the storing warp, which the block's next barrier
  // then waited for.
  const bool stores_new_key = sub == 0 && new_key / chunk == split && threadIdx.x < D / 8;
  const int64_t new_key_row = stores_new_key ? key_row(kv, pages, new_key, kvh) : 0;

  pdl_wait();
  timeline.waited();
  pdl_trigger();
  prepare_new_token<D, kHeads, L>(a, in, kvh, h0, nh, sh);
  __syncthreads();
  if (stores_new_key) {
    uint16_t* at = kv.data + a.layer * kv.layer_stride() + new_key_row;
    reinterpret_cast<uint4*>(at)[threadIdx.x] = reinterpret_cast<const uint4*>(sh.k_new)[threadIdx.x];
    reinterpret_cast<uint4*>(at + v_off)[threadIdx.x] = reinterpret_cast<const uint4*>(sh.v_new)[threadIdx.x];
  }
  timeline.mark(0);  // measuring builds: the new token prepared

  if constexpr (kTc) {
    static_assert(L <= 2, "the tensor-core loop takes 4 or 8 warps");
    tc_split_keys<D, kHeads, kWarps<L>, kRowBytes<D, L>, kTileKeys>(
        sh.q, sh.k_new, sh.v_new, tile, j0, j1, new_key,
        [&](int tb) { stage_tile<D, L>(tile, layer_base, kv, pages, kvh, tb, j1, new_key, v_off); }, sh.m,
        sh.l);
  } else {
    cuda_core_split_keys<D, kHeads, L>(sh, tile, layer_base, kv, pages, kvh, j0, j1, new_key, v_off);
  }
  __syncthreads();
  timeline.mark(1);  // the split's keys done
  // The warps' outputs are in the staged tile, read by now (both loops end on a barrier); this keeps the
  // static shared memory small, so a large batch's blocks still fit several to an SM.
  static_assert(sizeof(float) * kWarps<L> * kHeads * D <= kTileBytes<D, L>,
                "warp outputs must fit in the tile");
  const float(*wo)[kHeads][D] = reinterpret_cast<const float(*)[kHeads][D]>(tile);
  // The warps' pieces combined in warp order; a warp with no keys has l = 0 and weighs nothing. Each (warp,
  // head)'s weight exp(m_w - max) and each head's denominator are made once, then every thread sums four
  // outputs of a head over the warps.
  if (threadIdx.x < nh) {
    const int g = threadIdx.x;
    float mx = -INFINITY;
    for (int w = 0; w < kWarps<L>; ++w) mx = fmaxf(mx, sh.m[w][g]);
    float sum = 0.0f;
    for (int w = 0; w < kWarps<L>; ++w) {
      const float f = sh.l[w][g] == 0.0f ? 0.0f : expf(sh.m[w][g] - mx);
      sum += f * sh.l[w][g];
      sh.f[w][g] = f;
    }
    sh.mx[g] = mx, sh.sum[g] = sum;
  }
  __syncthreads();
  if (a.cluster) cluster_wait();  // every block of the cluster has started: its push slots may be written
  namespace cg = cooperative_groups;
  for (int i = 4 * threadIdx.x; i < nh * D; i += 4 * kThreads<L>) {
    const int g = i / D, d = i % D;
    float4 out = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int w = 0; w < kWarps<L>; ++w) {
      const float f = sh.f[w][g];
      if (f == 0.0f) continue;
      const float4 v = *reinterpret_cast<const float4*>(&wo[w][g][d]);
      out.x += f * v.x, out.y += f * v.y, out.z += f * v.z, out.w += f * v.w;
    }
    if (a.splits == 1) {
      const int64_t at = (static_cast<int64_t>(a.meta.seq_first[b]) * a.heads + h0 + g) * D + d;
      const float inv = 1.0f / sh.sum[g];
      const float4 v = make_float4(out.x * inv, out.y * inv, out.z * inv, out.w * inv);
      if (a.ctx_f32) *reinterpret_cast<float4*>(a.ctx_f32 + at) = v;
      if (a.ctx_bf16) {
        const uint2 packed = make_uint2(pack_bf16(v.x, v.y), pack_bf16(v.z, v.w));
        *reinterpret_cast<uint2*>(a.ctx_bf16 + at) = packed;
      }
      continue;
    }
    if (a.cluster) {
      // Head g's owner is block g % splits; it keeps the head as its (g / splits)-th, one slot per split.
      float* row = cg::this_cluster().map_shared_rank(push_slots<D, L>(tile), g % a.splits) +
                   ((g / a.splits) * a.splits + split) * kPushRow<D>;
      *reinterpret_cast<float4*>(row + d) = out;
      if (d == 0) row[D] = sh.mx[g], row[D + 1] = sh.sum[g];
      continue;
    }
    float* dst = a.partial + ((static_cast<int64_t>(b) * a.heads + h0 + g) * a.splits + split) * (D + 2);
    dst[d] = out.x, dst[d + 1] = out.y, dst[d + 2] = out.z, dst[d + 3] = out.w;
    if (d == 0) dst[D] = sh.mx[g], dst[D + 1] = sh.sum[g];
  }
  timeline.mark(2);  // the split's result written (thread 0's part)
}

// All splits of heads [h0, h0 + nh) of sequence b combined into ctx, in split order. First each (head,
// split)'s weight exp(m_s - max) and the heads' denominators, into shared memory; then every thread sums its
// outputs over the splits, kSplitBatch splits' loads in flight together (the partials are in L2). In the
// tensor-core blocks with few outputs per thread the first batch's loads go out before the maxima and sums
// are read, so with up to 8 splits (Qwen3-30B-A3B at context 512: 8) the combine waits one L2 round trip, not
// three.
template <int D, int kHeads, int L, bool kTc>
__device__ void combine_splits(const DecodeArgs& a, int b, int h0, int nh, CombineShared<kHeads>& cs) {
  const float* base = a.partial + (static_cast<int64_t>(b) * a.heads + h0) * a.splits * (D + 2);
  constexpr int kItems = (kHeads * D + kThreads<L> - 1) / kThreads<L>;
  // Early and 8 per batch in the tensor-core blocks where a thread has at most 4 outputs (Qwen3-30B-A3B's at
  // batch 1: 4); elsewhere 4 per batch after the weights, as before, so the CUDA-core blocks keep their
  // registers (several of them grew past 128 and spilled with the early loads).
  constexpr bool kFirstBatchEarly = kTc && kItems <= 4;
  constexpr int kSplitBatch = kFirstBatchEarly ? 8 : 4;
  float part[kSplitBatch][kItems];
  const auto load_batch = [&](int s0) {
#pragma unroll
    for (int u = 0; u < kSplitBatch; ++u)
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int i = threadIdx.x + k * kThreads<L>, g = i / D, s = s0 + u;
        part[u][k] = g < nh && s < a.splits
                         ? __ldcg(base + (static_cast<int64_t>(g) * a.splits + s) * (D + 2) + i % D)
                         : 0.0f;
      }
  };
  if constexpr (kFirstBatchEarly) load_batch(0);
  for (int i = threadIdx.x; i < nh * a.splits; i += kThreads<L>) {
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
  float num[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) num[k] = 0.0f;
  for (int s0 = 0; s0 < a.splits; s0 += kSplitBatch) {
    if (!kFirstBatchEarly || s0 > 0) load_batch(s0);
#pragma unroll
    for (int u = 0; u < kSplitBatch; ++u)
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int i = threadIdx.x + k * kThreads<L>, g = i / D, s = s0 + u;
        if (g < nh && s < a.splits) num[k] += cs.w[g][s] * part[u][k];
      }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = threadIdx.x + k * kThreads<L>, g = i / D;
    if (g >= nh) continue;
    const int64_t at = (static_cast<int64_t>(a.meta.seq_first[b]) * a.heads + h0 + g) * D + i % D;
    const float v = num[k] * cs.inv_den[g];
    if (a.ctx_f32) a.ctx_f32[at] = v;
    if (a.ctx_bf16) a.ctx_bf16[at] = f32_to_bf16(v);
  }
}

// The splits' results combined by their heads' owners, as combine_splits does from `partial` (the same
// weights, in split order): after the cluster barrier (every block's sends have landed) block (rank) r writes
// heads r, r + splits, ... of the group from its own push slots, each thread one output (working out its
// head's split weights itself: a few exponentials cost less than a barrier to share them). Nothing is read
// from another block after the barrier, so no block waits for the others to finish.
template <int D, int kHeads, int L>
__device__ void cluster_combine(const DecodeArgs& a, int b, int h0, int nh, uint8_t* tile,
                                cuda::KernelTimelineScope& timeline) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  timeline.mark(3);  // measuring builds: every split's result has arrived; the combine starts
  const int splits = a.splits, rank = static_cast<int>(cluster.block_rank());
  const float* slots = push_slots<D, L>(tile);
  const int heads_here = rank < nh ? (nh - rank + splits - 1) / splits : 0;
  for (int i = threadIdx.x; i < heads_here * D; i += kThreads<L>) {
    const int j = i / D, g = rank + j * splits, d = i % D;
    float m[kAttentionMaxClusterSplits], l[kAttentionMaxClusterSplits], v[kAttentionMaxClusterSplits];
#pragma unroll
    for (int s = 0; s < kAttentionMaxClusterSplits; ++s) {
      if (s >= splits) break;
      const float* row = slots + (j * splits + s) * kPushRow<D>;
      m[s] = row[D], l[s] = row[D + 1], v[s] = row[d];
    }
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kAttentionMaxClusterSplits; ++s)
      if (s < splits && l[s] != 0.0f) mx = fmaxf(mx, m[s]);
    float den = 0.0f, num = 0.0f;
#pragma unroll
    for (int s = 0; s < kAttentionMaxClusterSplits; ++s) {
      if (s >= splits) break;
      const float w = l[s] != 0.0f ? expf(m[s] - mx) : 0.0f;  // an empty split weighs nothing
      den += w * l[s];
      num += w * v[s];
    }
    const float out = num * (1.0f / den);
    const int64_t at = (static_cast<int64_t>(a.meta.seq_first[b]) * a.heads + h0 + g) * D + d;
    if (a.ctx_f32) a.ctx_f32[at] = out;
    if (a.ctx_bf16) a.ctx_bf16[at] = f32_to_bf16(out);
  }
}

template <int D, int kHeads, int L, bool kTc>
__global__ void __launch_bounds__(kThreads<L>) decode_kernel(DecodeArgs a) {
  __shared__ BlockShared<D, kHeads, L> sh;
  extern __shared__ __align__(16) uint8_t tile[];  // kTileBytes<D, L>
  cuda::KernelTimelineScope timeline(cuda::kTlAttention);
  const int split = blockIdx.x, b = blockIdx.z;
  const int group = a.heads / a.kv.kv_heads;
  const int sub_groups = (group + kHeads - 1) / kHeads;
  const int kvh = blockIdx.y / sub_groups, sub = blockIdx.y % sub_groups;
  const int h0 = kvh * group + sub * kHeads, nh = min(kHeads, group - sub * kHeads);
  if (a.cluster) cluster_arrive_relaxed();  // this block has started (attend_split waits for the others')
  attend_split<D, kHeads, L, kTc>(a, b, kvh, h0, nh, sub, split, sh.split, tile, timeline);
  if (a.splits == 1) return;
  if (a.cluster) {
    cluster_combine<D, kHeads, L>(a, b, h0, nh, tile, timeline);
    return;
  }
  // The last block of this (sequence, KV head, sub-group) to finish combines: integer counting, then reads
  // of the other blocks' partials from L2.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    sh.split.last =
        atomicAdd(a.counters + (static_cast<int64_t>(b) * gridDim.y + blockIdx.y), 1) == a.splits - 1;
  __syncthreads();
  if (!sh.split.last) return;
  timeline.mark(3);  // the last block of its group, counted: the combine starts
  __threadfence();
  combine_splits<D, kHeads, L, kTc>(a, b, h0, nh, sh.combine);
}

// The block kind, for head dims the tensor cores take (kTcFits): 8 warps of 16 keys while the grid has no
// more blocks than SMs (a small batch, where each warp's chain is the time; batch 1: 3.189 ms per model step
// against 3.221 for the wide CUDA-core blocks), else 4 warps of 32 keys (batch 8 / 64: 7.441 / 14.94 ms
// against 7.589 / 15.49 for one lane per key and 7.845 / 16.91 for the wide blocks). Larger head_dims take
// kWideLanes<D> lanes per key while the grid fits the SMs (512-thread blocks cut each lane's chains of
// dependent FMAs), else one lane per key (128-thread blocks, several to an SM). MOE_ATTENTION_LANES=1, =wide,
// =tc or =tc-wide forces one (the GPU tests run each on every shape it supports).
enum class DecodeBlock { OneLane, Wide, TensorCores, TensorCoresWide };

template <int D>
DecodeBlock decode_block(const DecodeArgs& a, int B) {
  const char* forced = std::getenv("MOE_ATTENTION_LANES");
  if (forced && std::strcmp(forced, "1") == 0) return DecodeBlock::OneLane;
  if (forced && std::strcmp(forced, "wide") == 0) return DecodeBlock::Wide;
  if (forced && std::strcmp(forced, "tc") == 0 && kTcFits<D>) return DecodeBlock::TensorCores;
  if (forced && std::strcmp(forced, "tc-wide") == 0 && kTcFits<D>) return DecodeBlock::TensorCoresWide;
  const bool fits_sms =
      static_cast<int64_t>(a.splits) * attention_decode_counters(B, a.heads, a.kv.kv_heads) <=
      cuda::sm_count();
  if (kTcFits<D>) return fits_sms ? DecodeBlock::TensorCoresWide : DecodeBlock::TensorCores;
  return fits_sms ? DecodeBlock::Wide : DecodeBlock::OneLane;
}

// Whether the splits combine in a cluster (DecodeArgs::cluster): from 2 to kAttentionMaxClusterSplits splits,
// unless MOE_ATTENTION_CLUSTER=0 (read at every launch, like MOE_ATTENTION_LANES, so tests can take both).
bool combine_in_cluster(int splits) {
  const char* env = std::getenv("MOE_ATTENTION_CLUSTER");
  return splits >= 2 && splits <= kAttentionMaxClusterSplits && !(env && std::strcmp(env, "0") == 0);
}

template <int D>
void launch(DecodeArgs a, int B, cudaStream_t s) {
  const int group = a.heads / a.kv.kv_heads;
  a.cluster = combine_in_cluster(a.splits);
  const auto go = [&](auto heads_per_block, auto lanes, auto tc) {
    constexpr int kHeads = decltype(heads_per_block)::value, L = decltype(lanes)::value;
    constexpr bool kTc = decltype(tc)::value;
    const int sub_groups = (group + kHeads - 1) / kHeads;
    // The push slots after the tile in a cluster launch only (batches that fill the SMs keep their blocks'
    // shared memory as it was).
    static_assert(kTileBytes<D, L> % 16 == 0, "the push slots must start 16-byte aligned");
    const int smem = kTileBytes<D, L> + (a.cluster ? kPushBytes<D, kHeads> : 0);
    allow_dynamic_smem(reinterpret_cast<const void*>(decode_kernel<D, kHeads, L, kTc>),
                       kTileBytes<D, L> + kPushBytes<D, kHeads>);
    cuda::launch_overlapped_clusters(
        decode_kernel<D, kHeads, L, kTc>,
        dim3(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv.kv_heads * sub_groups),
             static_cast<unsigned>(B)),
        kThreads<L>, smem, s, a.cluster ? static_cast<unsigned>(a.splits) : 1u, a);
  };
  const DecodeBlock kind = decode_block<D>(a, B);
  const auto with_kind = [&](auto heads_per_block) {
    using One = std::integral_constant<int, 1>;
    if constexpr (kTcFits<D>) {
      if (kind == DecodeBlock::TensorCores) return go(heads_per_block, One{}, std::true_type{});
      if (kind == DecodeBlock::TensorCoresWide)
        return go(heads_per_block, std::integral_constant<int, 2>{}, std::true_type{});
    }
    if (kind == DecodeBlock::Wide)
      go(heads_per_block, std::integral_constant<int, kWideLanes<D>>{}, std::false_type{});
    else
      go(heads_per_block, One{}, std::false_type{});
  };
  if (group == 1)
    with_kind(std::integral_constant<int, 1>{});
  else if (group <= 4)
    with_kind(std::integral_constant<int, 4>{});
  else
    with_kind(std::integral_constant<int, kMaxHeadsPerBlock>{});
}

}  // namespace

int attention_decode_counters(int B, int heads, int kv_heads) {
  const int group = heads / kv_heads;
  const int per_block = group == 1 ? 1 : group <= 4 ? 4 : kMaxHeadsPerBlock;
  return B * kv_heads * ((group + per_block - 1) / per_block);
}

void attention_decode(const float* qkv, const HeadNormRope& nr, const StepMetaDev& meta, int B,
                      const KvCacheDev& kv, int layer, int heads, int splits, float* partial, int* counters,
                      float* ctx_f32, uint16_t* ctx_bf16, cudaStream_t s) {
  if (B == 0) return;
  require(heads % kv.kv_heads == 0 && splits >= 1 && splits <= kAttentionMaxSplits,
          "attention_decode: heads ", heads, " kv heads ", kv.kv_heads, " splits ", splits);
  const DecodeArgs a{qkv, nr, meta, kv, layer, heads, splits, partial, counters, ctx_f32, ctx_bf16, false};
  with_head_dim(kv.head_dim, [&](auto d) { launch<decltype(d)::value>(a, B, s); });
}

}  // namespace moe::model::gpu
