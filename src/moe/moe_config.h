#pragma once
// The semantic knobs of one fused MoE call (FORMATS.md sections 4 and 5), independent of where weights live.
#include <cstdint>
#include <string>
#include <string_view>

#include "quant/act_quant.h"

namespace moe {

enum class WeightFormat : uint8_t { Bf16, Fp8Block, Mxfp4 };
enum class WeightLayout : uint8_t { Hf, GptOss };
enum class Activation : uint8_t { Silu, SwigluOai };
enum class RouterKind : uint8_t { SoftmaxTopk, TopkSoftmax, SigmoidGrouped };

std::string_view format_name(WeightFormat f);
std::string_view layout_name(WeightLayout l);
std::string_view activation_name(Activation a);
std::string_view router_name(RouterKind r);
bool parse_format(std::string_view s, WeightFormat* out);
bool parse_layout(std::string_view s, WeightLayout* out);
bool parse_activation(std::string_view s, Activation* out);
bool parse_router(std::string_view s, RouterKind* out);

struct RouterConfig {
  RouterKind kind = RouterKind::SoftmaxTopk;
  int top_k = 8;
  bool renormalize = true;
  int n_group = 1;     // sigmoid_grouped only
  int topk_group = 1;  // sigmoid_grouped only
  float routed_scaling_factor = 1.0f;
};

struct MoeConfig {
  WeightFormat format = WeightFormat::Bf16;
  WeightLayout layout = WeightLayout::Hf;
  Activation activation = Activation::Silu;
  ActQuant act_quant = ActQuant::None;
  RouterConfig router;
  float swiglu_alpha = 1.702f;
  float swiglu_limit = 7.0f;
};

std::string describe(const MoeConfig& c);

}  // namespace moe
