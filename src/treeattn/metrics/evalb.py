"""Labeled bracket scoring compatible with EVALB (Sekine & Collins 1997) under ``COLLINS.prm``.

The scoring follows EVALB's documented behaviour:

* **Deleted labels** (``DELETE_LABEL``). A pre-terminal whose tag is deleted loses its word
  too: ``-NONE-`` traces and the punctuation tags ``,`` ``:`` `````` ``''`` ``.`` are taken
  out of the sentence before anything is counted, so spans are measured over the remaining
  words and a bracket that differs only by a final period still matches. A phrase whose
  label is deleted (``TOP``) loses only its own bracket. A bracket left covering no word
  (``(SBAR (-NONE- 0) (S (-NONE- *T*-1)))``) is dropped.
* **Sentence length** (``DELETE_LABEL_FOR_LENGTH -NONE-``): only traces are left out, so
  punctuation *does* count in the ``Len.`` column and for the ``len<=40`` block, as in
  EVALB, while the ``Words`` column (tagging accuracy) excludes every deleted word.
* **Labels** are cut at the first ``-`` or ``=`` (``NP-SBJ-1`` and ``NP=2`` become ``NP``)
  and ``ADVP`` equals ``PRT`` (``EQ_LABEL``). POS tags for tagging accuracy are compared
  uncut.
* **Matching** is over multisets: a span and label written twice in gold (a unary chain
  ``(NP (NP ...))``) must appear twice in the test tree to be matched twice.
* **Crossing** counts test brackets that cross at least one gold bracket.
* The root bracket (``S``) counts like any other.

* The outer unlabeled bracket of ``.mrg`` files (``( (S ...) )``) is one more bracket,
  labeled ``""``, as the C program counts it.
* Gold and test words that disagree after deletion make an *error* sentence: left out of
  the totals, counted, reported in ``EvalbResult.problems``; the run goes on. A missing
  parse (``None``: an empty parse ``()`` or a blank line in a one-tree-per-line test file)
  or a test tree with no words left is a *skipped* sentence. When the files hold different
  numbers of trees, the pairs that exist are scored. ``strict=True`` turns each of these
  into a ``FormatError``.

``QUOTE_LABEL`` (the re-insertion of mis-tagged quotes of later ``new.prm`` files) and
``EQ_WORD`` are not supported: ``COLLINS.prm`` uses neither.

Every rate is a percentage in [0, 100].
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from treeattn.errors import FormatError
from treeattn.trees.labels import EMPTY_ELEMENT, strip_label
from treeattn.trees.tree import Tree
from treeattn.trees.treebank import (
    detect_one_per_line,
    parse_treebank_line,
    read_treebank_entries,
)
from treeattn.utf8 import read_utf8, text_lines

__all__ = [
    "COLLINS",
    "EvalbParams",
    "EvalbReport",
    "EvalbResult",
    "EvalbTotals",
    "SentenceResult",
    "evalb",
    "evalb_files",
    "format_evalb",
]

STATUS_OK = 0
STATUS_ERROR = 1  # EVALB's code for a sentence whose words differ
STATUS_SKIP = 2  # EVALB's code for a sentence with no test parse


@dataclass(frozen=True)
class EvalbParams:
    """The settings of an EVALB parameter file; the defaults are ``COLLINS.prm``.

    ``delete_labels`` are compared with cut phrase labels and with uncut POS tags, as EVALB
    does; ``equivalent_labels`` pairs are read as one equivalence relation.
    """

    delete_labels: frozenset[str] = frozenset({"TOP", EMPTY_ELEMENT, ",", ":", "``", "''", "."})
    delete_labels_for_length: frozenset[str] = frozenset({EMPTY_ELEMENT})
    equivalent_labels: tuple[tuple[str, str], ...] = (("ADVP", "PRT"),)
    cutoff_length: int = 40
    labeled: bool = True
    _canonical: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Union-find over the EQ_LABEL pairs: every label maps to one representative.
        parent: dict[str, str] = {}

        def find(label: str) -> str:
            while parent.get(label, label) != label:
                label = parent[label]
            return label

        for a, b in self.equivalent_labels:
            root_a, root_b = find(a), find(b)
            if root_a != root_b:
                parent[max(root_a, root_b)] = min(root_a, root_b)
        object.__setattr__(self, "_canonical", {label: find(label) for label in parent})

    def canonical(self, label: str) -> str:
        """The representative of ``label``'s equivalence class."""
        return self._canonical.get(label, label)


