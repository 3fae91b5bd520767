#pragma once
// Stages 1 and 2 of the fused MoE for calls where few tokens reach each expert (decode), on tensor cores with
// the weights on the MMA's 16-row side and up to 8 tokens per MMA column tile ("swap AB"), fed by bulk copies
// into a shared-memory ring. Each 16-row tile of an active expert's weights is read from memory once per pass
// of up to 32 tokens; no weight is decoded on CUDA cores. Same contract as the GEMV stages (launch_stage1 /
// launch_stage2 in launchers.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launchers.h"

namespace moe::cuda {

// Whether this weight format / activation quantisation pair has a streaming path (bf16 with unquantised
// activations; fp8_block with fp8 1x128 activations) and the layer's shapes fit it.
bool stream_supported(const ExpertWeightsDev& w, AQuant q);

struct StreamInputs {
  const uint16_t* x;          // [tokens, H] bf16 (stage 1's input for bf16)
  const uint8_t* x_codes;     // fp8: [tokens, H] e4m3 codes of x, written by the prologue
  const float* x_scales;      // fp8: [tokens, ceil(H/128)]
  int max_tokens_per_expert;  // bound on any expert's pairs in this call (M)
  // fp8: where h is quantised once (by its own launch) for stage 2.
  uint8_t* h_codes;  // [pairs, P]
  float* h_scales;   // [pairs, stage 2's K blocks]
  int pairs_bound;   // rows of h that can exist (tokens * pair_div)
};

// Both stages for the grouping in `a` (a.xq is not read).
void launch_expert_stream(const GemvArgs& a, const StreamInputs& in, cudaStream_t stream);

}  // namespace moe::cuda
