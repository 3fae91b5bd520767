#pragma once
// Launchers of the model's own CUDA kernels (the fused MoE is cuda/moe_layer.h). Host code includes only
// this; each launcher lives next to its kernel in a .cu file of this folder. Every launcher checks its
// launch. Activations: the residual stream is fp32 [rows, H]; GEMM inputs are bf16 copies (or fake-quantised
// fp32 for the fp8 GEMV); KV pages are bf16 [layer][page][k|v][slot][kv_heads * head_dim].
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/moe_combine_input.h"

#ifdef __CUDACC__
#define MOE_MODEL_HD __host__ __device__
#else
#define MOE_MODEL_HD
#endif

namespace moe::model::gpu {

// Per-step metadata on the device, built on the host (step_meta in cuda_backend.cpp) and uploaded in one
// copy.
struct StepMetaDev {
  const int32_t* token_ids;   // [N]
  const int32_t* token_seq;   // [N]: which sequence a token row belongs to
  const int32_t* token_pos;   // [N]: its position in that sequence
  const int32_t* seq_kv_len;  // [B]: start_pos + new tokens
  const int32_t* seq_first;   // [B]: first token row of the sequence
  const int32_t* page_table;  // [B, max_pages]
  int max_pages;
};

struct KvCacheDev {
  uint16_t* data;  // bf16
  int page_size, num_pages, kv_heads, head_dim;
  MOE_MODEL_HD int64_t layer_stride() const { return static_cast<int64_t>(num_pages) * page_stride(); }
  MOE_MODEL_HD int64_t page_stride() const { return 2LL * page_size * kv_heads * head_dim; }
};

// embed.cu: x [N, H] fp32 = table[token_ids] (bf16 rows). It also zeroes `zero_ints` [num_zero_ints] (may be
// null): the step's decode-attention counters, every layer's, since it is the step's first kernel.
void embed_rows(const uint16_t* table, const int32_t* token_ids, int N, int H, float* x, cudaStream_t s,
                int* zero_ints = nullptr, int num_zero_ints = 0);

// norms.cu: out = weight * x / rms(x) per row, fp32 math. Row r reads x row `row_index[r]` when row_index is
// set. `residual` (fp32 or bf16, or both null) is first added into x in place (x += residual; only without
// row_index). Either output may be null.
void rms_norm(float* x, const float* residual_f32, const uint16_t* residual_bf16, const float* weight,
              const int32_t* row_index, int rows, int n, float eps, float* out_f32, uint16_t* out_bf16,
              cudaStream_t s);

// act_quant.cu: FORMATS.md section 3 fp8 1x128 fake quantisation of x [rows, n] (groups from column 0),
// written as bf16 (GEMM input) and/or fp32 (GEMV input). Without quantisation (quantise false) it only
// converts.
void prepare_activation(const float* x, int rows, int n, bool quantise, uint16_t* out_bf16, float* out_f32,
                        cudaStream_t s);

// elementwise.cu: h [rows, I] = silu(gu[:, :I]) * gu[:, I:], fp32 and/or bf16.
void silu_mul(const float* gate_up, int rows, int I, float* h_f32, uint16_t* h_bf16, cudaStream_t s);
// x[i] += y[i] for fp32 y or bf16 y (one of them).
void add_into(float* x, const float* y_f32, const uint16_t* y_bf16, int64_t count, cudaStream_t s);

// What a head's vector gets after the q/k/v projection (head_norm_rope.cuh): per-head RMSNorm of q and k
// (when q_norm/k_norm are set), then neox RoPE at the token's position (cos/sin of pos * inv_freq, times
// `scaling`).
struct HeadNormRope {
  const float* q_norm;  // [head_dim] or null
  const float* k_norm;  // [head_dim] or null
  float eps;
  const float* inv_freq;  // [head_dim / 2]
  float scaling;          // YaRN's attention scaling (1 without rope_scaling)
};

// qk_rope.cu (prefill): qkv [N, (heads + 2 kv_heads) * D] fp32 from the fused projection; q after `nr`
// written to q_out [N, heads * D] fp32, k after `nr` and v stored into the token's KV slot (bf16).
void qk_norm_rope_store(const float* qkv, int N, int heads, int kv_heads, int head_dim,
                        const HeadNormRope& nr, const StepMetaDev& meta, const KvCacheDev& kv, int layer,
                        float* q_out, cudaStream_t s);

// attention_prefill.cu: causal GQA attention of every token row over its sequence's KV [0, own position],
// reading earlier pages too (chunked prefill, prefix cache). `tiles` lists (sequence, first row) of the
// 64-row query tiles, num_tiles of them. ctx [N, heads * D] fp32 and bf16.
constexpr int kPrefillTile = 64;
void attention_prefill(const float* q, const StepMetaDev& meta, const int32_t* tiles, int num_tiles,
                       const KvCacheDev& kv, int layer, int heads, float* ctx_f32, uint16_t* ctx_bf16,
                       cudaStream_t s);

// attention_decode.cu: one new token per sequence (row b is sequence b, at position seq_kv_len[b] - 1), B
// sequences. Takes that token's q/k/v projection qkv [B, (heads + 2 kv_heads) * D] fp32, does `nr` to its q
// and k itself, stores its k and v into its KV slot, and attends over the sequence's KV split into `splits`
// parts (graph-safe: lengths are read on the device). Up to kAttentionMaxClusterSplits splits combine inside
// a thread block cluster (MOE_ATTENTION_CLUSTER=0: as with more); more put partials in `partial` [B, heads,
// splits, head_dim + 2] fp32, combined into ctx by the last block of each group; `counters`
// [attention_decode_counters(B, heads, kv_heads)] must be zero (embed_rows zeroes every layer's in the same
// step).
constexpr int kAttentionMaxSplits = 32;
// Up to this many splits (a portable cluster size) the splits of a KV head run as one thread block cluster
// and combine through distributed shared memory (attention_decode.cu).
constexpr int kAttentionMaxClusterSplits = 8;
int attention_decode_counters(int B, int heads, int kv_heads);
void attention_decode(const float* qkv, const HeadNormRope& nr, const StepMetaDev& meta, int B,
                      const KvCacheDev& kv, int layer, int heads, int splits, float* partial, int* counters,
                      float* ctx_f32, uint16_t* ctx_bf16, cudaStream_t s);

// A GEMV's input given as RMSNorm(x + residual) instead of ready rows (norm_rows.cuh): the GEMV normalises
// the M rows itself. Block 0 writes x + residual to x_out, which must not be x (other blocks still read x),
// and the normalised rows in bf16 to xn_bf16_out when that is set.
struct NormInput {
  const float* x;            // [M, n] the residual stream
  const float* res_f32;      // [M, n] added to x first (or null)
  const uint16_t* res_bf16;  // [M, n] added to x first (or null)
  const float* weight;       // [n]
  float eps;
  float* x_out;           // [M, n]
  uint16_t* xn_bf16_out;  // [M, n] or null
  // The previous layer's MoE output still to be combined (combine.y set; res_f32 and res_bf16 null then):
  // added to x as the combine kernel would have written it (moe_combine_input.h). Only the fp8 GEMV takes it.
  cuda::MoeCombineInput combine{};
};

// fp8_linear.cu: y [M, rows] fp32 = fake_quantize(x) [M, cols] · dequant(W)ᵀ for fp8 block weights W [rows,
// cols] with scales [ceil(rows/128), ceil(cols/128)]; x is the linear's unquantised fp32 input, quantised per
// token per 1x128 group inside the kernel. M <= kFp8GemvMaxM (up to kFp8GemvMmaMaxM where the tensor-core
// kernel takes the call: fp8_gemv_mma.h), cols % 16 == 0, cols <= kFp8GemvMaxCols.
constexpr int kFp8GemvMaxM = 4, kFp8GemvMaxCols = 8192;
// With `norm` set, x is ignored and the input is RMSNorm(norm->x + residual) (see NormInput).
// Whether fp8_gemv takes a pending MoE combine of M rows of `cols` (NormInput::combine) in its norm: the rows
// it stages in shared memory (x, each slot's expert output, the shared expert's) fit kCombineInNormMaxBytes,
// which leaves room for two blocks per SM. At one token: Qwen3-30B-A3B 72 KB, Qwen3-Next-80B-A3B 96.1 KB.
constexpr int kCombineInNormMaxBytes = 100 * 1024;
bool fp8_gemv_takes_combine(int M, int cols, int top_k, bool shared_expert);
// Floats of shared memory a norm of M rows of n stages beyond the normalised rows themselves (M * n): the
// combine's rows (each slot's expert output, then the shared expert's), its weights, gates and slot ids.
// (stage_combine in norm_rows.cuh writes this layout.)
MOE_MODEL_HD inline int combine_stage_floats(int M, int n, int top_k, bool shared_expert) {
  return M * (top_k + (shared_expert ? 1 : 0)) * n + M * (2 * top_k + 1);
}
MOE_MODEL_HD inline int combine_stage_floats(const cuda::MoeCombineInput& c, int M, int n) {
  return c.y ? combine_stage_floats(M, n, c.top_k, c.y_shared != nullptr) : 0;
}

void fp8_gemv(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, float* y,
              cudaStream_t s, const NormInput* norm = nullptr);
// f32_gemv.cu: y [M, rows] fp32 = x [M, cols] · Wᵀ for fp32 W [rows, cols] (the router at decode sizes).
// M <= kF32GemvMaxM, cols % 4 == 0, cols <= kFp8GemvMaxCols; `norm` as for fp8_gemv.
constexpr int kF32GemvMaxM = 4;
void f32_gemv(const float* w, int rows, int cols, const float* x, int M, float* y, cudaStream_t s,
              const NormInput* norm = nullptr);
// W dequantised on the device: bf16 (the fast prefill GEMM's weights) and/or fp32 (the exact one's).
void fp8_block_dequantize(const uint8_t* w, const float* scale, int64_t rows, int64_t cols,
                          uint16_t* out_bf16, float* out_f32, cudaStream_t s);

}  // namespace moe::model::gpu
