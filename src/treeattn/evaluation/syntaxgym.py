"""SyntaxGym test suites (Hu et al. 2020): region surprisals and their predictions.

A suite's items each hold several conditions, each a sentence cut into numbered regions;
its predictions are formulas over region surprisals (``treeattn.evaluation.formulas``). An
item passes when every prediction holds; a suite's score is the share of items passed;
a circuit's the mean of its suites' scores, and the overall score the mean of all suites'.

How a sentence meets a model, as SyntaxGym and lm-zoo do it:

- the sentence is its regions' contents, stripped, joined by single spaces; an empty
  region adds no text (and no space) and has surprisal 0;
- a region's surprisal is the sum, in bits (-log2 p), of the surprisals of the pieces
  that begin inside its characters (a piece's leading space is not its beginning; a piece
  over two regions counts in the one it begins in);
- the model reads each condition's sentence whole, after its start token (causal models)
  or with the rest of the sentence around each piece (masked models, pseudo-log-likelihood).

Circuits: the six of Hu et al. (2020, Table 2) by suite name (``CIRCUITS``); a suite whose
metadata names a ``circuit`` is put there instead; any other suite is ``other`` (in the 34
shipped: ``nn-nv-rpl``, a small NN/NV ambiguity suite outside the paper's circuits). Every
suite counts in the overall mean.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeattn import plugins
from treeattn.errors import FormatError
from treeattn.evaluation.blimp import files_of
from treeattn.evaluation.formulas import Formula, parse_formula
from treeattn.evaluation.suites import (
    SHARED,
    EvaluationSuite,
    SourceOption,
    Stage,
    source_paths,
    table,
)
from treeattn.utf8 import read_utf8

if TYPE_CHECKING:
    from treeattn.evaluation.scoring import Progress, Scorer

OTHER = "other"
CIRCUITS = {
    "Agreement": ("number_orc", "number_prep", "number_src"),
    "Licensing": (
        "npi_orc_any",
        "npi_orc_ever",
        "npi_src_any",
        "npi_src_ever",
        "reflexive_orc_fem",
        "reflexive_orc_masc",
        "reflexive_prep_fem",
        "reflexive_prep_masc",
        "reflexive_src_fem",
        "reflexive_src_masc",
    ),
    "Garden-Path Effects": ("mvrr", "mvrr_mod", "npz_ambig", "npz_ambig_mod", "npz_obj")
    + ("npz_obj_mod",),
    "Gross Syntactic State": (
        "subordination",
        "subordination_orc-orc",
        "subordination_pp-pp",
        "subordination_src-src",
    ),
    "Center Embedding": ("center_embed", "center_embed_mod"),
    "Long-Distance Dependencies": (
        "cleft",
        "cleft_modifier",
        "fgd-embed3",
        "fgd-embed4",
        "fgd_hierarchy",
        "fgd_object",
        "fgd_pp",
        "fgd_subject",
    ),
}
_CIRCUIT_OF = {suite: circuit for circuit, suites in CIRCUITS.items() for suite in suites}


@dataclass(frozen=True)
class Condition:
    """One condition of an item: its sentence and each region's characters in it
    (``spans[number] = (start, end)``, empty for an empty region)."""

    name: str
    sentence: str
    spans: dict[int, tuple[int, int]]


@dataclass(frozen=True)
class Item:
    number: int
    conditions: dict[str, Condition]


@dataclass(frozen=True)
class Suite:
    name: str
    circuit: str
    predictions: list[Formula]
    items: list[Item]
    where: str


def _join_regions(regions: list[tuple[int, str]]) -> tuple[str, dict[int, tuple[int, int]]]:
    """The sentence of a condition's regions and each region's span in it."""
    parts, spans, length = [], {}, 0
    for number, content in regions:
        content = content.strip()
        if not content:
            spans[number] = (length, length)
            continue
        start = length + (1 if parts else 0)
        parts.append(content)
        length = start + len(content)
        spans[number] = (start, length)
    return " ".join(parts), spans


def _line_of(text: str, needle: str, start: int = 0) -> int | None:
    """The 1-based line of ``needle``'s first occurrence from ``start`` (for errors)."""
    found = text.find(needle, start)
    return None if found < 0 else text.count("\n", 0, found) + 1


