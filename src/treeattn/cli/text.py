"""Input lines as sentences of Penn Treebank tokens: each line one sentence, or cut into
its sentences on request (``--split-sentences``); a line that seems to hold several, read
as one, gets a warning naming file:line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from treeattn.trees.tokenize import PTB, Token, sentence_spans, tokenize_sentences

SHOWN = 5  # warnings printed before the rest are counted


@dataclass(frozen=True)
class LineSentence:
    """One sentence of input line ``line`` (1-based): the ``index``-th of the line when
    lines are split, else the whole line; ``text`` is the whole line."""

    line: int
    index: int
    text: str
    tokens: list[Token]

    @property
    def words(self) -> list[str]:
        return [token.word for token in self.tokens]

    def place(self, where: str, split: bool) -> str:
        """``file:line`` (and the sentence's number in the line when lines are split)."""
        return f"{where}:{self.line}" + (f" (sentence {self.index})" if split else "")


def add_split_sentences(p: argparse.ArgumentParser, unit: str) -> None:
    p.add_argument(
        "--split-sentences",
        action="store_true",
        help=f"cut each line into its sentences ({unit}); without it a line is one "
        "sentence, and a line that seems to hold several gets a warning",
    )


def line_sentences(
    lines: Sequence[str], where: str, split: bool, tokenized: bool = False, scheme: str = PTB
) -> list[LineSentence]:
    """The sentences of ``lines`` (a blank line: one sentence without tokens), warning on
    stderr about lines that seem to hold several when ``split`` is off; words cut as
    ``scheme`` says (``tokenize_with_offsets``)."""
    if not split:
        warn_several_sentences(several_sentences(lines), where)
    return [
        LineSentence(number, index, line, tokens)
        for number, line in enumerate(lines, start=1)
        for index, tokens in enumerate(tokenize_sentences(line, split, tokenized, scheme), start=1)
    ]


def warn_several_sentences(numbers: Sequence[int], where: str, hint: bool = True) -> None:
    """One warning a line (the first few, then a count) for lines read as one sentence
    that seem to hold several; ``hint``: name --split-sentences, where the command has it."""
    advice = " (--split-sentences reads each apart)" if hint else ""
    for number in numbers[:SHOWN]:
        print(
            f"treeattn: warning: {where}:{number}: the line seems to hold several sentences; "
            f"read as one{advice}",
            file=sys.stderr,
        )
    if len(numbers) > SHOWN:
        print(
            f"treeattn: warning: {where}: {len(numbers) - SHOWN} more lines seem to hold "
            "several sentences",
            file=sys.stderr,
        )


def several_sentences(lines: Sequence[str]) -> list[int]:
    """The numbers (1-based) of the lines that seem to hold more than one sentence."""
    return [k for k, line in enumerate(lines, start=1) if len(sentence_spans(line)) > 1]
