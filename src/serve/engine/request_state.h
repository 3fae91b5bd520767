#pragma once
// What the scheduler keeps per request and per choice. A choice is one sequence of the model: its tokens
// (prompt + generated), how many of them have K/V in the cache, its own random stream, penalty history and
// text filter, and the output gathered for its next event.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/runner.h"
#include "serve/engine/engine_api.h"
#include "serve/engine/stop_text.h"
#include "serve/engine/token_sampler.h"

namespace moe::serve {

struct RequestState;

struct ChoiceState {
  RequestState* request = nullptr;
  int index = 0;
  std::vector<int32_t> tokens;  // prompt + generated
  int64_t kv_len = 0;           // tokens whose K/V are cached in `seq`
  std::optional<model::SeqId> seq;
  uint64_t admitted = 0;  // admission order; the newest running choice is preempted first
  int64_t generated = 0;
  SplitMix64 rng;
  TokenHistory history;
  StopTextFilter text;
  bool finished = false;
  bool first_event_sent = false;
  // The next event's contents.
  GenerateEvent pending;

  ChoiceState(RequestState* r, int i, uint64_t seed, const tok::Tokenizer& tokenizer);
  bool has_output() const { return !pending.new_ids.empty() || pending.finished; }
};

struct RequestState {
  GenerateRequest req;
  std::function<void(const GenerateEvent&)> on_event;
  int64_t prompt_len = 0;
  int64_t cached_tokens = 0;
  uint64_t seed_base = 0;  // choice i draws from choice_seed(seed_base, i)
  bool aborted = false;
  bool callback_failed = false;
  bool admitted_once = false;    // choice 0 has started running (the request left the waiting queue)
  bool choices_spawned = false;  // choices 1..n-1 exist (forked once the prompt was computed)
  // Entry k is prompt position logprob_start_len + k, filled as the prefill computes it.
  std::vector<TokenLogprob> prompt_logprobs;
  std::vector<std::unique_ptr<ChoiceState>> choices;
  int unfinished = 0;

  bool wants_prompt_logprobs() const { return req.logprob_start_len >= 0; }
};

// Choice 0 uses the seed itself; the others a mix of it with their index, so n > 1 choices differ.
inline uint64_t choice_seed(uint64_t base, int index) {
  return index == 0 ? base : SplitMix64(base ^ (static_cast<uint64_t>(index) * 0xd1b54a32d192ed03ull)).next();
}

}  // namespace moe::serve
