"""Evaluation suites by name: what ``treeattn lm-eval`` and ``evaluate_language_model``
score a language model on, each declared in its own file with one registration call.

A suite (``EvaluationSuite``) says what it is called (``lm-eval --only NAME``, ``--NAME``,
its key in the JSON), where its items are by default (a folder of the shared data, or
none: it runs only when given a source), how it reads them (every input is read and
checked before any model runs), how it scores them with a ``Scorer``
(``treeattn.evaluation.scoring``), and how its result is shown: the headline figures, the
JSON and the lines of the printed tables.

Suites register themselves where they are defined, in the one registry
(``plugins.suites.register(BlimpSuite())`` at the end of ``blimp.py``); the registry imports
this package's own (``treeattn.evaluation`` imports them in the order they run) and those
that installed packages name under the entry-point group ``treeattn.suites`` when it is
first read, so that no caller names a suite. An outside package's ``pyproject.toml``::

    [project.entry-points."treeattn.suites"]
    my-suite = "my_package.suite:SUITE"

names its ``EvaluationSuite``. Nothing here imports torch: ``treeattn --help`` lists the
suites' options without it.
"""

from __future__ import annotations

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
    one line, what it measures (``treeattn plugins``). ``shared``: the folder of the
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
