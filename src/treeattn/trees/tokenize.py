"""Raw text into Penn Treebank words: the one tokenizer every reader of raw sentences uses
(the parser, ``treeattn predict``, translation's source side, plain-text corpora), so that
swapping it is one place.

Sentences are split as the Penn Treebank is (nltk's ``TreebankWordTokenizer``, which needs
no data download), with brackets written ``-LRB-``/``-RRB-``, double quotes as
``\\`\\``` / ``''`` and an opening single quote as ``\\```. Four things are added
around it:

- URLs, e-mail addresses, names joined by ``&``, dates such as ``01-Feb-02`` and
  emoticons are one word each (the Treebank rules would cut them at ``:``, ``@``, ``&``,
  and ``:)`` into ``:`` and a bracket); a run of dots glued to the next word is one word
  (``slides .... they``), and a dotted abbreviation that ends a sentence keeps its stop
  (``p.m.``: the Treebank writes ``p.m. .``, which the text cannot give);
- every currency sign is a word, as the rules make ``$`` one (``€ 4.50``, ``¥ 300``);
- a line is first cut into sentences (``sentence_spans``), so that the full stop of a
  sentence that is not the line's last is a word of its own (``home .``, not ``home.``);
- every word keeps its place in the text (``Token.start``, ``Token.end``), so that the
  original text and its spacing can be rebuilt (CoNLL-U's ``# text`` and ``SpaceAfter``).

``scheme="ud"`` re-cuts the words where UD English EWT writes them otherwise than the Penn
Treebank (``as_ud``), for output in Universal Dependencies scored against EWT, each word
its form (``(``, not ``-LRB-``); contractions (``do n't``, ``ca n't``, ``gon na``, ``can
not``) and straight-quote possessives are the same in both and come from the rules.
``with_text`` writes a word and its clitics as UD's multi-word token (``4-5 don't``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from treeattn.trees.dependency import ConlluRow, DependencyTree

# Penn Treebank escapes of brackets, which a bracketed tree cannot hold as words.
ESCAPES = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}

# Words the Treebank rules would cut: URLs (with a scheme, or starting www.), e-mail
# addresses (and "mailto:" ones; an address inside a company's mail, "Olsen@ENRON", is
# one word 42 times in EWT's training and dev splits), names joined by an ampersand
# ("AT&T", "S&P": one word in the Penn Treebank, and "PG&E", "p&l" in EWT), dates
# written with the month's name ("01-Feb-02") and "Yahoo!" (where EWT's answers come
# from). A URL's last character is not punctuation that ends the sentence around it.
_URL = r"(?:(?:https?|ftp|file)://|www\.|mailto:)[^\s<>\"]*[^\s<>\".,;:!?'()\[\]{}]"
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*"
_AMPERSAND = r"[^\W\d_]+&[^\W\d_]+(?![\w&])"
_DATE = r"\d{1,2}-[^\W\d_]{3}-\d{2}(?:\d{2})?(?![\w-])"
# An emoticon (":)", ":-(", ";D", "=]", "(:") standing alone, or one of brackets glued
# to the word before it ("Amy:-)"): one word, as EWT writes it, where the rules would cut
# ":)" into ":" and a closing bracket.
_EMOTICON = (
    r"(?:(?<![^\s(\[])[:;=][-^]?[()DPp\[\]/|]|(?<=[^\W\d_])[:;=][-^]?[()\[\]]"
    r"|(?<![^\s(\[])\([-^]?[:;])(?![^\s.,!?)\]])"
)
# Only where a word starts: not inside a word, so that "xhttp://" is left to the rules.
_WHOLE = re.compile(rf"(?<![\w@.+&-])(?:{_URL}|{_EMAIL}|{_AMPERSAND}|{_DATE}|Yahoo!)|{_EMOTICON}")

# Words whose full stop does not end a sentence. Lowercase; the stop left out.
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft gen col lt sgt capt gov sen rep rev hon "
    "inc corp ltd co bros no nos vol vols pp fig figs eq ch sec dept est approx "
    "vs etc cf al ca jan feb mar apr jun jul aug sep sept oct nov dec "
    "mon tue tues wed thu thurs fri sat sun".split()
)
# A sentence ends at . ! ? (or a run of them), closing quotes or brackets after it, then
# space and a word that can start a sentence.
_END = re.compile(r"[.!?]+[\"')\]}’”]*(?=\s+[\"'(\[{‘“`]*[A-Z0-9])")
_WORD_BEFORE = re.compile(r"[\w.'-]+$")


@dataclass(frozen=True)
class Token:
    """One word: as the Penn Treebank writes it (``word``), as the text has it (``form``,
    ``text[start:end]``)."""

    word: str
    form: str
    start: int
    end: int


PTB, UD = "ptb", "ud"  # how words are cut: as the Penn Treebank, or as UD English EWT
TOKEN_SCHEMES = (PTB, UD)


def tokenize(sentence: str, scheme: str = PTB) -> list[str]:
    """Penn Treebank tokens of one sentence, with PTB escapes for brackets and quotes
    (``scheme="ud"``: cut as UD English EWT cuts them, ``as_ud``, each word its form as
    the text has it: ``(``, ``:)``)."""
    return [token.word for token in tokenize_with_offsets(sentence, scheme)]


def escape(words: Sequence[str]) -> list[str]:
    """Words with every bracket character written as the Penn Treebank writes it."""
    return ["".join(ESCAPES.get(char, char) for char in word) for word in words]


def tokenize_with_offsets(text: str, scheme: str = PTB) -> list[Token]:
    """The Penn Treebank tokens of ``text`` with their places in it; each sentence of the
    text (``sentence_spans``) is tokenized on its own, so inner full stops are words.
    ``scheme="ud"``: cut as UD English EWT cuts them (``as_ud``)."""
    if scheme not in TOKEN_SCHEMES:
        raise ValueError(f"scheme={scheme!r}; one of {', '.join(TOKEN_SCHEMES)}")
    if scheme == UD:
        tokens = [
            token
            for start, end in sentence_spans(text)
            for token in _sentence_tokens(text[start:end], start)
        ]
        return as_ud(tokens, text)
    return [
        token
        for start, end in sentence_spans(text)
        for token in _keep_abbreviation_stop(_sentence_tokens(text[start:end], start))
    ]


# Where UD English EWT cuts words otherwise than the Penn Treebank, counted on its training
# split. A hyphen between letters or digits is a word of its own (744 times; "Coca - Cola",
# "15 - year"), but not after these prefixes, nor between two digits (phone numbers), which
# EWT keeps whole ("e-mail", "non-profit", "713-853-3989").
UD_HYPHEN_PREFIXES = frozenset(
    "e non mid pre anti re post co over pro multi ex sub semi cross neo psycho socio "
    "counter intra micro un".split()
)
# A slash between two words of two letters or more is a word ("and / or"); "l/c" stays.
_UD_SLASH = re.compile(r"(?<=[^\W\d_]{2})/(?=[^\W\d_]{2})")
# Runs EWT keeps as one word, which the rules cut: "!!", "?!", "....", "$$$", "<<",
# "----==", emoticons (":)", ":-(", ";D") and hashtags ("#audiobooks").
_UD_WHOLE = re.compile(
    rf"[.!?]{{2,}}|[-=]{{3,}}|([$<>*~+_])\1+|{_EMOTICON}|(?<![^\s(\[])#[^\W\d_]\w*"
)
# Dots trailing a word that has none inside ("back.."), which the rules leave on it.
_UD_DOTS = re.compile(r"(?<=[^\W_])\.{2,}$")
# Contractions written without their apostrophe, which EWT splits as it splits them with
# one: in its training and dev splits "dont" is "do nt" 37 times, "im" "i m" 21, "wont"
# 12, "ive" 11, "cant" 11, "thats" 8, ... (one "ive" and one "youre" stay whole); the
# rest of the n't family likewise. Left whole: "its", "lets", "ill", "id" (words there).
_UD_BARE_CLITIC = re.compile(
    r"(?i)(?:do|does|did|ca|wo|could|would|should|is|was|are|ar|were|have|has|had|ai)"
    r"(?=nt$)|i(?=m$|ve$)|(?:you|they)(?=re$)|(?:that|there|what|he)(?=s$)"
)
# A range of two numbers ("1969-1970", "10-12"): three words in EWT (66 times in its
# training and dev splits), unlike a phone number or ZIP code (a last group of 4 after 1,
# 3 or 5 digits, "853-3989": 38 times whole) or more groups ("713-853-3989").
_UD_RANGE = re.compile(r"(\d+)-(\d+)")
# A number and the am, pm, k, m or b after it ("5pm", "11:30am", "65k", "$2.7m"): two
# words in EWT (103 times in its training and dev splits; whole twice, in file names).
_UD_NUMBER_UNIT = re.compile(r"(?i)\d+(?:[.:]\d+)?(?=(?:am|pm|k|m|b)$)")
# A hyphen at the edge of a word ("smuggling- dating", "powers -Russia"): a word of its
# own in EWT (64 times in its training and dev splits; twice not, in file names).
_UD_EDGE_HYPHEN = re.compile(r"^-(?=[^\W\d_])|(?<=[^\W_])-$")
# Dots between two words without a space ("course..if"): a word of their own in EWT (101
# times in its training and dev splits, never kept on a word).
_UD_INNER_DOTS = re.compile(r"(?<=[^\W_])\.{2,}(?=[^\W_])")


def as_ud(tokens: Sequence[Token], text: str) -> list[Token]:
    """Penn Treebank ``tokens`` of ``text`` cut as UD English EWT cuts words: hyphens and
    slashes inside compounds are words of their own, a clitic written without an
    apostrophe is cut off (``dont``), a number and its am, pm, k, m or b are two words
    (``5 pm``), a range of numbers three (``10 - 12``), a hyphen at a word's edge and dots
    between words are words (``1980s -``, ``course .. if``), and runs of sentence
    punctuation, emoticons and hashtags are one word each. URLs, e-mail addresses and
    phone numbers stay whole. Each token keeps its place, and its word is its form, as EWT
    writes it (``"``, not ``\\`\\```; ``n’t``, not ``n't``; ``(``, not ``-LRB-``: a parser
    escapes the brackets of the words it reads)."""
    cut: list[Token] = []
    for token in tokens:
        if _WHOLE.fullmatch(token.form):
            cut.append(Token(token.form, token.form, token.start, token.end))
            continue
        for a, b in _ud_pieces(token.form):
            form = token.form[a:b]
            # The word is the form, as EWT writes its words (and the joint parser learned
            # them): a quote is " or ', not the Penn Treebank's `` or `.
            cut.append(Token(form, form, token.start + a, token.start + b))
    out: list[Token] = []
    runs = [m.span() for m in _UD_WHOLE.finditer(text)]
    for token in _cut_at_runs(cut, runs):
        run = next((r for r in runs if r[0] <= token.start and token.end <= r[1]), None)
        last = out[-1] if out else None
        if run and last and run[0] <= last.start and last.end == token.start:
            form = text[last.start : token.end]
            out[-1] = Token(form, form, last.start, token.end)
        else:
            out.append(token)
    return out


def _cut_at_runs(tokens: list[Token], runs: list[tuple[int, int]]) -> list[Token]:
    """``tokens`` with each one cut where a run that goes on past its end starts inside it
    (the rules give "room." and "?" for "room.?", which EWT cuts "room" ".?")."""
    cut: list[Token] = []
    for token in tokens:
        inner = next((a for a, b in runs if token.start < a < token.end < b), None)
        if inner is None or _WHOLE.fullmatch(token.form):  # "Yahoo!?": "Yahoo!" "?"
            cut.append(token)
            continue
        for a, b in ((token.start, inner), (inner, token.end)):
            form = token.form[a - token.start : b - token.start]
            cut.append(Token(form, form, a, b))
    return cut


def _ud_pieces(form: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each piece of one word as EWT cuts it (``as_ud``)."""
    bare = _UD_BARE_CLITIC.match(form) or _UD_NUMBER_UNIT.match(form)
    if bare:
        return [(0, bare.end()), (bare.end(), len(form))]
    numbers = _UD_RANGE.fullmatch(form)
    if numbers and not (len(numbers[2]) == 4 and len(numbers[1]) in (1, 3, 5)):
        hyphen = numbers.end(1)
        return [(0, hyphen), (hyphen, hyphen + 1), (hyphen + 1, len(form))]
    if not any(char in form for char in "-/") and ".." not in form:
        return [(0, len(form))]  # most words: nothing below can cut them
    # A run of dots or a hyphen at an edge is a piece; what is around it is cut on its own.
    inner = _UD_INNER_DOTS.search(form)
    edge = _UD_EDGE_HYPHEN.search(form)
    dots = _UD_DOTS.search(form) if "." not in form.rstrip(".") else None
    for piece in (inner, edge, dots):
        if piece:
            a, b = piece.span()
            after = [(x + b, y + b) for x, y in _ud_pieces(form[b:])] if b < len(form) else []
            return [*(_ud_pieces(form[:a]) if a else []), (a, b), *after]
    cuts = [m.start() for m in _UD_SLASH.finditer(form)]
    start = 0
    for k, char in enumerate(form):
        if char != "-" or k == 0 or k == len(form) - 1:
            continue
        before, after = form[k - 1], form[k + 1]
        if not (before.isalnum() and after.isalnum()) or (before.isdigit() and after.isdigit()):
            continue
        if re.sub(r".*[^\w]", "", form[start:k]).lower() in UD_HYPHEN_PREFIXES:
            continue
        cuts.append(k)
        start = k + 1
    pieces, start = [], 0
    for k in sorted(cuts):
        pieces += [(start, k), (k, k + 1)]
        start = k + 1
    pieces.append((start, len(form)))
    return [(a, b) for a, b in pieces if b > a]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (one line), spaces around left out.

    A sentence ends at ``.``, ``!`` or ``?`` (and closing quotes or brackets) before space
    and a capital letter, a digit or an opening quote. A full stop after an abbreviation
    (``Mr.``, ``e.g.``), an initial (``J.``) or a dotted acronym (``U.S.``) ends none;
    nor does a stop inside a URL or an e-mail address.
    """
    protected = [m.span() for m in _WHOLE.finditer(text)]
    spans, start = [], 0
    for match in _END.finditer(text):
        end = match.end()
        if any(a < end <= b for a, b in protected) or _abbreviation(text, match):
            continue
        spans.append((start, end))
        start = end
    spans.append((start, len(text)))
    # Spaces around each sentence are not part of it; a blank text has no sentence.
    trimmed = []
    for a, b in spans:
        chunk = text[a:b]
        left = len(chunk) - len(chunk.lstrip())
        right = len(chunk.rstrip())
        if right > left:
            trimmed.append((a + left, a + right))
    return trimmed


def _abbreviation(text: str, end: re.Match[str]) -> bool:
    """Whether the stop of ``end`` belongs to the word before it rather than ending a
    sentence."""
    if not end.group().startswith(".") or end.group().startswith(".."):
        return False
    found = _WORD_BEFORE.search(text, 0, end.start())
    if found is None:
        return False
    word = found.group()
    if word.lower() in ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isalpha():  # an initial: J. R. R. Tolkien
        return True
    # A dotted acronym or Latin abbreviation: U.S., e.g., i.e., a.m.
    return bool(re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word))


def _sentence_tokens(sentence: str, offset: int) -> list[Token]:
    """The tokens of one sentence, placed at ``offset`` in the text it came from."""
    from nltk.tokenize import TreebankWordTokenizer  # imported late: nltk is slow to load

    # URLs and addresses become runs of "x" of the same length: the rules keep such a run
    # whole, and every offset in the masked text is the offset in the original.
    whole = {m.start(): m.end() for m in _WHOLE.finditer(sentence)}
    masked = sentence
    for a, b in whole.items():
        masked = masked[:a] + "x" * (b - a) + masked[b:]
    # Curly quotes and apostrophes, which the rules do not know, read as straight ones
    # (“ ” as ", ‘ ’ as '): cut as those are (`` and '' by place; "do n't", "Iran 's"),
    # the curly one kept as the form.
    masked = masked.translate(_CURLY)
    tokens, position = [], 0
    rules = TreebankWordTokenizer().tokenize(masked)
    pieces = (part for word in rules for part in _split_currency(word))
    for piece in (part for word in pieces for part in _split_open_quote(word)):
        start = _find(masked, piece, position)
        end = start + _length(masked, piece, start)
        words = [(start, end, piece)]
        if start in whole:  # the whole word, and what the rules kept on it ("AT&T-")
            stop = whole[start]
            words = [(start, stop, sentence[start:stop])]
            if stop < end:
                words.append((stop, end, piece[stop - start :]))
        elif any(start < a < end for a in whole) and masked[start:end] == piece:
            glued = next((a for a in whole if start < a < end == whole[a]), None)
            if glued is not None and re.fullmatch(_EMOTICON, sentence[glued:end]):
                # An emoticon glued to the word before it ("Amy:-)"): a word of its own.
                words = [(start, glued, piece[: glued - start]), (glued, end, sentence[glued:end])]
            else:
                # A run the rules kept inside a longer word ("u=AT&T"): its own characters.
                words = [(start, end, sentence[start:end].translate(_CURLY))]
        for a, b, word in words:
            tokens.append(Token(escape([word])[0], sentence[a:b], offset + a, offset + b))
        position = end
    return _split_last_stop(_join_dots(tokens))


def _join_dots(tokens: list[Token]) -> list[Token]:
    """``tokens`` with a run of dots glued to the next word one word of its own
    ("slides....they": ``slides .... they``); the rules cut three dots off it and leave
    the rest on the word (``... .they``)."""
    out: list[Token] = []
    for token in tokens:
        last = out[-1] if out else None
        glued = last is not None and last.end == token.start and set(last.form) == {"."}
        rest = token.form.lstrip(".")
        if not glued or not rest or len(rest) == len(token.form):
            out.append(token)
            continue
        stop = token.start + len(token.form) - len(rest)
        dots = Token(
            last.word + "." * (stop - token.start),
            last.form + token.form[: stop - token.start],
            last.start,
            stop,
        )
        out[-1] = dots
        out.append(Token(token.word[len(token.form) - len(rest) :], rest, stop, token.end))
    return out


_CLOSING = frozenset("\"')]}’”")


def _split_last_stop(tokens: list[Token]) -> list[Token]:
    """``tokens`` with the sentence's last full stop a word of its own where closing quotes,
    brackets or emoticons follow it after a space (``source. )``, ``cool. :)``). The rules
    cut it only where they follow unspaced (``source.)``), and without them."""
    k = len(tokens)
    while k and (
        all(char in _CLOSING for char in tokens[k - 1].form)
        or re.fullmatch(_EMOTICON, tokens[k - 1].form)
    ):
        k -= 1
    last = tokens[k - 1] if 0 < k < len(tokens) else None
    if last and len(last.word) > 1 and last.word.endswith(".") and not last.word.endswith(".."):
        stop = last.end - 1
        tokens[k - 1 : k] = [
            Token(last.word[:-1], last.form[:-1], last.start, stop),
            Token(".", ".", stop, last.end),
        ]
    return tokens


def _keep_abbreviation_stop(tokens: list[Token]) -> list[Token]:
    """``tokens`` with a sentence's last word that is a dotted abbreviation (``p.m.``,
    ``U.S.``, ``e.g.``) or ``etc.`` keeping its full stop: the Penn Treebank writes such
    a word whole and adds a stop after it (``p.m. .``), which text with one stop cannot
    give, and a word ``p.m`` is no word. UD English EWT cuts it (``p.m .``), as
    ``scheme="ud"`` does."""
    if len(tokens) < 2:
        return tokens
    last, stop = tokens[-2], tokens[-1]
    if stop.form != "." or last.end != stop.start:
        return tokens
    if re.fullmatch(r"(?:[^\W\d_]\.)+[^\W\d_]", last.form) or last.form.lower() == "etc":
        form = last.form + "."
        tokens[-2:] = [Token(form, form, last.start, stop.end)]
    return tokens


_CURLY = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})
# Words that begin with an apostrophe: clitics and elisions (the rules cut "'twas" as
# "'t was"), not a quote and a word.
_APOSTROPHE_WORDS = frozenset("'s 're 've 'll 'd 'm 't 'em 'til 'n 'cause".split())


def _split_open_quote(piece: str) -> list[str]:
    """``piece`` with an opening single quote a word of its own, written `` ` `` as the
    Penn Treebank writes it (``'normal'`` is `` ` normal ' ``); the rules cut the closing
    one only."""
    if len(piece) > 1 and piece[0] == "'" and piece[1].isalpha():
        if piece.lower() not in _APOSTROPHE_WORDS:
            return ["`", piece[1:]]
    return [piece]


def _split_currency(piece: str) -> list[str]:
    """``piece`` with each currency sign a word of its own: the rules split ``$4.50`` but
    leave ``€4.50``, ``£4.50`` and ``¥300`` whole."""
    if piece.isascii() and "$" not in piece:  # "$" is the only ASCII currency sign
        return [piece]
    parts, start = [], 0
    for k, char in enumerate(piece):
        if unicodedata.category(char) == "Sc":
            parts += [piece[start:k], char]
            start = k + 1
    parts.append(piece[start:])
    return [part for part in parts if part]


def _find(text: str, piece: str, position: int) -> int:
    """Where the rules' ``piece`` starts in ``text``, at or after ``position``."""
    while position < len(text) and text[position].isspace():
        position += 1
    if _length(text, piece, position) == 0:
        raise ValueError(f"cannot place the token {piece!r} at {position} in {text!r}")
    return position


