#include "moe/moe_config.h"

#include <array>
#include <utility>

#include "core/error.h"

namespace moe {
namespace {

template <typename E, size_t N>
bool parse_enum(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view s, E* out) {
  for (const auto& [value, name] : names) {
    if (name == s) {
      *out = value;
      return true;
    }
  }
  return false;
}

template <typename E, size_t N>
std::string_view enum_name(const std::array<std::pair<E, std::string_view>, N>& names, E v) {
  for (const auto& [value, name] : names)
    if (value == v) return name;
  return "?";
}

constexpr std::array<std::pair<WeightFormat, std::string_view>, 3> kFormats = {
    {{WeightFormat::Bf16, "bf16"}, {WeightFormat::Fp8Block, "fp8_block"}, {WeightFormat::Mxfp4, "mxfp4"}}};
constexpr std::array<std::pair<WeightLayout, std::string_view>, 2> kLayouts = {
    {{WeightLayout::Hf, "hf"}, {WeightLayout::GptOss, "gpt_oss"}}};
constexpr std::array<std::pair<Activation, std::string_view>, 2> kActivations = {
    {{Activation::Silu, "silu"}, {Activation::SwigluOai, "swiglu_oai"}}};
constexpr std::array<std::pair<RouterKind, std::string_view>, 3> kRouters = {
    {{RouterKind::SoftmaxTopk, "softmax_topk"},
     {RouterKind::TopkSoftmax, "topk_softmax"},
     {RouterKind::SigmoidGrouped, "sigmoid_grouped"}}};
}  // namespace

std::string_view format_name(WeightFormat f) {
  return enum_name(kFormats, f);
}
std::string_view layout_name(WeightLayout l) {
  return enum_name(kLayouts, l);
}
std::string_view activation_name(Activation a) {
  return enum_name(kActivations, a);
}
std::string_view router_name(RouterKind r) {
  return enum_name(kRouters, r);
}
bool parse_format(std::string_view s, WeightFormat* out) {
  return parse_enum(kFormats, s, out);
}
bool parse_layout(std::string_view s, WeightLayout* out) {
  return parse_enum(kLayouts, s, out);
}
bool parse_activation(std::string_view s, Activation* out) {
  return parse_enum(kActivations, s, out);
}
bool parse_router(std::string_view s, RouterKind* out) {
  return parse_enum(kRouters, s, out);
}

std::string describe(const MoeConfig& c) {
  return str("format=", format_name(c.format), " layout=", layout_name(c.layout),
             " activation=", activation_name(c.activation), " act_quant=", act_quant_name(c.act_quant),
             " router=", router_name(c.router.kind), " top_k=", c.router.top_k,
             " renormalize=", c.router.renormalize);
}

}  // namespace moe
