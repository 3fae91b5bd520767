// Edge cases on small tokenizers built in the test (no fixtures needed): trainer, writer, added-token flags,
// invalid input, UTF-8 helpers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "serve/tokenizer/bpe_trainer.h"
#include "serve/tokenizer/incremental_detokenizer.h"
#include "serve/tokenizer/tokenizer.h"
#include "serve/tokenizer/tokenizer_files.h"
#include "serve/tokenizer/utf8.h"

namespace moe::tok {
namespace {

const std::string kCorpus =
    "the cat sat on the mat. the dog sat on the log. hello world, hello there!\n"
    "It's a test: numbers 12345 and 67890; code `int main() { return 0; }`\n"
    "Привет мир. 你好世界。 😀😀 the end.\n";

Tokenizer small_tokenizer() {
  BpeTrainingOptions options;
  options.num_merges = 60;
  options.chat_template = "{{ messages }}";
  return Tokenizer(train_byte_level_bpe(kCorpus + kCorpus + kCorpus, options));
}

TEST(Trainer, DeterministicAndRoundTrips) {
  const TokenizerSpec a = train_byte_level_bpe(kCorpus, {}), b = train_byte_level_bpe(kCorpus, {});
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_FALSE(a.merges.empty());
  const Tokenizer t = small_tokenizer();
  EXPECT_EQ(t.decode(t.encode(kCorpus)), kCorpus);
  EXPECT_LT(t.encode("the cat sat").size(), std::string("the cat sat").size()) << "merges should apply";
  EXPECT_EQ(t.eos_ids().size(), 1u);
  EXPECT_EQ(t.token_text(t.eos_ids()[0]), "<|im_end|>");
  EXPECT_EQ(t.chat_template(), "{{ messages }}");
}

TEST(Writer, WrittenFilesLoadToTheSameTokenizer) {
  const Tokenizer t = small_tokenizer();
  const auto dir = std::filesystem::temp_directory_path() / ("moe_tok_writer_" + std::to_string(::getpid()));
  write_tokenizer_files(dir, t.to_spec());
  const Tokenizer loaded = Tokenizer::from_model_dir(dir);
  const std::vector<std::string> samples = {kCorpus, "<|im_start|>user\nthe cat<|im_end|>", ""};
  for (const std::string& s : samples) EXPECT_EQ(loaded.encode(s), t.encode(s)) << s;
  EXPECT_EQ(loaded.eos_ids(), t.eos_ids());
  EXPECT_EQ(loaded.pad_id(), t.pad_id());
  EXPECT_EQ(loaded.chat_template(), t.chat_template());
  EXPECT_EQ(loaded.vocab_size(), t.vocab_size());
  std::filesystem::remove_all(dir);
}

TEST(Encode, EmptyAndWhitespaceOnly) {
  const Tokenizer t = small_tokenizer();
  EXPECT_TRUE(t.encode("").empty());
  EXPECT_EQ(t.decode({}), "");
  const std::vector<std::string> samples = {" ", "   ", "\n", "\t\t", " \r\n \n\n  ", "\u00a0\u3000"};
  for (const std::string& s : samples) {
    const auto ids = t.encode(s);
    EXPECT_FALSE(ids.empty()) << "'" << s << "'";
    EXPECT_EQ(t.decode(ids), s);
  }
}

TEST(Encode, InvalidUtf8BecomesReplacementCharacter) {
  const Tokenizer t = small_tokenizer();
  const std::string bad =
      std::string("ab") + '\xff' + "c" + '\xe2' + '\x82';  // stray byte, truncated sequence
  EXPECT_EQ(t.decode(t.encode(bad)), "ab\uFFFDc\uFFFD");
}

TEST(Encode, CharactersMissingFromTheVocabularyAreDropped) {
  // A vocabulary without the byte 'z': HF's BPE without unk_token drops what it cannot represent.
  TokenizerSpec spec = train_byte_level_bpe("ab ab ab", {});
  spec.vocab.erase("z");
  const Tokenizer t(std::move(spec));
  EXPECT_EQ(t.decode(t.encode("azb")), "ab");
}

TEST(Encode, SpecialTokensWithParseSpecialOff) {
  const Tokenizer t = small_tokenizer();
  const int32_t start = *t.token_id("<|im_start|>");
  const auto parsed = t.encode("x<|im_start|>y", true);
  EXPECT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[1], start);
  const auto literal = t.encode("x<|im_start|>y", false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), start), 0);
  EXPECT_EQ(t.decode(literal), "x<|im_start|>y");
  EXPECT_EQ(t.decode(parsed, true), "xy");
}

TokenizerSpec with_added(AddedToken token) {
  TokenizerSpec spec = train_byte_level_bpe(kCorpus, {});
  token.id = static_cast<int32_t>(spec.vocab.size() + spec.added_tokens.size());
  spec.added_tokens.push_back(token);
  return spec;
}

