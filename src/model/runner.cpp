#include "model/runner.h"

#include "core/error.h"

namespace moe::model {

ModelRunner::ModelRunner(std::unique_ptr<ModelBackend> backend)
    : backend_(std::move(backend)), pool_(backend_->num_pages(), backend_->page_size()) {}

SequenceKv& ModelRunner::get(SeqId seq) {
  const auto it = seqs_.find(seq);
  require(it != seqs_.end(), "unknown sequence ", seq);
  return it->second;
}

SeqId ModelRunner::add_sequence() {
  seqs_[next_id_] = SequenceKv{};
  return next_id_++;
}

SeqId ModelRunner::fork_sequence(SeqId src, int64_t tokens) {
  SequenceKv forked =
      pool_.fork(get(src), tokens, [&](int32_t from, int32_t to) { backend_->copy_kv_page(from, to); });
  seqs_[next_id_] = std::move(forked);
  return next_id_++;
}

SeqId ModelRunner::add_sequence_from_pages(const std::vector<int32_t>& pages, int64_t tokens) {
  SequenceKv src{pages, static_cast<int64_t>(pages.size()) * pool_.page_size()};
  SequenceKv seq =
      pool_.fork(src, tokens, [&](int32_t from, int32_t to) { backend_->copy_kv_page(from, to); });
  seqs_[next_id_] = std::move(seq);
  return next_id_++;
}

const SequenceKv& ModelRunner::kv(SeqId seq) const {
  const auto it = seqs_.find(seq);
  require(it != seqs_.end(), "unknown sequence ", seq);
  return it->second;
}

void ModelRunner::release_sequence(SeqId seq) {
  pool_.release(get(seq));
  seqs_.erase(seq);
}

int64_t ModelRunner::length(SeqId seq) const {
  const auto it = seqs_.find(seq);
  require(it != seqs_.end(), "unknown sequence ", seq);
  return it->second.length;
}

std::vector<float> ModelRunner::step(const std::vector<StepInput>& inputs) {
  std::vector<StepSequence> batch;
  for (const StepInput& in : inputs) {
    require(!in.tokens.empty(), "step input for sequence ", in.seq, " has no tokens");
    SequenceKv& kv = get(in.seq);
    const int64_t length = kv.length + static_cast<int64_t>(in.tokens.size());
    const int64_t limit = spec().max_sequence;
    require_input(
        limit <= 0 || length <= limit, "sequence of ", length,
        " tokens: this model's layers attend through a sliding window of ", limit,
        " tokens (config.json sliding_window), which moecpp does not implement yet; within the window "
        "it equals full attention, so sequences are limited to ",
        limit, " tokens");
    pool_.reserve(kv, length);
    batch.push_back(StepSequence{in.tokens, kv.length, kv.pages, in.all_logits});
  }
  std::vector<float> logits = backend_->forward(batch);
  for (const StepInput& in : inputs) get(in.seq).length += static_cast<int64_t>(in.tokens.size());
  return logits;
}

std::vector<float> ModelRunner::prefill_logits(const std::vector<int32_t>& tokens) {
  const SeqId s = add_sequence();
  std::vector<float> logits;
  try {
    logits = step({StepInput{s, tokens, true}});
  } catch (...) {
    release_sequence(s);
    throw;
  }
  release_sequence(s);
  return logits;
}

}  // namespace moe::model