def _length(text: str, piece: str, start: int) -> int:
    """How many characters of ``text`` at ``start`` the token ``piece`` stands for (0:
    none); the rules write a double quote as `` or '', an opening single one as `."""
    if text.startswith(piece, start):
        return len(piece)
    if piece == "`" and text.startswith("'", start):  # an opening single quote
        return 1
    if piece in ("``", "''"):
        if text.startswith(('"', "“", "”"), start):
            return 1
        if text.startswith(("``", "''"), start):
            return 2
    return 0


# How a Penn Treebank word is written in raw text, and which words attach to a neighbour.
_UNESCAPES = {**{v: k for k, v in ESCAPES.items()}, "``": '"', "''": '"'}
_NO_SPACE_BEFORE = frozenset(
    ". , ; : ! ? % -RRB- -RSB- -RCB- '' ... ' 's 're 've 'll 'd 'm n't".split()
)
_NO_SPACE_AFTER = frozenset("-LRB- -LSB- -LCB- `` $ #".split())


def detokenize(words: Sequence[str]) -> tuple[str, list[Token]]:
    """The raw text Penn Treebank ``words`` stand for, and each word's place in it: brackets
    and quotes unescaped, no space before closing punctuation and clitics (``'s``,
    ``n't``) nor after opening brackets, quotes and currency signs. ``tokenize_with_offsets``
    of the text gives the words back wherever the Treebank's rules split the text as the
    words are split (not, say, for "wanna" or "ol'").

    >>> words = ["``", "Dogs", "ca", "n't", "bark", "-LRB-", "much", "-RRB-", "''"]
    >>> text, tokens = detokenize(words)
    >>> print(text)
    "Dogs can't bark (much)"
    >>> [(t.word, t.start, t.end) for t in tokens][2:4]
    [('ca', 6, 8), ("n't", 8, 11)]
    """
    parts: list[str] = []
    tokens, position = [], 0
    for index, word in enumerate(words):
        form = _UNESCAPES.get(word, word)
        attached = index == 0 or (
            word.lower() in _NO_SPACE_BEFORE
            or word in _NO_SPACE_BEFORE
            or words[index - 1] in _NO_SPACE_AFTER
        )
        if not attached:
            parts.append(" ")
            position += 1
        parts.append(form)
        tokens.append(Token(word, form, position, position + len(form)))
        position += len(form)
    return "".join(parts), tokens


