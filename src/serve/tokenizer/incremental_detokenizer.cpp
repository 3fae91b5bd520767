#include "serve/tokenizer/incremental_detokenizer.h"

#include <utility>

#include "serve/tokenizer/utf8.h"

namespace moe::tok {

IncrementalDetokenizer::IncrementalDetokenizer(Tokenizer tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

std::string IncrementalDetokenizer::push(int32_t id) {
  // The same filtering as Tokenizer::decode, so that the stream and the full decode agree.
  if (!tokenizer_.is_valid_id(id)) return {};
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  if (tokenizer_.decoder_kind() == DecoderKind::kNone && !first_token_) pending_ += ' ';
  first_token_ = false;
  pending_ += tokenizer_.token_bytes(id);

  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Step step = utf8_step(pending_, pos);
    if (step.truncated) break;  // may still complete with the next token's bytes
    if (step.valid_len > 0) {
      out.append(pending_, pos, step.valid_len);
      pos += step.valid_len;
    } else {
      append_utf8(out, kReplacementChar);
      pos += step.invalid_len;
    }
  }
  pending_.erase(0, pos);
  return out;
}

std::string IncrementalDetokenizer::finish() {
  std::string out = to_valid_utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace moe::tok
