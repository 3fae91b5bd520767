#include "io/tensor_source.h"

#include <algorithm>

#include "core/error.h"

namespace moe {

TensorView expect_tensor(const TensorSource& src, const std::string& name,
                         std::initializer_list<DType> dtypes, const Shape& shape) {
  const auto v = src.get(name);
  if (!v) fail_input(src.label(), ": missing tensor '", name, "' (expected shape ", shape_str(shape), ")");
  if (std::find(dtypes.begin(), dtypes.end(), v->dtype) == dtypes.end()) {
    std::string want;
    for (DType d : dtypes) want += (want.empty() ? "" : " or ") + std::string(dtype_name(d));
    fail_input(src.label(), ": tensor '", name, "' has dtype ", dtype_name(v->dtype), ", expected ", want);
  }
  if (v->shape != shape)
    fail_input(src.label(), ": tensor '", name, "' has shape ", shape_str(v->shape), ", expected ",
               shape_str(shape));
  return *v;
}

}  // namespace moe
