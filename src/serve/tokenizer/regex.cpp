#define PCRE2_CODE_UNIT_WIDTH 8
#include "serve/tokenizer/regex.h"

#include <pcre2.h>

#include "core/error.h"

namespace moe::tok {

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// Per-thread match state: match data and a JIT stack big enough for long whitespace or letter runs (the
// default 32 KiB stack is not). Patterns are shared between threads, match state is not.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, jit_stack); }
  ~MatchScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
};

size_t utf8_char_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace

Regex::Regex(std::string pattern, bool literal)
    : pattern_(std::move(pattern)), literal_(literal), compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  // PCRE2_LITERAL refuses PCRE2_UCP (and needs no Unicode classes anyway).
  const uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(), options,
                                  &error, &error_offset, nullptr);
  if (compiled_->code == nullptr)
    fail_input("tokenizer: cannot compile split pattern '", pattern_, "' at offset ", error_offset, ": ",
               pcre2_message(error));
  // JIT is an optimisation only: without it (unsupported platform) the interpreter gives the same matches.
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

std::vector<MatchSpan> Regex::find_all(std::string_view text) const {
  thread_local MatchScratch scratch;
  std::vector<MatchSpan> spans;
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    // NO_UTF_CHECK: the text was validated once; PCRE2 would otherwise re-check the rest of it on every call.
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), offset,
                                                    PCRE2_NO_UTF_CHECK, scratch.data, scratch.context)
                                  : pcre2_match(compiled_->code, subject, text.size(), offset,
                                                PCRE2_NO_UTF_CHECK, scratch.data, scratch.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("tokenizer: matching pattern '", pattern_, "' failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(scratch.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      spans.push_back({begin, end});
      offset = end;
    } else {
      if (begin >= text.size()) break;
      offset = begin + utf8_char_len(static_cast<unsigned char>(text[begin]));
    }
  }
  return spans;
}

}  // namespace moe::tok
