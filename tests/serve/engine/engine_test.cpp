// The engine end to end on a tiny random model: greedy chains equal full-prefill argmax chains alone, in a
// batch, through chunked prefill, prefix-cache hits and preemption; n choices; seeds; stop strings; logprobs;
// cancellation; validation and back-pressure.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <thread>

#include "engine_fixture.h"

namespace moe::serve {
namespace {

using test::Collected;
using test::greedy_request;
using test::random_prompt;

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test::tiny_model_dir();
    runner_ = test::reference_runner().release();
  }
  static void TearDownTestSuite() { delete runner_; }
  static const std::vector<int32_t>& reference(const std::vector<int32_t>& prompt, int64_t steps) {
    static std::map<std::pair<std::vector<int32_t>, int64_t>, std::vector<int32_t>> memo;
    auto& r = memo[{prompt, steps}];
    if (r.empty()) r = test::reference_greedy(*runner_, prompt, steps);
    return r;
  }
  static model::ModelRunner* runner_;
};
model::ModelRunner* EngineTest::runner_ = nullptr;

TEST_F(EngineTest, GreedyAloneAndInABatchOf8EqualsPrefillArgmax) {
  auto engine = make_engine(test::small_options());
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t i = 0; i < 8; ++i) prompts.push_back(random_prompt(i + 1, 5 + 7 * i));  // 5..54, some chunked
  const int64_t steps = 12;
  // Alone, one after the other (the prefix cache is flushed so nothing is reused).
  for (size_t i = 0; i < prompts.size(); i += 3) {
    engine->flush_cache();
    Collected c;
    ASSERT_EQ(engine->submit(greedy_request("a", prompts[i], steps), c.callback()).status,
              SubmitStatus::Accepted);
    ASSERT_TRUE(c.wait());
    EXPECT_EQ(c.ids[0], reference(prompts[i], steps)) << "prompt " << i;
    EXPECT_EQ(c.finish_reason[0], "length");
    EXPECT_EQ(c.completion_tokens[0], steps);
    EXPECT_EQ(c.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
  }
  engine->flush_cache();
  std::vector<Collected> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    ASSERT_EQ(
        engine->submit(greedy_request("b" + std::to_string(i), prompts[i], steps), out[i].callback()).status,
        SubmitStatus::Accepted);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(out[i].wait());
    EXPECT_EQ(out[i].ids[0], reference(prompts[i], steps)) << "prompt " << i;
  }
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.requests_finished, 3 + 8);
  EXPECT_EQ(s.generation_tokens_total, (3 + 8) * steps);
  EXPECT_EQ(s.running, 0);
}

// `moe serve --tp N` passes its tensor-parallel options to the backend: on the cpu backend the simulated
// ranks (exact to fp32 summation order), whose greedy chains, in a batch with chunked prefill, are TP 1's.
TEST_F(EngineTest, TensorParallelRanksGiveTheTp1Chains) {
  for (const bool ep : {false, true}) {
    EngineOptions o = test::small_options();
    o.backend_options.tp_size = 2;
    o.backend_options.expert_parallel = ep;
    auto engine = make_engine(o);
    std::vector<std::vector<int32_t>> prompts;
    for (uint32_t i = 0; i < 4; ++i) prompts.push_back(random_prompt(i + 1, 5 + 7 * i));
    const int64_t steps = 12;
    std::vector<Collected> out(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i)
      ASSERT_EQ(engine->submit(greedy_request("tp" + std::to_string(i), prompts[i], steps), out[i].callback())
                    .status,
                SubmitStatus::Accepted);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE(out[i].wait());
      EXPECT_EQ(out[i].ids[0], reference(prompts[i], steps)) << (ep ? "EP 2" : "TP 2") << ", prompt " << i;
    }
  }
}

