#!/usr/bin/env python3
"""Compares moecpp's tokenizer with HF `tokenizers` on a large, deterministic, varied corpus.

The HF reference is built from the Qwen2 fixture (vocab.json + merges.txt) with Qwen2's pipeline: NFC,
Split(regex, Isolated) + ByteLevel(add_prefix_space=False, use_regex=False), ByteLevel decoder, and the three
special tokens. It is saved as tokenizer.json; tokenize_tool then loads BOTH that file and vocab.json +
merges.txt, and for every string ids, ids with special tokens as text, and decode must equal HF's; streamed
decoding must give only valid UTF-8 chunks that add up to the full decode. Finally a tokenizer trained by our
bpe_trainer is written and loaded by HF, which must agree with us on it too.

Exit codes: 0 all equal, 1 a mismatch, 77 skipped (../shared absent).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import corpus_gen

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def build_hf_qwen2(fixtures):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    tok = Tokenizer(models.BPE.from_file(os.path.join(fixtures, "vocab.json"), os.path.join(fixtures, "merges.txt")))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    return tok


# Other pipelines checkpoints use, on the same vocabulary: (name, pre-tokenizer, BPE options, extra added tokens).
def variant_configs():
    from tokenizers import AddedToken, Regex, pre_tokenizers
    llama3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    added = [AddedToken("<tag>", lstrip=True, special=False, normalized=False),
             AddedToken("<|im_end|>", rstrip=True, special=True, normalized=False),
             AddedToken("cat", single_word=True, special=False, normalized=False),
             AddedToken("café", special=False, normalized=True),
             AddedToken("<tag>x", special=False, normalized=False)]
    return [
        ("gpt2-style", pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True), {}, []),
        ("llama3-style", pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(llama3), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), {"ignore_merges": True}, []),
        ("split-behaviors", pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Split(Regex(r"\p{Han}+"), behavior="merged_with_previous"),
            pre_tokenizers.Split(" ", behavior="merged_with_next"),
            pre_tokenizers.Split(Regex(r"[.,!?]"), behavior="contiguous", invert=True),
            pre_tokenizers.Split(Regex(r"\t"), behavior="removed"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), {}, []),
        ("added-token-flags", pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), {}, added),
    ]


def with_added_tokens(rng, text):
    """Inserts added-token text at random places, with and without surrounding whitespace and words."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        snippet = rng.choice(["<tag>", "<tag>x", " <|im_end|>  ", "cat", " cat ", "concat", "café", "cafe\u0301",
                              "   <tag> ", "<|im_end|>\n", "cat's"])
        text = text[:at] + snippet + text[at:]
    return text


def build_hf_variant(fixtures, pre_tokenizer, bpe_options, added):
    from tokenizers import Tokenizer, decoders, models, normalizers
    tok = Tokenizer(models.BPE.from_file(os.path.join(fixtures, "vocab.json"), os.path.join(fixtures, "merges.txt"),
                                         **bpe_options))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS[:2]])
    tok.add_tokens(added)
    return tok


def hf_results(tok, texts):
    results = []
    for text in texts:
        tok.encode_special_tokens = False
        ids = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = True
        literal = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        results.append({"ids": ids, "ids_literal": literal, "decoded": tok.decode(ids, skip_special_tokens=False)})
    return results


def run_tool(tool, args, texts):
    stdin = "".join(json.dumps(t) + "\n" for t in texts)
    proc = subprocess.run([tool, "encode"] + args, input=stdin.encode(), capture_output=True, timeout=500)
    if proc.returncode != 0:
        sys.exit(f"tokenize_tool {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()}")
    lines = proc.stdout.decode().split("\n")[:-1]  # not splitlines(): U+2028 etc. appear raw in JSON
    assert len(lines) == len(texts), f"tool returned {len(lines)} lines for {len(texts)} inputs"
    return [json.loads(line) for line in lines]


def compare(name, texts, ours, reference):
    mismatches = 0
    for text, got, want in zip(texts, ours, reference):
        problems = [key for key in ("ids", "ids_literal", "decoded") if got[key] != want[key]]
        if not got["stream_ok"]:
            problems.append("stream")
        if problems:
            mismatches += 1
            if mismatches <= 10:
                print(f"[{name}] MISMATCH {problems} for {text!r}")
                for key in problems:
                    if key != "stream":
                        print(f"    ours: {got[key]!r}\n    hf:   {want[key]!r}")
    total_ids = sum(len(w["ids"]) for w in reference)
    print(f"[{name}] {len(texts) - mismatches}/{len(texts)} strings identical ({total_ids} HF ids)")
    return mismatches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--count", type=int, default=10000)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.fixtures, "vocab.json")):
        print(f"SKIPPED: ../shared absent ({args.fixtures} not found)")
        return 77

    texts = corpus_gen.generate(random.Random(20240607), args.count)
    print(f"corpus: {len(texts)} strings, {sum(len(t.encode()) for t in texts)} bytes")
    hf = build_hf_qwen2(args.fixtures)
    reference = hf_results(hf, texts)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "tokenizer.json")
        hf.save(json_path)
        failures += compare("tokenizer.json", texts, run_tool(args.tool, ["--json", json_path], texts), reference)
        vocab_args = ["--vocab", os.path.join(args.fixtures, "vocab.json"),
                      "--merges", os.path.join(args.fixtures, "merges.txt"),
                      "--added", os.path.join(args.fixtures, "added_tokens.json"),
                      "--config", os.path.join(args.fixtures, "tokenizer_config.json")]
        failures += compare("vocab+merges", texts, run_tool(args.tool, vocab_args, texts), reference)

        # Our trainer + writer: HF must read the files we write and tokenize exactly as we do.
        corpus_path = os.path.join(tmp, "corpus.txt")
        with open(corpus_path, "w", encoding="utf-8") as f:
            f.write("\n".join(texts[:1500]))
        trained_dir = os.path.join(tmp, "trained")
        subprocess.run([args.tool, "train", corpus_path, trained_dir, "400"], check=True)
        from tokenizers import Tokenizer
        trained = Tokenizer.from_file(os.path.join(trained_dir, "tokenizer.json"))
        failures += compare("trained", texts, run_tool(args.tool, ["--dir", trained_dir], texts),
                            hf_results(trained, texts))
        # Other pre-tokenizers, BPE options and added-token flags, on a subset with added tokens inserted.
        rng = random.Random(7)
        subset = [with_added_tokens(rng, t) for t in texts[:5000]]
        for name, pre_tokenizer, bpe_options, added in variant_configs():
            variant = build_hf_variant(args.fixtures, pre_tokenizer, bpe_options, added)
            path = os.path.join(tmp, name + ".json")
            variant.save(path)
            failures += compare(name, subset, run_tool(args.tool, ["--json", path], subset), hf_results(variant, subset))
    print("OK" if failures == 0 else f"FAILED: {failures} mismatching strings")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
