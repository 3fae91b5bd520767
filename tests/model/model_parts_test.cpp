// The model's host-side parts: KV page pool, sampler, token lists, RoPE, and loader refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/gen_model.h"
#include "model/kv_pages.h"
#include "model/rope.h"
#include "model/runner.h"
#include "model/sampler.h"
#include "model/token_list.h"

namespace moe::model {
namespace {

TEST(model_kv_page_pool, ReserveForkRelease) {
  KvPagePool pool(8, 4);
  SequenceKv a;
  pool.reserve(a, 10);  // 3 pages
  a.length = 10;
  EXPECT_EQ(a.pages.size(), 3u);
  std::vector<std::pair<int32_t, int32_t>> copies;
  SequenceKv b = pool.fork(a, 9, [&](int32_t s, int32_t d) { copies.emplace_back(s, d); });
  ASSERT_EQ(b.pages.size(), 3u);
  EXPECT_EQ(b.pages[0], a.pages[0]);
  EXPECT_EQ(b.pages[1], a.pages[1]);
  ASSERT_EQ(copies.size(), 1u);  // the partial third page is copied, not shared
  EXPECT_EQ(copies[0].first, a.pages[2]);
  EXPECT_NE(b.pages[2], a.pages[2]);
  EXPECT_EQ(pool.refcount(a.pages[0]), 2);
  EXPECT_EQ(pool.free_pages(), 4);
  pool.release(a);
  EXPECT_EQ(pool.free_pages(), 5);  // a's private third page comes back; shared ones stay with b
  pool.release(b);
  EXPECT_EQ(pool.free_pages(), 8);
  SequenceKv c;
  EXPECT_THROW(pool.reserve(c, 33), Error);
}

TEST(model_sampler, GreedyAndSeededDraws) {
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f, 1.5f};
  Sampler greedy({});
  EXPECT_EQ(greedy.sample(logits.data(), 5), 1);  // tie goes to the lower id
  auto draw = [&](uint64_t seed) {
    Sampler s({1.0, 0, 1.0, seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits.data(), 5));
    return out;
  };
  EXPECT_EQ(draw(5), draw(5));
  EXPECT_NE(draw(5), draw(6));
  // top-k 2 only ever picks ids 1 and 2.
  Sampler topk({1.0, 2, 1.0, 9});
  for (int i = 0; i < 100; ++i) {
    const int32_t t = topk.sample(logits.data(), 5);
    EXPECT_TRUE(t == 1 || t == 2) << t;
  }
}

TEST(model_token_list, ParsesAndRefuses) {
  EXPECT_EQ(parse_token_list("1, 2,3", "t"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_THROW(parse_token_list("1,,2", "t"), InputError);
  EXPECT_THROW(parse_token_list("1,x", "t"), InputError);
  EXPECT_THROW(parse_token_list("-4", "t"), InputError);
}

TEST(model_rope, DefaultAndYarnFrequencies) {
  HfModelConfig cfg;
  cfg.rope_theta = 10000;
  cfg.max_position_embeddings = 4096;
  Rope plain(cfg, 8);
  EXPECT_FLOAT_EQ(plain.inv_freq()[0], 1.0f);
  EXPECT_NEAR(plain.inv_freq()[1], 0.1f, 1e-7);
  EXPECT_EQ(plain.attention_scaling(), 1.0f);
  // Rotation keeps the norm of each (i, i + half) pair; position 0 is the identity.
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8}, w = v;
  plain.apply(w.data(), 1, 0);
  EXPECT_EQ(v, w);
  plain.apply(w.data(), 1, 5);
  EXPECT_NEAR(std::hypot(w[0], w[4]), std::hypot(v[0], v[4]), 1e-5);
  cfg.rope_scaling = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 1024}};
  Rope yarn(cfg, 8);
  EXPECT_NEAR(yarn.attention_scaling(), 0.1 * std::log(4.0) + 1.0, 1e-6);
  EXPECT_FLOAT_EQ(yarn.inv_freq()[0], 1.0f);                       // fastest frequency: extrapolated
  EXPECT_NEAR(yarn.inv_freq()[3], plain.inv_freq()[3] / 4, 1e-9);  // slowest: interpolated by the factor
  cfg.rope_scaling = {{"rope_type", "longrope"}};
  EXPECT_THROW(Rope(cfg, 8), InputError);
}

// An fp8 checkpoint whose config does not say so (or the reverse) is refused with the tensor's name.
TEST(model_loader, RefusesFormatThatContradictsConfig) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("moe_model_test_mislabelled" + std::to_string(getpid())))
          .string();
  GenModelSpec s = gen_model_shape("tiny");
  s.format = WeightFormat::Fp8Block;
  write_random_model(dir, s, false);
  std::ifstream in(dir + "/config.json");
  nlohmann::json cfg;
  in >> cfg;
  cfg.erase("quantization_config");
  std::ofstream(dir + "/config.json") << cfg.dump();
  try {
    open_model_backend(dir, "cpu", BackendOptions{});
    FAIL() << "mislabelled checkpoint loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("q_proj.weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_model_backend(dir, "cuda", BackendOptions{}), InputError);
}

}  // namespace
}  // namespace moe::model
