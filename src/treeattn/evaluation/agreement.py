"""Subject-verb agreement: the correct against the wrong verb form at the target word,
by number of attractors (Linzen et al. 2016; Gulordava et al. 2018).

Two sets, as ``sva/SOURCE.md`` describes them:

- ``linzen``: the subset of Linzen et al.'s Wikipedia sentences that Gulordava et al.
  evaluated on (``subj_agr_filtered.text`` and ``.gold``: target index, correct form,
  wrong form, attractors);
- ``gulordava``: Gulordava et al.'s English set (``generated.text``, ``.gold`` for the
  target index and both forms, ``.tab`` for the attractors and whether a sentence is
  ``original`` or ``generated`` (nonce)).

The sentences are tokenized, with ``<eos>`` at the end (left out here); the model reads
the words joined by spaces, the target word replaced by each form. An item is right when
the correct form's pieces are more probable than the wrong form's: for a causal model
given the words before the target (the text is cut after it: later words cannot change
it), for a masked model given the whole sentence (its pseudo-log-likelihood over the
form's pieces, as Goldberg (2019) scores BERT with the rest of the sentence in view).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeattn import plugins
from treeattn.data.paths import require_data
from treeattn.errors import FormatError
from treeattn.evaluation.blimp import accuracy_by
from treeattn.evaluation.suites import EvaluationSuite, SourceOption, Stage, table
from treeattn.utf8 import read_utf8, text_lines

if TYPE_CHECKING:
    from treeattn.evaluation.scoring import Progress, Scorer

LINZEN, GULORDAVA = "linzen", "gulordava"
AGREEMENT_SETS = (LINZEN, GULORDAVA)
END = "<eos>"
_FILES = {
    LINZEN: ("linzen_testset", "subj_agr_filtered"),
    GULORDAVA: ("gulordava2018_english", "generated"),
}


@dataclass(frozen=True)
class AgreementItem:
    """A sentence's words, the target's index, both forms, the attractors between subject
    and verb, a kind (``original`` or ``generated``; ``""`` where the set has none)."""

    words: list[str]
    target: int
    correct: str
    wrong: str
    attractors: int
    kind: str
    where: str

    def text(self, form: str, whole: bool) -> tuple[str, tuple[int, int]]:
        """The sentence with ``form`` at the target (cut after it unless ``whole``), and
        the form's characters in it."""
        before = " ".join(self.words[: self.target])
        start = len(before) + (1 if before else 0)
        after = self.words[self.target + 1 :] if whole else []
        text = " ".join([*self.words[: self.target], form, *after])
        return text, (start, start + len(form))


def _lines(path: Path) -> list[str]:
    return text_lines(read_utf8(path))


def _words(line: str) -> list[str]:
    words = line.split()
    return words[:-1] if words and words[-1] == END else words


def read_agreement(name: str, folder: str | Path) -> list[AgreementItem]:
    """The items of the set ``name`` (``linzen`` or ``gulordava``) in ``folder`` (the
    ``sva`` data folder); files that do not line up are an error naming file and line."""
    if name not in AGREEMENT_SETS:
        raise ValueError(f"agreement set must be one of {', '.join(AGREEMENT_SETS)}, not {name!r}")
    sub, stem = _FILES[name]
    base = Path(folder) / sub
    text_path, gold_path = base / f"{stem}.text", base / f"{stem}.gold"
    texts, golds = _lines(text_path), _lines(gold_path)
    if len(texts) != len(golds):
        raise FormatError(f"{len(golds)} lines, but {text_path} has {len(texts)}", str(gold_path))
    kinds = [("", -1)] * len(texts)
    if name == GULORDAVA:
        kinds = _gulordava_rows(base / f"{stem}.tab", texts)
    items = []
    for number, (line, gold) in enumerate(zip(texts, golds, strict=True), start=1):
        where = f"{gold_path}:{number}"
        fields = gold.split("\t")
        try:
            if name == LINZEN:
                target, correct, wrong, attractors = (
                    int(fields[0]),
                    fields[1],
                    fields[2],
                    int(fields[3]),
                )
            else:
                target, correct, wrong = int(fields[3]), fields[6], fields[7]
                attractors = kinds[number - 1][1]
        except (IndexError, ValueError):
            raise FormatError(
                "expected the target index, both forms and the attractors", str(gold_path), number
            ) from None
        words = _words(line)
        if not 0 <= target < len(words):
            raise FormatError(
                f"target index {target} is outside the sentence's {len(words)} words",
                str(gold_path),
                number,
            )
        items.append(
            AgreementItem(words, target, correct, wrong, attractors, kinds[number - 1][0], where)
        )
    return items


