#!/usr/bin/env python3
"""make_token_fixture.py MODEL_DIR > tests/models/minilm_tokens.txt: the token-id fixture of the
WordPiece tokenizer (examples/wordpiece.c), made with Hugging Face `tokenizers` from the model's
tokenizer.json, truncated at sentence-transformers' max_seq_length (256) as the model runs.
Each line: the sentence's UTF-8 bytes in hex, a tab, the ids separated by spaces."""
import sys

from tokenizers import Tokenizer

SENTENCES = [
    "This is an example sentence.",
    "Each sentence is converted to a vector.",
    "Hello, world! How are you doing today?",
    "The quick brown fox jumps over the lazy dog.",
    "Don't stop: it's (almost) done -- isn't it?!",
    "e-mail me at someone@example.com or visit https://example.org/path?q=1&r=2.",
    "Prices rose 3.5% to $1,234.56 in Q3 2024; EUR\u20ac 99.",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 fa\u00e7ade co\u00f6perate \u00c5ngstr\u00f6m",
    "\u00dcber gro\u00dfe Stra\u00dfen f\u00e4hrt der B\u00e4r.",
    "Espa\u00f1ol: \u00bfD\u00f3nde est\u00e1 la biblioteca? \u00a1Ah\u00ed!",
    "e\u0301 (combining acute) and \u0130stanbul and \u0131\u015f\u0131k",
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u5427\u3002",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca\u3082\u3002",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4.",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u039a\u0395\u0399\u039c\u0395\u039d\u039f \u03ac\u03ad\u03ae",
    "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442 \u0401\u043b\u043a\u0430 \u0439\u043e\u0434",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0644\u063a\u0629 \u062c\u0645\u064a\u0644\u0629",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e \u0914\u0930 \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
    "I love pizza \U0001F355\U0001F355 and cats \U0001F408!",
    "Emoji inside words: good\U0001F44Dnews, \u2764\ufe0f family \U0001F468\u200d\U0001F469\u200d\U0001F467",
    "Tabs\tand\nnewlines\r\nand  multiple   spaces\u00a0nbsp\u3000ideographic",
    "Control\u0000chars\u0007and\u200bzero\u200cwidth\ufeffBOM\u00adsoft",
    "Full\uff37\uff49\uff44\uff54\uff48 \uff21\uff22\uff23 and \ufb01 ligature \u2460 \u00bd \u00b2",
    "Math: \u2200x\u2208\u211d, x\u00b2 \u2265 0 \u2192 \u221a(x\u00b2) = |x| \u00b1 \u03b5",
    "Quotes \u201clike these\u201d and \u2018these\u2019 and \u00abthese\u00bb \u2014 dashes \u2013 too\u2026",
    "UPPER lower MiXeD CaSe WORDS",
    "unbelievably antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 120 + " short",
    "12345 67.89 0x1F 1e-10 3/4 100,000",
    "",
    "   ",
    "!!!???...,,,;;;",
    "[CLS] [SEP] [MASK] ##ing tokens as text",
    "The sentence embedding model maps sentences & paragraphs to a 384 dimensional dense vector space. "
    * 15,
    "Mixed \u4e2d\u6587English\u65e5\u672c\u8a9e\ud55c\uae00 text\u3002",
    "Vietnamese: Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u \u0111\u1eb7c bi\u1ec7t.",
]


def main():
    tok = Tokenizer.from_file(sys.argv[1] + "/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    for s in SENTENCES:
        ids = tok.encode(s).ids
        print(s.encode("utf-8").hex() or "-", " ".join(str(i) for i in ids), sep="\t")


if __name__ == "__main__":
    main()