def split_tokens(text: str) -> list[Token]:
    """Words already split on spaces, as given (brackets escaped), with their places."""
    return [
        Token(escape([m.group()])[0], m.group(), m.start(), m.end())
        for m in re.finditer(r"\S+", text)
    ]


def tokenize_sentences(
    text: str, split: bool = True, tokenized: bool = False, scheme: str = PTB
) -> list[list[Token]]:
    """The tokens of each sentence of ``text`` (``split``), or of the whole text as one
    (a blank text: one empty list). ``tokenized``: the words are split on spaces already
    (sentences still end as ``sentence_spans`` says); else cut as ``scheme`` says."""
    tokens = split_tokens(text) if tokenized else tokenize_with_offsets(text, scheme)
    if not split:
        return [tokens]
    spans = sentence_spans(text)
    return [[t for t in tokens if a <= t.start < b] for a, b in spans] or [[]]


# A clitic that UD English EWT writes with the word before it as one multi-word token
# (``don't`` = do + n't, ``it's``, ``I'm``, ``they've``, curly or straight): all 2,817
# words of these forms glued to the word before them in its three splits are inside one.
_CLITIC = re.compile(r"(?i)['’`´](?:s|m|d|ll|re|ve)|n['’`´]t")
# Words that the Treebank's rules cut and EWT joins likewise (``cannot``, ``gonna``,
# ``wanna``, ``gotta``): the host, lowercase, and what follows it.
_JOINED = frozenset({("can", "not"), ("gon", "na"), ("wan", "na"), ("got", "ta")})


