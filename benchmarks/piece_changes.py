"""How many sentences a pretrained model reads differently since words reach it by
characters (``models.pieces``: the words written back as raw text, split by the model's
own tokenizer) rather than one word at a time (each PTB word, its escapes written back,
given to the tokenizer as a word already split).

    python -m benchmarks.piece_changes minilm sst5 test
"""

from __future__ import annotations

import argparse

from treeattn.models.pieces import load_splitter
from treeattn.tasks.datasets import open_dataset, settings_class

# PTB's escapes as the characters a pretrained vocabulary knows (the word-at-a-time way).
UNESCAPE = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}
UNESCAPE |= {"``": '"', "''": '"'}


def word_at_a_time(tokenizer, words: list[str]) -> list[int]:
    """The piece ids of ``words`` given to ``tokenizer`` as words already split."""
    encoding = tokenizer.encode([UNESCAPE.get(w, w) for w in words], is_pretokenized=True)
    return list(encoding.ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backbone", help="minilm or a local folder")
    parser.add_argument("dataset", help="a data set name (data.name), e.g. sst5")
    parser.add_argument("split", help="train, dev or test")
    args = parser.parse_args()
    splitter = load_splitter(args.backbone)
    raw = {"name": args.dataset}
    dataset = open_dataset(settings_class(raw, "command line")(**raw))
    sentences = [list(example.tokens) for example in dataset.load_split(args.split)]
    by_characters = [ids for ids, _ in splitter.rows(sentences)]
    changed = [
        words
        for words, ids in zip(sentences, by_characters, strict=True)
        if ids != word_at_a_time(splitter.tokenizer, words)
    ]
    print(f"{len(changed)} of {len(sentences)} {args.dataset} {args.split} sentences change pieces")
    for words in changed[:5]:
        print("  e.g.", " ".join(words))


if __name__ == "__main__":
    main()
