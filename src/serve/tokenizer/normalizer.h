#pragma once
// Unicode normalization before pre-tokenization. Byte-level BPE checkpoints (Qwen2/3) ask for NFC, so that
// "é" typed as e + U+0301 gets the same ids as the precomposed form. Implemented with ICU.
#include <string>
#include <string_view>
#include <vector>

namespace moe::tok {

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };

std::string_view normal_form_name(NormalForm form);

// tokenizer.json's normalizer: null, one of the four forms, or a Sequence of them.
struct NormalizerSpec {
  std::vector<NormalForm> forms;  // applied in order; empty = no normalization
};

// Applies the forms to valid UTF-8 text. ASCII is returned untouched, since no form changes it.
std::string normalize(const NormalizerSpec& spec, std::string_view text);

}  // namespace moe::tok
