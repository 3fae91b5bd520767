// The fp8 e4m3 codecs on the GPU (hardware conversions) give the same bits as the host definitions the CPU
// reference uses: every code decoded, and the encoder on every bf16 value in [-480, 480] plus random floats.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"

namespace moe {
namespace {

__global__ void decode_all(float* out) {
  out[threadIdx.x] = fp8e4m3_to_f32(static_cast<uint8_t>(threadIdx.x));
}

__global__ void encode(const float* in, uint8_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f32_to_fp8e4m3(in[i]);
}

TEST(Fp8CodecsGpu, SameBitsAsHost) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::DeviceBuffer dec(256 * 4);
  decode_all<<<1, 256>>>(dec.as<float>());
  MOE_CUDA_CHECK_LAUNCH();
  std::vector<float> got(256);
  MOE_CUDA_CHECK(cudaMemcpy(got.data(), dec.get(), 256 * 4, cudaMemcpyDeviceToHost));
  for (int c = 0; c < 256; ++c) {
    const float want = fp8e4m3_to_f32(static_cast<uint8_t>(c));
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got[c])) << "code " << c;
    else
      EXPECT_EQ(float_bits(want), float_bits(got[c])) << "code " << c;
  }

  std::vector<float> in;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (std::isfinite(f) && std::fabs(f) <= 480.0f) in.push_back(f);
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-470.0f, 470.0f);
  for (int i = 0; i < 200000; ++i) in.push_back(u(rng) * (i % 3 == 0 ? 1e-3f : 1.0f));
  const int n = static_cast<int>(in.size());
  cuda::DeviceBuffer din(in.size() * 4), dout(in.size());
  din.upload(in.data(), in.size() * 4);
  encode<<<(n + 255) / 256, 256>>>(din.as<float>(), dout.as<uint8_t>(), n);
  MOE_CUDA_CHECK_LAUNCH();
  std::vector<uint8_t> codes(in.size());
  MOE_CUDA_CHECK(cudaMemcpy(codes.data(), dout.get(), codes.size(), cudaMemcpyDeviceToHost));
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    if (codes[i] != f32_to_fp8e4m3(in[i]) && ++mismatches <= 5)
      ADD_FAILURE() << "value " << in[i] << ": gpu " << int(codes[i]) << " host "
                    << int(f32_to_fp8e4m3(in[i]));
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " values";
}

}  // namespace
}  // namespace moe
