#pragma once
// The scheduler: one thread that loops over steps. Each step runs
//   - one decode token for every running choice that has its K/V up to date,
//   - the next prefill chunk of running choices whose prompt (or recompute) is unfinished,
//   - the first chunk of waiting choices admitted now (FIFO; preempted choices go first),
// with prefill tokens bounded by chunked_prefill_tokens and running choices by max_batch. KV pages come from
// the free pool, then from evicting unreferenced prefix-cache pages (LRU), then by preempting the newest
// running choice: its computed full pages go to the prefix cache, its sequence is freed and it waits to be
// recomputed; its tokens, random stream and text state are kept, so its output continues identically.
//
// Requests with n > 1 prefill the prompt once (choice 0); when the prompt is done the other choices fork its
// sequence (shared full pages) and sample their first tokens from the same logits.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/runner.h"
#include "serve/engine/engine.h"
#include "serve/engine/prefix_cache.h"
#include "serve/engine/request_state.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve {

class ServingEngine final : public Engine {
 public:
  ServingEngine(const EngineOptions& opts, std::unique_ptr<model::ModelBackend> backend,
                tok::Tokenizer tokenizer);
  ~ServingEngine() override;

  SubmitResult submit(GenerateRequest req, std::function<void(const GenerateEvent&)> on_event) override;
  void cancel(const std::string& request_id) override;
  EngineStats stats() const override;
  const tok::Tokenizer& tokenizer() const override { return tokenizer_; }
  std::string model_name() const override { return model_name_; }
  int64_t max_context() const override { return max_context_; }
  void shutdown(bool drain) override;
  void flush_cache() override;

 private:
  struct Planned {
    ChoiceState* choice;
    int64_t chunk;
  };

  void loop();
  // Takes submissions, cancellations and flush requests; false when the thread should end.
  bool take_inbox();
  void step();
  std::vector<Planned> plan_step();
  void admit_waiting(std::vector<Planned>& plan, int64_t& budget, int64_t promised);
  void preempt(ChoiceState& c);
  void run_planned(const std::vector<Planned>& plan);
  void after_chunk(ChoiceState& c, int64_t chunk, const float* rows, bool all_rows);
  void spawn_choices(RequestState& r, const float* row);
  void sample_next(ChoiceState& c, const float* row);
  void finish_choice(ChoiceState& c, const std::string& reason, const std::string& error = {});
  void abort_request(RequestState& r, const std::string& error);
  void release_kv(ChoiceState& c);
  void emit_events();
  void finish_round();
  void prune_lists();
  void remove_finished();
  void publish_stats();
  std::string validate(const GenerateRequest& req) const;

  EngineOptions opts_;
  std::string model_name_;
  tok::Tokenizer tokenizer_;
  model::ModelRunner runner_;
  PrefixCache cache_;
  int64_t vocab_ = 0;
  int64_t max_context_ = 0;
  std::vector<int32_t> eos_ids_;

  // Engine-thread state.
  std::list<std::unique_ptr<RequestState>> requests_;
  std::deque<ChoiceState*> waiting_;
  std::vector<ChoiceState*> running_;
  uint64_t admit_clock_ = 0;
  EngineStats counters_;  // the thread's running totals

  // Shared with submitters, under mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_, flushed_cv_;
  std::vector<std::unique_ptr<RequestState>> inbox_;
  std::vector<std::string> cancels_;
  int64_t queued_requests_ = 0;  // submitted, not yet admitted
  bool accepting_ = true, stopping_ = false, drain_ = false;
  uint64_t flush_requested_ = 0, flush_done_ = 0;
  EngineStats published_;
  bool thread_done_ = false;
  std::thread thread_;
  std::once_flag joined_;
  std::atomic<uint64_t> seed_counter_{0x5eed};
};

}  // namespace moe::serve
