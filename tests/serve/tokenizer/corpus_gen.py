"""Deterministic generator of a varied tokenizer test corpus (used by compare_hf.py).

Every string comes from a seeded random.Random, so runs are reproducible. Categories: English prose with
contractions, several scripts (CJK, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Hangul), emoji with ZWJ
sequences / skin tones / flags / keycaps, whitespace runs (tabs, CRLF, NBSP, ideographic space), numbers,
code, special tokens inside text (whole and broken), decomposed characters that NFC composes, and random code
points from all planes. Mixed strings concatenate pieces of all kinds.
"""

import unicodedata

WORDS = ("the of and to in is you that it he was for on are as with his they I at be this have from or one had "
         "by word but not what all were we when your can said there use an each which she do how their if will "
         "up other about out many then them these so some her would make like him into time has look two more "
         "Hello World OpenAI Qwen tokenizer BPE naïve café résumé coöperate façade jalapeño Zürich").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "’s", "'x"]
SCRIPTS = {
    "cjk": [(0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7A3), (0x3000, 0x303F)],
    "cyrillic": [(0x0410, 0x044F)],
    "greek": [(0x0391, 0x03C9)],
    "arabic": [(0x0621, 0x064A), (0x064B, 0x0652), (0x0660, 0x0669)],
    "hebrew": [(0x05D0, 0x05EA), (0x05B0, 0x05BC)],
    "devanagari": [(0x0905, 0x0939), (0x093E, 0x094D), (0x0966, 0x096F)],
    "thai": [(0x0E01, 0x0E3A), (0x0E40, 0x0E4E)],
    "latin_ext": [(0x00C0, 0x024F), (0x1E00, 0x1EFF)],
}
EMOJI = ["😀", "😶‍🌫️", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👍🏽", "🇫🇷", "🇯🇵", "1️⃣", "❤️", "🧑🏿‍💻", "🤖", "🦀", "✨", "☕",
         "👩‍❤️‍💋‍👨", "🐈‍⬛", "🫠", "🫶🏻", "©️", "™"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n", "\u00a0", "\u2003", "\u3000", "\u200b", "\u2028",
          "\x0b", "\x0c", "\r", "\u0085", "        "]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|", "<|im_end", "im_start|>", "<|>", "<||>",
            "<|im_start|><|im_end|>"]
CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "int main(int argc, char** argv) {\n\treturn argc > 1 ? 0 : -1;\n}\n",
    '{"key": [1, 2.5, -3e10, null, true], "nested": {"a": "b"}}',
    "for (size_t i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "    if x != y && !z || (a << 2) >>= 3: pass\n\n\n",
    "<div class=\"main\">&nbsp;&amp;</div>",
    "https://example.com/path?q=1&r=two#frag",
    "$ ls -la | grep '.cpp' > out.txt 2>&1",
    "λx. x + 1 ≠ ∑ᵢ xᵢ² ≤ ∞",
]
DECOMPOSED = ["e\u0301", "A\u030a", "o\u0308", "n\u0303", "\u1100\u1161\u11a8", "c\u0327", "a\u0301\u0323",
              "\u0065\u0302\u0301", "Å", "\u212b", "\u00c5", "ﬁ", "ｆｕｌｌ", "①"]


def code_point(rng):
    # Random scalar values from all planes, weighted toward the BMP; surrogates cannot occur in text.
    # Only code points assigned in Unicode 14 (plus private use): Debian 12's PCRE2 knows Unicode 14, while
    # HF's Oniguruma knows Unicode 16, so a letter added since (e.g. U+13F6B, Egyptian Hieroglyphs Ext-A)
    # would be \p{L} for HF but not for us. Python 3.11's unicodedata is Unicode 14, a convenient
    # filter (a newer Python lets the few letters of Unicode 15 through).
    while True:
        plane = rng.choice([0, 0, 0, 0, 1, 1, 2, 14, 15])
        cp = plane * 0x10000 + rng.randrange(0x10000)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)) == "Cn":
            continue
        return chr(cp)


def script_word(rng, script):
    ranges = SCRIPTS[script]
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(1, 8)))


def number(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return str(rng.randrange(10 ** rng.randint(1, 12)))
    if kind == 1:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}f}"
    if kind == 2:
        return "٠١٢٣٤٥٦٧٨٩"[rng.randrange(10):]
    if kind == 3:
        return rng.choice(["½", "¾", "²³", "１２３", "Ⅻ", "1,000,000", "3.14e-10", "0x1F", "v1.2.3"])
    if kind == 4:
        return f"{rng.randint(1, 31)}/{rng.randint(1, 12)}/{rng.randint(1900, 2100)}"
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(10, 40)))


def piece(rng):
    kind = rng.randrange(12)
    if kind == 0:
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.5:
            words[rng.randrange(len(words))] += rng.choice(CONTRACTIONS)
        return " ".join(words) + rng.choice(["", ".", "!", "?", ",", ":", "...", " —"])
    if kind == 1:
        return " ".join(script_word(rng, rng.choice(list(SCRIPTS))) for _ in range(rng.randint(1, 6)))
    if kind == 2:
        return "".join(rng.choice(EMOJI) + rng.choice(["", "", " "]) for _ in range(rng.randint(1, 5)))
    if kind == 3:
        return "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 6)))
    if kind == 4:
        return number(rng)
    if kind == 5:
        return rng.choice(CODE)
    if kind == 6:
        return rng.choice(SPECIALS)
    if kind == 7:
        return "".join(rng.choice(DECOMPOSED) for _ in range(rng.randint(1, 4)))
    if kind == 8:
        return "".join(code_point(rng) for _ in range(rng.randint(1, 10)))
    if kind == 9:
        return rng.choice(WORDS).upper() + rng.choice(CONTRACTIONS) + rng.choice([" ", "", "\n"])
    if kind == 10:
        return "".join(rng.choice(" \t\n.,;:!?'\"()[]{}<>|/\\-_=+*&^%$#@~`") for _ in range(rng.randint(1, 10)))
    return rng.choice(WORDS) * rng.randint(1, 30)  # long repeated words exercise long merges


def generate(rng, count):
    fixed = ["", " ", "  ", "\n", "\t", "\r\n", "<|im_start|>", " <|im_end|> ", "a", "'s", "'S", "ö",
             "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
             " " * 500, "\n" * 100, "x" * 3000, "😀" * 200]
    texts = list(fixed)
    while len(texts) < count:
        n = rng.choice([1, 1, 2, 3, 5, 8])
        sep = rng.choice(["", " ", "\n", ""])
        texts.append(sep.join(piece(rng) for _ in range(n)))
    return texts
