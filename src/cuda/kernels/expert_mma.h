#pragma once
// Stages 1 and 2 of the fused MoE on tensor cores, for calls where many tokens reach each expert: a grouped
// GEMM over each active expert's sorted pair list (mma.sync, cp.async pipeline), same contract as the GEMV
// stages (launch_stage1 / launch_stage2 in launchers.h). bf16 weights with unquantised activations run bf16
// MMAs; fp8_block weights with fp8 1x128 activations run e4m3 MMAs on codes, with both scales applied per
// 128-wide K block.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launchers.h"

namespace moe::cuda {

// Rows of pairs one GEMM tile covers.
constexpr int kMmaTileRows = 128;

// Whether this weight format / activation quantisation pair has a tensor-core path.
bool mma_supported(WFormat f, AQuant q);
// Bound on the (expert, row tile) work items of a call with `pairs` pairs over `experts` experts.
int mma_max_tiles(int pairs, int experts);

// Scratch the MMA path needs besides GemvArgs' h and y (all sized for the largest call).
struct MmaScratch {
  uint8_t* x_codes;  // fp8: [tokens, H] e4m3 codes of x
  float* x_scales;   // fp8: [tokens, ceil(H/128)]
  uint8_t* h_codes;  // fp8: [pairs, P] e4m3 codes of h (rows of pairs that exist)
  float* h_scales;   // fp8: [pairs, stage 2's K blocks]
  int2* tiles;       // [max_tiles] (expert, first pair index) of each row tile
  int* num_tiles;    // device scalar
  int max_tiles;
};

// Whether the grouped GEMM's tiles run on wgmma (expert_wgmma.cu, sm_90a: fp8 on the tensor cores) rather
// than mma.sync: on unless MOE_MMA_WGMMA=0 (read once); set_grouped_gemm_wgmma overrides it (the GPU tests
// run both).
bool grouped_gemm_uses_wgmma();
void set_grouped_gemm_wgmma(bool on);

// Both stages for the grouping in `a` (a.xq is not used: x is read as bf16 and quantised here when needed).
void launch_expert_mma(const GemvArgs& a, const uint16_t* x, int tokens, const MmaScratch& s,
                       cudaStream_t stream);

}  // namespace moe::cuda
