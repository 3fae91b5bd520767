#pragma once
// The contract between the HTTP front end (src/serve/http) and the scheduler that runs the model
// (src/serve/engine). The front end only ever talks to this interface, so it can be tested against a stub and
// the scheduler can be tested without HTTP.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moe::tok {
class Tokenizer;
}

namespace moe::serve {

struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;
  int top_k = 0;  // 0 or negative: off
  float min_p = 0.0f;
  std::optional<uint64_t> seed;
  float frequency_penalty = 0.0f, presence_penalty = 0.0f, repetition_penalty = 1.0f;
  int64_t max_tokens = 16;
  int64_t min_tokens = 0;
  std::vector<std::string> stop;        // stop strings: generation ends before them, they are not returned
  std::vector<int32_t> stop_token_ids;  // ends after the token (not returned as text)
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  int n = 1;              // choices per request, sharing the prompt's KV
  bool logprobs = false;  // logprob of each generated token
  int top_logprobs = 0;   // and this many alternatives per position
};

struct GenerateRequest {
  std::string request_id;
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
  // Prompt logprobs (sglang's /generate): positions [logprob_start_len, prompt length) get
  // input_token_logprobs; -1 = none. The first prompt position has no logprob (reported as nullopt).
  int64_t logprob_start_len = -1;
  int prompt_top_logprobs = 0;
};

struct TokenLogprob {
  int32_t id = 0;
  std::optional<float> logprob;                // nullopt for the first prompt token
  std::vector<std::pair<int32_t, float>> top;  // best alternatives, descending
};

struct GenerateEvent {
  int choice = 0;                             // 0 .. n-1
  std::vector<int32_t> new_ids;               // tokens generated since the last event of this choice
  std::string new_text;                       // their text: valid UTF-8, stop strings already cut
  std::vector<TokenLogprob> new_logprobs;     // when sampling.logprobs
  std::vector<TokenLogprob> prompt_logprobs;  // first event only, when logprob_start_len >= 0
  bool finished = false;
  std::string finish_reason;  // "stop", "length", "abort" (cancelled or failed)
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  std::string error;  // set with finish_reason "abort" when the request failed inside the engine
};

enum class SubmitStatus { Accepted, Invalid, QueueFull, ShuttingDown };

struct SubmitResult {
  SubmitStatus status = SubmitStatus::Accepted;
  std::string message;  // why, when not accepted (e.g. "prompt of 40000 tokens exceeds the context of 32768")
};

struct EngineStats {
  int64_t running = 0, waiting = 0;
  int64_t requests_total = 0, requests_finished = 0, requests_aborted = 0;
  int64_t prompt_tokens_total = 0, generation_tokens_total = 0;
  int64_t kv_pages_used = 0, kv_pages_total = 0;
  int64_t prefix_cache_queried_tokens = 0, prefix_cache_hit_tokens = 0;
  int64_t preemptions_total = 0;
  int64_t tuned_config_fallbacks = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Thread-safe. `on_event` is called from the engine's thread, in order, per choice; the final event of
  // every choice has finished = true. Never blocks on the model.
  virtual SubmitResult submit(GenerateRequest req, std::function<void(const GenerateEvent&)> on_event) = 0;
  // Thread-safe; the request's choices finish with reason "abort" and their KV is freed.
  virtual void cancel(const std::string& request_id) = 0;
  virtual EngineStats stats() const = 0;
  virtual const tok::Tokenizer& tokenizer() const = 0;
  virtual std::string model_name() const = 0;
  virtual int64_t max_context() const = 0;
  // Stops accepting; when `drain`, finishes what is running first. Blocks until the engine thread ends.
  virtual void shutdown(bool drain) = 0;
  // Drops every cached prefix that no running request uses (sglang's /flush_cache).
  virtual void flush_cache() = 0;
};

}  // namespace moe::serve
