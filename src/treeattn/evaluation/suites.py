"""Evaluation suites by name: what ``treeattn lm-eval`` and ``evaluate_language_model``
score a language model on, each declared in its own file with one registration call.

A suite (``EvaluationSuite``) says what it is called (``lm-eval --only NAME``, ``--NAME``,
its key in the JSON), where its items are by default (a folder of the shared data, or
none: it runs only when given a source), how it reads them (every input is read and
checked before any model runs), how it scores them with a ``Scorer``
(``treeattn.evaluation.scoring``), and how its result is shown: the headline figures, the
JSON and the lines of the printed tables.

Suites register themselves where they are defined (``register_suite(BlimpSuite())`` at
the end of ``blimp.py``). The registry imports this package's own (``BUILT_IN``) and those
that installed packages declare under the entry-point group ``treeattn.suites`` when it is
first read, so that no caller names a suite. An outside package's ``pyproject.toml``::

    [project.entry-points."treeattn.suites"]
    my_suite = "my_package.suite:MySuite"

names an ``EvaluationSuite`` (or a class of one, built with no arguments). Nothing here
imports torch: ``treeattn --help`` lists the suites' options without it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeattn.data.paths import require_data

if TYPE_CHECKING:
    from treeattn.evaluation.scoring import Progress, Scorer

SHARED = "shared"  # a source read from the shared data folder ($TREEATTN_DATA)
ENTRY_POINTS = "treeattn.suites"
# This package's suites, by module of treeattn.evaluation, in the order they are run and
# printed; suites from elsewhere follow in the order they were registered.
BUILT_IN = ("blimp", "syntaxgym", "agreement", "perplexity")

# ``stage(label, key)``: a context in which a suite scores (part of) its items, given the
# progress bar and timed into the evaluation's ``seconds[key]``; by default the label is
# the suite's title and the key its name.
Stage = Callable[..., AbstractContextManager["Progress"]]


@dataclass(frozen=True)
class SourceOption:
    """How ``treeattn lm-eval`` takes a suite's source: ``--NAME`` with this metavar and
    help, one value or several (``many``), and the values it may take (``choices``)."""

    metavar: str
    help: str
    many: bool = True
    choices: tuple[str, ...] | None = None


class EvaluationSuite(ABC):
    """One kind of targeted evaluation of a language model.

    ``name``: its key (``lm-eval --only NAME`` and ``--NAME``; the JSON's key; a keyword of
    ``evaluate_language_model``). ``title``: shown beside the progress bar. ``description``:
    one line, what it measures (``treeattn mechanisms``). ``shared``: the folder of the
    shared data it reads by default (None: none). ``default``: the source it runs with when
    none is given (``SHARED``, set names, ...; None: it runs only when given one).
    ``option``: the command line's ``--NAME``.
    """

    name: str
    title: str
    description: str
    option: SourceOption
    shared: str | None = None
    default: Any = None

    @abstractmethod
    def read(self, source: Any, limit: int | None) -> Any:
        """The items of ``source`` (files, folders, set names: whatever ``--NAME`` takes,
        or ``SHARED``), only the first ``limit`` of each file or set when given; bad input
        is an error naming file and line."""

    @abstractmethod
    def score(self, scorer: Scorer, items: Any, stage: Stage) -> Any:
        """The result of scoring ``items`` with ``scorer``, inside ``with stage() as
        progress`` (one stage a part, where parts are timed apart)."""

    @abstractmethod
    def format(self, result: Any, kind: str) -> list[str]:
        """The lines printed for ``result`` of a ``kind`` (causal or masked) model; each
        table ends with a blank line (``table``)."""

    def headline(self, result: Any) -> dict[str, float]:
        """The overall figures, by name (``LmEvaluation.headline``, ``treeattn report``)."""
        return {self.name: result.overall}

    def to_dict(self, result: Any, seconds: dict[str, float]) -> dict[str, Any]:
        """What ``lm-eval -o`` writes under the suite's name; ``seconds`` by stage key."""
        return result.to_dict()


def table(title: str, rows: Sequence[tuple[str, float, int]], unit: str) -> list[str]:
    """A printed table: a title row naming the unit and ``n``, one row per (name, score,
    count), and a blank line."""
    width = max([len(title), *(len(name) for name, _, _ in rows)])
    lines = [f"{title:<{width}}  {unit:>8}  {'n':>6}"]
    lines.extend(f"{name:<{width}}  {score:8.1f}  {n:6d}" for name, score, n in rows)
    lines.append("")
    return lines


def source_paths(source: str | Path | Sequence[str | Path], shared: str) -> list[Path]:
    """Files or folders as given; ``SHARED`` is the shared data folder ``shared``."""
    if isinstance(source, str | Path):
        source = [source]
    return [require_data(shared) if str(s) == SHARED else Path(s) for s in source]


_SUITES: dict[str, EvaluationSuite] = {}
_loaded = False


def register_suite(suite: EvaluationSuite) -> EvaluationSuite:
    """Make ``suite`` available by its name (call it where the suite is defined)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*", suite.name):
        raise ValueError(
            f"suite name {suite.name!r}: lower-case letters, digits, _ and - (an option name)"
        )
    found = _SUITES.get(suite.name)
    if found is not None and type(found) is not type(suite):
        raise ValueError(f"an evaluation suite named {suite.name!r} is already registered")
    _SUITES[suite.name] = suite
    return suite


def unregister_suite(name: str) -> None:
    """Forget the suite ``name`` (one registered for a while, by a test or a plug-in)."""
    _SUITES.pop(name, None)


def _load() -> None:
    """Import this package's suites and the entry points' (once: when first read)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILT_IN:
        importlib.import_module(f"treeattn.evaluation.{module}")
    for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
        try:
            found = entry.load()
            suite = found() if isinstance(found, type) else found
        except Exception as error:  # a broken plug-in is named, not a bare traceback
            raise RuntimeError(
                f"evaluation suite {entry.name!r} ({entry.value}, entry point group "
                f"{ENTRY_POINTS}) failed to load: {error}"
            ) from error
        if not isinstance(suite, EvaluationSuite):
            raise TypeError(
                f"entry point {entry.name!r} ({entry.value}) is no EvaluationSuite: {suite!r}"
            )
        if suite.name not in _SUITES:  # its module may have registered it already
            register_suite(suite)


def suite_names() -> list[str]:
    """Every registered suite: this package's in ``BUILT_IN``'s order, then the others."""
    _load()
    rank = {name: k for k, name in enumerate(BUILT_IN)}
    return sorted(_SUITES, key=lambda name: rank.get(name, len(BUILT_IN)))


def evaluation_suite(name: str) -> EvaluationSuite:
    _load()
    if name not in _SUITES:
        raise KeyError(f"unknown evaluation suite {name!r}; known: {', '.join(suite_names())}")
    return _SUITES[name]


def suites() -> list[EvaluationSuite]:
    """The registered suites, in ``suite_names``' order."""
    return [_SUITES[name] for name in suite_names()]
