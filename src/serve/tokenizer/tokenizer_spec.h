#pragma once
// Everything that defines a tokenizer, as plain data: what the loaders produce, what Tokenizer is built from,
// what the writer and the trainer emit.
#include <vector>

#include "serve/tokenizer/added_vocabulary.h"
#include "serve/tokenizer/bpe_model.h"
#include "serve/tokenizer/normalizer.h"
#include "serve/tokenizer/pretokenizer.h"
#include "serve/tokenizer/tokenizer_config.h"

namespace moe::tok {

// tokenizer.json's decoder: ByteLevel maps the byte alphabet back to bytes; None joins tokens with spaces
// (HF's behaviour without a decoder).
enum class DecoderKind { kByteLevel, kNone };

struct TokenizerSpec {
  TokenIdMap vocab;
  MergeList merges;
  BpeOptions bpe;
  std::vector<AddedToken> added_tokens;
  NormalizerSpec normalizer;
  PretokenizerSpec pretokenizer;
  DecoderKind decoder = DecoderKind::kByteLevel;
  TokenizerConfig config;
};

}  // namespace moe::tok