def _gulordava_rows(path: Path, texts: Sequence[str]) -> list[tuple[str, int]]:
    """(kind, attractors) of each sentence: the ``.tab`` has a header and two rows per
    sentence (correct, wrong) in the order of the ``.text`` file."""
    rows = list(csv.DictReader(read_utf8(path).splitlines(), delimiter="\t"))
    if len(rows) != 2 * len(texts):
        raise FormatError(
            f"{len(rows)} rows, expected two per sentence ({2 * len(texts)})", str(path)
        )
    found = []
    for k, text in enumerate(texts):
        row = rows[2 * k]
        if row["sent"] != text:
            raise FormatError(
                f"its sentence is not line {k + 1} of the .text file", str(path), 2 * k + 2
            )
        found.append((row["type"], int(row["n_attr"])))
    return found


@dataclass
class AgreementResult:
    """Each item's log-probability of the correct and the wrong form."""

    name: str
    items: list[AgreementItem]
    correct: list[float]
    wrong: list[float]

    @property
    def right(self) -> list[bool]:
        return [c > w for c, w in zip(self.correct, self.wrong, strict=True)]

    @property
    def overall(self) -> float:
        return 100.0 * sum(self.right) / len(self.items)

    def by_attractors(self) -> dict[str, dict[str, float]]:
        rows = [(item.attractors, r) for item, r in zip(self.items, self.right, strict=True)]
        found = accuracy_by([(f"{k:03d}", r) for k, r in rows])
        return {str(int(k)): v for k, v in found.items()}

    def by_kind(self) -> dict[str, dict[str, float]]:
        return accuracy_by(
            [(item.kind, r) for item, r in zip(self.items, self.right, strict=True) if item.kind]
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "overall": self.overall,
            "count": len(self.items),
            "by_attractors": self.by_attractors(),
        }
        if any(item.kind for item in self.items):
            out["by_kind"] = self.by_kind()
        out["items"] = [
            {"where": item.where, "correct": c, "wrong": w}
            for item, c, w in zip(self.items, self.correct, self.wrong, strict=True)
        ]
        return out


def score_agreement(
    scorer: Scorer,
    name: str,
    items: Sequence[AgreementItem],
    progress: Progress | None = None,
) -> AgreementResult:
    """Both forms of every item scored in one call."""
    from treeattn.evaluation.scoring import CAUSAL  # here: reading sets needs no torch

    whole = scorer.kind != CAUSAL
    texts, spans = [], []
    for item in items:
        for form in (item.correct, item.wrong):
            text, span = item.text(form, whole)
            texts.append(text)
            spans.append(span)
    scores = scorer.score(texts, progress)
    values = [s.span_log_prob(*span) for s, span in zip(scores, spans, strict=True)]
    return AgreementResult(name, list(items), values[0::2], values[1::2])


class AgreementSuite(EvaluationSuite):
    """The agreement sets named (default: both), from the shared data's ``sva/``; each set
    is timed, scored and shown apart (``agreement_linzen``, ``agreement_gulordava``)."""

    name, title = "agreement", "agreement"
    description = "agreement: the right verb form more probable than the wrong, by attractors"
    shared, default = "sva", AGREEMENT_SETS
    option = SourceOption(
        "SET",
        f"agreement sets: {', '.join(AGREEMENT_SETS)} (default: both, from $TREEATTN_DATA/sva)",
        choices=AGREEMENT_SETS,
    )

    def read(self, source: Any, limit: int | None) -> dict[str, list[AgreementItem]]:
        folder = require_data(self.shared)
        names = [source] if isinstance(source, str) else source
        return {name: read_agreement(name, folder)[:limit] for name in names}

    def score(
        self, scorer: Scorer, items: dict[str, list[AgreementItem]], stage: Stage
    ) -> dict[str, AgreementResult]:
        found = {}
        for name, these in items.items():
            with stage(f"{self.title} {name}", f"{self.name}_{name}") as progress:
                found[name] = score_agreement(scorer, name, these, progress)
        return found

    def headline(self, result: dict[str, AgreementResult]) -> dict[str, float]:
        return {f"{self.name}_{name}": found.overall for name, found in result.items()}

    def to_dict(
        self, result: dict[str, AgreementResult], seconds: dict[str, float]
    ) -> dict[str, Any]:
        return {name: found.to_dict() for name, found in result.items()}

    def format(self, result: dict[str, AgreementResult], kind: str) -> list[str]:
        lines = []
        for name, found in result.items():
            rows = [("overall", found.overall, len(found.items))]
            rows += [
                (f"  {k} attractor{'s' * (k != '1')}", v["accuracy"], v["count"])
                for k, v in found.by_attractors().items()
            ]
            rows += [(f"  {k}", v["accuracy"], v["count"]) for k, v in found.by_kind().items()]
            lines += table(f"agreement: {name}", rows, "accuracy")
        return lines


plugins.suites.register(AgreementSuite())
