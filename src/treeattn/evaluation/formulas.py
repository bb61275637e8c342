"""SyntaxGym's prediction formulas: a parser and an evaluator.

A formula compares sums and differences of region surprisals, ``(6;%match_sing%)`` being
the surprisal of region 6 under condition ``match_sing``, and joins comparisons with
``&`` (and) or ``|`` (or). Brackets ``[ ]`` and parentheses group; numbers are literals.
The grammar, loosest first::

    formula    := comparison (("&" | "|") comparison)*      left to right
    comparison := sum (("<" | ">" | "=") sum)?
    sum        := term (("+" | "-") term)*                  left to right
    term       := region | number | "[" formula "]" | "(" formula ")"
    region     := "(" integer ";" "%" condition "%" ")"

``=`` holds when the two sides are close, as SyntaxGym tests it (relative tolerance 1e-5,
absolute 1e-3 bits).

>>> f = parse_formula("[(6;%a%) + (7;%a%)] < [(6;%b%) + (7;%b%)] & (1;%a%) > 0")
>>> f.regions()
[('a', 6), ('a', 7), ('b', 6), ('b', 7), ('a', 1)]
>>> f.holds({("a", 6): 1.0, ("a", 7): 2.0, ("b", 6): 2.5, ("b", 7): 1.0, ("a", 1): 0.5})
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from treeattn.errors import FormatError

EQUAL_RTOL, EQUAL_ATOL = 1e-5, 1e-3  # SyntaxGym's tolerance for "="
Surprisals = Mapping[tuple[str, int], float]  # (condition, region) -> bits

_REGION = re.compile(r"\(\s*(\d+)\s*;\s*%([^%]+)%\s*\)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?")
_CLOSE = {"[": "]", "(": ")"}


@dataclass(frozen=True)
class Region:
    """The surprisal of region ``number`` under ``condition``."""

    condition: str
    number: int

    def value(self, surprisals: Surprisals) -> float:
        key = (self.condition, self.number)
        if key not in surprisals:
            raise KeyError(f"no region {self.number} in condition {self.condition!r}")
        return surprisals[key]


@dataclass(frozen=True)
class Number:
    value_: float

    def value(self, surprisals: Surprisals) -> float:
        return self.value_


@dataclass(frozen=True)
class Arithmetic:
    """``left + right`` or ``left - right``."""

    operator: str
    left: Region | Number | Arithmetic
    right: Region | Number | Arithmetic

    def value(self, surprisals: Surprisals) -> float:
        a, b = self.left.value(surprisals), self.right.value(surprisals)
        return a + b if self.operator == "+" else a - b


@dataclass(frozen=True)
class Comparison:
    operator: str
    left: Region | Number | Arithmetic
    right: Region | Number | Arithmetic

    def holds(self, surprisals: Surprisals) -> bool:
        a, b = self.left.value(surprisals), self.right.value(surprisals)
        if self.operator == "<":
            return a < b
        if self.operator == ">":
            return a > b
        return math.isclose(a, b, rel_tol=EQUAL_RTOL, abs_tol=EQUAL_ATOL)


@dataclass(frozen=True)
class Logical:
    """``left & right`` or ``left | right``."""

    operator: str
    left: Comparison | Logical
    right: Comparison | Logical

    def holds(self, surprisals: Surprisals) -> bool:
        if self.operator == "&":
            return self.left.holds(surprisals) and self.right.holds(surprisals)
        return self.left.holds(surprisals) or self.right.holds(surprisals)


@dataclass(frozen=True)
class Formula:
    """A parsed prediction: ``holds(surprisals)`` evaluates it."""

    text: str
    root: Comparison | Logical

    def holds(self, surprisals: Surprisals) -> bool:
        return self.root.holds(surprisals)

    def regions(self) -> list[tuple[str, int]]:
        """The (condition, region) pairs it reads, in order of appearance."""
        return [(m.group(2), int(m.group(1))) for m in _REGION.finditer(self.text)]


class _Parser:
    """Recursive descent over the formula's characters; errors name the column."""

    def __init__(self, text: str, where: str, line: int | None) -> None:
        self.text, self.where, self.line, self.at = text, where, line, 0

    def fail(self, message: str) -> FormatError:
        return FormatError(
            f"{message} in formula {self.text!r}", self.where, self.line, self.at + 1
        )

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.at] if self.at < len(self.text) else ""

    def formula(self) -> Comparison | Logical:
        node = self.comparison()
        while self.peek() in ("&", "|"):
            operator = self.text[self.at]
            self.at += 1
            node = Logical(operator, node, self.comparison())
        return node

    def comparison(self) -> Comparison | Logical:
        if self.peek() in _CLOSE and not self._region_here():
            # A bracket may hold a whole formula ("[a < b] & [c < d]") or a sum ("[a + b] <
            # c"): read it as a formula and see what it held.
            start = self.at
            inner = self.group()
            if isinstance(inner, Comparison | Logical):
                return inner
            self.at = start
        left = self.sum()
        operator = self.peek()
        if operator not in ("<", ">", "="):
            raise self.fail("expected <, > or =")
        self.at += 1
        return Comparison(operator, left, self.sum())

    def sum(self) -> Region | Number | Arithmetic:
        node = self.term()
        while self.peek() in ("+", "-"):
            operator = self.text[self.at]
            self.at += 1
            node = Arithmetic(operator, node, self.term())
        return node

    def term(self) -> Region | Number | Arithmetic:
        self.skip()
        region = _REGION.match(self.text, self.at)
        if region:
            self.at = region.end()
            return Region(region.group(2).strip(), int(region.group(1)))
        number = _NUMBER.match(self.text, self.at)
        if number:
            self.at = number.end()
            return Number(float(number.group()))
        if self.peek() in _CLOSE:
            inner = self.group()
            if isinstance(inner, Comparison | Logical):
                raise self.fail("a comparison where a number was expected")
            return inner
        raise self.fail("expected a region (N;%condition%), a number or a bracket")

    def group(self) -> Region | Number | Arithmetic | Comparison | Logical:
        """A bracketed sum or formula (whichever its content is)."""
        opening = self.peek()
        self.at += 1
        start = self.at
        try:
            inner: Region | Number | Arithmetic | Comparison | Logical = self.formula()
        except FormatError:
            self.at = start
            inner = self.sum()
        if self.peek() != _CLOSE[opening]:
            raise self.fail(f"expected {_CLOSE[opening]}")
        self.at += 1
        return inner

    def _region_here(self) -> bool:
        return bool(_REGION.match(self.text, self.at))


def parse_formula(text: str, where: str = "<formula>", line: int | None = None) -> Formula:
    """The formula ``text``; a malformed one is an error naming ``where``, ``line`` and
    the column."""
    parser = _Parser(text, where, line)
    root = parser.formula()
    if parser.peek():
        raise parser.fail("unexpected text")
    return Formula(text, root)
