#include "serve/engine/scheduler.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "moe/tuned_config.h"

namespace moe::serve {

ChoiceState::ChoiceState(RequestState* r, int i, uint64_t seed, const tok::Tokenizer& tokenizer)
    : request(r),
      index(i),
      rng(seed),
      text(tokenizer, r->req.sampling.skip_special_tokens, r->req.sampling.stop) {}

ServingEngine::ServingEngine(const EngineOptions& opts, std::unique_ptr<model::ModelBackend> backend,
                             tok::Tokenizer tokenizer)
    : opts_(opts), tokenizer_(std::move(tokenizer)), runner_(std::move(backend)), cache_(runner_) {
  model_name_ = opts.model_name.empty()
                    ? std::filesystem::path(opts.model_dir).lexically_normal().filename().string()
                    : opts.model_name;
  if (model_name_.empty())  // a trailing slash
    model_name_ = std::filesystem::path(opts.model_dir).lexically_normal().parent_path().filename().string();
  vocab_ = runner_.spec().vocab;
  const int64_t kv_capacity = runner_.pages().num_pages() * runner_.pages().page_size();
  const int64_t configured =
      opts.max_context > 0 ? opts.max_context : runner_.spec().hf.max_position_embeddings;
  max_context_ = configured > 0 ? std::min(configured, kv_capacity) : kv_capacity;
  // A sliding-window model: the runner refuses sequences past the window (ModelSpec::max_sequence).
  if (runner_.spec().max_sequence > 0) max_context_ = std::min(max_context_, runner_.spec().max_sequence);
  // eos: the tokenizer's (tokenizer_config + generation_config) and config.json's.
  eos_ids_ = tokenizer_.eos_ids();
  for (const int64_t id : runner_.spec().hf.eos_token_ids)
    if (std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end())
      eos_ids_.push_back(static_cast<int32_t>(id));
  published_.kv_pages_total = runner_.pages().num_pages();
  thread_ = std::thread([this] { loop(); });
}

ServingEngine::~ServingEngine() {
  shutdown(false);
}

std::string ServingEngine::validate(const GenerateRequest& req) const {
  const int64_t n = static_cast<int64_t>(req.prompt_ids.size());
  if (n == 0) return "the prompt is empty";
  for (size_t i = 0; i < req.prompt_ids.size(); ++i)
    if (req.prompt_ids[i] < 0 || req.prompt_ids[i] >= vocab_)
      return str("prompt token ", i, " has id ", req.prompt_ids[i], ", outside the model's vocabulary of ",
                 vocab_);
  try {
    validate_sampling(req.sampling);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (n + req.sampling.max_tokens > max_context_)
    return str("prompt of ", n, " tokens plus max_tokens ", req.sampling.max_tokens,
               " exceeds the context of ", max_context_);
  if (req.logprob_start_len >= n)
    return str("logprob_start_len ", req.logprob_start_len, " must be below the prompt length ", n);
  if (req.prompt_top_logprobs < 0 || req.prompt_top_logprobs > 20)
    return str("prompt_top_logprobs must be in [0, 20], got ", req.prompt_top_logprobs);
  return {};
}

SubmitResult ServingEngine::submit(GenerateRequest req, std::function<void(const GenerateEvent&)> on_event) {
  if (std::string why = validate(req); !why.empty()) return {SubmitStatus::Invalid, why};
  auto r = std::make_unique<RequestState>();
  r->prompt_len = static_cast<int64_t>(req.prompt_ids.size());
  r->req = std::move(req);
  r->on_event = std::move(on_event);
  // A seeded request gets the same streams every time; choice i draws from seed mixed with i.
  r->seed_base = r->req.sampling.seed ? *r->req.sampling.seed
                                      : SplitMix64(seed_counter_.fetch_add(1) ^ 0x9e3779b97f4a7c15ull).next();
  auto c0 = std::make_unique<ChoiceState>(r.get(), 0, choice_seed(r->seed_base, 0), tokenizer_);
  c0->tokens = r->req.prompt_ids;
  c0->history.add_prompt(r->req.prompt_ids, vocab_);
  r->choices.push_back(std::move(c0));
  r->unfinished = r->req.sampling.n;
  if (r->wants_prompt_logprobs())
    r->prompt_logprobs.resize(static_cast<size_t>(r->prompt_len - r->req.logprob_start_len));
  {
    std::lock_guard lock(mu_);
    if (!accepting_) return {SubmitStatus::ShuttingDown, "the engine is shutting down"};
    if (queued_requests_ >= opts_.max_queue)
      return {SubmitStatus::QueueFull, str("the queue is full (", queued_requests_, " requests waiting)")};
    ++queued_requests_;
    inbox_.push_back(std::move(r));
  }
  cv_.notify_all();
  return {};
}

void ServingEngine::cancel(const std::string& request_id) {
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(request_id);
  }
  cv_.notify_all();
}

EngineStats ServingEngine::stats() const {
  std::lock_guard lock(mu_);
  EngineStats s = published_;
  s.waiting += static_cast<int64_t>(inbox_.size());
  s.tuned_config_fallbacks = tuned_config_fallbacks();  // MoE layers that run on default kernel heuristics
  return s;
}

void ServingEngine::shutdown(bool drain) {
  {
    std::lock_guard lock(mu_);
    accepting_ = false;
    stopping_ = true;
    drain_ = drain;
  }
  cv_.notify_all();
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from a callback: the loop ends by itself
  std::call_once(joined_, [this] {
    if (thread_.joinable()) thread_.join();
  });
}

void ServingEngine::flush_cache() {
  std::unique_lock lock(mu_);
  const uint64_t ticket = ++flush_requested_;
  cv_.notify_all();
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from a callback: done after this step
  flushed_cv_.wait(lock, [&] { return flush_done_ >= ticket || thread_done_; });
}

bool ServingEngine::take_inbox() {
  std::vector<std::unique_ptr<RequestState>> incoming;
  std::vector<std::string> cancels;
  bool flush = false, stop = false, drain = false;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      return !inbox_.empty() || !cancels_.empty() || flush_requested_ > flush_done_ || stopping_ ||
             !waiting_.empty() || !running_.empty();
    });
    incoming.swap(inbox_);
    cancels.swap(cancels_);
    flush = flush_requested_ > flush_done_;
    stop = stopping_;
    drain = drain_;
  }
  for (auto& r : incoming) {
    ++counters_.requests_total;
    counters_.prompt_tokens_total += r->prompt_len;
    waiting_.push_back(r->choices[0].get());
    requests_.push_back(std::move(r));
  }
  for (const std::string& id : cancels)
    for (auto& r : requests_)
      if (r->req.request_id == id && r->unfinished > 0) abort_request(*r, "");
  if (stop && !drain)
    for (auto& r : requests_)
      if (r->unfinished > 0) abort_request(*r, "the engine is shutting down");
  if (flush) cache_.evict_all_unreferenced();
  finish_round();  // before the flush is reported done, so a stats() after flush_cache() sees its effect
  if (flush) {
    {
      std::lock_guard lock(mu_);
      flush_done_ = flush_requested_;
    }
    flushed_cv_.notify_all();
  }
  return !(stop && waiting_.empty() && running_.empty());
}

