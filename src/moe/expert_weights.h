#pragma once
// Expert weights in checkpoint form (FORMATS.md section 2) as views. The same structure describes a case
// file's stacked tensors, a Hugging Face checkpoint's per-expert tensors and one tensor-parallel rank's
// padded shard.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "moe/moe_config.h"

namespace moe {

// One projection (gate, up or down) of every expert. Logical per-expert shape [rows (out), cols (in)].
struct ExpertLinear {
  WeightFormat format = WeightFormat::Bf16;
  int64_t experts = 0, rows = 0, cols = 0;
  int64_t row_stride = 1;  // logical row r lives at stored row r * row_stride + row_offset
  int64_t row_offset = 0;
  // FP8 only: where this matrix starts inside the 128x128 scale grid. A TP shard whose first row (or column)
  // is not on a block boundary keeps the checkpoint's blocks; phase = its offset inside the first block.
  int64_t row_phase = 0, col_phase = 0;
  int64_t scale_cols = 0;        // fp8: column blocks per scale row; mxfp4: cols / 32
  int64_t scale_row_offset = 0;  // fp8: first scale row of this matrix (w13 keeps gate and up blocks apart)

  // Per expert: its stored matrix (bf16 / e4m3 [stored_rows, cols], or packed e2m1 [stored_rows, cols/2]) and
  // its scales (fp8: f32 block grid; mxfp4: e8m0 [stored_rows, cols/32]).
  std::vector<const void*> weights, scales;
  std::vector<const float*> biases;  // optional fp32 [stored_rows] per expert (gpt-oss); empty if none

  int64_t stored_row(int64_t r) const { return r * row_stride + row_offset; }
  int64_t row_bytes() const;  // bytes of one stored row
  const uint8_t* row(int64_t expert, int64_t r) const;
  // fp8: scale row of block row b (b counted from this matrix's first block row, phase included).
  const float* fp8_scale_row(int64_t expert, int64_t block_row) const;
  const uint8_t* mxfp4_scale_row(int64_t expert, int64_t r) const;

  // Writes expert e's dequantised [rows, cols] matrix.
  void dequantize(int64_t expert, float* out) const;
  float bias_at(int64_t expert, int64_t r) const {
    return biases.empty() ? 0.0f : biases[static_cast<size_t>(expert)][stored_row(r)];
  }
};

// A stacked [E, ...] tensor as per-expert pointers.
std::vector<const void*> split_experts(const void* base, int64_t experts, int64_t bytes_per_expert);

struct SharedExpertWeights {
  ExpertLinear gate, up, down;     // experts == 1
  std::vector<float> gate_weight;  // [H] sigmoid gate; empty means the gate is 1 (DeepSeek shared_experts)
};

struct MoeWeights {
  int64_t num_experts = 0, hidden = 0, inter = 0;
  ExpertLinear gate, up, down;
  std::optional<SharedExpertWeights> shared;
  std::vector<float> router_bias;  // [E], sigmoid_grouped only
  // Keeps the storage behind the views alive (an mmap'd file, or owned buffers).
  std::vector<std::shared_ptr<const void>> keepalive;
};

}  // namespace moe
