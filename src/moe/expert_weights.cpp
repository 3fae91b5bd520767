#include "moe/expert_weights.h"

#include "core/codecs.h"
#include "core/error.h"
#include "quant/fp8_block.h"
#include "quant/mxfp4.h"

namespace moe {

std::vector<const void*> split_experts(const void* base, int64_t experts, int64_t bytes_per_expert) {
  std::vector<const void*> out(static_cast<size_t>(experts));
  for (int64_t e = 0; e < experts; ++e)
    out[static_cast<size_t>(e)] = static_cast<const uint8_t*>(base) + e * bytes_per_expert;
  return out;
}

int64_t ExpertLinear::row_bytes() const {
  switch (format) {
    case WeightFormat::Bf16:
      return cols * 2;
    case WeightFormat::Fp8Block:
      return cols;
    case WeightFormat::Mxfp4:
      return cols / 2;
  }
  return 0;
}

const uint8_t* ExpertLinear::row(int64_t expert, int64_t r) const {
  return static_cast<const uint8_t*>(weights[static_cast<size_t>(expert)]) + stored_row(r) * row_bytes();
}

const float* ExpertLinear::fp8_scale_row(int64_t expert, int64_t block_row) const {
  return static_cast<const float*>(scales[static_cast<size_t>(expert)]) +
         (scale_row_offset + block_row) * scale_cols;
}

const uint8_t* ExpertLinear::mxfp4_scale_row(int64_t expert, int64_t r) const {
  return static_cast<const uint8_t*>(scales[static_cast<size_t>(expert)]) + stored_row(r) * scale_cols;
}

void ExpertLinear::dequantize(int64_t expert, float* out) const {
  require(expert >= 0 && expert < experts, "expert ", expert, " out of range [0, ", experts, ")");
  for (int64_t r = 0; r < rows; ++r) {
    float* orow = out + r * cols;
    const uint8_t* w = row(expert, r);
    switch (format) {
      case WeightFormat::Bf16: {
        const auto* b = reinterpret_cast<const uint16_t*>(w);
        for (int64_t c = 0; c < cols; ++c) orow[c] = bf16_to_f32(b[c]);
        break;
      }
      case WeightFormat::Fp8Block: {
        const float* srow = fp8_scale_row(expert, (r + row_phase) / kFp8BlockSize);
        for (int64_t c = 0; c < cols; ++c)
          orow[c] = fp8e4m3_to_f32(w[c]) * srow[(c + col_phase) / kFp8BlockSize];
        break;
      }
      case WeightFormat::Mxfp4:
        dequantize_mxfp4_rows(w, mxfp4_scale_row(expert, r), cols, 0, 1, orow);
        break;
    }
  }
}

}  // namespace moe