TEST_F(EngineTest, PrefixCacheHitsGiveTheSameOutput) {
  auto engine = make_engine(test::small_options());
  const std::vector<int32_t> base = random_prompt(42, 30);
  std::vector<int32_t> longer = base;
  for (const int32_t t : random_prompt(43, 9)) longer.push_back(t);
  const int64_t steps = 8;
  Collected a, b, c;
  engine->submit(greedy_request("a", base, steps), a.callback());
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.cached_tokens, 0);
  // Shares the 30 prompt tokens: the finished request cached its prompt and generated tokens; `longer`
  // diverges after the prompt.
  engine->submit(greedy_request("b", longer, steps), b.callback());
  ASSERT_TRUE(b.wait());
  EXPECT_EQ(b.cached_tokens, 30);  // 7 full pages and the start of the 8th
  EXPECT_EQ(b.ids[0], reference(longer, steps));
  // The same prompt again: fully cached, yet its last token is recomputed for logits.
  engine->submit(greedy_request("c", base, steps), c.callback());
  ASSERT_TRUE(c.wait());
  EXPECT_EQ(c.cached_tokens, 29);
  EXPECT_EQ(c.ids[0], a.ids[0]);
  EXPECT_EQ(c.ids[0], reference(base, steps));
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.prefix_cache_hit_tokens, 30 + 29);
  EXPECT_EQ(s.prefix_cache_queried_tokens, 30 + 39 + 30);
  // flush_cache drops every page nobody uses.
  EXPECT_GT(s.kv_pages_used, 0);
  engine->flush_cache();
  EXPECT_EQ(engine->stats().kv_pages_used, 0);
}

TEST_F(EngineTest, PreemptionWithATinyKvPoolKeepsOutputsIdentical) {
  EngineOptions o = test::small_options();
  o.kv_pages = 20;  // 80 tokens for 6 requests of 12..22 + 20 tokens each
  auto engine = make_engine(o);
  const int64_t steps = 20;
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t i = 0; i < 6; ++i) prompts.push_back(random_prompt(100 + i, 12 + 2 * i));
  std::vector<Collected> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    ASSERT_EQ(engine->submit(greedy_request(std::to_string(i), prompts[i], steps), out[i].callback()).status,
              SubmitStatus::Accepted);
  // And three greedy choices forked from one prompt, preempted and recomputed like the others.
  Collected three;
  three.n = 3;
  GenerateRequest r3 = greedy_request("three", random_prompt(150, 14), steps);
  r3.sampling.n = 3;
  ASSERT_EQ(engine->submit(r3, three.callback()).status, SubmitStatus::Accepted);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(out[i].wait());
    EXPECT_EQ(out[i].finish_reason[0], "length") << out[i].error[0];
    EXPECT_EQ(out[i].ids[0], reference(prompts[i], steps)) << "prompt " << i;
  }
  ASSERT_TRUE(three.wait());
  for (int c = 0; c < 3; ++c) EXPECT_EQ(three.ids[c], reference(r3.prompt_ids, steps)) << "choice " << c;
  EXPECT_GT(engine->stats().preemptions_total, 0);
  engine->flush_cache();
  EXPECT_EQ(engine->stats().kv_pages_used, 0);
}

TEST_F(EngineTest, CancelFreesKvAtOnce) {
  auto engine = make_engine(test::small_options());
  Collected c;
  std::atomic<bool> started{false};
  auto inner = c.callback();
  GenerateRequest r = greedy_request("long", random_prompt(7, 40), 900);
  ASSERT_EQ(engine
                ->submit(r,
                         [&](const GenerateEvent& ev) {
                           started = true;
                           inner(ev);
                         })
                .status,
            SubmitStatus::Accepted);
  for (int i = 0; i < 10000 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(started);
  EXPECT_GE(engine->stats().kv_pages_used, 10);  // the 40-token prompt
  engine->cancel("long");
  ASSERT_TRUE(c.wait());
  EXPECT_EQ(c.finish_reason[0], "abort");
  EXPECT_TRUE(c.error[0].empty());
  EXPECT_LT(c.completion_tokens[0], 900);
  // Its pages are either free or only held by the prefix cache, which flush_cache empties.
  engine->flush_cache();
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.kv_pages_used, 0);
  EXPECT_EQ(s.requests_aborted, 1);
  EXPECT_EQ(s.running, 0);
}

TEST_F(EngineTest, NChoicesShareThePromptAndSampleIndependently) {
  auto engine = make_engine(test::small_options());
  const std::vector<int32_t> prompt = random_prompt(77, 26);
  Collected g;
  g.n = 3;
  GenerateRequest r = greedy_request("g", prompt, 6);
  r.sampling.n = 3;
  engine->submit(r, g.callback());
  ASSERT_TRUE(g.wait());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(g.ids[i], reference(prompt, 6)) << "choice " << i;
    EXPECT_EQ(g.finish_reason[i], "length");
  }
  auto sampled = [&](uint64_t seed) {
    Collected s;
    s.n = 3;
    GenerateRequest q = greedy_request("s", prompt, 10);
    q.sampling.n = 3;
    q.sampling.temperature = 1.5f;
    q.sampling.seed = seed;
    engine->submit(q, s.callback());
    EXPECT_TRUE(s.wait());
    return std::vector<std::vector<int32_t>>{s.ids[0], s.ids[1], s.ids[2]};
  };
  const auto x = sampled(5), y = sampled(5);
  EXPECT_EQ(x, y);
  EXPECT_NE(x[0], x[1]);
  EXPECT_NE(x[1], x[2]);
}