COLLINS = EvalbParams()


def _percent(part: int, whole: int, scale: float = 100.0) -> float:
    """``scale * part / whole``, and 0 when ``whole`` is 0 (as EVALB prints it)."""
    return scale * part / whole if whole else 0.0


# ---------------------------------------------------------------------------- results
class _BracketRates:
    """Recall, precision and F-measure from ``matched``, ``gold_brackets`` and
    ``test_brackets``, for one sentence or a corpus."""

    matched: int
    gold_brackets: int
    test_brackets: int

    @property
    def recall(self) -> float:
        return _percent(self.matched, self.gold_brackets)

    @property
    def precision(self) -> float:
        return _percent(self.matched, self.test_brackets)

    @property
    def fmeasure(self) -> float:
        """Harmonic mean of recall and precision; 0 where both are 0 (EVALB prints nan)."""
        r, p = self.recall, self.precision
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class SentenceResult(_BracketRates):
    """One row of EVALB's per-sentence table.

    ``length`` counts gold words other than traces (punctuation included); ``words`` counts
    the words left after deletion, over which tags are compared.
    """

    id: int
    length: int
    status: int
    gold_brackets: int
    test_brackets: int
    matched: int
    crossing: int
    words: int
    correct_tags: int

    @property
    def complete_match(self) -> bool:
        return self.gold_brackets == self.test_brackets == self.matched

    @property
    def tag_accuracy(self) -> float:
        return _percent(self.correct_tags, self.words)


@dataclass(frozen=True)
class EvalbTotals(_BracketRates):
    """Corpus statistics over a set of sentences (EVALB's ``-- All --`` block or its
    ``-- len<=40 --`` block). Skipped sentences count only in ``sentences``."""

    sentences: int = 0
    error_sentences: int = 0
    skip_sentences: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    complete_matches: int = 0
    crossing: int = 0
    no_crossing_sentences: int = 0
    two_or_less_crossing_sentences: int = 0
    words: int = 0
    correct_tags: int = 0

    @classmethod
    def of(cls, rows: Iterable[SentenceResult]) -> EvalbTotals:
        """Sum the per-sentence rows; error and skipped sentences add nothing but their
        count."""
        rows = list(rows)
        valid = [row for row in rows if row.status == STATUS_OK]
        return cls(
            sentences=len(rows),
            error_sentences=sum(row.status == STATUS_ERROR for row in rows),
            skip_sentences=sum(row.status == STATUS_SKIP for row in rows),
            gold_brackets=sum(row.gold_brackets for row in valid),
            test_brackets=sum(row.test_brackets for row in valid),
            matched=sum(row.matched for row in valid),
            complete_matches=sum(row.complete_match for row in valid),
            crossing=sum(row.crossing for row in valid),
            no_crossing_sentences=sum(row.crossing == 0 for row in valid),
            two_or_less_crossing_sentences=sum(row.crossing <= 2 for row in valid),
            words=sum(row.words for row in valid),
            correct_tags=sum(row.correct_tags for row in valid),
        )

    @property
    def valid_sentences(self) -> int:
        return self.sentences - self.error_sentences - self.skip_sentences

    def _per_valid(self, count: int, scale: float = 100.0) -> float:
        return _percent(count, self.valid_sentences, scale)

    @property
    def complete_match(self) -> float:
        return self._per_valid(self.complete_matches)

    @property
    def average_crossing(self) -> float:
        return self._per_valid(self.crossing, scale=1.0)

    @property
    def no_crossing(self) -> float:
        return self._per_valid(self.no_crossing_sentences)

    @property
    def two_or_less_crossing(self) -> float:
        return self._per_valid(self.two_or_less_crossing_sentences)

    @property
    def tagging_accuracy(self) -> float:
        return _percent(self.correct_tags, self.words)


