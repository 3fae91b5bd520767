#pragma once
// An owning device allocation (cudaMalloc; never managed memory).
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda/cuda_check.h"

namespace moe::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) MOE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t n) {
    MOE_CUDA_CHECK(cudaMemcpy(ptr_, host, n, cudaMemcpyHostToDevice));
  }
  // Fills with 0xff bytes: NaN for fp32 and bf16, -1 for int32. Used to poison outputs and workspaces.
  void poison(cudaStream_t s) {
    if (bytes_) MOE_CUDA_CHECK(cudaMemsetAsync(ptr_, 0xff, bytes_, s));
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace moe::cuda
