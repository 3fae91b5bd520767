#pragma once
// Trains a small byte-level BPE vocabulary from a text corpus, so the project can build a complete tiny model
// (`make demo`) with a tokenizer of its own. Greedy and deterministic: each step merges the most frequent
// adjacent pair, ties broken by the pair's strings, so the same corpus always gives the same files.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/tokenizer/tokenizer_spec.h"

namespace moe::tok {

struct BpeTrainingOptions {
  int32_t num_merges = 300;
  int64_t min_pair_frequency = 2;  // stop early when no pair is this frequent
  // Appended after the learned vocabulary, in this order, as special added tokens.
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  std::string eos_token = "<|im_end|>";
  std::string pad_token = "<|endoftext|>";
  std::string chat_template;  // stored in tokenizer_config.json when not empty
};

// The result uses Qwen2's pipeline (NFC, Qwen2 split regex, byte level), with the 256 byte symbols as ids
// 0..255 in byte order, then one id per merge, then the special tokens.
TokenizerSpec train_byte_level_bpe(std::string_view corpus, const BpeTrainingOptions& options = {});

}  // namespace moe::tok