TEST_F(EngineTest, SeededSamplingIsTheSameAloneAndInABatch) {
  auto engine = make_engine(test::small_options());
  GenerateRequest r = greedy_request("seeded", random_prompt(9, 17), 16);
  r.sampling.temperature = 0.9f;
  r.sampling.top_p = 0.95f;
  r.sampling.top_k = 50;
  r.sampling.seed = 1234;
  r.sampling.frequency_penalty = 0.3f;
  Collected alone;
  engine->submit(r, alone.callback());
  ASSERT_TRUE(alone.wait());
  std::vector<Collected> others(6);
  Collected batched;
  for (size_t i = 0; i < others.size(); ++i) {
    GenerateRequest o = greedy_request("o", random_prompt(200 + static_cast<uint32_t>(i), 10 + i), 16);
    o.sampling.temperature = 1.0f;
    engine->submit(o, others[i].callback());
    if (i == 2) engine->submit(r, batched.callback());
  }
  ASSERT_TRUE(batched.wait());
  for (auto& o : others) ASSERT_TRUE(o.wait());
  EXPECT_EQ(batched.ids[0], alone.ids[0]);
  r.sampling.seed = 1235;
  Collected other_seed;
  engine->submit(r, other_seed.callback());
  ASSERT_TRUE(other_seed.wait());
  EXPECT_NE(other_seed.ids[0], alone.ids[0]);
}

TEST_F(EngineTest, StopStringsSplitAcrossTokensEndTheText) {
  auto engine = make_engine(test::small_options());
  const tok::Tokenizer& t = engine->tokenizer();
  const std::vector<int32_t> prompt = t.encode("hello world, the cat sat on the mat");
  // The unstopped text, and each token's end offset in it.
  Collected full;
  engine->submit(greedy_request("full", prompt, 40), full.callback());
  ASSERT_TRUE(full.wait());
  const std::string text = full.text[0];
  ASSERT_EQ(text, t.decode(full.ids[0], true));
  // A stop string from the last character of one token's text to the first of a later token's, found where
  // the text is plain ASCII so it is whole characters.
  size_t at = std::string::npos;
  std::string prefix;
  for (size_t k = 1; k + 1 < full.ids[0].size() && at == std::string::npos; ++k) {
    const std::string before =
        t.decode(std::vector<int32_t>(full.ids[0].begin(), full.ids[0].begin() + k), true);
    if (before.empty() || before.size() + 1 >= text.size()) continue;
    const unsigned char a = static_cast<unsigned char>(text[before.size() - 1]),
                        b = static_cast<unsigned char>(text[before.size()]);
    if (a < 0x80 && b < 0x80 && text.compare(0, before.size(), before) == 0) at = before.size() - 1;
  }
  ASSERT_NE(at, std::string::npos) << "no ASCII token boundary in " << text;
  const std::string stop = text.substr(at, 2);
  Collected s;
  GenerateRequest r = greedy_request("stop", prompt, 40);
  r.sampling.stop = {stop};
  engine->submit(r, s.callback());
  ASSERT_TRUE(s.wait());
  EXPECT_EQ(s.finish_reason[0], "stop");
  EXPECT_EQ(s.text[0], text.substr(0, text.find(stop)));
  EXPECT_LT(s.ids[0].size(), full.ids[0].size());
  // stop_token_ids: ends right after that token, which is not text.
  Collected st;
  GenerateRequest r2 = greedy_request("stop_id", prompt, 40);
  r2.sampling.stop_token_ids = {full.ids[0][3]};
  engine->submit(r2, st.callback());
  ASSERT_TRUE(st.wait());
  EXPECT_EQ(st.finish_reason[0], "stop");
  const size_t first = static_cast<size_t>(std::find(full.ids[0].begin(), full.ids[0].end(), full.ids[0][3]) -
                                           full.ids[0].begin());
  EXPECT_EQ(st.ids[0],
            std::vector<int32_t>(full.ids[0].begin(), full.ids[0].begin() + static_cast<long>(first) + 1));
  // min_tokens keeps the stop id masked for the first tokens.
  Collected mt;
  GenerateRequest r3 = r2;
  r3.request_id = "min_tokens";
  r3.sampling.min_tokens = static_cast<int64_t>(first) + 2;
  engine->submit(r3, mt.callback());
  ASSERT_TRUE(mt.wait());
  EXPECT_GE(mt.ids[0].size(), first + 2);
}