@dataclass(frozen=True)
class EvalbResult:
    """Per-sentence rows, the corpus totals, and the totals over short sentences."""

    sentences: list[SentenceResult]
    total: EvalbTotals
    cutoff: EvalbTotals
    cutoff_length: int = 40
    problems: list[str] = field(default_factory=list)  # error and skipped sentences, why

    @property
    def fmeasure(self) -> float:
        return self.total.fmeasure

    @property
    def recall(self) -> float:
        return self.total.recall

    @property
    def precision(self) -> float:
        return self.total.precision


# ---------------------------------------------------------------------------- scoring
@dataclass
class _Reading:
    """A tree as EVALB sees it: kept words and tags, kept brackets, length for the cutoff."""

    words: list[str]
    tags: list[str]
    brackets: list[tuple[str, int, int]]
    length: int


def _read(tree: Tree, params: EvalbParams) -> _Reading:
    words: list[str] = []
    tags: list[str] = []
    brackets: list[tuple[str, int, int]] = []
    length = 0
    open_phrases: list[tuple[str, int]] = []
    # Iterative walk (no recursion limit): ``None`` marks where the last open phrase closes.
    stack: list[Tree | str | None] = [tree]
    while stack:
        node = stack.pop()
        if node is None:
            label, start = open_phrases.pop()
            end = len(words)
            cut = strip_label(label, keep_dash_labels=False)
            # The raw-empty label is the outer bracket of .mrg files: a bracket like any.
            if end > start and cut not in params.delete_labels:
                brackets.append((params.canonical(cut) if params.labeled else "", start, end))
        elif isinstance(node, str):  # a word directly under a phrase has no tag
            words.append(node)
            tags.append("")
            length += 1
        elif node.is_preterminal():
            tag = node.label
            length += tag not in params.delete_labels_for_length
            if tag not in params.delete_labels:
                words.append(node.children[0])  # type: ignore[arg-type]
                tags.append(tag)
        else:
            open_phrases.append((node.label, len(words)))
            stack.append(None)
            stack.extend(reversed(node.children))
    return _Reading(words, tags, brackets, length)


