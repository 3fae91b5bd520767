// The scheduler's per-choice work after a step: prompt logprobs, forking the other choices of a request,
// sampling, stop conditions, finishing and delivering events.
#include <algorithm>

#include "core/error.h"
#include "serve/engine/scheduler.h"

namespace moe::serve {

void ServingEngine::after_chunk(ChoiceState& c, int64_t chunk, const float* rows, bool all_rows) {
  RequestState& r = *c.request;
  const int64_t V = vocab_;
  const int64_t old = c.kv_len;
  c.kv_len += chunk;
  if (all_rows) {
    // Row j holds the distribution of the token at position old + j + 1.
    const int64_t start = r.req.logprob_start_len;
    if (old == 0 && start == 0) r.prompt_logprobs[0] = TokenLogprob{c.tokens[0], std::nullopt, {}};
    for (int64_t j = 0; j < chunk; ++j) {
      const int64_t pos = old + j + 1;
      if (pos < start || pos >= r.prompt_len) continue;
      r.prompt_logprobs[static_cast<size_t>(pos - start)] =
          token_logprob(rows + j * V, V, c.tokens[static_cast<size_t>(pos)], r.req.prompt_top_logprobs);
    }
  }
  if (c.kv_len < static_cast<int64_t>(c.tokens.size())) return;  // more prefill chunks to come
  const float* last = all_rows ? rows + (chunk - 1) * V : rows;
  if (c.index == 0 && !r.choices_spawned) {
    r.choices_spawned = true;
    cache_.insert(c.tokens, c.kv_len, runner_.kv(*c.seq).pages);
    if (r.req.sampling.n > 1) spawn_choices(r, last);
  }
  sample_next(c, last);
}

void ServingEngine::spawn_choices(RequestState& r, const float* row) {
  ChoiceState& c0 = *r.choices[0];
  const int64_t ps = runner_.pages().page_size();
  for (int i = 1; i < r.req.sampling.n; ++i) {
    auto c = std::make_unique<ChoiceState>(&r, i, choice_seed(r.seed_base, i), tokenizer_);
    c->tokens = r.req.prompt_ids;
    c->history.add_prompt(r.req.prompt_ids, vocab_);
    ChoiceState& ci = *c;
    r.choices.push_back(std::move(c));
    // The fork shares the prompt's full pages and copies a partial last page, which needs one free page.
    if (cache_.ensure_free(r.prompt_len % ps != 0 ? 1 : 0)) {
      ci.seq = runner_.fork_sequence(*c0.seq, r.prompt_len);
      ci.kv_len = r.prompt_len;
      ci.admitted = ++admit_clock_;
      running_.push_back(&ci);
      sample_next(ci, row);
    } else {
      waiting_.push_front(&ci);  // recomputes its last prompt token later, from the prefix cache
    }
  }
}

void ServingEngine::sample_next(ChoiceState& c, const float* row) {
  const SamplingParams& sp = c.request->req.sampling;
  const int64_t V = vocab_;
  std::vector<float> logits(row, row + V);
  apply_penalties(sp, c.history, logits.data(), V);
  if (c.generated < sp.min_tokens) {
    mask_tokens(eos_ids_, logits.data(), V);
    mask_tokens(sp.stop_token_ids, logits.data(), V);
  }
  const int32_t id = sample_token(sp, logits.data(), V, c.rng);
  // Logprobs of the raw logits (before penalties and temperature).
  if (sp.logprobs) c.pending.new_logprobs.push_back(token_logprob(row, V, id, sp.top_logprobs));
  c.tokens.push_back(id);
  ++c.generated;
  c.history.add_generated(id, V);
  c.pending.new_ids.push_back(id);
  ++counters_.generation_tokens_total;

  const bool stop_id =
      std::find(sp.stop_token_ids.begin(), sp.stop_token_ids.end(), id) != sp.stop_token_ids.end() ||
      (!sp.ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end());
  if (stop_id) {  // the token itself is not text
    c.pending.new_text += c.text.finish();
    finish_choice(c, "stop");
    return;
  }
  c.pending.new_text += c.text.push(id);
  if (c.text.stopped()) {
    finish_choice(c, "stop");
  } else if (c.generated >= sp.max_tokens) {
    c.pending.new_text += c.text.finish();
    if (c.text.stopped())
      finish_choice(c, "stop");
    else
      finish_choice(c, "length");
  }
}

void ServingEngine::finish_choice(ChoiceState& c, const std::string& reason, const std::string& error) {
  if (c.finished) return;
  c.finished = true;
  c.pending.finished = true;
  c.pending.finish_reason = reason;
  c.pending.error = error;
  release_kv(c);
  RequestState& r = *c.request;
  if (reason == "abort") r.aborted = true;
  if (--r.unfinished == 0) ++(r.aborted ? counters_.requests_aborted : counters_.requests_finished);
}

void ServingEngine::abort_request(RequestState& r, const std::string& error) {
  if (!r.admitted_once) {
    r.admitted_once = true;
    std::lock_guard lock(mu_);
    --queued_requests_;
  }
  // Choices that were never forked still get their final event.
  if (!r.choices_spawned) {
    r.choices_spawned = true;
    for (int i = 1; i < r.req.sampling.n; ++i)
      r.choices.push_back(std::make_unique<ChoiceState>(&r, i, 0, tokenizer_));
  }
  for (auto& c : r.choices) finish_choice(*c, "abort", error);
}

void ServingEngine::emit_events() {
  std::vector<RequestState*> failed;
  for (auto& rp : requests_) {
    RequestState& r = *rp;
    for (auto& cp : r.choices) {
      ChoiceState& c = *cp;
      if (!c.has_output()) continue;
      GenerateEvent ev = std::move(c.pending);
      c.pending = GenerateEvent{};
      ev.choice = c.index;
      ev.prompt_tokens = r.prompt_len;
      ev.completion_tokens = c.generated;
      ev.cached_tokens = r.cached_tokens;
      if (!c.first_event_sent && r.wants_prompt_logprobs()) ev.prompt_logprobs = r.prompt_logprobs;
      c.first_event_sent = true;
      if (r.callback_failed) continue;
      try {
        r.on_event(ev);
      } catch (...) {
        // A broken consumer (e.g. a closed connection that throws) cancels its own request only.
        r.callback_failed = true;
        failed.push_back(&r);
      }
    }
  }
  for (RequestState* r : failed)
    if (r->unfinished > 0) abort_request(*r, "the event consumer failed");
}

}  // namespace moe::serve