TEST(AddedTokens, LongestMatchWins) {
  TokenizerSpec spec = with_added({-1, "<tag>", false, false, false, false, false});
  spec.added_tokens.push_back({spec.added_tokens.back().id + 1, "<tag>x", false, false, false, false, false});
  const Tokenizer t(std::move(spec));
  const auto ids = t.encode("<tag>x<tag>");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(t.token_text(ids[0]), "<tag>x");
  EXPECT_EQ(t.token_text(ids[1]), "<tag>");
}

TEST(AddedTokens, StripAndSingleWord) {
  const Tokenizer lstrip(with_added({-1, "<m>", true, true, false, false, false}));
  const int32_t m = *lstrip.token_id("<m>");
  EXPECT_EQ(lstrip.encode("a   <m>b"),
            (std::vector<int32_t>{lstrip.encode("a")[0], m, lstrip.encode("b")[0]}));
  const Tokenizer rstrip(with_added({-1, "<m>", true, false, true, false, false}));
  EXPECT_EQ(rstrip.encode("<m>  b").size(), 2u);
  const Tokenizer single(with_added({-1, "cat", false, false, false, true, false}));
  const int32_t cat = *single.token_id("cat");
  const auto alone = single.encode("a cat sat");
  EXPECT_NE(std::find(alone.begin(), alone.end(), cat), alone.end());
  const auto glued = single.encode("concatenate");
  EXPECT_EQ(std::find(glued.begin(), glued.end(), cat), glued.end());
}

TEST(Utf8, LossyMatchesRustSemantics) {
  // One U+FFFD per maximal invalid subpart: E0 80 is two parts, F0 9F 98 (truncated) is one.
  EXPECT_EQ(to_valid_utf8_lossy("\xE0\x80"), "\uFFFD\uFFFD");
  EXPECT_EQ(to_valid_utf8_lossy("a\xF0\x9F\x98"), "a\uFFFD");
  EXPECT_EQ(to_valid_utf8_lossy("\xF0\x9F\x98x"), "\uFFFDx");
  EXPECT_EQ(to_valid_utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // surrogate
  EXPECT_EQ(to_valid_utf8_lossy("\xC0\xAF"), "\uFFFD\uFFFD");            // overlong
  EXPECT_TRUE(is_valid_utf8("héllo 😀"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST(Stream, HoldsBackPartialCharacters) {
  const Tokenizer t = small_tokenizer();
  const std::string text = "😀 你好 ok";
  const auto ids = t.encode(text);
  IncrementalDetokenizer stream(t);
  std::string joined;
  for (int32_t id : ids) {
    const std::string chunk = stream.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk));
    joined += chunk;
  }
  EXPECT_EQ(stream.pending_bytes(), 0u);
  joined += stream.finish();
  EXPECT_EQ(joined, text);
}

TEST(Stream, InvalidBytesAreReplacedNotHeldForever) {
  const Tokenizer t = small_tokenizer();
  // Byte tokens 0xF0 0x9F (start of an emoji) then 'a': the emoji can no longer complete.
  const int32_t f0 = *t.token_id("ð"), x9f = *t.token_id("Ł"), a = *t.token_id("a");
  IncrementalDetokenizer stream(t);
  EXPECT_EQ(stream.push(f0), "");
  EXPECT_EQ(stream.push(x9f), "");
  EXPECT_EQ(stream.push(a), "\uFFFDa");
  EXPECT_EQ(t.decode(std::vector<int32_t>{f0, x9f, a}), "\uFFFDa");
  EXPECT_EQ(stream.push(f0), "");
  EXPECT_EQ(stream.finish(), "\uFFFD");
}

TEST(Threads, ConcurrentEncodesAgree) {
  // The word cache is shared between threads; results must not depend on who filled it.
  const Tokenizer t = small_tokenizer();
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back(kCorpus.substr(static_cast<size_t>(i) % 50) + std::to_string(i));
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& text : texts) expected.push_back(Tokenizer(t.to_spec()).encode(text));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int th = 0; th < 4; ++th)
    threads.emplace_back([&, th] {
      for (int round = 0; round < 20; ++round)
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i * 7 + static_cast<size_t>(th + round)) % texts.size();
          if (t.encode(texts[k]) != expected[k]) ++mismatches;
        }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Errors, UnknownIdsAndBadFiles) {
  const Tokenizer t = small_tokenizer();
  EXPECT_THROW(t.token_text(1 << 30), InputError);
  EXPECT_EQ(t.decode(std::vector<int32_t>{-5, 1 << 30}), "");
  EXPECT_THROW(Tokenizer::from_tokenizer_json("/nonexistent/tokenizer.json"), InputError);
  EXPECT_THROW(Tokenizer::from_model_dir("/nonexistent"), InputError);
}

}  // namespace
}  // namespace moe::tok