def _crosses(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Do the spans overlap without one containing the other?"""
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def _where(source: str, line: int | None) -> str:
    return f"{source}:{line}" if line is not None else source


def _score_sentence(
    index: int,
    gold: Tree,
    test: Tree | None,
    params: EvalbParams,
    gold_where: tuple[str, int | None],
    test_where: tuple[str, int | None],
    strict: bool,
    problems: list[str],
) -> SentenceResult:
    g = _read(gold, params)
    t = _read(test, params) if test is not None else None
    if t is None or not t.words:
        # EVALB skips a sentence whose test parse has no words, printing zeros.
        why = "no test parse" if t is None else "no test words left after deletion"
        if strict:
            raise FormatError(f"sentence {index}: {why}", *test_where)
        problems.append(f"{_where(*test_where)}: sentence {index} skipped: {why}")
        return SentenceResult(index, g.length, STATUS_SKIP, 0, 0, 0, 0, 0, 0)
    if g.words != t.words:
        if len(g.words) != len(t.words):
            detail = f"gold has {len(g.words)} words, test has {len(t.words)}"
        else:
            i = next(i for i, (a, b) in enumerate(zip(g.words, t.words, strict=True)) if a != b)
            detail = f"word {i + 1} is {g.words[i]!r} in gold but {t.words[i]!r} in test"
        message = (
            f"sentence {index}: words differ after deleting {sorted(params.delete_labels)} "
            f"({detail}; gold at {_where(*gold_where)})"
        )
        if strict:
            raise FormatError(message, *test_where)
        problems.append(f"{_where(*test_where)}: {message}: an error sentence")
        return SentenceResult(index, g.length, STATUS_ERROR, 0, 0, 0, 0, 0, 0)
    gold_counts = Counter(g.brackets)
    test_counts = Counter(t.brackets)
    matched = sum((gold_counts & test_counts).values())
    gold_spans = {(i, j) for _, i, j in g.brackets}
    crossing = sum(
        1 for _, i, j in t.brackets if any(_crosses((i, j), span) for span in gold_spans)
    )
    correct_tags = sum(
        params.canonical(a) == params.canonical(b) for a, b in zip(g.tags, t.tags, strict=True)
    )
    return SentenceResult(
        id=index,
        length=g.length,
        status=STATUS_OK,
        gold_brackets=len(g.brackets),
        test_brackets=len(t.brackets),
        matched=matched,
        crossing=crossing,
        words=len(g.words),
        correct_tags=correct_tags,
    )


def evalb(
    gold_trees: Sequence[Tree],
    test_trees: Sequence[Tree | None],
    params: EvalbParams = COLLINS,
    *,
    gold_source: str = "<gold>",
    test_source: str = "<test>",
    gold_lines: Sequence[int] | None = None,
    test_lines: Sequence[int] | None = None,
    strict: bool = False,
) -> EvalbResult:
    """Score ``test_trees`` against ``gold_trees``, one pair per sentence, as EVALB does.

    ``None`` in ``test_trees`` is a sentence the parser failed on (skipped). A pair whose
    words differ after deletion is an error sentence; when the sequences differ in length,
    the pairs that exist are scored. Each is listed in ``problems``; with ``strict`` each
    raises ``FormatError`` instead. The sources and line numbers serve the messages.

    >>> gold = Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))")
    >>> test = Tree.parse("(S (NP (DT the)) (VP (NN cat) (VBD sat)) (. .))")
    >>> r = evalb([gold], [test])
    >>> r.total.matched, r.total.gold_brackets, r.total.test_brackets
    (1, 3, 3)
    """
    problems: list[str] = []
    if len(gold_trees) != len(test_trees):
        # Point at the first test tree without a gold partner, when there is one.
        extra = len(gold_trees) if len(test_trees) > len(gold_trees) else None
        line = test_lines[extra] if extra is not None and test_lines is not None else None
        message = f"{len(gold_trees)} gold trees ({gold_source}) but {len(test_trees)} test trees"
        if strict:
            raise FormatError(message, test_source, line)
        problems.append(
            f"{_where(test_source, line)}: {message}: the first "
            f"{min(len(gold_trees), len(test_trees))} pairs are scored"
        )
    rows = [
        _score_sentence(
            k + 1,
            gold,
            test,
            params,
            (gold_source, gold_lines[k] if gold_lines is not None else None),
            (test_source, test_lines[k] if test_lines is not None else None),
            strict,
            problems,
        )
        for k, (gold, test) in enumerate(zip(gold_trees, test_trees, strict=False))
    ]
    short = [row for row in rows if row.length <= params.cutoff_length]
    return EvalbResult(
        rows, EvalbTotals.of(rows), EvalbTotals.of(short), params.cutoff_length, problems
    )


# ---------------------------------------------------------------------------- output
_HEADER = (
    "  Sent.                        Matched  Bracket   Cross        Correct Tag\n"
    " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n"
)
_RULE = "=" * 76 + "\n"


def _summary_block(title: str, totals: EvalbTotals) -> list[str]:
    return [
        "",
        title,
        f"Number of sentence        = {totals.sentences:6d}",
        f"Number of Error sentence  = {totals.error_sentences:6d}",
        f"Number of Skip  sentence  = {totals.skip_sentences:6d}",
        f"Number of Valid sentence  = {totals.valid_sentences:6d}",
        f"Bracketing Recall         = {totals.recall:6.2f}",
        f"Bracketing Precision      = {totals.precision:6.2f}",
        f"Bracketing FMeasure       = {totals.fmeasure:6.2f}",
        f"Complete match            = {totals.complete_match:6.2f}",
        f"Average crossing          = {totals.average_crossing:6.2f}",
        f"No crossing               = {totals.no_crossing:6.2f}",
        f"2 or less crossing        = {totals.two_or_less_crossing:6.2f}",
        f"Tagging accuracy          = {totals.tagging_accuracy:6.2f}",
    ]


def format_evalb(result: EvalbResult, per_sentence: bool = True) -> str:
    """EVALB's printed report: the per-sentence table, the totals line and the summary."""
    parts: list[str] = []
    if per_sentence:
        parts.append(_HEADER + _RULE)
        for row in result.sentences:
            parts.append(
                f"{row.id:4d}  {row.length:3d}    {row.status:d}  "
                f"{row.recall:6.2f} {row.precision:6.2f}   {row.matched:3d}    "
                f"{row.gold_brackets:3d}  {row.test_brackets:3d}    {row.crossing:3d}"
                f"   {row.words:4d}  {row.correct_tags:4d}   {row.tag_accuracy:6.2f}\n"
            )
        parts.append(_RULE)
        total = result.total
        if total.gold_brackets > 0 and total.test_brackets > 0:
            parts.append(
                f"                {total.recall:6.2f} {total.precision:6.2f} "
                f"{total.matched:6d} {total.gold_brackets:5d} {total.test_brackets:5d}  "
                f"{total.crossing:5d}"
            )
        parts.append(
            f"  {total.words:5d} {total.correct_tags:5d}   {total.tagging_accuracy:6.2f}\n"
        )
    lines = ["=== Summary ==="]
    lines += _summary_block("-- All --", result.total)
    lines += _summary_block(f"-- len<={result.cutoff_length} --", result.cutoff)
    parts.append("\n".join(lines) + "\n")
    return "".join(parts)


