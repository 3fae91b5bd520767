#pragma once
// The shared expert's inputs for stages that start before the prologue (MOE_SHARED_EARLY): its identity
// grouping (every token, one group) and, for fp8 activations, x quantised into codes of its own, so its
// stages need nothing the prologue writes. The codes are the prologue's (warp_fp8_row: FORMATS.md section 3's
// formula, the same bits), so the shared expert's output is the same as when it follows the prologue.
#include <cuda_runtime.h>

#include <cstdint>

namespace moe::cuda {

struct SharedPrepArgs {
  const uint16_t* x;  // [M, H] bf16
  int hidden, M;
  uint8_t* x_codes;  // [M, H] e4m3, or null (no activation quantisation: only the grouping)
  float* x_scales;   // [M, ceil(H / 128)]
  // The shared expert's grouping (GroupingDev for one expert): pairs = tokens, offsets {0, M}, active {0}.
  int* pairs;
  int* offsets;
  int* active;
  int* num_active;
};

// One block (a warp per token row); M at most kSharedPrepMaxTokens, hidden a multiple of 8.
constexpr int kSharedPrepMaxTokens = 64;
void launch_shared_prep(const SharedPrepArgs& a, cudaStream_t stream);

}  // namespace moe::cuda