def read_suite(path: str | Path) -> Suite:
    """A suite JSON file; its formulas are parsed and checked against its conditions and
    regions, and a missing key is an error naming the file (and line where it can)."""
    path = Path(path)
    text = read_utf8(path)
    where = str(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(f"not JSON: {error.msg}", where, error.lineno, error.colno) from None
    for key in ("meta", "predictions", "items"):
        if key not in raw:
            raise FormatError(f"no {key!r}", where)
    name = str(raw["meta"].get("name") or path.stem)
    circuit = str(raw["meta"].get("circuit") or _CIRCUIT_OF.get(name, OTHER))
    predictions = []
    for k, prediction in enumerate(raw["predictions"], start=1):
        if prediction.get("type", "formula") != "formula" or "formula" not in prediction:
            raise FormatError(f"prediction {k} is not a formula", where)
        formula = prediction["formula"]
        line = _line_of(text, json.dumps(formula)[1:-1])
        predictions.append(parse_formula(formula, where, line))
    if not predictions:
        raise FormatError("no prediction", where)
    items = []
    for raw_item in raw["items"]:
        number = raw_item.get("item_number")
        conditions = {}
        for condition in raw_item.get("conditions", []):
            regions = [(int(r["region_number"]), str(r["content"])) for r in condition["regions"]]
            sentence, spans = _join_regions(regions)
            conditions[condition["condition_name"]] = Condition(
                condition["condition_name"], sentence, spans
            )
        for formula in predictions:
            for condition, region in formula.regions():
                if condition not in conditions or region not in conditions[condition].spans:
                    raise FormatError(
                        f"item {number}: prediction {formula.text!r} reads region {region} "
                        f"of condition {condition!r}, which the item does not have",
                        where,
                        _line_of(text, f'"item_number": {number}'),
                    )
        items.append(Item(number, conditions))
    if not items:
        raise FormatError("no item", where)
    return Suite(name, circuit, predictions, items, where)


def suite_files(source: str | Path) -> list[Path]:
    """A suite file, or every ``.json`` file of a folder, by name."""
    return files_of(source, ".json", "test suites")


@dataclass
class SuiteResult:
    """Each item's region surprisals (bits) and whether each prediction held."""

    suite: Suite
    surprisals: list[dict[tuple[str, int], float]]
    held: list[list[bool]]

    @property
    def passed(self) -> list[bool]:
        return [all(found) for found in self.held]

    @property
    def score(self) -> float:
        return 100.0 * sum(self.passed) / len(self.passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "circuit": self.suite.circuit,
            "score": self.score,
            "items": len(self.held),
            "predictions": [f.text for f in self.suite.predictions],
            "by_item": [
                {
                    "item": item.number,
                    "held": held,
                    "surprisals": {
                        condition: {
                            str(r): surprisals[condition, r]
                            for r in item.conditions[condition].spans
                        }
                        for condition in item.conditions
                    },
                }
                for item, held, surprisals in zip(
                    self.suite.items, self.held, self.surprisals, strict=True
                )
            ],
        }


@dataclass
class SyntaxGymResult:
    suites: list[SuiteResult]

    @property
    def overall(self) -> float:
        return statistics.mean(s.score for s in self.suites)

    def by_circuit(self) -> dict[str, dict[str, float]]:
        groups: dict[str, list[float]] = {}
        for s in self.suites:
            groups.setdefault(s.suite.circuit, []).append(s.score)
        return {
            circuit: {"score": statistics.mean(scores), "suites": len(scores)}
            for circuit, scores in sorted(groups.items())
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall,
            "suites": len(self.suites),
            "by_circuit": self.by_circuit(),
            "by_suite": {s.suite.name: s.to_dict() for s in self.suites},
        }


def region_surprisals(scores, condition: Condition) -> dict[int, float]:
    """Bits per region of one condition's sentence, from its ``TextScores``."""
    from treeattn.evaluation.scoring import LN2  # here: reading suites needs no torch

    return {
        number: 0.0 if start == end else -scores.span_log_prob(start, end) / LN2
        for number, (start, end) in condition.spans.items()
    }


def score_suites(
    scorer: Scorer, suites: Sequence[Suite], progress: Progress | None = None
) -> SyntaxGymResult:
    """Every condition's sentence of every suite scored in one call, then each item's
    predictions evaluated."""
    texts = [
        c.sentence for suite in suites for item in suite.items for c in item.conditions.values()
    ]
    scores = iter(scorer.score(texts, progress))
    results = []
    for suite in suites:
        all_surprisals, all_held = [], []
        for item in suite.items:
            surprisals = {}
            for name, condition in item.conditions.items():
                for number, bits in region_surprisals(next(scores), condition).items():
                    surprisals[name, number] = bits
            all_surprisals.append(surprisals)
            all_held.append([f.holds(surprisals) for f in suite.predictions])
        results.append(SuiteResult(suite, all_surprisals, all_held))
    return SyntaxGymResult(results)


class SyntaxGymSuite(EvaluationSuite):
    """SyntaxGym test suites: suite files or folders of them (default: ``syntaxgym/``)."""

    name, title = "syntaxgym", "SyntaxGym"
    description = "surprisal suites: items whose predictions on region surprisals all hold"
    shared, default = "syntaxgym", SHARED
    option = SourceOption(
        "PATH",
        "SyntaxGym suite .json files or folders of them (default: $TREEATTN_DATA/syntaxgym)",
    )

    def read(self, source: Any, limit: int | None) -> list[Suite]:
        paths = source_paths(source, self.shared)
        found = [read_suite(f) for path in paths for f in suite_files(path)]
        if limit is not None:
            found = [replace(s, items=s.items[:limit]) for s in found]
        return found

    def score(self, scorer: Scorer, items: list[Suite], stage: Stage) -> SyntaxGymResult:
        with stage() as progress:
            return score_suites(scorer, items, progress)

    def format(self, result: SyntaxGymResult, kind: str) -> list[str]:
        rows = [("overall (mean of suites)", result.overall, len(result.suites))]
        rows += [(f"  {k}", v["score"], v["suites"]) for k, v in result.by_circuit().items()]
        lines = table("SyntaxGym by circuit", rows, "score")
        rows = [(s.suite.name, s.score, len(s.held)) for s in result.suites]
        return lines + table("SyntaxGym by suite", rows, "score")


plugins.suites.register(SyntaxGymSuite())
