"""Dependency trees and CoNLL-U reading and writing.

A ``DependencyTree`` is the basic tree of one sentence: its syntactic words, each word's head
(1-based, ``0`` for the root, as in CoNLL-U) and relation, plus the other CoNLL-U columns as
their text (``"_"`` when empty). Word ``i`` of the sentence has id ``i + 1``.

CoNLL-U lines that are not syntactic words are kept, as their ten columns of text, so that
writing reproduces them, but they are not part of the basic tree:

- multi-word tokens (ids like ``3-4``): the surface token ``don't`` over the words ``do``
  and ``n't``;
- empty nodes (ids like ``8.1``): nodes of the enhanced graph only.

FEATS, DEPS and MISC are kept as text, not parsed into dictionaries: that reproduces them
exactly (a MISC value may itself hold ``=``, e.g. ``Cxn=free=rc-obj`` in EWT).

>>> tree = DependencyTree(["the", "cat", "sat"], [2, 3, 0], ["det", "nsubj", "root"])
>>> tree.root, tree.children()[3], tree.is_projective()
(3, [2], True)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import conllu
from conllu.exceptions import ParseException
from conllu.parser import parse_comment_line, parse_id_value, parse_int_value

from treeattn.errors import FormatError
from treeattn.utf8 import read_utf8

FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
_HEAD_COLUMN = FIELDS.index("head")
_DEPREL_COLUMN = FIELDS.index("deprel")

# Keep every comment, also those without "key = value" (conllu drops those by default).
_METADATA_PARSERS = {"__fallback__": lambda key, value: (key, value)}


class ConlluRow(NamedTuple):
    """The ten columns of one CoNLL-U line, as text (multi-word tokens and empty nodes)."""

    id: str
    form: str
    lemma: str = "_"
    upos: str = "_"
    xpos: str = "_"
    feats: str = "_"
    head: str = "_"
    deprel: str = "_"
    deps: str = "_"
    misc: str = "_"


def multiword_span(row: ConlluRow) -> tuple[int, int]:
    """``(first, last)`` word ids (inclusive) of a multi-word token row such as ``3-4``."""
    first, last = row.id.split("-")
    return int(first), int(last)


def empty_node_position(row: ConlluRow) -> tuple[int, int]:
    """``(k, m)`` of an empty node row ``k.m``: the m-th empty node after word ``k``."""
    word, index = row.id.split(".")
    return int(word), int(index)


class DependencyTree:
    """The basic dependency tree of one sentence.

    ``heads[i]`` is the id of word ``i + 1``'s head: ``0`` for a root, else ``1..n``.
    The heads must form a tree (in range, no cycles); one root is required only by
    ``validate(single_root=True)`` and by the CoNLL-U reader, as UD has one root per
    sentence. Per-word columns left out are ``"_"`` (``relations`` too).

    ``metadata`` holds the sentence's comments (``# sent_id = ...`` -> ``{"sent_id": ...}``;
    a comment without ``=`` has the value ``None``).
    """

    __slots__ = (
        "words",
        "heads",
        "relations",
        "lemmas",
        "upos",
        "xpos",
        "feats",
        "deps",
        "misc",
        "metadata",
        "multiword_tokens",
        "empty_nodes",
    )

    def __init__(
        self,
        words: Sequence[str],
        heads: Sequence[int],
        relations: Sequence[str] | None = None,
        *,
        upos: Sequence[str] | None = None,
        xpos: Sequence[str] | None = None,
        lemmas: Sequence[str] | None = None,
        feats: Sequence[str] | None = None,
        deps: Sequence[str] | None = None,
        misc: Sequence[str] | None = None,
        metadata: Mapping[str, str | None] | None = None,
        multiword_tokens: Iterable[ConlluRow] = (),
        empty_nodes: Iterable[ConlluRow] = (),
    ) -> None:
        n = len(words)
        if n == 0:
            raise ValueError("a dependency tree needs at least one word")
        self.words = list(words)
        self.heads = [int(h) for h in heads]
        if len(self.heads) != n:
            raise ValueError(f"{n} words but {len(self.heads)} heads")

        def column(name: str, values: Sequence[str] | None) -> list[str]:
            if values is None:
                return ["_"] * n
            if len(values) != n:
                raise ValueError(f"{n} words but {len(values)} {name}")
            return list(values)

        self.relations = column("relations", relations)
        self.upos = column("upos", upos)
        self.xpos = column("xpos", xpos)
        self.lemmas = column("lemmas", lemmas)
        self.feats = column("feats", feats)
        self.deps = column("deps", deps)
        self.misc = column("misc", misc)
        self.metadata: dict[str, str | None] = dict(metadata or {})
        self.multiword_tokens = sorted(
            (ConlluRow(*r) for r in multiword_tokens), key=multiword_span
        )
        self.empty_nodes = sorted((ConlluRow(*r) for r in empty_nodes), key=empty_node_position)
        for row in self.multiword_tokens:
            first, last = multiword_span(row)
            if not 1 <= first <= last <= n:
                raise ValueError(f"multi-word token {row.id} outside words 1..{n}")
        for row in self.empty_nodes:
            if not 0 <= empty_node_position(row)[0] <= n:
                raise ValueError(f"empty node {row.id} outside words 0..{n}")
        self.validate(single_root=False)

    # ------------------------------------------------------------------ structure
    @property
    def n(self) -> int:
        """Number of syntactic words."""
        return len(self.words)

    def __len__(self) -> int:
        return len(self.words)

    @property
    def roots(self) -> list[int]:
        """Ids (1-based) of the words whose head is ``0``."""
        return [i + 1 for i, h in enumerate(self.heads) if h == 0]

    @property
    def root(self) -> int:
        """Id of the single root word; ``ValueError`` when there is not exactly one."""
        roots = self.roots
        if len(roots) != 1:
            raise ValueError(f"tree has {len(roots)} roots: {roots}")
        return roots[0]

    def arcs(self) -> list[tuple[int, int]]:
        """``(head, dependent)`` id pairs, one per word, in word order; head ``0`` is the root."""
        return [(h, i + 1) for i, h in enumerate(self.heads)]

    def labeled_arcs(self) -> list[tuple[int, int, str]]:
        """``(head, dependent, relation)`` triples, one per word, in word order."""
        return [
            (h, i + 1, r) for i, (h, r) in enumerate(zip(self.heads, self.relations, strict=True))
        ]

    def children(self) -> list[list[int]]:
        """``children()[h]``: ids of ``h``'s dependents, ascending; index 0 is the root position."""
        out: list[list[int]] = [[] for _ in range(self.n + 1)]
        for dependent, head in enumerate(self.heads, start=1):
            out[head].append(dependent)
        return out

    def is_projective(self) -> bool:
        """True when no two arcs cross, the root arc counted as coming from position 0.

        Arcs ``(a, b)`` and ``(c, d)`` (each as ``min, max``) cross when ``a < c < b < d``.
        Non-crossing intervals are nested or disjoint, which one sorted pass with a stack
        checks in O(n log n).
        """
        spans = sorted(
            ((min(h, d), max(h, d)) for h, d in self.arcs()), key=lambda s: (s[0], -s[1])
        )
        open_spans: list[int] = []  # right ends of spans enclosing the current one
        for left, right in spans:
            while open_spans and open_spans[-1] <= left:
                open_spans.pop()
            if open_spans and open_spans[-1] < right:
                return False
            open_spans.append(right)
        return True

    def validate(
        self, single_root: bool = True, source: str = "<string>", line: int | None = None
    ) -> None:
        """Raise ``FormatError`` unless the heads form a tree (with one root if asked)."""
        problem = tree_problem(self.heads, single_root)
        if problem is not None:
            raise FormatError(problem[1], source, line)

    # ------------------------------------------------------------------ comparison, output
    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DependencyTree):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"DependencyTree(words={self.words!r}, heads={self.heads!r}, "
            f"relations={self.relations!r})"
        )

    def rows(self) -> list[ConlluRow]:
        """Every CoNLL-U line of the sentence in file order: multi-word tokens before their
        first word, empty nodes ``k.m`` after word ``k``."""
        multiword = {multiword_span(r)[0]: r for r in self.multiword_tokens}
        empty: dict[int, list[ConlluRow]] = {}
        for row in self.empty_nodes:
            empty.setdefault(empty_node_position(row)[0], []).append(row)
        out = list(empty.get(0, []))
        for i in range(self.n):
            if i + 1 in multiword:
                out.append(multiword[i + 1])
            out.append(
                ConlluRow(
                    str(i + 1),
                    self.words[i],
                    self.lemmas[i],
                    self.upos[i],
                    self.xpos[i],
                    self.feats[i],
                    str(self.heads[i]),
                    self.relations[i],
                    self.deps[i],
                    self.misc[i],
                )
            )
            out.extend(empty.get(i + 1, []))
        return out

    def to_conllu(self) -> str:
        """The sentence as CoNLL-U text: comments, token lines, and the closing blank line."""
        tokens = []
        for row in self.rows():
            for name, value in zip(FIELDS, row, strict=True):
                if not value or "\t" in value or "\n" in value:
                    raise ValueError(
                        f"cannot write {name} {value!r} of line {row.id}: CoNLL-U fields "
                        "must be non-empty and hold no tab or line break"
                    )
            tokens.append(conllu.Token(zip(FIELDS, row, strict=True)))
        return conllu.TokenList(tokens, conllu.Metadata(self.metadata)).serialize()