void ServingEngine::loop() {
  while (take_inbox()) {
    if (!waiting_.empty() || !running_.empty()) step();
    finish_round();
  }
  std::lock_guard lock(mu_);
  thread_done_ = true;
  flushed_cv_.notify_all();
}

void ServingEngine::release_kv(ChoiceState& c) {
  if (!c.seq) return;
  // Whatever was computed stays reusable: its full pages go to the prefix cache before the sequence goes.
  cache_.insert(c.tokens, c.kv_len, runner_.kv(*c.seq).pages);
  runner_.release_sequence(*c.seq);
  c.seq.reset();
  c.kv_len = 0;
}

void ServingEngine::preempt(ChoiceState& c) {
  release_kv(c);
  running_.erase(std::remove(running_.begin(), running_.end(), &c), running_.end());
  waiting_.push_front(&c);
  ++counters_.preemptions_total;
}

std::vector<ServingEngine::Planned> ServingEngine::plan_step() {
  std::vector<Planned> plan;
  int64_t budget = opts_.chunked_prefill_tokens;
  std::sort(running_.begin(), running_.end(),
            [](const ChoiceState* a, const ChoiceState* b) { return a->admitted < b->admitted; });
  for (ChoiceState* c : running_) {
    const int64_t remaining = static_cast<int64_t>(c->tokens.size()) - c->kv_len;
    const int64_t chunk = remaining == 1 ? 1 : std::min(remaining, budget);
    if (chunk <= 0) continue;
    if (remaining > 1) budget -= chunk;
    plan.push_back({c, chunk});
  }
  // Pages for the running choices: free pool, then evict cached pages, then preempt the newest.
  int64_t need = 0;
  for (;;) {
    need = 0;
    for (const Planned& p : plan)
      need += runner_.pages().pages_needed(runner_.kv(*p.choice->seq), p.choice->kv_len + p.chunk);
    if (cache_.ensure_free(need) || running_.size() <= 1) break;
    ChoiceState* victim = running_.back();
    plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const Planned& p) { return p.choice == victim; }),
               plan.end());
    preempt(*victim);
  }
  admit_waiting(plan, budget, need);
  return plan;
}

