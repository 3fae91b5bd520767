#pragma once
// Host tensors. TensorView is a non-owning window (for example into an mmap'd safetensors file); Tensor owns
// its bytes. Both are row-major and contiguous.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace moe {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);

struct TensorView {
  DType dtype = DType::F32;
  Shape shape;
  const void* data = nullptr;

  int64_t numel() const { return moe::numel(shape); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return moe::numel(shape_); }
  size_t nbytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  TensorView view() const { return {dtype_, shape_, bytes_.data()}; }

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<uint8_t> bytes_;
};

}  // namespace moe