def tree_problem(heads: Sequence[int], single_root: bool = True) -> tuple[int, str] | None:
    """The first reason ``heads`` is not a tree, as ``(word index (0-based), message)``.

    ``None`` when every head is in ``0..n``, following heads from any word reaches 0 (no
    cycle), and, if ``single_root``, exactly one word has head 0.
    """
    n = len(heads)
    for i, head in enumerate(heads):
        if not 0 <= head <= n:
            return i, f"head {head} of word {i + 1} is out of range 0..{n}"
    roots = [i for i, head in enumerate(heads) if head == 0]
    if single_root and len(roots) > 1:
        return roots[1], (
            f"more than one root: words {roots[0] + 1} and {roots[1] + 1} both have head 0"
        )
    # Walk up from each word; 1 marks the current path, 2 words known to reach the root.
    state = [0] * (n + 1)
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        word = start
        while state[word] == 0:
            state[word] = 1
            path.append(word)
            word = heads[word - 1]
        if state[word] == 1:
            cycle = path[path.index(word) :]
            first = cycle.index(min(cycle))
            cycle = cycle[first:] + cycle[:first]
            chain = " -> ".join(map(str, cycle + cycle[:1]))
            return cycle[0] - 1, f"heads form a cycle: word {chain} (each arrow to its head)"
        for word in path:
            state[word] = 2
    # No root at all always leaves a cycle, reported above; here every word reaches 0.
    return None