def multiword_tokens(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """``(first, last)`` (0-based, inclusive) of each run of ``tokens`` that UD writes as one
    multi-word token: a word and the clitics glued to it, nothing between them. A clitic is
    ``'s``, ``'m``, ``'d``, ``'ll``, ``'re``, ``'ve`` or ``n't`` (any apostrophe), one
    written without its apostrophe where ``as_ud`` cut it off (``do nt``, ``i m``), or the
    second half of ``can not``, ``gon na``, ``wan na``, ``got ta``. A number and its unit
    (``5 pm``), a hyphen's pieces and a possessive ``'`` after a plural (which a closing
    quote cannot be told from) are words of their own, as in EWT."""
    runs: list[tuple[int, int]] = []
    for k in range(1, len(tokens)):
        host, clitic = tokens[k - 1], tokens[k]
        if host.end != clitic.start or not host.form[-1:].isalnum():
            continue
        bare = _UD_BARE_CLITIC.match(host.form + clitic.form)
        if not (
            _CLITIC.fullmatch(clitic.form)
            or (host.form.lower(), clitic.form.lower()) in _JOINED
            or (bare is not None and bare.end() == len(host.form))
        ):
            continue
        if runs and runs[-1][1] == k - 1:
            runs[-1] = (runs[-1][0], k)
        else:
            runs.append((k - 1, k))
    return runs


def with_text(tree: DependencyTree, tokens: Sequence[Token], text: str) -> DependencyTree:
    """``tree`` (of ``tokens``' words) as CoNLL-U writes raw text: each word's FORM as the
    text has it (``(``, not ``-LRB-``), ``SpaceAfter=No`` in MISC where no space follows
    it, a word and its clitics as UD writes them (``multiword_tokens``: a range line
    ``4-5 don't`` before the words ``do`` and ``n't``, which holds the ``SpaceAfter=No``
    of the run), and the sentence's text in a ``# text`` comment. The last token's MISC
    looks at what follows it in ``text`` (the next sentence of the line, or nothing).
    A tree that has multi-word tokens already keeps them, and gets no others."""
    if len(tokens) != tree.n:
        raise ValueError(f"{len(tokens)} tokens for a tree of {tree.n} words")

    def glued(end: int) -> bool:
        return end < len(text) and not text[end].isspace()

    runs = [] if tree.multiword_tokens else multiword_tokens(tokens)
    inside = {k for first, last in runs for k in range(first, last + 1)}
    misc = []
    for k, token in enumerate(tokens):
        kept = [] if tree.misc[k] == "_" else tree.misc[k].split("|")
        if glued(token.end) and k not in inside:
            kept.append("SpaceAfter=No")
        misc.append("|".join(kept) or "_")
    ranges = list(tree.multiword_tokens)
    for first, last in runs:
        start, end = tokens[first].start, tokens[last].end
        ranges.append(
            ConlluRow(
                f"{first + 1}-{last + 1}",
                text[start:end],
                misc="SpaceAfter=No" if glued(end) else "_",
            )
        )
    return DependencyTree(
        [t.form for t in tokens],
        tree.heads,
        tree.relations,
        upos=tree.upos,
        xpos=tree.xpos,
        lemmas=tree.lemmas,
        feats=tree.feats,
        deps=tree.deps,
        misc=misc,
        metadata={**tree.metadata, "text": text[tokens[0].start : tokens[-1].end]},
        multiword_tokens=ranges,
        empty_nodes=tree.empty_nodes,
    )
