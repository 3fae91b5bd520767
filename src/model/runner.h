#pragma once
// Host-side scheduling of one model: sequences, their KV page tables and the step loop (prefill of T tokens,
// decode of one token per sequence, any mix of both in one batch). It speaks only to a ModelBackend, so the
// same code drives the CPU reference and a CUDA backend.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/kv_pages.h"

namespace moe::model {

using SeqId = int64_t;

struct StepInput {
  SeqId seq = 0;
  std::vector<int32_t> tokens;  // appended after the sequence's cached tokens
  bool all_logits = false;
};

class ModelRunner {
 public:
  explicit ModelRunner(std::unique_ptr<ModelBackend> backend);

  const ModelSpec& spec() const { return backend_->spec(); }
  ModelBackend& backend() { return *backend_; }
  const KvPagePool& pages() const { return pool_; }

  SeqId add_sequence();
  // A new sequence that starts with the first `tokens` cached tokens of `src` (prefix cache): full pages are
  // shared, a partial last page is copied.
  SeqId fork_sequence(SeqId src, int64_t tokens);
  // A new sequence whose first `tokens` cached tokens live in `pages` (a prefix cache's pages, in order,
  // tokens <= pages * page_size): full pages are shared, a partial last page is copied.
  SeqId add_sequence_from_pages(const std::vector<int32_t>& pages, int64_t tokens);
  void release_sequence(SeqId seq);
  const SequenceKv& kv(SeqId seq) const;
  // Page references held outside sequences (the serving engine's prefix cache).
  void retain_page(int32_t page) { pool_.retain_page(page); }
  void release_page(int32_t page) { pool_.release_page(page); }
  int64_t length(SeqId seq) const;

  // One forward step; returns logits [rows, vocab] (per input in order: every new token, or the last one).
  std::vector<float> step(const std::vector<StepInput>& inputs);

  // Convenience: one prefill of `tokens` in a fresh sequence, logits of every token [T, vocab]; frees it
  // after.
  std::vector<float> prefill_logits(const std::vector<int32_t>& tokens);

 private:
  SequenceKv& get(SeqId seq);
  std::unique_ptr<ModelBackend> backend_;
  KvPagePool pool_;
  std::map<SeqId, SequenceKv> seqs_;
  SeqId next_id_ = 0;
};

}  // namespace moe::model