void ServingEngine::admit_waiting(std::vector<Planned>& plan, int64_t& budget, int64_t promised) {
  // `promised`: free pages the planned step will take (sequences grow at step time).
  const int64_t ps = runner_.pages().page_size();
  while (!waiting_.empty() && budget > 0) {
    ChoiceState& c = *waiting_.front();
    RequestState& r = *c.request;
    const int64_t slots = (c.index == 0 && !r.choices_spawned) ? r.req.sampling.n : 1;
    if (!running_.empty() && static_cast<int64_t>(running_.size()) + slots > opts_.max_batch) break;
    // At least one token is computed, so there are logits; prompt logprobs need the logits from position
    // logprob_start_len - 1 on.
    int64_t limit = static_cast<int64_t>(c.tokens.size()) - 1;
    if (r.wants_prompt_logprobs() && r.prompt_logprobs.size() > 0 && !r.choices_spawned && c.index == 0)
      limit = std::min(limit, std::max<int64_t>(r.req.logprob_start_len - 1, 0));
    PrefixCache::Match m = cache_.match(c.tokens);
    std::vector<int32_t>& pages = m.pages;
    const int64_t cached = std::min(m.tokens, limit);
    pages.resize(static_cast<size_t>((cached + ps - 1) / ps));
    const int64_t chunk = std::min(static_cast<int64_t>(c.tokens.size()) - cached, budget);
    const int64_t need = (cached + chunk + ps - 1) / ps - cached / ps;
    for (const int32_t p : pages) runner_.retain_page(p);  // not evicted while we make room
    const bool fits = cache_.ensure_free(promised + need);
    if (fits) {
      c.seq = runner_.add_sequence_from_pages(pages, cached);
      promised += runner_.pages().pages_needed(runner_.kv(*c.seq), cached + chunk);
    }
    for (const int32_t p : pages) runner_.release_page(p);
    if (!fits) {
      if (running_.empty() && plan.empty()) {
        // Cannot happen for a request that passed validation (a lone sequence fits the KV capacity).
        waiting_.pop_front();
        abort_request(r, "the KV cache cannot hold this request");
        continue;
      }
      break;
    }
    c.kv_len = cached;
    c.admitted = ++admit_clock_;
    if (!r.admitted_once) {
      r.admitted_once = true;
      r.cached_tokens = cached;
      counters_.prefix_cache_queried_tokens += r.prompt_len;
      counters_.prefix_cache_hit_tokens += cached;
      std::lock_guard lock(mu_);
      --queued_requests_;
    }
    waiting_.pop_front();
    running_.push_back(&c);
    plan.push_back({&c, chunk});
    budget -= chunk;
  }
}

void ServingEngine::step() {
  const std::vector<Planned> plan = plan_step();
  if (!plan.empty()) run_planned(plan);
}

