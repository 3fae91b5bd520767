#pragma once
// The serving engine behind the OpenAI-compatible server: one scheduler thread over a ModelRunner with
// continuous batching, chunked prefill, a paged KV cache with a radix-tree prefix cache, preemption by
// recompute and per-request sampling. See engine_api.h for the interface and scheduler.h for the policy.
#include <cstdint>
#include <memory>
#include <string>

#include "model/backend.h"
#include "serve/engine/engine_api.h"

namespace moe::serve {

struct EngineOptions {
  std::string model_dir;
  std::string tokenizer_dir;    // empty: model_dir
  std::string model_name;       // empty: the model directory's last component
  std::string backend = "cpu";  // "cpu" or "cuda"
  int64_t max_batch = 64;       // running sequences (a request with n choices counts n)
  int64_t kv_pages = 1024;
  int64_t page_size = 16;
  int64_t max_queue = 1024;               // waiting requests; more -> SubmitStatus::QueueFull
  int64_t chunked_prefill_tokens = 2048;  // prompt tokens processed per step (decodes come on top)
  int64_t max_context = 0;  // 0: config.json's max_position_embeddings; always capped by the KV capacity
  bool verbose = false;     // model loading progress on stderr
  // Tensor parallelism (tp_size, expert_parallel, tp_comm); the page and loading fields come from above.
  model::BackendOptions backend_options;
};

// Event details the interface leaves open:
//  - new_ids holds every sampled token, including a final eos / stop_token_ids token (whose text is not in
//    new_text) and the token that completed a stop string;
//  - completion_tokens counts those tokens too; cached_tokens is the prompt prefix reused from the cache at
//    the request's first admission;
//  - logprobs are log-softmax of the raw logits (before penalties and temperature);
//  - prompt_logprobs come with the first event of every choice;
//  - the eos ids are the tokenizer's (tokenizer_config / generation_config) plus config.json's eos_token_id.
//
// Opens the model and tokenizer and starts the engine thread. Throws InputError for a bad directory, backend
// name or option.
std::unique_ptr<Engine> make_engine(const EngineOptions& opts);

}  // namespace moe::serve
