// The fp8 e4m3 codecs on the GPU (hardware conversions) give the same bits as the host definitions the CPU
// reference uses: every code decoded, and the encoder on every bf16 value in [-480, 480] plus random floats.
// The same for the bf16 pair packer (one cvt.rn.bf16x2.f32 on the GPU) against f32_to_bf16: every bf16 value
// with the rounding cases below and above it (ties to even, one below and above a tie), subnormals,
// overflow to infinity, and NaN staying NaN.
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

__global__ void pack_bf16x2(const float* in, uint32_t* out, int n_pairs) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n_pairs) out[i] = f32x2_to_bf16x2(in[2 * i], in[2 * i + 1]);
}

TEST(Bf16PackGpu, SameBitsAsHost) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  std::vector<float> in;
  for (uint32_t b = 0; b < 0x10000u; ++b)
    for (const uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      in.push_back(bits_float(b << 16 | low));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0e38f, 3.0e38f);
  for (int i = 0; i < 100000; ++i) in.push_back(u(rng) * (i % 2 == 0 ? 1e-30f : 1.0f));
  if (in.size() % 2) in.push_back(1.0f);
  const int n_pairs = static_cast<int>(in.size() / 2);
  cuda::DeviceBuffer din(in.size() * 4), dout(static_cast<size_t>(n_pairs) * 4);
  din.upload(in.data(), in.size() * 4);
  pack_bf16x2<<<(n_pairs + 255) / 256, 256>>>(din.as<float>(), dout.as<uint32_t>(), n_pairs);
  MOE_CUDA_CHECK_LAUNCH();
  std::vector<uint32_t> got(n_pairs);
  MOE_CUDA_CHECK(cudaMemcpy(got.data(), dout.get(), got.size() * 4, cudaMemcpyDeviceToHost));
  int mismatches = 0, nans = 0;
  for (int i = 0; i < 2 * n_pairs; ++i) {
    const uint16_t g = static_cast<uint16_t>(got[i / 2] >> (16 * (i % 2)));
    if (std::isnan(in[i])) {
      ++nans;
      if (!std::isnan(bf16_to_f32(g)) && ++mismatches <= 5) ADD_FAILURE() << "NaN packed as " << g;
    } else if (g != f32_to_bf16(in[i]) && ++mismatches <= 5) {
      ADD_FAILURE() << "value bits " << std::hex << float_bits(in[i]) << ": gpu " << g << " host "
                    << f32_to_bf16(in[i]);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << 2 * n_pairs << " values";
  EXPECT_GT(nans, 0) << "the inputs were to include NaNs";
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