TEST_F(EngineTest, LogprobsMatchLogSoftmaxOfPrefillLogits) {
  auto engine = make_engine(test::small_options());
  const std::vector<int32_t> prompt = random_prompt(31, 33);  // two prefill chunks of 24 + 9
  const int64_t V = runner_->spec().vocab;
  const std::vector<float> logits = runner_->prefill_logits(prompt);
  auto log_softmax_at = [&](int64_t row, int32_t id) {
    double mx = -1e30, sum = 0;
    for (int64_t i = 0; i < V; ++i)
      mx = std::max(mx, static_cast<double>(logits[static_cast<size_t>(row * V + i)]));
    for (int64_t i = 0; i < V; ++i) sum += std::exp(logits[static_cast<size_t>(row * V + i)] - mx);
    return logits[static_cast<size_t>(row * V + id)] - mx - std::log(sum);
  };
  for (const int64_t start : {0, 5}) {
    // The first request put the prompt into the prefix cache; the second must still compute from start - 1.
    Collected c;
    GenerateRequest r = greedy_request("lp", prompt, 3);
    r.logprob_start_len = start;
    r.prompt_top_logprobs = 2;
    r.sampling.logprobs = true;
    r.sampling.top_logprobs = 3;
    engine->submit(r, c.callback());
    ASSERT_TRUE(c.wait());
    ASSERT_EQ(c.prompt_logprobs.size(), prompt.size() - static_cast<size_t>(start));
    for (size_t k = 0; k < c.prompt_logprobs.size(); ++k) {
      const int64_t pos = start + static_cast<int64_t>(k);
      EXPECT_EQ(c.prompt_logprobs[k].id, prompt[static_cast<size_t>(pos)]);
      if (pos == 0) {
        EXPECT_FALSE(c.prompt_logprobs[k].logprob.has_value());
        continue;
      }
      ASSERT_TRUE(c.prompt_logprobs[k].logprob.has_value()) << pos;
      EXPECT_NEAR(*c.prompt_logprobs[k].logprob, log_softmax_at(pos - 1, prompt[static_cast<size_t>(pos)]),
                  2e-3)
          << pos;
      EXPECT_EQ(c.prompt_logprobs[k].top.size(), 2u);
    }
    ASSERT_EQ(c.logprobs[0].size(), 3u);
    const int32_t first = c.ids[0][0];
    EXPECT_EQ(c.logprobs[0][0].id, first);
    EXPECT_NEAR(*c.logprobs[0][0].logprob, log_softmax_at(static_cast<int64_t>(prompt.size()) - 1, first),
                2e-3);
    EXPECT_EQ(c.logprobs[0][0].top.size(), 3u);
    EXPECT_EQ(c.logprobs[0][0].top[0].first, first);  // greedy picks the best
  }
}

TEST_F(EngineTest, SixtyFourConcurrentSubmissionsAllComplete) {
  EngineOptions o = test::small_options();
  o.max_batch = 8;
  o.kv_pages = 64;
  auto engine = make_engine(o);
  std::vector<Collected> out(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = t; i < 64; i += 4) {
        GenerateRequest r = greedy_request(
            "c" + std::to_string(i),
            random_prompt(static_cast<uint32_t>(500 + i), 3 + static_cast<size_t>(i % 17)), 4 + i % 5);
        r.sampling.temperature = (i % 2) ? 0.7f : 0.0f;
        EXPECT_EQ(engine->submit(r, out[static_cast<size_t>(i)].callback()).status, SubmitStatus::Accepted);
      }
    });
  for (auto& th : threads) th.join();
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(out[static_cast<size_t>(i)].wait()) << i;
    EXPECT_EQ(out[static_cast<size_t>(i)].finish_reason[0], "length");
    EXPECT_EQ(static_cast<int>(out[static_cast<size_t>(i)].ids[0].size()), 4 + i % 5);
  }
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.requests_total, 64);
  EXPECT_EQ(s.requests_finished, 64);
  EXPECT_EQ(s.waiting, 0);
}

