#pragma once
// The weighted combine's inputs when fused_moe leaves the combine to the kernel that reads the MoE output (a
// decode step's next RMSNorm, inside its GEMV): that kernel adds, for token t and column i,
// bf16(sum over slots k in slot order, skipping slots whose id is < 0, of fmaf(topk_weights[t, k],
// y[t * top_k + k, i], acc) [then fmaf(shared_gate[t], y_shared[t, i], acc)]) -- combine.cu's arithmetic, so
// the same bits as the combine kernel's output -- and the combine's launch and its boundary are gone. A
// skipped slot (no local expert, or fewer than top_k finite logits) has no y row written this call: the
// consumer reads the ids first and never reads those rows. Plain data, host and device.
#include <cstdint>

namespace moe::cuda {

struct MoeCombineInput {
  const float* y = nullptr;             // [M * top_k, H] each pair's expert output; null: nothing pending
  const int* topk_ids = nullptr;        // [M, top_k]: < 0 for a slot with no expert output
  const float* topk_weights = nullptr;  // [M, top_k]
  const float* y_shared = nullptr;      // [M, H] the shared expert's output, or null
  const float* shared_gate = nullptr;   // [M]
  int top_k = 0;
};

}  // namespace moe::cuda
