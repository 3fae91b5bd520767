#pragma once
// Row-major GEMMs through cuBLAS for the model: y [M, N] fp32 = x [M, K] · Wᵀ with W [N, K] (nn.Linear
// layout), bf16 operands with fp32 accumulation, or fp32 throughout (router gates; no TF32). A fixed
// workspace keeps the calls capturable in CUDA graphs.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"

namespace moe::model::gpu {

class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  void bf16(const uint16_t* x, int M, int K, const uint16_t* w, int N, float* y, cudaStream_t s);
  void f32(const float* x, int M, int K, const float* w, int N, float* y, cudaStream_t s);

 private:
  void bind(cudaStream_t s);
  cublasHandle_t handle_ = nullptr;
  cuda::DeviceBuffer workspace_;
};

}  // namespace moe::model::gpu
