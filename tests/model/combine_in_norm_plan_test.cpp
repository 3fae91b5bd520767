// Where the decode q/k/v GEMV takes a MoE layer's pending combine (launch.h: fp8_gemv_takes_combine), checked
// on the CPU: the shapes we serve at one token fit and larger ones do not, what it admits always fits the
// shared memory that keeps two GEMV blocks on an SM, and its size is the staging layout's
// (combine_stage_floats, what the kernel's stage_combine writes) -- a layout change that the predicate missed
// would overrun shared memory on the GPU.
#include <gtest/gtest.h>

#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

// Shared memory an SM has for blocks (H100/H200: 228 KB, 1 KB reserved per block) and the GEMV's static part.
constexpr int kSmemPerSm = 228 * 1024, kReservedPerBlock = 1024, kGemvStatic = 384;

TEST(CombineInNormPlan, ServedShapesAtOneToken) {
  EXPECT_TRUE(fp8_gemv_takes_combine(1, 2048, 8, false));   // Qwen3-30B-A3B: 72 KB
  EXPECT_TRUE(fp8_gemv_takes_combine(1, 2048, 10, true));   // Qwen3-Next-80B-A3B (shared expert): 96.1 KB
  EXPECT_TRUE(fp8_gemv_takes_combine(1, 4096, 4, false));   // a 4096-wide model with 4 experts per token
  EXPECT_FALSE(fp8_gemv_takes_combine(2, 2048, 8, false));  // two tokens of Qwen3-30B-A3B: 144 KB
  EXPECT_FALSE(fp8_gemv_takes_combine(1, 7168, 8, true));   // DeepSeek-V3: 258 KB
  EXPECT_FALSE(fp8_gemv_takes_combine(1, 4096, 8, false));  // Qwen3-235B-A22B
}

TEST(CombineInNormPlan, RefusesWhatTheGemvCannotTake) {
  EXPECT_FALSE(fp8_gemv_takes_combine(0, 256, 8, false));
  EXPECT_FALSE(fp8_gemv_takes_combine(kFp8GemvMaxM + 1, 64, 2, false));
  EXPECT_FALSE(fp8_gemv_takes_combine(1, 258, 8, false));  // rows of whole 16-byte pieces only
  EXPECT_FALSE(fp8_gemv_takes_combine(1, 256, 0, false));
  EXPECT_FALSE(fp8_gemv_takes_combine(1, kFp8GemvMaxCols + 16, 1, false));
}

TEST(CombineInNormPlan, AdmittedSizesAreTheStagingLayoutsAndFitTwoBlocksPerSm) {
  int admitted = 0, refused = 0;
  for (int M = 1; M <= kFp8GemvMaxM; ++M)
    for (int cols = 16; cols <= kFp8GemvMaxCols; cols += 240)
      for (int top_k = 1; top_k <= 16; ++top_k)
        for (bool shared : {false, true}) {
          const int64_t bytes =
              4 * (static_cast<int64_t>(M) * cols + combine_stage_floats(M, cols, top_k, shared));
          const bool fits = cols % 4 == 0 && bytes <= kCombineInNormMaxBytes;
          ASSERT_EQ(fp8_gemv_takes_combine(M, cols, top_k, shared), fits)
              << "M " << M << " cols " << cols << " top_k " << top_k << " shared " << shared;
          if (fits) {
            ++admitted;
            EXPECT_LE(2 * (bytes + kGemvStatic + kReservedPerBlock), kSmemPerSm);
          } else {
            ++refused;
          }
          // The layout in a MoeCombineInput is the same count; an empty one stages nothing.
          cuda::MoeCombineInput c;
          const float dummy = 0.0f;
          c.y = &dummy;
          c.y_shared = shared ? &dummy : nullptr;
          c.top_k = top_k;
          ASSERT_EQ(combine_stage_floats(c, M, cols), combine_stage_floats(M, cols, top_k, shared));
          ASSERT_EQ(combine_stage_floats(cuda::MoeCombineInput{}, M, cols), 0);
        }
  EXPECT_GT(admitted, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace moe::model::gpu
