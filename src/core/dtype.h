#pragma once
// Element types as safetensors names them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moe {

enum class DType : uint8_t { F64, F32, F16, BF16, F8_E4M3, I64, I32, I16, I8, U8, BOOL };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses a safetensors dtype string; returns false for names we do not know.
bool parse_dtype(std::string_view name, DType* out);

}  // namespace moe
