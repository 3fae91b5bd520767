#include "core/tensor.h"

#include "core/error.h"

namespace moe {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_) require(d >= 0, "negative dimension in shape ", shape_str(shape_));
  bytes_.assign(static_cast<size_t>(moe::numel(shape_)) * dtype_size(dtype_), 0);
}

}  // namespace moe
