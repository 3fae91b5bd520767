#include "core/dtype.h"

#include <array>
#include <utility>

namespace moe {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 11> kDTypes = {{
    {DType::F64, "F64", 8},
    {DType::F32, "F32", 4},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::I64, "I64", 8},
    {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},
    {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
}};
}  // namespace

size_t dtype_size(DType t) {
  return kDTypes[static_cast<size_t>(t)].size;
}
std::string_view dtype_name(DType t) {
  return kDTypes[static_cast<size_t>(t)].name;
}

bool parse_dtype(std::string_view name, DType* out) {
  for (const auto& info : kDTypes) {
    if (info.name == name) {
      *out = info.type;
      return true;
    }
  }
  return false;
}

}  // namespace moe
