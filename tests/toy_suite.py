"""An evaluation suite defined in this one file: sentence pairs in a tab-separated file, the
first of each line the one a model should find the more probable. It is here to show (and
test) that a new suite needs no change anywhere in the package: ``register()`` is the one
registration line, and ``treeattn lm-eval`` runs it with ``--only tab-pairs --tab-pairs
FILE``, prints its table and writes its JSON (docs/guides/language-models.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeattn import plugins
from treeattn.errors import FormatError
from treeattn.evaluation.suites import EvaluationSuite, SourceOption, Stage, table

NAME = "tab-pairs"


@dataclass
class TabPairsResult:
    pairs: list[tuple[str, str]]
    first: list[float]
    second: list[float]

    @property
    def overall(self) -> float:
        right = [a > b for a, b in zip(self.first, self.second, strict=True)]
        return 100.0 * sum(right) / len(right)

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall, "count": len(self.pairs)}


class TabPairsSuite(EvaluationSuite):
    name, title = NAME, "tab pairs"
    description = "tab-separated pairs: how often the first sentence is the more probable"
    option = SourceOption("FILE", "a file of pairs, 'better<TAB>worse' a line", many=False)

    def read(self, source: Any, limit: int | None) -> list[tuple[str, str]]:
        pairs = []
        for number, line in enumerate(Path(source).read_text("utf-8").splitlines(), 1):
            if line.count("\t") != 1:
                raise FormatError("expected two sentences and one tab", str(source), number)
            first, second = line.split("\t")
            pairs.append((first, second))
        return pairs[:limit]

    def score(self, scorer, items: list[tuple[str, str]], stage: Stage) -> TabPairsResult:
        with stage() as progress:
            scores = scorer.score([text for pair in items for text in pair], progress)
        totals = [s.total for s in scores]
        return TabPairsResult(items, totals[0::2], totals[1::2])

    def format(self, result: TabPairsResult, kind: str) -> list[str]:
        return table("tab pairs", [("overall", result.overall, len(result.pairs))], "accuracy")


# What an entry point of the group treeattn.suites names (``tests.toy_suite:SUITE``).
SUITE = TabPairsSuite()


def register() -> EvaluationSuite:
    return plugins.suites.register(SUITE)


def unregister() -> None:
    plugins.suites.unregister(NAME)
