#pragma once
// Streaming detokenization: ids arrive one at a time and each call returns only text that is complete UTF-8.
// A byte-level token can end in the middle of a character (an emoji or a CJK character is often split over
// two or three tokens); those bytes are held back until the character is complete, so no stream chunk ever
// carries broken UTF-8. Bytes that can never become valid are emitted as U+FFFD right away, so the
// concatenation of all chunks plus finish() equals Tokenizer::decode of all ids.
#include <cstdint>
#include <string>

#include "serve/tokenizer/tokenizer.h"

namespace moe::tok {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(Tokenizer tokenizer, bool skip_special = true);

  // Adds one generated id; returns the text that became complete (often empty, never broken UTF-8).
  std::string push(int32_t id);
  // End of stream: whatever is still held back, as U+FFFD.
  std::string finish();
  // Bytes held back because they start an incomplete character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  bool first_token_ = true;
  std::string pending_;
};

}  // namespace moe::tok
