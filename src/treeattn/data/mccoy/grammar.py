"""The PCFGs McCoy, Frank & Linzen (2020) sampled their sentences from (``cfgs/*.gr``), and
the word classes the transformations and the parser read off them.

A grammar file holds one rule a line, ``weight<TAB>left-hand side<TAB>right-hand side``
(right-hand symbols separated by spaces), with blank lines between groups. Weights are
relative: a symbol's rules are drawn in proportion to them. A symbol that is the left-hand
side of no rule is a word.
"""

from __future__ import annotations

import os
import random
from bisect import bisect
from dataclasses import dataclass
from itertools import accumulate

from treeattn.errors import FormatError
from treeattn.trees import Tree
from treeattn.utf8 import read_utf8

START = "ROOT"

# Word classes, from the pre-terminal's name without its number suffix.
DET, NOUN, PREP, REL, AUX, VERB_INTRANS, VERB_TRANS = (
    "det",
    "noun",
    "prep",
    "rel",
    "aux",
    "verb_intrans",
    "verb_trans",
)
_CLASS_OF_PRETERMINAL = {
    "Det": DET,
    "N": NOUN,
    "Prep": PREP,
    "Rel": REL,
    "Aux": AUX,
    "V_intrans": VERB_INTRANS,
    "V_trans": VERB_TRANS,
}
# question.gr writes the number as _S / _P, tense.gr as _sg / _pl.
SINGULAR, PLURAL = "sg", "pl"
_NUMBER_SUFFIXES = {"_S": SINGULAR, "_sg": SINGULAR, "_P": PLURAL, "_pl": PLURAL}


@dataclass(frozen=True)
class WordClass:
    """A word's class (``DET``, ``NOUN``, ...) and number (``SINGULAR``, ``PLURAL``, or
    None where the class does not mark it: determiners, and verbs after an auxiliary)."""

    kind: str
    number: str | None = None


class Grammar:
    """``rules``: left-hand side -> its right-hand sides and their weights, in file order."""

    def __init__(self, rules: dict[str, list[tuple[tuple[str, ...], float]]]) -> None:
        self.rules = rules
        # Running totals of each symbol's weights, to draw a rule with one bisection.
        self._totals = {lhs: list(accumulate(w for _, w in rhs)) for lhs, rhs in rules.items()}

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Grammar:
        rules: dict[str, list[tuple[tuple[str, ...], float]]] = {}
        for number, line in enumerate(read_utf8(path).split("\n"), start=1):
            if not line.strip():
                continue
            fields = line.strip().split("\t")
            if len(fields) != 3:
                raise FormatError(
                    "expected 'weight<TAB>left-hand side<TAB>right-hand side'", str(path), number
                )
            weight_text, lhs, rhs = fields
            try:
                weight = float(weight_text)
            except ValueError:
                raise FormatError(
                    f"weight {weight_text!r} is not a number", str(path), number
                ) from None
            if weight <= 0 or not rhs.split():
                raise FormatError(
                    "a rule needs a positive weight and a right-hand side", str(path), number
                )
            rules.setdefault(lhs, []).append((tuple(rhs.split()), weight))
        if START not in rules:
            raise FormatError(f"no rule for the start symbol {START}", str(path))
        return cls(rules)

    def sample(self, rng: random.Random, symbol: str = START) -> Tree:
        """A derivation of ``symbol``, each rule drawn by its weight: a tree labeled with
        the grammar's symbols, whose pre-terminals hold the words, e.g. ``(Det the)``."""
        rhs = self.choose(rng, symbol)
        return Tree(symbol, [self.sample(rng, s) if s in self.rules else s for s in rhs])

    def choose(self, rng: random.Random, symbol: str) -> tuple[str, ...]:
        """The right-hand side of one of ``symbol``'s rules, drawn by its weight."""
        totals = self._totals[symbol]
        choice = min(bisect(totals, rng.random() * totals[-1]), len(totals) - 1)
        return self.rules[symbol][choice][0]

    def word_classes(self) -> dict[str, WordClass]:
        """Each word's class and number, from the pre-terminal that writes it
        (``N_S -> newt``: a singular noun). ``ValueError`` if a word has two classes."""
        classes: dict[str, WordClass] = {}
        for lhs, expansions in self.rules.items():
            for rhs, _ in expansions:
                if len(rhs) != 1 or rhs[0] in self.rules:
                    continue
                found = _word_class(lhs)
                if found is None:
                    raise ValueError(f"pre-terminal {lhs!r} is no known word class")
                if classes.setdefault(rhs[0], found) != found:
                    raise ValueError(f"{rhs[0]!r} is both {classes[rhs[0]]} and {found}")
        return classes


def _word_class(preterminal: str) -> WordClass | None:
    number = None
    for suffix, meaning in _NUMBER_SUFFIXES.items():
        if preterminal.endswith(suffix):
            preterminal, number = preterminal.removesuffix(suffix), meaning
            break
    kind = _CLASS_OF_PRETERMINAL.get(preterminal)
    return None if kind is None else WordClass(kind, number)
