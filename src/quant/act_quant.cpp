#include "quant/act_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/codecs.h"
#include "core/error.h"
#include "quant/mxfp4.h"

namespace moe {

std::string_view act_quant_name(ActQuant q) {
  switch (q) {
    case ActQuant::None:
      return "none";
    case ActQuant::Fp8_1x128:
      return "fp8_1x128";
    case ActQuant::Mxfp4:
      return "mxfp4";
  }
  return "?";
}

bool parse_act_quant(std::string_view s, ActQuant* out) {
  for (ActQuant q : {ActQuant::None, ActQuant::Fp8_1x128, ActQuant::Mxfp4}) {
    if (act_quant_name(q) == s) {
      *out = q;
      return true;
    }
  }
  return false;
}

void quantize_fp8_1x128(const float* x, int64_t n, uint8_t* codes, float* scales) {
  for (int64_t g0 = 0, gi = 0; g0 < n; g0 += kFp8ActGroup, ++gi) {
    const int64_t g1 = std::min(n, g0 + kFp8ActGroup);
    float amax = 0;
    for (int64_t i = g0; i < g1; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float s = std::max(amax, 1e-10f) / 448.0f;
    scales[gi] = s;
    // fp32 division, as FORMATS.md section 3 specifies (a reciprocal multiply rounds some ties differently).
    for (int64_t i = g0; i < g1; ++i) codes[i] = f32_to_fp8e4m3(std::clamp(x[i] / s, -448.0f, 448.0f));
  }
}

void fake_quantize(ActQuant q, const float* x, int64_t n, float* out) {
  switch (q) {
    case ActQuant::None:
      if (out != x) std::memmove(out, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case ActQuant::Fp8_1x128:
      for (int64_t g0 = 0; g0 < n; g0 += kFp8ActGroup) {
        const int64_t g1 = std::min(n, g0 + kFp8ActGroup);
        float amax = 0;
        for (int64_t i = g0; i < g1; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float s = std::max(amax, 1e-10f) / 448.0f;
        for (int64_t i = g0; i < g1; ++i)
          out[i] = fp8e4m3_to_f32(f32_to_fp8e4m3(std::clamp(x[i] / s, -448.0f, 448.0f))) * s;
      }
      return;
    case ActQuant::Mxfp4:
      require(n % kMxfp4Group == 0, "mxfp4 activation quantisation needs a length divisible by 32, got ", n);
      for (int64_t g0 = 0; g0 < n; g0 += kMxfp4Group) {
        float amax = 0;
        for (int64_t i = g0; i < g0 + kMxfp4Group; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float scale = e8m0_to_f32(mxfp4_scale_code(amax));
        for (int64_t i = g0; i < g0 + kMxfp4Group; ++i)
          out[i] = e2m1_to_f32(f32_to_e2m1(std::clamp(x[i] / scale, -6.0f, 6.0f))) * scale;
      }
      return;
  }
}

}  // namespace moe
