"""Perplexity of a language model on a held-out text, one sentence (or text) a line.

A causal model's log-probability of each line (each piece from those before it, after
its start token), a masked model's pseudo-log-likelihood, summed over the file: perplexity
per piece, ``exp(-total / pieces)``, which depends on the model's tokenizer, and per word
(white-space words), ``exp(-total / words)``, which two models with different tokenizers
share. The end of a line is not predicted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeattn import plugins
from treeattn.errors import FormatError
from treeattn.evaluation.suites import EvaluationSuite, SourceOption, Stage

if TYPE_CHECKING:
    from treeattn.evaluation.scoring import Progress, Scorer


@dataclass(frozen=True)
class PerplexityResult:
    """The summed natural-log probability of a file's lines and what it was taken over."""

    source: str
    lines: int
    words: int
    pieces: int
    log_prob: float

    @property
    def per_piece(self) -> float:
        return math.exp(-self.log_prob / self.pieces)

    @property
    def per_word(self) -> float:
        return math.exp(-self.log_prob / self.words)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "lines": self.lines,
            "words": self.words,
            "pieces": self.pieces,
            "log_prob": self.log_prob,
            "per_piece": self.per_piece,
            "per_word": self.per_word,
        }


def read_text_lines(path: str | Path) -> list[str]:
    """A text file's non-blank lines; a file with none is an error naming it."""
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    kept = [line for line in lines if line]
    if not kept:
        raise FormatError("no text to score: every line is blank", str(path), None)
    return kept


def score_perplexity(
    scorer: Scorer, texts: Sequence[str], source: str, progress: Progress | None = None
) -> PerplexityResult:
    """Perplexity of ``texts`` (one scored sequence each) under ``scorer``'s model."""
    scores = scorer.score(texts, progress)
    return PerplexityResult(
        source,
        len(texts),
        sum(len(text.split()) for text in texts),
        sum(len(s.log_probs) for s in scores),
        math.fsum(s.total for s in scores),
    )


class PerplexitySuite(EvaluationSuite):
    """Perplexity of a text file of the user's own (no default: it runs when given one)."""

    name, title = "perplexity", "perplexity"
    description = "perplexity per word and per piece of a text of your own"
    option = SourceOption(
        "FILE",
        "also the perplexity (per word and per piece) of a text file, one sentence a "
        "line (a masked model's pseudo-perplexity)",
        many=False,
    )

    def read(self, source: Any, limit: int | None) -> tuple[str, list[str]]:
        return str(source), read_text_lines(source)[:limit]

    def score(self, scorer: Scorer, items: tuple[str, list[str]], stage: Stage) -> PerplexityResult:
        source, texts = items
        with stage() as progress:
            return score_perplexity(scorer, texts, source, progress)

    def headline(self, result: PerplexityResult) -> dict[str, float]:
        return {f"{self.name}_per_word": result.per_word}

    def format(self, result: PerplexityResult, kind: str) -> list[str]:
        from treeattn.evaluation.scoring import CAUSAL  # here: reading texts needs no torch

        pseudo = "pseudo-" if kind != CAUSAL else ""
        return [
            f"{pseudo}perplexity of {result.source} ({result.lines:,} lines)",
            f"  per word   {result.per_word:10.2f}  over {result.words:,} words",
            f"  per piece  {result.per_piece:10.2f}  over {result.pieces:,} pieces",
            "",
        ]


plugins.suites.register(PerplexitySuite())