# ---------------------------------------------------------------------- CoNLL-U reading


def parse_conllu(
    text: str, source: str = "<string>", single_root: bool = True
) -> list[DependencyTree]:
    """Every sentence of CoNLL-U ``text``; ``source`` names it in errors."""
    lines = (line.rstrip("\r") for line in text.split("\n"))
    return list(iter_conllu(lines, source, single_root))


def read_conllu(path: str | os.PathLike[str], single_root: bool = True) -> list[DependencyTree]:
    """Every sentence of a CoNLL-U file (UTF-8).

    Bad input (a malformed line, an id out of order, a head out of range, a cycle, a second
    root when ``single_root``, bytes that are not UTF-8) raises ``FormatError`` naming the
    file and line.
    """
    return parse_conllu(read_utf8(path), str(path), single_root)


def iter_conllu(
    lines: Iterable[str], source: str = "<string>", single_root: bool = True
) -> Iterator[DependencyTree]:
    """Sentences from CoNLL-U lines (without line breaks); blank lines end sentences."""
    block: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            block.append((number, line))
        elif block:
            yield _read_sentence(block, source, single_root)
            block = []
    if block:
        yield _read_sentence(block, source, single_root)


def _column_offset(columns: Sequence[str], index: int) -> int:
    """1-based character column where field ``index`` starts."""
    return 1 + sum(len(c) + 1 for c in columns[:index])


