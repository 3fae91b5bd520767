#pragma once
// What every route handler shares: the engine, the options, the chat template, the metrics, request ids.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/engine/engine_api.h"
#include "serve/http/chat_prompt.h"
#include "serve/http/metrics.h"
#include "serve/http/server_options.h"

namespace moe::serve::http {

struct ServerState {
  ServerState(Engine& e, ServerOptions o);

  Engine& engine;
  ServerOptions options;
  std::string model_name;  // --served-model-name, else the engine's
  ChatPrompt chat_prompt;
  bool split_reasoning = false;
  ServerMetrics metrics;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> in_flight{0};
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();

  // "<prefix>-<process tag><counter>": unique within and across runs.
  std::string new_request_id(const char* prefix);
  // 404 when `body.model` names another model (absent is fine, as with sglang).
  void check_model(const Json& body) const;
  // 400 when the prompt does not fit; fills an unset max_tokens (-1) and clamps it to the context left.
  void fit_to_context(int64_t prompt_tokens, SamplingParams& sampling) const;

 private:
  std::atomic<uint64_t> next_id_{0};
  std::string tag_;
};

// Seconds since the Unix epoch, for "created".
int64_t unix_now();

}  // namespace moe::serve::http
