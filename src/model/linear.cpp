#include "model/linear.h"

#include <algorithm>

#include "core/codecs.h"
#include "core/error.h"
#include "core/parallel.h"
#include "quant/act_quant.h"
#include "quant/fp8_block.h"

namespace moe::model {

float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  for (; i < n; ++i) acc[i % 8] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

namespace {

// Activation quantisation of one row whose groups start `phase` into the grid: a shorter first group, then
// full ones (phase 0: the usual groups).
void quantize_row(ActQuant q, const float* x, int64_t n, int64_t phase, float* out) {
  const int64_t first = phase == 0 ? 0 : std::min(n, kFp8ActGroup - phase);
  if (first > 0) fake_quantize(q, x, first, out);
  if (n > first) fake_quantize(q, x + first, n - first, out + first);
}

}  // namespace

Linear Linear::slice_rows(int64_t begin, int64_t count) const {
  require(begin >= 0 && count > 0 && begin + count <= rows, "'", name, "': row slice [", begin, ", ",
          begin + count, ") outside ", rows, " rows");
  Linear s = *this;
  s.full_rows = full_rows ? full_rows : rows;
  s.full_cols = full_cols ? full_cols : cols;
  s.row_origin = row_origin + begin;
  s.rows = count;
  s.weight.assign(weight.begin() + begin * cols, weight.begin() + (begin + count) * cols);
  return s;
}

Linear Linear::slice_cols(int64_t begin, int64_t count) const {
  require(begin >= 0 && count > 0 && begin + count <= cols, "'", name, "': column slice [", begin, ", ",
          begin + count, ") outside ", cols, " columns");
  require(act_quant == ActQuant::None || act_quant == ActQuant::Fp8_1x128, "'", name,
          "': only fp8 1x128 activation groups can be split between ranks");
  Linear s = *this;
  s.full_rows = full_rows ? full_rows : rows;
  s.full_cols = full_cols ? full_cols : cols;
  s.col_origin = col_origin + begin;
  s.cols = count;
  s.act_group_phase = (act_group_phase + begin) % kFp8ActGroup;
  s.weight.resize(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(weight.begin() + r * cols + begin, count, s.weight.begin() + r * count);
  return s;
}

void Linear::forward(const float* x, int64_t M, float* y) const {
  std::vector<float> a;
  const bool quantise = act_quant != ActQuant::None;
  if (quantise) {
    a.resize(static_cast<size_t>(M * cols));
    for (int64_t t = 0; t < M; ++t)
      quantize_row(act_quant, x + t * cols, cols, act_group_phase, a.data() + t * cols);
  }
  const float* in = quantise ? a.data() : x;
  parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t t = 0; t < M; ++t)
      for (int64_t r = begin; r < end; ++r)
        y[t * rows + r] = dot(weight.data() + r * cols, in + t * cols, cols);
  });
}

namespace {

void widen(const TensorView& v, const std::string& name, float* out) {
  const int64_t n = v.numel();
  switch (v.dtype) {
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(v.as<uint16_t>()[i]);
      break;
    case DType::F32:
      for (int64_t i = 0; i < n; ++i) out[i] = v.as<float>()[i];
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        // IEEE half -> float.
        const uint16_t h = v.as<uint16_t>()[i];
        const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
        const int exp = (h >> 10) & 0x1f;
        const uint32_t man = h & 0x3ff;
        float f;
        if (exp == 0)
          f = static_cast<float>(man) * 5.9604645e-8f;  // subnormal: man * 2^-24
        else if (exp == 31)
          f = man ? NAN : INFINITY;
        else
          f = bits_float((static_cast<uint32_t>(exp + 112) << 23) | (man << 13));
        out[i] = sign ? -f : f;
      }
      break;
    default:
      fail_input("'", name, "': dtype ", dtype_name(v.dtype), " is not a float type (bf16, f16, f32)");
  }
}

}  // namespace

std::vector<float> load_vector(const TensorSource& src, const std::string& name, const Shape& shape) {
  const TensorView v = expect_tensor(src, name, {DType::BF16, DType::F16, DType::F32}, shape);
  std::vector<float> out(static_cast<size_t>(v.numel()));
  widen(v, name, out.data());
  return out;
}

Linear load_linear(const TensorSource& src, const HfModelConfig& cfg, const std::string& module, int64_t rows,
                   int64_t cols, StorageRule rule) {
  Linear l;
  l.name = module;
  l.rows = rows;
  l.cols = cols;
  const std::string wname = module + ".weight";
  const auto stored = src.get(wname);
  require_input(stored.has_value(), src.label(), ": missing tensor '", wname, "'");
  const bool fp8_config =
      cfg.quant.method == QuantizationConfig::Method::Fp8Block && !cfg.quant.is_excluded(module);
  bool fp8 = stored->dtype == DType::F8_E4M3;
  if (rule == StorageRule::FollowQuantConfig) {
    require_input(cfg.quant.method == QuantizationConfig::Method::None ||
                      cfg.quant.method == QuantizationConfig::Method::Fp8Block,
                  src.label(), ": '", wname,
                  "': only bf16 and fp8 block checkpoints are supported for non-expert linears");
    require_input(fp8 == fp8_config, src.label(), ": '", wname, "' is stored as ", dtype_name(stored->dtype),
                  " but quantization_config says it is ", fp8_config ? "fp8 (F8_E4M3)" : "not quantised",
                  " (see ignored_layers / modules_to_not_convert)");
  }
  l.weight.resize(static_cast<size_t>(rows * cols));
  if (fp8) {
    l.format = WeightFormat::Fp8Block;
    l.act_quant = ActQuant::Fp8_1x128;
    const TensorView w = expect_tensor(src, wname, {DType::F8_E4M3}, {rows, cols});
    const TensorView s = expect_tensor(src, module + ".weight_scale_inv", {DType::F32},
                                       {ceil_div(rows, kFp8BlockSize), ceil_div(cols, kFp8BlockSize)});
    dequantize_fp8_block_rows(w.as<uint8_t>(), s.as<float>(), cols, 0, rows, l.weight.data());
  } else {
    const TensorView w = expect_tensor(src, wname, {DType::BF16, DType::F16, DType::F32}, {rows, cols});
    widen(w, wname, l.weight.data());
  }
  return l;
}

}  // namespace moe::model