TEST_F(EngineTest, InvalidRequestsAreRejectedWithReasons) {
  EngineOptions o = test::small_options();
  o.max_context = 100;
  auto engine = make_engine(o);
  EXPECT_EQ(engine->max_context(), 100);
  auto reject = [&](GenerateRequest r) {
    const SubmitResult res = engine->submit(std::move(r), [](const GenerateEvent&) {});
    EXPECT_EQ(res.status, SubmitStatus::Invalid);
    return res.message;
  };
  EXPECT_NE(reject(greedy_request("e", {}, 4)).find("empty"), std::string::npos);
  EXPECT_NE(reject(greedy_request("l", random_prompt(1, 90), 20))
                .find("prompt of 90 tokens plus max_tokens 20 exceeds the context of 100"),
            std::string::npos);
  EXPECT_NE(reject(greedy_request("v", {1, 2, 100000}, 4)).find("vocabulary"), std::string::npos);
  GenerateRequest t = greedy_request("t", {1, 2}, 4);
  t.sampling.temperature = -1;
  EXPECT_NE(reject(t).find("temperature"), std::string::npos);
  GenerateRequest p = greedy_request("p", {1, 2}, 4);
  p.sampling.top_p = 0;
  EXPECT_NE(reject(p).find("top_p"), std::string::npos);
  GenerateRequest n = greedy_request("n", {1, 2}, 4);
  n.sampling.n = 0;
  EXPECT_NE(reject(n).find("n must"), std::string::npos);
  // The KV capacity caps the context too.
  EngineOptions small = test::small_options();
  small.kv_pages = 8;
  EXPECT_EQ(make_engine(small)->max_context(), 32);
}

// A checkpoint whose layers slide over a window (not implemented: sliding equals full attention within it)
// is served up to the window: the engine's context is the window, and a request past it is rejected.
TEST_F(EngineTest, SlidingWindowModelsServeUpToTheWindow) {
  const std::filesystem::path dir = std::filesystem::path(test::tiny_model_dir()).string() + "_sliding";
  std::filesystem::create_directories(dir);
  for (const auto& f : std::filesystem::directory_iterator(test::tiny_model_dir()))
    std::filesystem::copy(f.path(), dir / f.path().filename(),
                          std::filesystem::copy_options::overwrite_existing);
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  cfg["use_sliding_window"] = true;
  cfg["sliding_window"] = 20;
  cfg["max_window_layers"] = 0;
  std::ofstream(dir / "config.json") << cfg.dump(2);
  EngineOptions o = test::small_options();
  o.model_dir = dir.string();
  auto engine = make_engine(o);
  EXPECT_EQ(engine->max_context(), 20);
  const SubmitResult res =
      engine->submit(greedy_request("w", random_prompt(2, 15), 10), [](const GenerateEvent&) {});
  EXPECT_EQ(res.status, SubmitStatus::Invalid);
  EXPECT_NE(res.message.find("exceeds the context of 20"), std::string::npos) << res.message;
  Collected ok;
  ASSERT_EQ(engine->submit(greedy_request("ok", random_prompt(3, 15), 5), ok.callback()).status,
            SubmitStatus::Accepted);
  ASSERT_TRUE(ok.wait());
  EXPECT_EQ(ok.ids[0].size(), 5u);
  engine.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(EngineTest, FullQueueAndShutdown) {
  EngineOptions o = test::small_options();
  o.max_batch = 1;
  o.max_queue = 2;
  auto engine = make_engine(o);
  std::vector<Collected> out(12);
  int accepted = 0, full = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const SubmitResult r = engine->submit(
        greedy_request("q", random_prompt(static_cast<uint32_t>(i), 8), 200), out[i].callback());
    if (r.status == SubmitStatus::Accepted) ++accepted;
    if (r.status == SubmitStatus::QueueFull) {
      ++full;
      EXPECT_NE(r.message.find("queue"), std::string::npos);
    }
  }
  EXPECT_LE(accepted, 3);  // one running, two waiting
  EXPECT_GE(full, 9);
  engine->shutdown(false);
  EXPECT_EQ(engine->submit(greedy_request("late", {1}, 1), [](const GenerateEvent&) {}).status,
            SubmitStatus::ShuttingDown);
  for (size_t i = 0; i < static_cast<size_t>(accepted); ++i) {
    ASSERT_TRUE(out[i].wait(1));
    EXPECT_EQ(out[i].finish_reason[0], "abort");
  }
}

TEST_F(EngineTest, DrainingShutdownFinishesWhatIsRunning) {
  auto engine = make_engine(test::small_options());
  std::vector<Collected> out(3);
  for (size_t i = 0; i < out.size(); ++i)
    engine->submit(greedy_request("d", random_prompt(static_cast<uint32_t>(60 + i), 9), 10),
                   out[i].callback());
  engine->shutdown(true);
  for (auto& c : out) {
    ASSERT_TRUE(c.wait(1));
    EXPECT_EQ(c.finish_reason[0], "length");
    EXPECT_EQ(c.ids[0].size(), 10u);
  }
}

}  // namespace
}  // namespace moe::serve