def _read_sentence(block: list[tuple[int, str]], source: str, single_root: bool) -> DependencyTree:
    metadata: dict[str, str | None] = {}
    words: list[ConlluRow] = []
    heads: list[int] = []
    word_lines: list[int] = []
    multiword: list[tuple[int, ConlluRow]] = []
    empty: list[ConlluRow] = []

    for number, line in block:
        if line.startswith("#"):
            if words or multiword or empty:
                raise FormatError("comment line after the sentence's first token", source, number)
            for key, value in parse_comment_line(line, metadata_parsers=_METADATA_PARSERS):
                if key in metadata:
                    raise FormatError(f"comment {key!r} repeated in one sentence", source, number)
                metadata[key] = value or None  # "# key =" reads as "# key", as it is written
            continue

        columns = line.split("\t")
        if len(columns) != len(FIELDS):
            raise FormatError(
                f"expected {len(FIELDS)} tab-separated columns, found {len(columns)}",
                source,
                number,
            )
        for index, value in enumerate(columns):
            if not value:
                column = _column_offset(columns, index)
                raise FormatError(f"empty {FIELDS[index].upper()} column", source, number, column)
        row = ConlluRow(*columns)
        try:
            ident = parse_id_value(row.id)
        except ParseException:
            raise FormatError(
                f"ID {row.id!r} is not a word number, a range (1-2) or an empty node (1.1)",
                source,
                number,
                1,
            ) from None

        if isinstance(ident, int):
            if ident != len(words) + 1:
                raise FormatError(
                    f"word id {ident} out of order: expected {len(words) + 1}", source, number, 1
                )
            try:
                head = parse_int_value(row.head)
            except ParseException:
                column = _column_offset(columns, _HEAD_COLUMN)
                raise FormatError(
                    f"HEAD {row.head!r} is not a word number (0 for the root)",
                    source,
                    number,
                    column,
                ) from None
            if head is None:
                column = _column_offset(columns, _HEAD_COLUMN)
                raise FormatError("a word needs a HEAD, found '_'", source, number, column)
            words.append(row)
            heads.append(head)
            word_lines.append(number)
            continue

        if row.head != "_" or row.deprel != "_":
            column = _column_offset(columns, _HEAD_COLUMN if row.head != "_" else _DEPREL_COLUMN)
            raise FormatError(
                f"line {row.id} is not a word: its HEAD and DEPREL must be '_'",
                source,
                number,
                column,
            )
        if ident[1] == "-":  # multi-word token first-last, placed just before word `first`
            first, _, last = ident
            if first != len(words) + 1:
                raise FormatError(
                    f"multi-word token {row.id} must start at the next word, {len(words) + 1}",
                    source,
                    number,
                    1,
                )
            multiword.append((number, row))
        else:  # empty node k.m, placed after word k; m counts 1, 2, ... after each word
            word, index = ident[0], ident[2]
            last = empty_node_position(empty[-1]) if empty else (-1, 0)
            expected = last[1] + 1 if last[0] == len(words) else 1
            if word != len(words) or index != expected:
                raise FormatError(
                    f"empty node {row.id} out of order: expected {len(words)}.{expected}",
                    source,
                    number,
                    1,
                )
            empty.append(row)

    if not words:
        raise FormatError("sentence has no word lines", source, block[0][0])
    previous_last = 0
    for number, row in multiword:
        first, last = multiword_span(row)
        if first <= previous_last or last > len(words):
            raise FormatError(
                f"multi-word token {row.id} overlaps another or runs past the last word "
                f"{len(words)}",
                source,
                number,
                1,
            )
        previous_last = last
    problem = tree_problem(heads, single_root)
    if problem is not None:
        index, message = problem
        number = word_lines[index]
        column = _column_offset(words[index], _HEAD_COLUMN)
        raise FormatError(message, source, number, column)

    return DependencyTree(
        [r.form for r in words],
        heads,
        [r.deprel for r in words],
        upos=[r.upos for r in words],
        xpos=[r.xpos for r in words],
        lemmas=[r.lemma for r in words],
        feats=[r.feats for r in words],
        deps=[r.deps for r in words],
        misc=[r.misc for r in words],
        metadata=metadata,
        multiword_tokens=[row for _, row in multiword],
        empty_nodes=empty,
    )


# ---------------------------------------------------------------------- CoNLL-U writing


def format_conllu(trees: Iterable[DependencyTree]) -> str:
    """CoNLL-U text of ``trees``; each sentence ends with a blank line."""
    return "".join(tree.to_conllu() for tree in trees)


def write_conllu(path: str | os.PathLike[str], trees: Iterable[DependencyTree]) -> None:
    """Write ``trees`` to a CoNLL-U file (UTF-8, LF line ends)."""
    Path(path).write_text(format_conllu(trees), encoding="utf-8", newline="\n")
