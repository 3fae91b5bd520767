// The logit processing and the stop-string filter, directly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "engine_fixture.h"
#include "serve/engine/stop_text.h"
#include "serve/engine/token_sampler.h"

namespace moe::serve {
namespace {

std::vector<float> random_logits(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 2.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(EngineSampling, RepetitionPenaltyFollowsHf) {
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, -1.0f, 0.5f};
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  TokenHistory h;
  h.add_prompt({0, 1}, 5);
  h.add_generated(3, 5);
  apply_penalties(p, h, logits.data(), 5);
  // Positive logits are divided, negative multiplied; tokens never seen are untouched.
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[1], -4.0f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f);
  EXPECT_FLOAT_EQ(logits[3], -2.0f);
  EXPECT_FLOAT_EQ(logits[4], 0.5f);
}

TEST(EngineSampling, FrequencyAndPresenceFollowOpenAi) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  TokenHistory h;
  h.add_prompt({0, 0, 0}, 4);  // prompt tokens do not count for OpenAI's penalties
  h.add_generated(1, 4);
  h.add_generated(2, 4);
  h.add_generated(2, 4);
  h.add_generated(2, 4);
  apply_penalties(p, h, logits.data(), 4);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[1], 1.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f - 1.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[3], 1.0f);
}

TEST(EngineSampling, PenaltiesShiftTheDrawnDistribution) {
  // Token 0 dominates; a strong presence penalty after it was generated moves the draws elsewhere.
  std::vector<float> base = {3.0f, 2.0f, 1.0f, 0.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  TokenHistory h;
  h.add_prompt({}, 4);
  h.add_generated(0, 4);
  auto count0 = [&](const SamplingParams& sp) {
    SplitMix64 rng(5);
    int c = 0;
    for (int i = 0; i < 2000; ++i) {
      std::vector<float> l = base;
      apply_penalties(sp, h, l.data(), 4);
      c += sample_token(sp, l.data(), 4, rng) == 0;
    }
    return c;
  };
  const int plain = count0(p);
  p.presence_penalty = 2.0f;
  const int penalised = count0(p);
  EXPECT_GT(plain, 1100);     // softmax(3,2,1,0)[0] = 0.64
  EXPECT_LT(penalised, 500);  // softmax(1,2,1,0)[0] = 0.20
}

TEST(EngineSampling, GreedyTiesGoToTheLowerId) {
  std::vector<float> l = {0.f, 5.f, 1.f, 5.f};
  SamplingParams p;
  p.temperature = 0;
  SplitMix64 rng(1);
  EXPECT_EQ(sample_token(p, l.data(), 4, rng), 1);
}

TEST(EngineSampling, TopKTopPMinPRestrictTheSupport) {
  const std::vector<float> l = random_logits(64, 3);
  std::vector<int32_t> order(64);
  for (int i = 0; i < 64; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)]; });
  auto support = [&](const SamplingParams& p) {
    SplitMix64 rng(9);
    std::set<int32_t> s;
    for (int i = 0; i < 4000; ++i) s.insert(sample_token(p, l.data(), 64, rng));
    return s;
  };
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 3;
  EXPECT_EQ(support(p), (std::set<int32_t>{order[0], order[1], order[2]}));
  p.top_k = 0;
  // top_p: the smallest prefix whose probability reaches top_p.
  std::vector<double> prob(64);
  double sum = 0;
  for (int i = 0; i < 64; ++i)
    sum += (prob[static_cast<size_t>(i)] = std::exp(l[static_cast<size_t>(order[static_cast<size_t>(i)])] -
                                                    l[static_cast<size_t>(order[0])]));
  double acc = 0;
  size_t keep = 0;
  while (acc < 0.5 * sum) acc += prob[keep++];
  p.top_p = 0.5f;
  const auto sp = support(p);
  EXPECT_EQ(sp.size(), keep);
  for (size_t i = 0; i < keep; ++i) EXPECT_TRUE(sp.count(order[i]));
  p.top_p = 1.0f;
  p.min_p = 0.3f;
  for (const int32_t id : support(p))
    EXPECT_GE(std::exp(l[static_cast<size_t>(id)] - l[static_cast<size_t>(order[0])]), 0.3 - 1e-6);
}

TEST(EngineSampling, SeededStreamsRepeat) {
  const std::vector<float> l = random_logits(100, 4);
  SamplingParams p;
  p.temperature = 0.8f;
  auto draw = [&](uint64_t seed) {
    SplitMix64 rng(seed);
    std::vector<int32_t> v;
    for (int i = 0; i < 32; ++i) v.push_back(sample_token(p, l.data(), 100, rng));
    return v;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(EngineSampling, LogprobIsLogSoftmaxOfRawLogits) {
  const std::vector<float> l = random_logits(50, 5);
  double lse = 0;
  for (const float x : l) lse += std::exp(static_cast<double>(x));
  lse = std::log(lse);
  const TokenLogprob t = token_logprob(l.data(), 50, 7, 5);
  ASSERT_TRUE(t.logprob.has_value());
  EXPECT_NEAR(*t.logprob, l[7] - lse, 1e-5);
  ASSERT_EQ(t.top.size(), 5u);
  for (size_t i = 1; i < 5; ++i) EXPECT_GE(t.top[i - 1].second, t.top[i].second);
  EXPECT_EQ(t.top[0].first, model::argmax(l.data(), 50));
}

TEST(EngineStopText, SuffixThatStartsAStopString) {
  EXPECT_EQ(stop_prefix_suffix("hello wor", {"world"}), 3u);
  EXPECT_EQ(stop_prefix_suffix("hello", {"xyz"}), 0u);
  EXPECT_EQ(stop_prefix_suffix("aab", {"abc", "bq"}), 2u);
}

TEST(EngineStopText, StopStringSplitOverTokensIsCutAndNeverLeaks) {
  const tok::Tokenizer t = tok::Tokenizer::from_model_dir(test::tiny_model_dir());
  const std::string text = "the cat sat on the mat. hello world, hello there!";
  const std::vector<int32_t> ids = t.encode(text);
  // Byte tokens make every split possible: encode character by character to force "sat on" over several.
  for (const std::string stop : {"sat on", "t. h", "!", "there!"}) {
    StopTextFilter f(t, true, {stop, "never appears"});
    std::string out;
    for (const int32_t id : ids) {
      out += f.push(id);
      // Released text never contains the stop string, nor its first character(s) beyond what precedes it.
      ASSERT_EQ(out.find(stop), std::string::npos);
      if (f.stopped()) break;
    }
    EXPECT_TRUE(f.stopped()) << stop;
    EXPECT_EQ(out, text.substr(0, text.find(stop))) << stop;
  }
  StopTextFilter none(t, true, {"zzz"});
  std::string out;
  for (const int32_t id : ids) out += none.push(id);
  out += none.finish();
  EXPECT_FALSE(none.stopped());
  EXPECT_EQ(out, text);
}

}  // namespace
}  // namespace moe::serve
