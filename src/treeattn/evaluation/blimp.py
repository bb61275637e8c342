"""BLiMP (Warstadt et al. 2020) and any file in its format: minimal pairs, one JSON object
a line with ``sentence_good`` and ``sentence_bad``. A pair is right when the good
sentence's whole log-probability is higher (the paper's simple LM method: unnormalised,
no prefix); accuracy per paradigm (``UID``, else the file's name), per phenomenon
(``linguistics_term``), per field and overall (over pairs). BLiMP writes one paradigm's
field ``syntax/semantics`` (``principle_A_case_2``) and the others' ``syntax_semantics``:
both are read as ``syntax_semantics``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeattn import plugins
from treeattn.errors import FormatError
from treeattn.evaluation.suites import (
    SHARED,
    EvaluationSuite,
    SourceOption,
    Stage,
    source_paths,
    table,
)
from treeattn.utf8 import read_utf8, text_lines

if TYPE_CHECKING:
    from treeattn.evaluation.scoring import Progress, Scorer

REQUIRED = ("sentence_good", "sentence_bad")
UNKNOWN = "unknown"  # the phenomenon or field of a file that names none


@dataclass(frozen=True)
class MinimalPair:
    """An acceptable sentence, its unacceptable twin, and where they come from."""

    good: str
    bad: str
    paradigm: str
    phenomenon: str
    field: str
    where: str  # file:line


def read_pairs(path: str | Path) -> list[MinimalPair]:
    """The pairs of one file; a line that is no JSON object, or lacks a sentence, is an
    error naming the file and line."""
    path = Path(path)
    pairs = []
    for number, line in enumerate(text_lines(read_utf8(path)), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise FormatError(f"not JSON: {error.msg}", str(path), number, error.colno) from None
        if not isinstance(row, dict):
            raise FormatError("expected a JSON object", str(path), number)
        for key in REQUIRED:
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise FormatError(f"no {key} (a non-empty string)", str(path), number)
        pairs.append(
            MinimalPair(
                row["sentence_good"],
                row["sentence_bad"],
                str(row.get("UID") or path.stem),
                str(row.get("linguistics_term") or UNKNOWN),
                str(row.get("field") or UNKNOWN).replace("/", "_"),
                f"{path}:{number}",
            )
        )
    if not pairs:
        raise FormatError("no minimal pair", str(path))
    return pairs


def files_of(source: str | Path, suffix: str, what: str) -> list[Path]:
    """A file, or every file of a folder whose name ends in ``suffix``, by name."""
    source = Path(source)
    if source.is_dir():
        files = sorted(source.glob(f"*{suffix}"))
        if not files:
            raise FileNotFoundError(f"{source}: no {suffix} file of {what}")
        return files
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such file or folder")
    return [source]


def blimp_files(source: str | Path) -> list[Path]:
    """A ``.jsonl`` file, or every ``.jsonl`` file of a folder, by name."""
    return files_of(source, ".jsonl", "minimal pairs")


def accuracy_by(rows: Sequence[tuple[str, bool]]) -> dict[str, dict[str, float]]:
    """``{key: {"accuracy": percent right, "count": n}}`` of (key, right) rows, by key."""
    groups: dict[str, list[bool]] = {}
    for key, right in rows:
        groups.setdefault(key, []).append(right)
    return {
        key: {"accuracy": 100.0 * sum(found) / len(found), "count": len(found)}
        for key, found in sorted(groups.items())
    }


@dataclass
class BlimpResult:
    """Every pair's two log-probabilities, and accuracy by paradigm, phenomenon, field."""

    pairs: list[MinimalPair]
    good: list[float]
    bad: list[float]

    @property
    def right(self) -> list[bool]:
        return [g > b for g, b in zip(self.good, self.bad, strict=True)]

    @property
    def overall(self) -> float:
        return 100.0 * sum(self.right) / len(self.pairs)

    @property
    def ties(self) -> int:
        """Pairs whose two sentences score the same (counted wrong): a word-level model
        that reads the words that differ as one unknown word gives them."""
        return sum(g == b for g, b in zip(self.good, self.bad, strict=True))

    def by(self, key: str) -> dict[str, dict[str, float]]:
        """Accuracy by ``paradigm``, ``phenomenon`` or ``field``."""
        rows = zip(self.pairs, self.right, strict=True)
        return accuracy_by([(getattr(pair, key), right) for pair, right in rows])

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall,
            "count": len(self.pairs),
            "ties": self.ties,
            "by_field": self.by("field"),
            "by_phenomenon": self.by("phenomenon"),
            "by_paradigm": self.by("paradigm"),
            "pairs": [
                {"where": p.where, "good": g, "bad": b}
                for p, g, b in zip(self.pairs, self.good, self.bad, strict=True)
            ],
        }


def score_blimp(
    scorer: Scorer,
    pairs: Sequence[MinimalPair],
    progress: Progress | None = None,
) -> BlimpResult:
    """Both sentences of every pair scored whole (natural-log probabilities)."""
    texts = [text for pair in pairs for text in (pair.good, pair.bad)]
    scores = scorer.score(texts, progress)
    return BlimpResult(
        list(pairs), [s.total for s in scores[0::2]], [s.total for s in scores[1::2]]
    )


class BlimpSuite(EvaluationSuite):
    """BLiMP minimal pairs: files or folders of ``.jsonl`` files (default: ``blimp/``)."""

    name, title = "blimp", "BLiMP"
    description = "minimal pairs: how often the acceptable sentence is the more probable"
    shared, default = "blimp", SHARED
    option = SourceOption(
        "PATH",
        "BLiMP-format .jsonl files (sentence_good, sentence_bad per line) or folders of "
        "them (default: $TREEATTN_DATA/blimp)",
    )

    def read(self, source: Any, limit: int | None) -> list[MinimalPair]:
        paths = source_paths(source, self.shared)
        return [p for path in paths for f in blimp_files(path) for p in read_pairs(f)[:limit]]

    def score(self, scorer: Scorer, items: list[MinimalPair], stage: Stage) -> BlimpResult:
        with stage() as progress:
            return score_blimp(scorer, items, progress)

    def to_dict(self, result: BlimpResult, seconds: dict[str, float]) -> dict[str, Any]:
        out = result.to_dict()
        out["pairs_per_second"] = len(result.pairs) / max(seconds[self.name], 1e-9)
        return out

    def format(self, result: BlimpResult, kind: str) -> list[str]:
        # A user's own files may name no field or phenomenon: a table of "unknown" alone
        # says nothing, so each is shown only where some pair names one.
        fields, phenomena = result.by("field"), result.by("phenomenon")
        rows = [("overall", result.overall, len(result.pairs))]
        if set(fields) != {UNKNOWN}:
            rows += [(f"  {k}", v["accuracy"], v["count"]) for k, v in fields.items()]
        lines = table("BLiMP by field" if set(fields) != {UNKNOWN} else "BLiMP", rows, "accuracy")
        if result.ties:
            lines[-1:-1] = [f"{result.ties} pairs scored the same (ties count as wrong)"]
        if set(phenomena) != {UNKNOWN}:
            rows = [(k, v["accuracy"], v["count"]) for k, v in phenomena.items()]
            lines += table("BLiMP by phenomenon", rows, "accuracy")
        rows = [(k, v["accuracy"], v["count"]) for k, v in result.by("paradigm").items()]
        return lines + table("BLiMP by paradigm (file)", rows, "accuracy")


plugins.suites.register(BlimpSuite())
