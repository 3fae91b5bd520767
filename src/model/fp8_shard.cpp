#include "model/fp8_shard.h"

#include <algorithm>

#include "core/error.h"

namespace moe::model {

Fp8Shard slice_fp8_block(const std::string& name, const uint8_t* codes, const float* scales, int64_t R,
                         int64_t C, int64_t row_origin, int64_t rows, int64_t col_origin, int64_t cols,
                         bool per_row_scales) {
  constexpr int64_t kBlock = 128;
  require_input(row_origin >= 0 && rows > 0 && row_origin + rows <= R && col_origin >= 0 && cols > 0 &&
                    col_origin + cols <= C,
                "'", name, "': shard rows [", row_origin, ", ", row_origin + rows, ") x columns [",
                col_origin, ", ", col_origin + cols, ") outside [", R, ", ", C, "]");
  require_input(col_origin % kBlock == 0, "'", name, "': a shard starting at column ", col_origin,
                " cuts a 128-column scale block (the GPU backend needs shards on the block grid)");
  require_input(per_row_scales || row_origin % kBlock == 0, "'", name, "': a shard starting at row ",
                row_origin, " needs one scale per row");
  Fp8Shard s;
  s.codes.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(codes + (row_origin + r) * C + col_origin, cols, s.codes.begin() + r * cols);
  const int64_t full_scale_cols = (C + kBlock - 1) / kBlock, first_scale_col = col_origin / kBlock;
  s.scale_cols = (cols + kBlock - 1) / kBlock;
  const int64_t scale_rows = per_row_scales ? rows : (rows + kBlock - 1) / kBlock;
  s.scales.resize(static_cast<size_t>(scale_rows * s.scale_cols));
  for (int64_t i = 0; i < scale_rows; ++i) {
    const int64_t block_row = per_row_scales ? (row_origin + i) / kBlock : row_origin / kBlock + i;
    std::copy_n(scales + block_row * full_scale_cols + first_scale_col, s.scale_cols,
                s.scales.begin() + i * s.scale_cols);
  }
  return s;
}

}  // namespace moe::model
