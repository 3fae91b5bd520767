#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace moe::model {
namespace {

using json = nlohmann::json;

double number_or(const json& j, const char* key, double dflt) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : dflt;
}

// YaRN (transformers' _compute_yarn_parameters): blend interpolated and extrapolated frequencies with a
// linear ramp between the correction dims of beta_fast and beta_slow; scale cos/sin by the attention factor.
void yarn(const HfModelConfig& cfg, int64_t dim, std::vector<float>& inv_freq, float& attention_scaling) {
  const json& rs = cfg.rope_scaling;
  const double base = cfg.rope_theta;
  const double factor = number_or(rs, "factor", 1.0);
  const double original_max =
      number_or(rs, "original_max_position_embeddings", static_cast<double>(cfg.max_position_embeddings));
  auto get_mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
  double attention_factor = number_or(rs, "attention_factor", -1);
  if (attention_factor < 0) {
    const double mscale = number_or(rs, "mscale", 0), mscale_all_dim = number_or(rs, "mscale_all_dim", 0);
    attention_factor = (mscale != 0 && mscale_all_dim != 0)
                           ? get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
                           : get_mscale(factor, 1.0);
  }
  const double beta_fast = number_or(rs, "beta_fast", 32), beta_slow = number_or(rs, "beta_slow", 1);
  const bool truncate =
      !(rs.contains("truncate") && rs["truncate"].is_boolean() && !rs["truncate"].get<bool>());
  auto correction_dim = [&](double rotations) {
    return (static_cast<double>(dim) * std::log(original_max / (rotations * 2 * M_PI))) /
           (2 * std::log(base));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float pos_freq =
        std::pow(static_cast<float>(base), static_cast<float>(2 * i) / static_cast<float>(dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (static_cast<float>(factor) * pos_freq);
    const float ramp =
        std::clamp(static_cast<float>((static_cast<double>(i) - low) / (high - low)), 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    inv_freq[static_cast<size_t>(i)] =
        interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  attention_scaling = static_cast<float>(attention_factor);
}

}  // namespace

Rope::Rope(const HfModelConfig& cfg, int64_t head_dim) : head_dim_(head_dim) {
  inv_freq_.resize(static_cast<size_t>(head_dim / 2));
  // HF: 1 / base ** (arange(0, dim, 2).float() / dim), all in fp32.
  for (int64_t i = 0; i < head_dim / 2; ++i)
    inv_freq_[static_cast<size_t>(i)] =
        1.0f / std::pow(static_cast<float>(cfg.rope_theta),
                        static_cast<float>(2 * i) / static_cast<float>(head_dim));
  if (cfg.rope_scaling.is_null()) return;
  const json& rs = cfg.rope_scaling;
  std::string type = "default";
  if (rs.contains("rope_type") && rs["rope_type"].is_string())
    type = rs["rope_type"].get<std::string>();
  else if (rs.contains("type") && rs["type"].is_string())
    type = rs["type"].get<std::string>();
  if (type == "default") return;
  if (type == "linear") {
    const float factor = static_cast<float>(number_or(rs, "factor", 1.0));
    for (float& f : inv_freq_) f /= factor;
  } else if (type == "yarn") {
    yarn(cfg, head_dim, inv_freq_, attention_scaling_);
  } else {
    fail_input("config.json: rope_scaling type '", type, "' is not supported (default, linear, yarn)");
  }
}

void Rope::apply(float* x, int64_t heads, int64_t pos) const {
  const int64_t half = head_dim_ / 2;
  for (int64_t i = 0; i < half; ++i) {
    // HF: freqs = inv_freq (fp32) * position (fp32); cos/sin in fp32, times attention_scaling.
    const float angle = inv_freq_[static_cast<size_t>(i)] * static_cast<float>(pos);
    const float c = std::cos(angle) * attention_scaling_, s = std::sin(angle) * attention_scaling_;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + h * head_dim_;
      const float a = v[i], b = v[i + half];
      v[i] = a * c - b * s;
      v[i + half] = b * c + a * s;
    }
  }
}

}  // namespace moe::model
