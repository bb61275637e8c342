"""One call that scores a language model on minimal pairs, surprisal suites and
agreement, and the result: a table to print, a JSON document of every score.

>>> result = evaluate_language_model("runs/causal-lm/best.pt")  # doctest: +SKIP
>>> print(result.format())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from treeattn.data.paths import require_data
from treeattn.evaluation.agreement import (
    AGREEMENT_SETS,
    AgreementResult,
    read_agreement,
    score_agreement,
)
from treeattn.evaluation.blimp import (
    UNKNOWN,
    BlimpResult,
    blimp_files,
    read_pairs,
    score_blimp,
)
from treeattn.evaluation.models import load_language_model
from treeattn.evaluation.perplexity import PerplexityResult, read_text_lines, score_perplexity
from treeattn.evaluation.scoring import CAUSAL, PLL_TOKEN, LanguageModel, Scorer
from treeattn.evaluation.syntaxgym import (
    SyntaxGymResult,
    read_suite,
    score_suites,
    suite_files,
)

SHARED = "shared"  # a source read from the shared data folder ($TREEATTN_DATA)


@dataclass
class LmEvaluation:
    """The scores of one model: BLiMP, SyntaxGym and each agreement set it was given
    (None: not run), how it was scored, the seconds each took, and ``limit``: the pairs
    or items read of each file (None: all of them; else the scores are a subset's)."""

    model: str
    kind: str
    method: str
    limit: int | None = None
    blimp: BlimpResult | None = None
    syntaxgym: SyntaxGymResult | None = None
    agreement: dict[str, AgreementResult] = field(default_factory=dict)
    perplexity: PerplexityResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def headline(self) -> dict[str, float]:
        """The overall scores, by benchmark."""
        found = {}
        if self.blimp is not None:
            found["blimp"] = self.blimp.overall
        if self.syntaxgym is not None:
            found["syntaxgym"] = self.syntaxgym.overall
        for name, result in self.agreement.items():
            found[f"agreement_{name}"] = result.overall
        if self.perplexity is not None:
            found["perplexity_per_word"] = self.perplexity.per_word
        return found

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "kind": self.kind,
            "method": self.method,
            "limit": self.limit,
            "headline": self.headline(),
            "seconds": self.seconds,
        }
        if self.blimp is not None:
            out["blimp"] = self.blimp.to_dict()
            out["blimp"]["pairs_per_second"] = len(self.blimp.pairs) / max(
                self.seconds["blimp"], 1e-9
            )
        if self.syntaxgym is not None:
            out["syntaxgym"] = self.syntaxgym.to_dict()
        if self.agreement:
            out["agreement"] = {name: r.to_dict() for name, r in self.agreement.items()}
        if self.perplexity is not None:
            out["perplexity"] = self.perplexity.to_dict()
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n"

    def format(self) -> str:
        """Tables: each benchmark's overall score and its breakdown."""
        lines = [f"model   {self.model}", f"scored  {self.method}"]
        if self.limit is not None:
            lines.append(f"subset  the first {self.limit} pairs or items of each file and set")
        lines.append("")

        def table(title: str, rows: list[tuple[str, float, int]], unit: str) -> None:
            width = max([len(title), *(len(name) for name, _, _ in rows)])
            lines.append(f"{title:<{width}}  {unit:>8}  {'n':>6}")
            lines.extend(f"{name:<{width}}  {score:8.1f}  {n:6d}" for name, score, n in rows)
            lines.append("")

        if self.blimp is not None:
            b = self.blimp
            # A user's own files may name no field or phenomenon: a table of "unknown"
            # alone says nothing, so each is shown only where some pair names one.
            fields, phenomena = b.by("field"), b.by("phenomenon")
            rows = [("overall", b.overall, len(b.pairs))]
            if set(fields) != {UNKNOWN}:
                rows += [(f"  {k}", v["accuracy"], v["count"]) for k, v in fields.items()]
            table("BLiMP by field" if set(fields) != {UNKNOWN} else "BLiMP", rows, "accuracy")
            if b.ties:
                lines[-1:-1] = [f"{b.ties} pairs scored the same (ties count as wrong)"]
            if set(phenomena) != {UNKNOWN}:
                rows = [(k, v["accuracy"], v["count"]) for k, v in phenomena.items()]
                table("BLiMP by phenomenon", rows, "accuracy")
            rows = [(k, v["accuracy"], v["count"]) for k, v in b.by("paradigm").items()]
            table("BLiMP by paradigm (file)", rows, "accuracy")
        if self.syntaxgym is not None:
            g = self.syntaxgym
            rows = [("overall (mean of suites)", g.overall, len(g.suites))]
            rows += [(f"  {k}", v["score"], v["suites"]) for k, v in g.by_circuit().items()]
            table("SyntaxGym by circuit", rows, "score")
            rows = [(s.suite.name, s.score, len(s.held)) for s in g.suites]
            table("SyntaxGym by suite", rows, "score")
        for name, result in self.agreement.items():
            rows = [("overall", result.overall, len(result.items))]
            rows += [
                (f"  {k} attractor{'s' * (k != '1')}", v["accuracy"], v["count"])
                for k, v in result.by_attractors().items()
            ]
            rows += [(f"  {k}", v["accuracy"], v["count"]) for k, v in result.by_kind().items()]
            table(f"agreement: {name}", rows, "accuracy")
        if self.perplexity is not None:
            x = self.perplexity
            pseudo = "pseudo-" if self.kind != CAUSAL else ""
            lines.append(f"{pseudo}perplexity of {x.source} ({x.lines:,} lines)")
            lines.append(f"  per word   {x.per_word:10.2f}  over {x.words:,} words")
            lines.append(f"  per piece  {x.per_piece:10.2f}  over {x.pieces:,} pieces")
        return "\n".join(lines).rstrip() + "\n"


