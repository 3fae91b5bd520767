// Which calls the tensor-core decode GEMV takes (fp8_gemv_mma.h: fp8_gemv_mma_takes), checked on the CPU: the
// projections of the models we serve at 1-8 tokens, where its shared memory would not fit (a norm's fp32 rows
// of 8192 columns past 2 tokens, of 4096 past 4), and the calls it must refuse (a K range not of whole
// 128-column groups, more than kFp8GemvMmaMaxM tokens, a pending combine).
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

TEST(GemvMmaPlan, ServedProjections) {
  for (int M = 1; M <= kFp8GemvMmaMaxM; ++M) {
    SCOPED_TRACE(testing::Message() << "M=" << M);
    EXPECT_TRUE(fp8_gemv_mma_takes(5120, 2048, M, with_norm()));  // Qwen3-30B-A3B q/k/v
    EXPECT_TRUE(fp8_gemv_mma_takes(2048, 4096, M, NormInput{}));  // its o projection
    EXPECT_TRUE(fp8_gemv_mma_takes(2048, 4096, M, with_norm()) == (M <= 4)) << "a norm of 4096 columns";
    EXPECT_TRUE(fp8_gemv_mma_takes(9216, 4096, M, with_norm()) == (M <= 4))
        << "Qwen3-235B-A22B q/k/v: the norm's fp32 rows of 4096 columns fit up to 4 tokens";
    EXPECT_TRUE(fp8_gemv_mma_takes(4096, 8192, M, NormInput{}));  // no norm: only x's codes are staged
    EXPECT_TRUE(fp8_gemv_mma_takes(4096, 8192, M, with_norm()) == (M <= 2))
        << "8192 columns: the norm's fp32 rows and the weight rows fit up to 2 tokens";
    EXPECT_TRUE(fp8_gemv_mma_takes(200, 1024, M, NormInput{}));  // a partial last block
    EXPECT_EQ(fp8_gemv_mma_fits(5120, 2048, M, true), fp8_gemv_mma_takes(5120, 2048, M, with_norm()));
  }
}

TEST(GemvMmaPlan, RefusesWhatItCannotTake) {
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048, 0, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048, kFp8GemvMmaMaxM + 1, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048 + 64, 1, NormInput{}));  // not whole 128-column groups
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 256, 1, NormInput{}));        // 2 groups over 4 K splits
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, kFp8GemvMaxCols + 128, 1, NormInput{}));
  EXPECT_FALSE(fp8_gemv_mma_takes(0, 2048, 1, NormInput{}));
  NormInput pending = with_norm();
  static float y[1];
  pending.combine.y = y;
  EXPECT_FALSE(fp8_gemv_mma_takes(2048, 2048, 1, pending));  // the combine stays with the compact GEMV
  EXPECT_TRUE(fp8_gemv_mma_fits(2048, 2048, 1, true));       // (which fits without the combine)
}

}  // namespace
}  // namespace moe::model::gpu
