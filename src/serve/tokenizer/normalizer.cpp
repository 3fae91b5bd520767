#include "serve/tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <algorithm>

#include "core/error.h"

namespace moe::tok {

std::string_view normal_form_name(NormalForm form) {
  switch (form) {
    case NormalForm::kNFC:
      return "NFC";
    case NormalForm::kNFD:
      return "NFD";
    case NormalForm::kNFKC:
      return "NFKC";
    case NormalForm::kNFKD:
      return "NFKD";
  }
  return "?";
}

namespace {

const icu::Normalizer2& icu_normalizer(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNFC:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNFD:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNFKC:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNFKD:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  require(U_SUCCESS(status) && n != nullptr, "tokenizer: ICU has no ", normal_form_name(form),
          " normalizer: ", u_errorName(status));
  return *n;
}

}  // namespace

std::string normalize(const NormalizerSpec& spec, std::string_view text) {
  std::string current(text);
  if (spec.forms.empty()) return current;
  const bool ascii =
      std::all_of(text.begin(), text.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
  if (ascii) return current;
  for (NormalForm form : spec.forms) {
    std::string next;
    icu::StringByteSink<std::string> sink(&next, static_cast<int32_t>(current.size()));
    UErrorCode status = U_ZERO_ERROR;
    icu_normalizer(form).normalizeUTF8(
        0, icu::StringPiece(current.data(), static_cast<int32_t>(current.size())), sink, nullptr, status);
    require(U_SUCCESS(status), "tokenizer: ", normal_form_name(form),
            " normalization failed: ", u_errorName(status));
    current = std::move(next);
  }
  return current;
}

}  // namespace moe::tok
