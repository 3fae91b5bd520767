// Tensor maps through cudaGetDriverEntryPointByVersion (see tensor_map.h).
#include "cuda/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "cuda/cuda_check.h"

namespace moe::cuda {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    MOE_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    require(found == cudaDriverEntryPointSuccess && p != nullptr,
            "cuTensorMapEncodeTiled is not available from the driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

CUtensorMap swizzled_row_tile_map(const void* base, int elem_bytes, int64_t cols, int64_t rows,
                                  int box_rows) {
  require(elem_bytes == 1 || elem_bytes == 2, "tensor map: elements of ", elem_bytes, " bytes");
  require(cols * elem_bytes % 16 == 0, "tensor map: a row of ", cols * elem_bytes,
          " bytes is not a multiple of 16");
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols * elem_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(128 / elem_bytes), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode_tiled()(
      &map, elem_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 2,
      const_cast<void*>(base), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  require(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed (", static_cast<int>(r), ") for ", rows, " x ",
          cols, " elements of ", elem_bytes, " bytes");
  return map;
}

bool gate_up_tile_map(CUtensorMap* map, const void* w13, int64_t k_bytes, int experts, int inter,
                      int group_rows, int groups) {
  require(k_bytes % 16 == 0, "tensor map: a row of ", k_bytes, " bytes is not a multiple of 16");
  require(inter % group_rows == 0, "tensor map: ", inter, " outputs are not whole groups of ", group_rows);
  *map = CUtensorMap{};
  const auto u64 = [](int64_t v) { return static_cast<cuuint64_t>(v); };
  // Dimensions innermost first; the strides (bytes) need not grow outwards: a group's rows are K apart, the
  // up rows inter rows after the gate rows, the groups group_rows rows apart, the experts 2 x inter rows.
  const cuuint64_t dims[5] = {u64(k_bytes), u64(group_rows), 2, u64(inter / group_rows), u64(experts)};
  const cuuint64_t strides[4] = {u64(k_bytes), u64(inter) * u64(k_bytes), u64(group_rows) * u64(k_bytes),
                                 2 * u64(inter) * u64(k_bytes)};
  const cuuint32_t box[5] = {128, static_cast<cuuint32_t>(group_rows), 2, static_cast<cuuint32_t>(groups), 1};
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  return encode_tiled()(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 5, const_cast<void*>(w13), dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace moe::cuda