# ---------------------------------------------------------------------------- files
class EvalbReport(NamedTuple):
    """What ``evalb_files`` returns: the printable report and the numbers behind it."""

    text: str
    result: EvalbResult


def _read_trees(path: str | Path) -> tuple[list[Tree | None], list[int]]:
    """Every tree of a bracket file and its first line. In a file of one tree per line (as
    parsers write them), an empty parse ``()`` or a blank line between trees is a missing
    parse (``None``), as EVALB reads it; ``.mrg`` files are read in their free layout."""
    text = read_utf8(path)
    if str(path).endswith(".mrg") or not detect_one_per_line(text.replace("()", "(X x)")):
        entries = read_treebank_entries(path, one_per_line=False, unwrap=False)
        return [entry.tree for entry in entries], [entry.line for entry in entries]
    trees: list[Tree | None] = []
    for number, line in enumerate(text_lines(text), start=1):
        empty = not line.strip() or line.strip() == "()"
        trees.append(None if empty else parse_treebank_line(line, str(path), number))
    if not trees:
        raise FormatError("no tree in the file (it is empty)", str(path))
    return trees, list(range(1, len(trees) + 1))


def evalb_files(
    gold_path: str | Path,
    test_path: str | Path,
    params: EvalbParams = COLLINS,
    strict: bool = False,
) -> EvalbReport:
    """Score the bracket file ``test_path`` against ``gold_path``; returns (text, result).

    Trees are matched by order; each may sit on one line or span several (both files are
    read in the free layout of ``treeattn.trees.treebank``: a tree opens at the start of a
    line). Raises ``FormatError`` naming the file and line of a malformed tree or a
    mismatched sentence.
    """
    gold_trees, gold_lines = _read_trees(gold_path)
    if any(tree is None for tree in gold_trees):
        blank = gold_lines[gold_trees.index(None)]
        raise FormatError("a gold file needs a tree on every line", str(gold_path), blank)
    test_trees, test_lines = _read_trees(test_path)
    result = evalb(
        gold_trees,
        test_trees,
        params,
        gold_source=str(gold_path),
        test_source=str(test_path),
        gold_lines=gold_lines,
        test_lines=test_lines,
        strict=strict,
    )
    return EvalbReport(format_evalb(result), result)
