"""One call that scores a language model on every registered evaluation suite (minimal
pairs, surprisal suites, agreement, perplexity: ``treeattn.evaluation.suites``), and the
result: a table to print, a JSON document of every score.

>>> result = evaluate_language_model("runs/causal-lm/best.pt")  # doctest: +SKIP
>>> print(result.format())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from treeattn import plugins
from treeattn.evaluation.models import load_language_model
from treeattn.evaluation.scoring import CAUSAL, PLL_TOKEN, LanguageModel, Progress, Scorer
from treeattn.evaluation.suites import EvaluationSuite, Stage


@dataclass
class LmEvaluation:
    """The scores of one model: each suite's result by the suite's name (``results
    ["blimp"]``; a suite not run is absent), in the order suites are registered; how it
    was scored, the seconds each part took, and ``limit``: the pairs or items read of
    each file (None: all of them; else the scores are a subset's)."""

    model: str
    kind: str
    method: str
    limit: int | None = None
    results: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def headline(self) -> dict[str, float]:
        """The overall scores, by benchmark."""
        found = {}
        for name, result in self.results.items():
            found.update(plugins.suites[name].headline(result))
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
        for name, result in self.results.items():
            out[name] = plugins.suites[name].to_dict(result, self.seconds)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n"

    def format(self) -> str:
        """Tables: each benchmark's overall score and its breakdown."""
        lines = [f"model   {self.model}", f"scored  {self.method}"]
        if self.limit is not None:
            lines.append(f"subset  the first {self.limit} pairs or items of each file and set")
        lines.append("")
        for name, result in self.results.items():
            lines += plugins.suites[name].format(result, self.kind)
        return "\n".join(lines).rstrip() + "\n"


def _given(source: Any) -> bool:
    """Whether a suite was given something to read (None or an empty list: skip it)."""
    if source is None:
        return False
    return not (isinstance(source, list | tuple) and not source)


def _stage(suite: EvaluationSuite, bar: tqdm, seconds: dict[str, float]) -> Stage:
    """``suite``'s ``stage(label, key)``: the bar described by ``label`` (the suite's
    title), the time inside it kept as ``seconds[key]`` (the suite's name)."""

    @contextmanager
    def stage(label: str = suite.title, key: str = suite.name) -> Iterator[Progress]:
        bar.set_description(label)
        started = time.perf_counter()
        yield bar
        seconds[key] = time.perf_counter() - started

    return stage


def evaluate_language_model(
    model: LanguageModel | str | Path,
    *,
    limit: int | None = None,
    kind: str | None = None,
    pll: str = PLL_TOKEN,
    batch_tokens: int = 4096,
    device: str = "auto",
    progress: bool = False,
    **sources: Any,
) -> LmEvaluation:
    """Score ``model`` (a ``LanguageModel``, a checkpoint of a language-model run, or a
    folder holding a ``transformers`` causal or masked LM, ``kind`` from its config
    unless given) on every registered suite, each given its source by name (None: skip
    it) or, unnamed, its default:

    - ``blimp``: BLiMP-format files or folders of them (default ``shared``: the shared
      data folder's ``blimp``);
    - ``syntaxgym``: suite files or folders of them (``shared``: ``syntaxgym``);
    - ``agreement``: the sets named (default: ``linzen`` and ``gulordava``, from ``sva``);
    - ``perplexity``: a text file, one sentence a line (default: skip): perplexity per
      word and per piece (``treeattn.evaluation.perplexity``);
    - any suite registered from elsewhere (``treeattn.plugins.suites``).

    ``limit``: only the first so many pairs of each BLiMP file, items of each suite and
    items of each agreement set (a quick look). ``pll``: masked models' pseudo-log-
    likelihood, ``token`` or ``word-l2r``. ``progress``: a bar on a terminal.
    """
    known = plugins.suites.names()
    unknown = sorted(set(sources) - set(known))
    if unknown:
        raise TypeError(
            f"evaluate_language_model() got no suite named {', '.join(unknown)}; "
            f"suites: {', '.join(known)}"
        )
    if not isinstance(model, LanguageModel):
        model = load_language_model(model, kind, device)
    scorer = Scorer(model, batch_tokens=batch_tokens, pll=pll)
    method = "log-probability" if model.kind == CAUSAL else f"pseudo-log-likelihood ({pll})"
    result = LmEvaluation(model.name, model.kind, method, limit)
    # Every input is read and checked before any model runs.
    chosen = [
        (suite, suite.read(source, limit))
        for suite in plugins.suites.entries()
        if _given(source := sources.get(suite.name, suite.default))
    ]
    bar = tqdm(total=0, unit="sentence", disable=None if progress else True, leave=False)
    with bar:
        for suite, items in chosen:
            stage = _stage(suite, bar, result.seconds)
            result.results[suite.name] = suite.score(scorer, items, stage)
    return result
