#pragma once
// A tiny random Qwen3-MoE checkpoint with a byte-level BPE tokenizer of its own, in a temp directory, plus
// helpers that collect an engine's events and compute reference greedy chains with ModelRunner directly.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "model/gen_model.h"
#include "model/runner.h"
#include "model/sampler.h"
#include "serve/engine/engine.h"
#include "serve/tokenizer/bpe_trainer.h"
#include "serve/tokenizer/tokenizer.h"
#include "serve/tokenizer/tokenizer_files.h"

namespace moe::serve::test {

inline const std::string& tiny_model_dir() {
  static const std::string dir = [] {
    const std::string d =
        (std::filesystem::temp_directory_path() / ("moe_engine_test_" + std::to_string(getpid()))).string();
    const std::string corpus =
        "the cat sat on the mat. the dog sat on the log. hello world, hello there! stop here, STOP now.\n"
        "numbers 12345 and 67890; code `int main() { return 0; }` and more text to learn merges from.\n";
    tok::BpeTrainingOptions topt;
    topt.num_merges = 120;  // 256 bytes + merges + 3 specials < the model's 512
    const tok::TokenizerSpec tspec = tok::train_byte_level_bpe(corpus + corpus + corpus, topt);
    tok::write_tokenizer_files(d, tspec);
    const tok::Tokenizer t = tok::Tokenizer::from_model_dir(d);
    model::GenModelSpec spec = model::gen_model_shape("tiny");
    spec.seed = 11;
    spec.eos_token_ids = {t.eos_ids().at(0)};
    model::write_random_model(d, spec, false);
    return d;
  }();
  return dir;
}

inline EngineOptions small_options() {
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.page_size = 4;
  o.kv_pages = 256;
  o.max_batch = 16;
  o.chunked_prefill_tokens = 24;  // prompts longer than this are prefilled in chunks
  return o;
}

// Everything one request produced, per choice.
struct Collected {
  std::mutex mu;
  std::condition_variable cv;
  int n = 1, finished = 0;
  std::map<int, std::vector<int32_t>> ids;
  std::map<int, std::string> text, finish_reason, error;
  std::map<int, std::vector<TokenLogprob>> logprobs;
  std::vector<TokenLogprob> prompt_logprobs;
  int64_t prompt_tokens = 0, cached_tokens = 0;
  std::map<int, int64_t> completion_tokens;
  int events = 0;

  std::function<void(const GenerateEvent&)> callback() {
    return [this](const GenerateEvent& ev) {
      std::lock_guard lock(mu);
      ++events;
      auto& v = ids[ev.choice];
      v.insert(v.end(), ev.new_ids.begin(), ev.new_ids.end());
      text[ev.choice] += ev.new_text;
      auto& lp = logprobs[ev.choice];
      lp.insert(lp.end(), ev.new_logprobs.begin(), ev.new_logprobs.end());
      if (!ev.prompt_logprobs.empty()) prompt_logprobs = ev.prompt_logprobs;
      if (ev.finished) {
        finish_reason[ev.choice] = ev.finish_reason;
        error[ev.choice] = ev.error;
        prompt_tokens = ev.prompt_tokens;
        cached_tokens = ev.cached_tokens;
        completion_tokens[ev.choice] = ev.completion_tokens;
        ++finished;
        cv.notify_all();
      }
    };
  }
  bool wait(double seconds = 60) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return finished >= n; });
  }
};

inline GenerateRequest greedy_request(const std::string& id, std::vector<int32_t> prompt,
                                      int64_t max_tokens) {
  GenerateRequest r;
  r.request_id = id;
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

// Greedy chain by full prefills of the growing sequence (no KV reuse at all).
inline std::vector<int32_t> reference_greedy(model::ModelRunner& runner, std::vector<int32_t> tokens,
                                             int64_t steps) {
  const int64_t V = runner.spec().vocab;
  std::vector<int32_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    const std::vector<float> logits = runner.prefill_logits(tokens);
    const int32_t next = model::argmax(logits.data() + (static_cast<int64_t>(tokens.size()) - 1) * V, V);
    out.push_back(next);
    tokens.push_back(next);
  }
  return out;
}

inline std::unique_ptr<model::ModelRunner> reference_runner() {
  model::BackendOptions bo;
  bo.page_size = 4;
  bo.num_pages = 256;
  return std::make_unique<model::ModelRunner>(model::open_model_backend(tiny_model_dir(), "cpu", bo));
}

inline std::vector<int32_t> random_prompt(uint32_t seed, size_t len, int32_t vocab = 376) {
  std::vector<int32_t> p(len);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& t : p) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    t = static_cast<int32_t>(s % static_cast<uint64_t>(vocab));
  }
  return p;
}

}  // namespace moe::serve::test
