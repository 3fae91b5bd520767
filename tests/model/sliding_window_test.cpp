// Sliding-window attention, which moecpp does not implement: a checkpoint whose layers slide (config.json's
// sliding_window where its family applies it) is served only up to the window, where sliding and full
// attention give the same logits. Past it the runner refuses with an input error naming the window, and the
// serving engine's context is the window. OLMoE's clip_qkv is refused by name. The family rules
// (hf_config.cpp, sliding_layers) are in tests/io/hf_config_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include "core/error.h"
#include "model/gen_model.h"
#include "model/model_spec.h"
#include "model/runner.h"

namespace moe::model {
namespace {

// A tiny random Qwen3-MoE checkpoint whose every layer slides over `window` tokens.
std::string sliding_model(int64_t window) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("moe_sliding_test_" + std::to_string(getpid()))).string();
  GenModelSpec s = gen_model_shape("tiny");
  s.seed = 5;
  write_random_model(dir, s, false);
  const std::string path = dir + "/config.json";
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(path));
  cfg["use_sliding_window"] = true;
  cfg["sliding_window"] = window;
  cfg["max_window_layers"] = 0;
  std::ofstream(path) << cfg.dump(2);
  return dir;
}

TEST(SlidingWindow, SequencesUpToTheWindowRunAndLongerOnesAreRefused) {
  constexpr int64_t kWindow = 6;
  const std::string dir = sliding_model(kWindow);
  BackendOptions opts;
  opts.page_size = 4;
  opts.num_pages = 64;
  ModelRunner runner(open_model_backend(dir, "cpu", opts));
  EXPECT_EQ(runner.spec().max_sequence, kWindow);

  const std::vector<int32_t> six = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(runner.prefill_logits(six).size(), static_cast<size_t>(6 * runner.spec().vocab));
  try {
    runner.prefill_logits({1, 2, 3, 4, 5, 6, 7});
    ADD_FAILURE() << "a prefill past the window ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sliding window of 6"), std::string::npos) << e.what();
  }
  // Decoding up to the window, then one token past it.
  const SeqId s = runner.add_sequence();
  runner.step({StepInput{s, {1, 2, 3, 4, 5}, false}});
  runner.step({StepInput{s, {6}, false}});
  EXPECT_THROW(runner.step({StepInput{s, {7}, false}}), InputError);
  EXPECT_EQ(runner.length(s), kWindow) << "the refused step left the sequence as it was";
  std::filesystem::remove_all(dir);
}

// Options we do not implement and whose effect is not bounded by a context limit are refused by name.
TEST(SlidingWindow, ClipQkvIsRefusedByName) {
  const HfModelConfig c = parse_hf_config(nlohmann::json::parse(R"({"architectures": ["OlmoeForCausalLM"],
    "model_type": "olmoe", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 16, "clip_qkv": 8.0})"));
  try {
    make_model_spec(c);
    ADD_FAILURE() << "clip_qkv accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("clip_qkv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::model