def _sources(source: str | Path | Sequence[str | Path] | None, shared: str) -> list[Path]:
    if source is None:
        return []
    if isinstance(source, str | Path):
        source = [source]
    return [require_data(shared) if str(s) == SHARED else Path(s) for s in source]


def evaluate_language_model(
    model: LanguageModel | str | Path,
    *,
    blimp: str | Path | Sequence[str | Path] | None = SHARED,
    syntaxgym: str | Path | Sequence[str | Path] | None = SHARED,
    agreement: Sequence[str] | None = AGREEMENT_SETS,
    agreement_folder: str | Path = SHARED,
    perplexity: str | Path | None = None,
    limit: int | None = None,
    kind: str | None = None,
    pll: str = PLL_TOKEN,
    batch_tokens: int = 4096,
    device: str = "auto",
    progress: bool = False,
) -> LmEvaluation:
    """Score ``model`` (a ``LanguageModel``, a checkpoint of a language-model run, or a
    folder holding a ``transformers`` causal or masked LM, ``kind`` from its config
    unless given) on:

    - ``blimp``: BLiMP-format files or folders of them (``shared``: the shared data
      folder's ``blimp``; None: skip);
    - ``syntaxgym``: suite files or folders of them (``shared``: ``syntaxgym``);
    - ``agreement``: the sets named (``linzen``, ``gulordava``) in ``agreement_folder``
      (``shared``: ``sva``);
    - ``perplexity``: a text file, one sentence a line (None: skip): perplexity per word
      and per piece (``treeattn.evaluation.perplexity``);

    ``limit``: only the first so many pairs of each BLiMP file, items of each suite and
    items of each agreement set (a quick look). ``pll``: masked models' pseudo-log-
    likelihood, ``token`` or ``word-l2r``. ``progress``: a bar on a terminal.
    """
    if not isinstance(model, LanguageModel):
        model = load_language_model(model, kind, device)
    scorer = Scorer(model, batch_tokens=batch_tokens, pll=pll)
    method = "log-probability" if model.kind == CAUSAL else f"pseudo-log-likelihood ({pll})"
    result = LmEvaluation(model.name, model.kind, method, limit)
    # Every input is read and checked before any model runs.
    pairs = [
        p
        for path in _sources(blimp, "blimp")
        for f in blimp_files(path)
        for p in read_pairs(f)[:limit]
    ]
    suites = [read_suite(f) for path in _sources(syntaxgym, "syntaxgym") for f in suite_files(path)]
    if limit is not None:
        suites = [replace(s, items=s.items[:limit]) for s in suites]
    sets = {}
    if agreement:
        folder = require_data("sva") if str(agreement_folder) == SHARED else agreement_folder
        sets = {name: read_agreement(name, folder)[:limit] for name in agreement}
    texts = None if perplexity is None else read_text_lines(perplexity)[:limit]
    bar = tqdm(total=0, unit="sentence", disable=None if progress else True, leave=False)
    with bar:
        if pairs:
            bar.set_description("BLiMP")
            started = time.perf_counter()
            result.blimp = score_blimp(scorer, pairs, bar)
            result.seconds["blimp"] = time.perf_counter() - started
        if suites:
            bar.set_description("SyntaxGym")
            started = time.perf_counter()
            result.syntaxgym = score_suites(scorer, suites, bar)
            result.seconds["syntaxgym"] = time.perf_counter() - started
        for name, items in sets.items():
            bar.set_description(f"agreement {name}")
            started = time.perf_counter()
            result.agreement[name] = score_agreement(scorer, name, items, bar)
            result.seconds[f"agreement_{name}"] = time.perf_counter() - started
        if texts is not None:
            bar.set_description("perplexity")
            started = time.perf_counter()
            result.perplexity = score_perplexity(scorer, texts, str(perplexity), bar)
            result.seconds["perplexity"] = time.perf_counter() - started
    return result
