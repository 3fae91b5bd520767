// Which calls the tensor-core decode GEMV takes (fp8_gemv_mma.h: fp8_gemv_mma_takes), checked on the CPU: the
// projections of the models we serve at 1-4 tokens, the fallback to the compact kernel where its shared
// memory would not fit (8192 columns at 3 and 4 tokens), and the calls it must refuse (a K range not of whole
// 128-column groups, more than kFp8GemvMaxM tokens, a pending combine, x misaligned when read as it is).
#include <gtest/gtest.h>

#include <cstdint>

#include "model/cuda/fp8_gemv_mma.h"

namespace moe::model::gpu {
namespace {

NormInput with_norm() {
  static float weight[1], x_out[1];
  NormInput n{};
  n.weight = weight;
  n.x_out = x_out;
  return n;
}

alignas(16) float x_rows[16];

TEST(GemvMmaPlan, ServedProjections) {
  for (int M = 1; M <= kFp8GemvMaxM; ++M) {
    SCOPED_TRACE(testing::Message() << "M=" << M);
    EXPECT_TRUE(fp8_gemv_mma_takes(5120, 2048, M, x_rows, with_norm()));  // Qwen3-30B-A3B q/k/v
    EXPECT_TRUE(fp8_gemv_mma_takes(2048, 4096, M, x_rows, NormInput{}));  // its o projection
    EXPECT_TRUE(fp8_gemv_mma_takes(9216, 4096, M, x_rows, with_norm()));  // Qwen3-235B-A22B q/k/v
    EXPECT_TRUE(fp8_gemv_mma_takes(4096, 8192, M, x_rows, NormInput{}) == (M <= 2))
        << "8192 columns: x's fp32 rows and the weight rows fit up to 2 tokens";
    EXPECT_TRUE(fp8_gemv_mma_takes(200, 1024, M, x_rows, NormInput{}));  // a partial last block
  }
}

TEST(GemvMmaPlan, RefusesWhatItCannotTake) {
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048, 0, x_rows, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048, kFp8GemvMaxM + 1, x_rows, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048 + 64, 1, x_rows, NormInput{}));  // not whole 128-column groups
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 256, 1, x_rows, NormInput{}));        // 2 groups over 4 K splits
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, kFp8GemvMaxCols + 128, 1, x_rows, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(0, 2048, 1, x_rows, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048, 1, x_rows + 1, NormInput{}));  // x read as it is, misaligned
  EXPECT_TRUE(fp8_gemv_mma_takes(2048, 2048, 1, x_rows + 1, with_norm()));   // x read through the norm
  NormInput pending = with_norm();
  static float y[1];
  pending.combine.y = y;
  EXPECT_FALSE(
      fp8_gemv_mma_takes(2048, 2048, 1, x_rows, pending));  // the combine stays with the compact GEMV
}

}  // namespace
}  // namespace moe::model::gpu
