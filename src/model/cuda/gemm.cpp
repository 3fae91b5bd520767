#include "model/cuda/gemm.h"

#include "core/error.h"

#define MOE_CUBLAS_CHECK(expr)                                                                               \
  do {                                                                                                       \
    const cublasStatus_t moe_cublas_status_ = (expr);                                                        \
    if (moe_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                         \
      ::moe::fail("cuBLAS error ", cublasGetStatusName(moe_cublas_status_), " in ", #expr, " at ", __FILE__, \
                  ":", __LINE__);                                                                            \
  } while (0)

namespace moe::model::gpu {

namespace {
constexpr size_t kWorkspaceBytes = 32u << 20;
}

Gemm::Gemm() : workspace_(kWorkspaceBytes) {
  MOE_CUBLAS_CHECK(cublasCreate(&handle_));
  MOE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));  // no TF32 for the fp32 router
}

Gemm::~Gemm() {
  if (handle_) cublasDestroy(handle_);
}

void Gemm::bind(cudaStream_t s) {
  MOE_CUBLAS_CHECK(cublasSetStream(handle_, s));
  MOE_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
}

// Column-major view: yᵀ [N, M] = W [N, K] (stored as Kx N column-major, so op T) · xᵀ [K, M].
void Gemm::bf16(const uint16_t* x, int M, int K, const uint16_t* w, int N, float* y, cudaStream_t s) {
  if (M == 0) return;
  bind(s);
  const float one = 1.0f, zero = 0.0f;
  MOE_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, CUDA_R_16BF, K, x,
                                CUDA_R_16BF, K, &zero, y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
}

void Gemm::f32(const float* x, int M, int K, const float* w, int N, float* y, cudaStream_t s) {
  if (M == 0) return;
  bind(s);
  const float one = 1.0f, zero = 0.0f;
  MOE_CUBLAS_CHECK(cublasSgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, K, x, K, &zero, y, N));
}

}  // namespace moe::model::gpu
