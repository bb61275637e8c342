"""The one tokenizer of raw text: Penn Treebank words, URLs and addresses whole, sentence
ends inside a line, and every word's place in the text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeattn.trees.dependency import DependencyTree, parse_conllu
from treeattn.trees.tokenize import (
    PTB,
    UD,
    multiword_tokens,
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


# ---------------------------------------------------------------- cases EWT's raw text shows


def conllu_text(tree: DependencyTree) -> str:
    """The text a CoNLL-U sentence's tokens give back: each multi-word token's FORM, or a
    word in none, a space after it unless its MISC says ``SpaceAfter=No``."""
    inside = {k for row in tree.multiword_tokens for k in range(*_span(row.id))}
    parts = []
    for row in tree.rows():
        if "-" not in row.id and int(row.id) - 1 in inside:
            continue
        parts.append(row.form + ("" if "SpaceAfter=No" in row.misc.split("|") else " "))
    return "".join(parts).rstrip()


def _span(number: str) -> tuple[int, int]:
    first, last = (int(k) for k in number.split("-"))
    return first - 1, last


@pytest.mark.parametrize("scheme", [PTB, UD])
def test_a_run_of_dots_glued_to_the_next_word_is_one_word(scheme):
    words = tokenize("See these slides....they are amazing.", scheme)
    assert words[2:5] == ["slides", "....", "they"]
    assert tokenize("no.....really", scheme) == ["no", ".....", "really"]


def test_an_emoticon_is_one_word_in_both_cuts():
    text = "Nice :) really (: or Amy:-) and :-( too"
    assert tokenize(text) == [
        *["Nice", ":-RRB-", "really", "-LRB-:", "or", "Amy", ":--RRB-", "and", ":--LRB-"],
        "too",
    ]
    assert tokenize(text, UD) == ["Nice", ":)", "really", "(:", "or", "Amy", ":-)", "and"] + [
        ":-(",
        "too",
    ]
    # The sentence's stop before an emoticon is a word, as before a closing bracket.
    assert tokenize("It is cool. :)") == ["It", "is", "cool", ".", ":-RRB-"]
    # A colon and a bracket that are no emoticon are cut as before.
    assert tokenize("He said:(no).") == ["He", "said", ":", "-LRB-", "no", "-RRB-", "."]


def test_in_the_ud_cut_every_word_is_its_form():
    text = "Then :) I left (now) [again] {x}."
    assert tokenize(text, UD) == [t.form for t in tokenize_with_offsets(text, UD)]
    assert tokenize(text, UD) == [
        *["Then", ":)", "I", "left", "(", "now", ")", "[", "again", "]", "{", "x", "}", "."]
    ]
    assert tokenize(text)[4:7] == ["-LRB-", "now", "-RRB-"]  # a tree's leaves: escaped


def test_a_dotted_abbreviation_ending_a_sentence_keeps_its_stop_in_the_treebanks_cut():
    assert tokenize("We met at 5 p.m.")[-2:] == ["5", "p.m."]
    assert tokenize("He lives in the U.S. Then he left.")[4:6] == ["U.S.", "Then"]
    assert tokenize("Bring pens, paper etc.")[-1] == "etc."
    assert tokenize("I said no.")[-2:] == ["no", "."]  # a word, not an abbreviation
    # EWT cuts the stop off ("p.m ."), and its cut does so too.
    assert tokenize("We met at 5 p.m.", UD)[-2:] == ["p.m", "."]


def test_addresses_dates_and_names_ewt_keeps_whole():
    text = "Mail Olsen@ENRON or mailto:a.b@c.com on 01-Feb-02 via Yahoo! Mail, Yahoo!?"
    for scheme in (PTB, UD):
        words = tokenize(text, scheme)
        assert {"Olsen@ENRON", "mailto:a.b@c.com", "01-Feb-02", "Yahoo!"} <= set(words)
        assert words[-2:] == ["Yahoo!", "?"]
    assert len(sentence_spans(text)) == 1  # "Yahoo!" ends no sentence


def test_contractions_are_multiword_tokens_as_ud_writes_them():
    text = "I don't know, it's gonna rain. Can’t stop, cannot. Dont worry, im at 5pm."
    for scheme in (PTB, UD):
        tokens = tokenize_with_offsets(text, scheme)
        tree = DependencyTree([t.word for t in tokens], [0] + [1] * (len(tokens) - 1))
        shown = with_text(tree, tokens, text)
        written = shown.to_conllu()
        assert "2-3\tdon't\t" in written and "\ndo\t" not in written
        forms = [row.form for row in shown.multiword_tokens]
        bare = ["Dont", "im"] if scheme == UD else []
        assert forms == ["don't", "it's", "gonna", "Can’t", "cannot", *bare]
        # The words of a multi-word token hold no SpaceAfter; its range line does.
        assert next(r for r in shown.multiword_tokens if r.form == "cannot").misc == (
            "SpaceAfter=No"
        )
        (back,) = parse_conllu(written)
        assert back.words == shown.words and back.multiword_tokens == shown.multiword_tokens
        assert conllu_text(back) == back.metadata["text"] == text
    # Not a clitic: a number and its unit, a possessive after a plural, a hyphen's pieces.
    tokens = tokenize_with_offsets("At 5pm the dogs' e-mail-ish Coca-Cola", UD)
    assert multiword_tokens(tokens) == []


@pytest.mark.parametrize(
    "text",
    [
        "You have to see these slides....they are amazing.",
        "It's well cool. :) Amy:-) (: don't",
        "We'll meet at 5 p.m.",
        "\"Stop\" and 'go' -- can't won't y'all'd've (ok)!",
    ],
)
def test_written_conllu_gives_back_the_text_in_both_cuts(text):
    for scheme in (PTB, UD):
        tokens = tokenize_with_offsets(text, scheme)
        tree = DependencyTree([t.word for t in tokens], [0] + [1] * (len(tokens) - 1))
        (back,) = parse_conllu(with_text(tree, tokens, text).to_conllu())
        assert conllu_text(back) == text
