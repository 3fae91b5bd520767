#pragma once
// Dynamic per-token activation quantisation (FORMATS.md section 3). The reference works on the dequantised
// values: fake_quantize returns what the kernels' quantised activations represent, in fp32.
#include <cstdint>
#include <string_view>

namespace moe {

enum class ActQuant : uint8_t { None, Fp8_1x128, Mxfp4 };

std::string_view act_quant_name(ActQuant q);
bool parse_act_quant(std::string_view s, ActQuant* out);

constexpr int64_t kFp8ActGroup = 128;

// Quantises then dequantises one token's n values (groups along n: 128 for fp8, 32 for mxfp4; the last fp8
// group may be shorter). ActQuant::None copies (the input is already bf16-valued).
void fake_quantize(ActQuant q, const float* x, int64_t n, float* out);

// fp8 1x128: e4m3 codes and one fp32 scale per group (ceil(n/128) scales).
void quantize_fp8_1x128(const float* x, int64_t n, uint8_t* codes, float* scales);

}  // namespace moe
