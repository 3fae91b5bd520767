// The CPU reference (FORMATS.md section 4) against tiny cases whose expected numbers are worked out here with
// explicit arithmetic: identity-like weight rows make every dot product a sum of one or two known inputs.
#include "moe/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/codecs.h"
#include "moe/case_file.h"
#include "moe/case_gen.h"

namespace moe {
namespace {

constexpr int64_t H = 128, I = 2, E = 2;

// Owns dense per-expert matrices in a chosen format and exposes them as ExpertLinear views.
struct Store {
  std::vector<std::shared_ptr<std::vector<uint8_t>>> bufs;
  // rows x cols fp32 values (exactly representable in the format) -> ExpertLinear with one matrix per expert.
  ExpertLinear make(WeightFormat f, const std::vector<std::vector<float>>& per_expert, int64_t rows,
                    int64_t cols, float fp8_scale) {
    ExpertLinear l;
    l.format = f;
    l.experts = static_cast<int64_t>(per_expert.size());
    l.rows = rows;
    l.cols = cols;
    for (const auto& m : per_expert) {
      if (f == WeightFormat::Bf16) {
        auto b = std::make_shared<std::vector<uint8_t>>(rows * cols * 2);
        auto* p = reinterpret_cast<uint16_t*>(b->data());
        for (int64_t i = 0; i < rows * cols; ++i) p[i] = f32_to_bf16(m[i]);
        bufs.push_back(b);
        l.weights.push_back(b->data());
      } else {
        // fp8: a single scale block per matrix (rows, cols <= 128), every value exact as e4m3 * scale.
        auto b = std::make_shared<std::vector<uint8_t>>(rows * cols);
        for (int64_t i = 0; i < rows * cols; ++i) {
          (*b)[i] = f32_to_fp8e4m3(m[i] / fp8_scale);
          EXPECT_EQ(fp8e4m3_to_f32((*b)[i]) * fp8_scale, m[i]) << "test data must be exact";
        }
        auto s = std::make_shared<std::vector<uint8_t>>(4);
        std::memcpy(s->data(), &fp8_scale, 4);
        bufs.push_back(b);
        bufs.push_back(s);
        l.weights.push_back(b->data());
        l.scales.push_back(s->data());
        l.scale_cols = 1;
      }
    }
    return l;
  }
};

// x: x[0] = x0, x[1] = -2, x[2] = 0.5, the rest powers of two whose magnitudes never exceed 2.
std::vector<float> make_x(float x0) {
  std::vector<float> x(H);
  for (int64_t k = 0; k < H; ++k) x[k] = std::ldexp(k % 2 ? -1.0f : 1.0f, -static_cast<int>(k % 5));
  x[0] = x0;
  x[1] = -2.0f;
  x[2] = 0.5f;
  return x;
}

// Expert e: gate rows e_0 and e_1 + e_2, up rows 2 e_0 and e_2, down row o = sign_e * [a_o, b_o].
double a_of(int64_t o) {
  return 0.25 * static_cast<double>(o % 3);
}
double b_of(int64_t o) {
  return 1.0 - 0.5 * static_cast<double>(o % 5);
}

struct Built {
  Store store;
  MoeWeights w;
};

std::unique_ptr<Built> build(WeightFormat f) {
  auto b = std::make_unique<Built>();
  std::vector<float> gate(I * H, 0.0f), up(I * H, 0.0f);
  gate[0 * H + 0] = 1;
  gate[1 * H + 1] = 1;
  gate[1 * H + 2] = 1;
  up[0 * H + 0] = 2;
  up[1 * H + 2] = 1;
  std::vector<float> down0(H * I), down1(H * I);
  for (int64_t o = 0; o < H; ++o) {
    down0[o * I + 0] = static_cast<float>(a_of(o));
    down0[o * I + 1] = static_cast<float>(b_of(o));
    down1[o * I + 0] = -down0[o * I + 0];
    down1[o * I + 1] = -down0[o * I + 1];
  }
  b->w.num_experts = E;
  b->w.hidden = H;
  b->w.inter = I;
  b->w.gate = b->store.make(f, {gate, gate}, I, H, 0.0078125f);
  b->w.up = b->store.make(f, {up, up}, I, H, 0.015625f);
  b->w.down = b->store.make(f, {down0, down1}, H, I, 0.0078125f);
  return b;
}

// Router: softmax over [0, ln 3] is [1/4, 3/4]; top-2 without renormalisation; expert 1 = -expert 0, so
// out = (1/4 - 3/4) y = -y / 2.
MoeConfig hand_config(Activation act, ActQuant q) {
  MoeConfig c;
  c.activation = act;
  c.act_quant = q;
  c.router.kind = RouterKind::SoftmaxTopk;
  c.router.top_k = 2;
  c.router.renormalize = false;
  return c;
}
const float kLogits[2] = {0.0f, 1.0986123f};  // ln 3

double silu_by_hand(double g, double u) {
  return g / (1.0 + std::exp(-g)) * u;
}
double swiglu_by_hand(double g, double u) {
  g = std::min(g, 7.0);
  u = std::max(-7.0, std::min(u, 7.0));
  return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

void expect_hand_output(WeightFormat f, Activation act, float x0) {
  auto b = build(f);
  const MoeConfig cfg = hand_config(act, ActQuant::None);
  const std::vector<float> x = make_x(x0);
  std::vector<float> out(H, std::nanf(""));
  reference_moe(cfg, b->w, x.data(), kLogits, 1, out.data());
  // g = [x0, -2 + 0.5], u = [2 x0, 0.5]
  auto fn = act == Activation::Silu ? silu_by_hand : swiglu_by_hand;
  const double h0 = round_bf16(static_cast<float>(fn(x0, 2.0 * x0)));
  const double h1 = round_bf16(static_cast<float>(fn(-1.5, 0.5)));
  const double p0 = 0.25, p1 = 0.75;
  for (int64_t o = 0; o < H; ++o) {
    const double y = a_of(o) * h0 + b_of(o) * h1;
    const double want = p0 * y - p1 * y;
    ASSERT_NEAR(out[o], want, 2e-6 * (1 + std::fabs(want))) << "row " << o;
  }
}

TEST(ReferenceByHand, Bf16Silu) {
  expect_hand_output(WeightFormat::Bf16, Activation::Silu, 1.0f);
}
TEST(ReferenceByHand, Fp8BlockSilu) {
  expect_hand_output(WeightFormat::Fp8Block, Activation::Silu, 1.0f);
}
TEST(ReferenceByHand, SwigluOaiClampsGateAndUp) {
  // x0 = 10: g = 10 is clamped to 7 from above, u = 20 to 7. The second row (g = -1.5) is not clamped.
  expect_hand_output(WeightFormat::Bf16, Activation::SwigluOai, 10.0f);
  expect_hand_output(WeightFormat::Bf16, Activation::SwigluOai, -10.0f);  // u = -20 clamps to -7, g stays -10
}

TEST(ReferenceByHand, SwigluOaiActivationValues) {
  MoeConfig c;
  c.activation = Activation::SwigluOai;
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  EXPECT_NEAR(activation_fn(c, 10, 10), 7 * sig(1.702 * 7) * 8, 1e-5);
  EXPECT_NEAR(activation_fn(c, 10, -10), 7 * sig(1.702 * 7) * -6, 1e-5);
  EXPECT_NEAR(activation_fn(c, -10, 3), -10 * sig(-17.02) * 4, 1e-9);
  EXPECT_NEAR(activation_fn(c, 1, 0.5), sig(1.702) * 1.5, 1e-6);
  c.activation = Activation::Silu;
  EXPECT_NEAR(activation_fn(c, 10, 10), 10 * sig(10) * 10, 1e-4) << "silu has no clamp";
}

TEST(ReferenceByHand, Fp8ActivationQuantisation) {
  // Every x is a power of two with amax 2: lossless in fp8 1x128 (x / (2/448) is 224 * 2^-j). h = [h0, h1] is
  // one short group: its amax maps to 448 and the other value to the nearest e4m3 step.
  auto b = build(WeightFormat::Fp8Block);
  const MoeConfig cfg = hand_config(Activation::Silu, ActQuant::Fp8_1x128);
  const std::vector<float> x = make_x(1.0f);
  std::vector<float> out(H, std::nanf(""));
  reference_moe(cfg, b->w, x.data(), kLogits, 1, out.data());
  const float h0 = round_bf16(static_cast<float>(silu_by_hand(1.0, 2.0)));
  const float h1 = round_bf16(static_cast<float>(silu_by_hand(-1.5, 0.5)));
  const float s = std::max(std::fabs(h0), std::fabs(h1)) / 448.0f;
  const double q0 = fp8e4m3_to_f32(f32_to_fp8e4m3(h0 / s)) * s,
               q1 = fp8e4m3_to_f32(f32_to_fp8e4m3(h1 / s)) * s;
  EXPECT_NE(q1, h1) << "the example should exercise rounding";
  for (int64_t o = 0; o < H; ++o) {
    const double want = -0.5 * (a_of(o) * q0 + b_of(o) * q1);
    ASSERT_NEAR(out[o], want, 2e-6 * (1 + std::fabs(want))) << "row " << o;
  }
}

TEST(ReferenceByHand, SharedExpertWithAndWithoutGate) {
  for (bool gated : {true, false}) {
    auto b = build(WeightFormat::Bf16);
    // Shared expert = expert 0's matrices; Qwen's sigmoid gate reads x[0] / 2 + x[3] (= 0.5 + -0.125).
    SharedExpertWeights sh;
    sh.gate = b->w.gate;
    sh.up = b->w.up;
    sh.down = b->w.down;
    sh.gate.experts = sh.up.experts = sh.down.experts = 1;
    if (gated) {
      sh.gate_weight.assign(H, 0.0f);
      sh.gate_weight[0] = 0.5f;
      sh.gate_weight[3] = 1.0f;
    }
    b->w.shared = sh;
    const MoeConfig cfg = hand_config(Activation::Silu, ActQuant::None);
    const std::vector<float> x = make_x(1.0f);
    ASSERT_EQ(x[3], -0.125f);
    std::vector<float> out(H, std::nanf(""));
    reference_moe(cfg, b->w, x.data(), kLogits, 1, out.data());
    const double h0 = round_bf16(static_cast<float>(silu_by_hand(1.0, 2.0)));
    const double h1 = round_bf16(static_cast<float>(silu_by_hand(-1.5, 0.5)));
    const double gate = gated ? 1.0 / (1.0 + std::exp(-(0.5 - 0.125))) : 1.0;
    for (int64_t o = 0; o < H; ++o) {
      const double y = a_of(o) * h0 + b_of(o) * h1;
      const double want = -0.5 * y + gate * y;
      ASSERT_NEAR(out[o], want, 2e-6 * (1 + std::fabs(want)))
          << (gated ? "gated" : "ungated") << " row " << o;
    }
  }
}

// Same inputs, same bits: across runs, thread counts and --poison.
TEST(ReferenceDeterminism, SameBitsAcrossRunsAndThreads) {
  for (WeightFormat f : {WeightFormat::Fp8Block, WeightFormat::Mxfp4}) {
    CaseSpec spec;
    spec.config.format = f;
    spec.config.act_quant = f == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128 : ActQuant::Mxfp4;
    spec.config.router.top_k = 4;
    spec.M = 33, spec.E = 16, spec.H = 256, spec.I = 384, spec.shared_inter = 128, spec.seed = 5;
    spec.compute_expected = false;
    const GeneratedCase g = generate_case(spec);
    MemorySource src(g.tensors);
    const MoeCase c = build_case(g.metadata, src);
    std::vector<std::vector<float>> outs;
    for (const char* threads : {"2", "1", "2", "7"}) {
      setenv("MOE_THREADS", threads, 1);
      // Output buffers start as NaN or as garbage: the result must not depend on them.
      outs.emplace_back(static_cast<size_t>(c.M * c.weights.hidden), outs.size() % 2 ? std::nanf("") : 1e30f);
      reference_moe(c.config, c.weights, c.x.as<float>(), c.router_logits.as<float>(), c.M,
                    outs.back().data());
    }
    unsetenv("MOE_THREADS");
    for (size_t i = 1; i < outs.size(); ++i)
      EXPECT_EQ(std::memcmp(outs[0].data(), outs[i].data(), outs[0].size() * 4), 0)
          << format_name(f) << " run " << i;
    double norm = 0;
    for (float v : outs[0]) norm += std::fabs(v);
    EXPECT_GT(norm, 0.0);
  }
}

}  // namespace
}  // namespace moe