void ServingEngine::run_planned(const std::vector<Planned>& plan) {
  auto input_of = [](const Planned& p) {
    const ChoiceState& c = *p.choice;
    const RequestState& r = *c.request;
    model::StepInput in;
    in.seq = *c.seq;
    in.tokens.assign(c.tokens.begin() + c.kv_len, c.tokens.begin() + c.kv_len + p.chunk);
    in.all_logits =
        r.wants_prompt_logprobs() && c.index == 0 && !r.choices_spawned && c.kv_len < r.prompt_len;
    return in;
  };
  const int64_t V = vocab_;
  std::vector<model::StepInput> inputs;
  // Rows per input: every new token's when all_logits (prompt logprobs), else the last one's.
  for (const Planned& p : plan) inputs.push_back(input_of(p));
  std::vector<float> logits;
  try {
    logits = runner_.step(inputs);
  } catch (const std::exception&) {
    // Find the culprits: each input alone; only those that fail again are aborted.
    for (size_t i = 0; i < plan.size(); ++i) {
      if (plan[i].choice->finished) continue;
      try {
        const std::vector<float> one = runner_.step({inputs[i]});
        after_chunk(*plan[i].choice, plan[i].chunk, one.data(), inputs[i].all_logits);
      } catch (const std::exception& e) {
        abort_request(*plan[i].choice->request, e.what());
      }
    }
    return;
  }
  int64_t row = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Planned& p = plan[i];
    const int64_t nrows = inputs[i].all_logits ? p.chunk : 1;
    if (!p.choice->finished) {
      try {
        after_chunk(*p.choice, p.chunk, logits.data() + row * V, inputs[i].all_logits);
      } catch (const std::exception& e) {
        abort_request(*p.choice->request, e.what());
      }
    }
    row += nrows;
  }
}

void ServingEngine::finish_round() {
  // Stats first, so whoever sees a final event also sees it counted.
  prune_lists();
  publish_stats();
  emit_events();
  remove_finished();
}

void ServingEngine::prune_lists() {
  auto done = [](const ChoiceState* c) { return c->finished; };
  running_.erase(std::remove_if(running_.begin(), running_.end(), done), running_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), done), waiting_.end());
}

void ServingEngine::remove_finished() {
  prune_lists();  // emit_events may have aborted requests whose consumer failed
  requests_.remove_if([](const std::unique_ptr<RequestState>& r) {
    if (r->unfinished > 0) return false;
    if (r->callback_failed) return true;
    for (const auto& c : r->choices)
      if (c->has_output()) return false;  // its final event is still to go out
    return true;
  });
}

void ServingEngine::publish_stats() {
  EngineStats s = counters_;
  s.running = static_cast<int64_t>(running_.size());
  s.waiting = static_cast<int64_t>(waiting_.size());
  s.kv_pages_total = runner_.pages().num_pages();
  s.kv_pages_used = s.kv_pages_total - runner_.pages().free_pages();
  std::lock_guard lock(mu_);
  published_ = s;
}

std::unique_ptr<Engine> make_engine(const EngineOptions& opts) {
  require_input(!opts.model_dir.empty(), "the engine needs a model directory");
  require_input(opts.max_batch >= 1, "max_batch must be >= 1, got ", opts.max_batch);
  require_input(opts.max_queue >= 1, "max_queue must be >= 1, got ", opts.max_queue);
  require_input(opts.chunked_prefill_tokens >= 1, "chunked_prefill_tokens must be >= 1, got ",
                opts.chunked_prefill_tokens);
  require_input(opts.kv_pages >= 1 && opts.page_size >= 1, "kv_pages (", opts.kv_pages, ") and page_size (",
                opts.page_size, ") must be >= 1");
  model::BackendOptions bo = opts.backend_options;
  bo.page_size = opts.page_size;
  bo.num_pages = opts.kv_pages;
  bo.verbose = opts.verbose;
  auto backend = model::open_model_backend(opts.model_dir, opts.backend, bo);
  tok::Tokenizer tokenizer =
      tok::Tokenizer::from_model_dir(opts.tokenizer_dir.empty() ? opts.model_dir : opts.tokenizer_dir);
  return std::make_unique<ServingEngine>(opts, std::move(backend), std::move(tokenizer));
}

}  // namespace moe::serve
