"""The one tokenizer of raw text: Penn Treebank words, URLs and addresses whole, sentence
ends inside a line, and every word's place in the text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeattn.trees.dependency import DependencyTree
from treeattn.trees.tokenize import (
    PTB,
    UD,
    sentence_spans,
    split_tokens,
    tokenize,
    tokenize_sentences,
    tokenize_with_offsets,
    with_text,
)


def test_urls_and_email_addresses_stay_whole():
    text = "Read https://example.com/a/b.html or write to help@example.com today."
    assert tokenize(text) == [
        "Read",
        "https://example.com/a/b.html",
        "or",
        "write",
        "to",
        "help@example.com",
        "today",
        ".",
    ]


def test_names_joined_by_an_ampersand_are_one_word_as_in_the_treebank():
    assert tokenize("AT&T and S&P's index fell, PG&E- said R&D.") == [
        *["AT&T", "and", "S&P", "'s", "index", "fell", ",", "PG&E", "-", "said", "R&D", "."]
    ]
    assert tokenize("Tom & Jerry, 3&4") == ["Tom", "&", "Jerry", ",", "3", "&", "4"]


def test_a_whole_word_kept_inside_a_longer_one_keeps_its_characters():
    # The rules keep "u=" and "=g" on the name: the word is the text, never its mask.
    for scheme in (PTB, UD):
        assert tokenize("see online?u=mayursha&m=g now", scheme)[3] == "u=mayursha&m=g"
        assert tokenize("x/Q&A", scheme) == ["x/Q&A"]


def test_the_last_full_stop_is_a_word_before_spaced_closing_brackets_and_quotes():
    assert tokenize("Click here for source. )") == ["Click", "here", "for", "source", ".", "-RRB-"]
    assert tokenize('He laughed about that. "')[-3:-1] == ["that", "."]
    assert tokenize("He went home.)")[-3:] == ["home", ".", "-RRB-"]  # as the rules cut it
    assert tokenize("Stop. ( she said")[0] == "Stop."  # not the sentence's last stop


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Visit www.example.org.", ["Visit", "www.example.org", "."]),
        ("(see http://a.b/c?d=1&e=2)", ["-LRB-", "see", "http://a.b/c?d=1&e=2", "-RRB-"]),
        (
            'Mail "first.last+tag@mail.example.co.uk"!',
            ["Mail", "``", "first.last+tag@mail.example.co.uk", "''", "!"],
        ),
        (
            "ftp://files.example.com/x.tar.gz, then stop",
            ["ftp://files.example.com/x.tar.gz", ",", "then", "stop"],
        ),
    ],
)
def test_a_url_ends_before_the_punctuation_around_it(text, words):
    assert tokenize(text) == words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("It costs $4.50.", ["It", "costs", "$", "4.50", "."]),
        ("It costs €4.50.", ["It", "costs", "€", "4.50", "."]),
        ("It costs £4.50.", ["It", "costs", "£", "4.50", "."]),
        ("It costs ¥300.", ["It", "costs", "¥", "300", "."]),
        ("Ticket: 4.50€, or 50¢ off", ["Ticket", ":", "4.50", "€", ",", "or", "50", "¢", "off"]),
        ("₹1,000 (about €11)", ["₹", "1,000", "-LRB-", "about", "€", "11", "-RRB-"]),
    ],
)
def test_a_currency_sign_is_a_word_as_the_dollar_is(text, words):
    assert tokenize(text) == words
    tokens = tokenize_with_offsets(text)
    assert [t.form for t in tokens] == [text[t.start : t.end] for t in tokens]


def test_curly_quotes_and_apostrophes_are_cut_as_straight_ones_are():
    text = "He said “stop” and ‘go’, don’t."
    straight = "He said \"stop\" and 'go', don't."
    words = [*["He", "said", "``", "stop", "''", "and", "`", "go", "'", ","], "do", "n't", "."]
    assert tokenize(text) == tokenize(straight) == words
    curly = ["He", "said", "“", "stop", "”", "and", "‘", "go", "’", ",", "do", "n’t", "."]
    for scheme in ("ptb", "ud"):  # each curly one stays its word's form
        assert [token.form for token in tokenize_with_offsets(text, scheme)] == curly


def test_an_opening_single_quote_is_a_word_but_an_apostrophe_is_not():
    # The opening quote's word is the Penn Treebank's `; its form stays the text's '.
    text = "It is 'normal' in the '90s, get 'em 'til 'twas rock 'n' roll. John's."
    assert tokenize(text) == [
        *["It", "is", "`", "normal", "'", "in", "the", "'90s", ",", "get", "'em", "'til"],
        *["'t", "was", "rock", "'n", "'", "roll", ".", "John", "'s", "."],
    ]
    assert tokenize_with_offsets(text)[2].form == "'"


def test_the_full_stop_of_an_inner_sentence_is_a_word():
    assert tokenize("I came home. Then I slept.") == [
        "I", "came", "home", ".", "Then", "I", "slept", ".",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("I came home. Then I slept.", 2),
        ('He said "Stop!" Then he left.', 2),
        ("Is it? Yes. 3 people came.", 3),
        ("Mr. Smith met Dr. Jones.", 1),
        ("She moved to the U.S. in May.", 1),
        ("Bring fruit, e.g. Apples or pears.", 1),
        ("J. R. R. Tolkien wrote it.", 1),
        ("It costs 3 vs. 4 dollars, i.e. More.", 1),
        ("See www.example.com. It is new.", 2),
        ("Write to a.b@example.com. Thanks", 2),
        ("no capital. after the stop", 1),
        ("", 0),
    ],
)
def test_sentence_ends_leave_abbreviations_alone(text, count):
    assert len(sentence_spans(text)) == count


def test_sentence_spans_leave_spaces_out():
    text = "  One. Two!  "
    assert [text[a:b] for a, b in sentence_spans(text)] == ["One.", "Two!"]


def test_offsets_give_back_the_original_text():
    text = 'He said "no" (twice). Mail help@example.com, don\'t wait.'
    tokens = tokenize_with_offsets(text)
    assert [t.form for t in tokens] == [text[t.start : t.end] for t in tokens]
    assert [t.form for t in tokens][2:8] == ['"', "no", '"', "(", "twice", ")"]
    assert [t.word for t in tokens][2:8] == ["``", "no", "''", "-LRB-", "twice", "-RRB-"]
    rebuilt = "".join(
        t.form + text[t.end : tokens[k + 1].start] if k + 1 < len(tokens) else t.form
        for k, t in enumerate(tokens)
    )
    assert rebuilt == text


@given(st.text(alphabet=st.sampled_from(list("ab .,!?\"'()@:/xwhtpsU€$4")), max_size=40))
def test_every_token_is_its_text_and_tokens_do_not_overlap(text):
    tokens = tokenize_with_offsets(text)
    for token in tokens:
        assert token.form == text[token.start : token.end] and token.form.strip() == token.form
    assert all(a.end <= b.start for a, b in zip(tokens, tokens[1:], strict=False))


def test_tokenized_text_reads_the_same_as_raw_text():
    assert tokenize("It wasn't good.") == tokenize("It was n't good .")


def test_sentences_of_a_line_split_on_request():
    line = "I came home. Then I slept."
    assert [[t.word for t in s] for s in tokenize_sentences(line)] == [
        ["I", "came", "home", "."],
        ["Then", "I", "slept", "."],
    ]
    assert len(tokenize_sentences(line, split=False)) == 1
    words = tokenize_sentences("I came home . Then I slept .", tokenized=True)
    assert [[t.word for t in s] for s in words] == [
        ["I", "came", "home", "."],
        ["Then", "I", "slept", "."],
    ]
    assert tokenize_sentences("   ") == [[]]
    assert [t.form for t in split_tokens("a ( b")] == ["a", "(", "b"]
    assert [t.word for t in split_tokens("a ( b")] == ["a", "-LRB-", "b"]


def test_conllu_gets_the_original_forms_spacing_and_text():
    text = "I slept (well). Then"
    tokens = tokenize_sentences(text)[0]
    tree = DependencyTree([t.word for t in tokens], [2, 0, 4, 2, 4, 2], xpos=["PRP"] * 6)
    shown = with_text(tree, tokens, text)
    assert shown.words == ["I", "slept", "(", "well", ")", "."]
    assert shown.misc == ["_", "_", "SpaceAfter=No", "SpaceAfter=No", "SpaceAfter=No", "_"]
    assert shown.metadata["text"] == "I slept (well)."
    assert "# text = I slept (well).\n" in shown.to_conllu()
    with pytest.raises(ValueError, match="5 tokens for a tree of 6 words"):
        with_text(tree, tokens[:5], text)
