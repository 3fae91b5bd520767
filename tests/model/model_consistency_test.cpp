// The consistency the split-K failure broke (BACKGROUND.md section 1): the last token's logits from one full
// prefill, from a prefill of all but one token plus one decode step, and from a prefix-cache hit that reuses
// the KV pages of all but one token and computes only the last, agree at batch 1, 2 and 8 (sequences of
// different lengths decoded together), for bf16 and fp8 block-scale checkpoints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "model/gen_model.h"
#include "model/runner.h"

namespace moe::model {
namespace {

std::string make_model(WeightFormat f) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           (std::string("moe_model_test_") + (f == WeightFormat::Bf16 ? "bf16" : "fp8") +
                            std::to_string(getpid())))
                              .string();
  GenModelSpec s = gen_model_shape("tiny");
  s.format = f;
  s.seed = 3;
  write_random_model(dir, s, false);
  return dir;
}

double rel_l2(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

class model_consistency : public ::testing::TestWithParam<std::tuple<WeightFormat, int>> {};

TEST_P(model_consistency, PrefillDecodeAndPrefixCacheAgree) {
  const auto [format, batch] = GetParam();
  static std::map<WeightFormat, std::string> dirs;
  if (!dirs.count(format)) dirs[format] = make_model(format);
  BackendOptions opts;
  opts.page_size = 4;  // small pages: sequences span several, forks split a page
  opts.num_pages = 512;
  ModelRunner runner(open_model_backend(dirs[format], "cpu", opts));
  const int64_t V = runner.spec().vocab;
  std::mt19937 rng(static_cast<unsigned>(batch) * 7 + 1);
  std::vector<std::vector<int32_t>> prompts;
  for (int b = 0; b < batch; ++b) {
    std::vector<int32_t> p(static_cast<size_t>(3 + 5 * b + (b % 3)));  // 3 .. 40 tokens, different lengths
    for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<unsigned>(V));
    prompts.push_back(p);
  }

  // (a) full prefill, all sequences in one step.
  std::vector<StepInput> full;
  for (const auto& p : prompts) full.push_back({runner.add_sequence(), p, false});
  const std::vector<float> a = runner.step(full);

  // (b) prefill all but one token, then (c) fork each prefix (shared pages) and decode the last token of both
  // in one batch of 2 * batch sequences.
  std::vector<StepInput> prefix, decode;
  for (const auto& p : prompts) prefix.push_back({runner.add_sequence(), {p.begin(), p.end() - 1}, false});
  runner.step(prefix);
  std::vector<SeqId> forks;
  for (size_t b = 0; b < prompts.size(); ++b)
    forks.push_back(runner.fork_sequence(prefix[b].seq, static_cast<int64_t>(prompts[b].size()) - 1));
  for (size_t b = 0; b < prompts.size(); ++b) decode.push_back({prefix[b].seq, {prompts[b].back()}, false});
  for (size_t b = 0; b < prompts.size(); ++b) decode.push_back({forks[b], {prompts[b].back()}, false});
  const std::vector<float> bc = runner.step(decode);

  ASSERT_EQ(a.size(), static_cast<size_t>(batch * V));
  ASSERT_EQ(bc.size(), static_cast<size_t>(2 * batch * V));
  for (int b = 0; b < batch; ++b) {
    const float* la = a.data() + b * V;
    for (int64_t i = 0; i < V; ++i) ASSERT_TRUE(std::isfinite(la[i])) << "seq " << b << " logit " << i;
    const double rb = rel_l2(bc.data() + b * V, la, V), rc = rel_l2(bc.data() + (batch + b) * V, la, V);
    EXPECT_LE(rb, 1e-4) << "prefill+decode vs full prefill, seq " << b << " of " << batch;
    EXPECT_LE(rc, 1e-4) << "prefix-cache fork vs full prefill, seq " << b << " of " << batch;
  }
  // The fork shares full pages with its source: at least one page has two owners when a prefix spans a page.
  bool shared = false;
  for (int32_t p = 0; p < runner.pages().num_pages(); ++p) shared |= runner.pages().refcount(p) > 1;
  EXPECT_EQ(shared, prompts.back().size() - 1 >= 4);
}

INSTANTIATE_TEST_SUITE_P(model_batches, model_consistency,
                         ::testing::Combine(::testing::Values(WeightFormat::Bf16, WeightFormat::Fp8Block),
                                            ::testing::Values(1, 2, 8)),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) == WeightFormat::Bf16 ? "bf16" : "fp8") +
                                  "_batch" + std::to_string(std::get<1>(p.param));
                         });

// A sequence's logits do not depend on the batch it runs in.
TEST(model_consistency, BatchInvariant) {
  GenModelSpec s = gen_model_shape("tiny");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("moe_model_test_invariant" + std::to_string(getpid())))
          .string();
  write_random_model(dir, s, false);
  ModelRunner runner(open_model_backend(dir, "cpu", BackendOptions{}));
  const std::vector<int32_t> p = {9, 8, 7, 6, 5, 4, 3};
  const std::vector<float> alone = runner.prefill_logits(p);
  const SeqId x = runner.add_sequence(), y = runner.add_sequence();
  const std::vector<float> together = runner.step({{x, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, true}, {y, p, true}});
  const int64_t V = runner.spec().vocab;
  ASSERT_EQ(together.size(), static_cast<size_t>(17 * V));
  for (size_t i = 0; i < alone.size(); ++i)
    ASSERT_EQ(alone[i], together[static_cast<size_t>(10 * V) + i]) << i;
}

}  // namespace
}  // namespace moe::model
