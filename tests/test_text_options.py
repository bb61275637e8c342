"""The text options of the ``text`` data set (punctuation by source, lowercasing, numbers
as N, a start token, a choice of corpora), as the Tree Transformer's release shows text."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeattn.data.text import (
    START,
    TaggedSentence,
    TextOptions,
    apply_options,
    looks_like_punctuation,
    tagged_corpora,
    text_corpora,
)
from treeattn.data.ud import load_ud
from treeattn.errors import FormatError
from treeattn.tasks import load_config, make_task

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "text-constituent.yaml"
RELEASE_TEXT = TextOptions(drop_punctuation=True, lowercase=True, normalize_numbers=True)


def test_the_character_rule():
    punctuation = ["``", "''", ",", ".", "...", "--", ":", ";", "?", "!", "`", "$", "€"]
    punctuation += ["-LRB-", "-RRB-", "-LCB-", "#", "/", "'"]
    words = ["%", "&", "n't", "'s", "3.5", "a.m.", "-", "mr.", "<mask>", "S&P", "1/2", "--x", "US$"]
    assert [w for w in punctuation if not looks_like_punctuation(w)] == []
    assert [w for w in words if looks_like_punctuation(w)] == ["-"]  # a hyphen: Pd


def test_options_drop_lowercase_and_number_words():
    sentence = TaggedSentence(
        ["The", "<mask>", "rose", "3.5", "%", "to", "$", "1,200", "in", "1990s", "."],
        [False, False, False, False, False, False, True, False, False, False, True],
    )
    assert apply_options(sentence, RELEASE_TEXT) == [
        *("the", "<mask>", "rose", "N", "%", "to", "N", "in", "N"),
    ]
    assert apply_options(sentence, TextOptions()) == sentence.words
    assert RELEASE_TEXT.describe() == "punctuation removed, lowercased, words with a digit as N"


def test_the_character_rule_agrees_with_the_ptb_tags(shared_data):
    words = [
        (word, punct)
        for split in ("train", "dev", "test")
        for sentence in tagged_corpora(split, ["ptb"], shared_data)
        for word, punct in zip(sentence.words, sentence.punctuation, strict=True)
    ]
    assert len(words) == 94_084 and sum(p for _, p in words) == 11_715
    disagree = [(w, p) for w, p in words if looks_like_punctuation(w) != p]
    # 63 possessive "'" (tagged POS), US$ and C$ (tagged $), one "@" and one "Wa" (tagged :)
    assert len(disagree) == 71


@pytest.mark.slow
def test_each_source_says_what_is_punctuation(shared_data):
    ewt = load_ud("dev", root=shared_data)
    shown = text_corpora("dev", shared_data, ["ewt"], RELEASE_TEXT)
    kept = [[w for w, tag in zip(t.words, t.upos, strict=True) if tag != "PUNCT"] for t in ewt]
    assert sum(map(len, shown)) == sum(map(len, kept)) < sum(len(t.words) for t in ewt)
    sentences = text_corpora("test", shared_data, ["ptb", "sst"], RELEASE_TEXT)
    assert len(sentences) == 413 + 2210
    words = {w for s in sentences for w in s}
    assert not words & {",", ".", "$", "``", "-LRB-"} and "N" in words
    assert all(w == w.lower() and not any(c.isdigit() for c in w) for w in words - {"N"})
    multi30k = text_corpora("dev", shared_data, ["multi30k"], RELEASE_TEXT)
    assert len(multi30k) == 1014 and multi30k[0][-1] != "."


def test_the_release_config_reads_the_ptb_text_with_a_start_token(shared_data):
    cfg = load_config(str(CONFIG), [f"data.root={shared_data}"])
    examples, where = make_task(cfg).read("train")
    assert where == "text train" and len(examples) == 3068
    assert examples[0].tokens[:5] == [START, "pierre", "vinken", "N", "years"]
    assert all(ex.tokens[0] == START and START not in ex.tokens[1:] for ex in examples)


def test_text_options_are_checked_and_files_named(tmp_path):
    with pytest.raises(ValueError, match=r"data.corpora=\['wsj'\] must name one or more of"):
        load_config(None, ["data.name=text", "data.corpora=[wsj]"])
    text = tmp_path / "text.txt"
    text.write_text("The cat sat .\n-- ...\n", encoding="utf-8")
    cfg = load_config(None, ["data.name=text", "data.drop_punctuation=true"])
    with pytest.raises(FormatError, match=f"{text}:2:1: no word is left once punctuation"):
        make_task(cfg).read(str(text))
    text.write_text("The cat sat .\n", encoding="utf-8")
    examples, _ = make_task(cfg).read(str(text))
    assert examples[0].tokens == ["The", "cat", "sat"]
