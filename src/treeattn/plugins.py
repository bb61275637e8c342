"""One registry for every kind of plug-in: each kind a ``Registry`` of entries by name.

===============  ==========================================  ================================
kind             an entry                                    named in
===============  ==========================================  ================================
``mechanisms``   ``attention.registry.Mechanism`` (a layer,  ``model.attention``,
                 a whole ``models.registry.EncoderEntry``,   ``model.tree_loss``
                 or a loss alone)
``tasks``        a ``Task`` class                            ``task``
``datasets``     a ``tasks.datasets.DataSet`` class          ``data.name``
``suites``       an ``evaluation.suites.EvaluationSuite``    ``lm-eval --only``
``analyses``     an ``attention.registry.Analysis``          ``Capabilities.analyses``
``parsers``      a ``parsing.parser.ParserFile``             ``Parser.load(name)``
===============  ==========================================  ================================

An entry is registered where it is defined, with one call that returns it (so that it
serves as a class decorator too): ``plugins.tasks.register(CountTask)``. Its ``name`` is
its key. Another package adds its own through the entry-point group of the kind,
``treeattn.<kind>``, in its ``pyproject.toml``::

    [project.entry-points."treeattn.suites"]
    tab-pairs = "my_package.suite:SUITE"

where each entry point names the entry (what ``register`` takes) by that entry's name. A
registry imports this package's own entries (the modules in ``built_in``) and the entry
points when it is first read, not before: this module imports nothing of the package,
and reading a kind imports only what defines it (no torch for the suites).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Sequence
from typing import Any

# A name a config, an option and a command line can all give.
NAME = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*")


class UnknownName(KeyError, ValueError):
    """A name that no entry of a registry has: a missing key, and a wrong value in a config
    or on a command line. Its message lists the names there are."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry:
    """The entries of one kind of plug-in by name, in the order registered.

    ``kind``: the kind's name (``treeattn.<kind>`` is its entry-point group); ``what``: an
    entry in words, for errors (``"data set"``); ``built_in``: the modules whose import
    registers this package's own entries, in their order.
    """

    def __init__(self, kind: str, what: str, built_in: Sequence[str]) -> None:
        self.kind, self.what = kind, what
        self.group = f"treeattn.{kind}"
        self.built_in = tuple(built_in)
        self._entries: dict[str, Any] = {}
        self._loaded = False

    def register(self, entry: Any) -> Any:
        """Make ``entry`` available by ``entry.name``; a second entry of that name is an
        error (registering the same entry again is not)."""
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(
                f"{self.what} name {name!r}: lower-case letters, digits, _ and -, "
                "starting with a letter"
            )
        found = self._entries.get(name)
        if found is not None and found is not entry:
            raise ValueError(f"a {self.what} named {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Forget the entry ``name`` (one registered for a while, by a test)."""
        self._entries.pop(name, None)

    def __getitem__(self, name: str) -> Any:
        self._load()
        if name not in self._entries:
            known = ", ".join(self._entries) or "none"
            raise UnknownName(f"unknown {self.what} {name!r}; known: {known}")
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def names(self) -> list[str]:
        self._load()
        return list(self._entries)

    def entries(self) -> list[Any]:
        self._load()
        return list(self._entries.values())

    def _load(self) -> None:
        """Import the package's own entries, then the entry points' (once)."""
        if self._loaded:
            return
        self._loaded = True  # before importing: a module read while importing sees its own
        try:
            for module in self.built_in:
                importlib.import_module(module)
            for point in importlib.metadata.entry_points(group=self.group):
                self._load_entry_point(point)
        except BaseException:
            self._loaded = False
            raise

    def _load_entry_point(self, point: importlib.metadata.EntryPoint) -> None:
        try:
            entry = point.load()
        except Exception as error:  # a broken plug-in is named, not a bare traceback
            raise RuntimeError(
                f"{self.what} {point.name!r} ({point.value}, entry point group {self.group}) "
                f"failed to load: {error}"
            ) from error
        if getattr(entry, "name", None) != point.name:
            raise TypeError(
                f"entry point {point.name!r} ({point.value}, group {self.group}) names "
                f"{entry!r}, which is no {self.what} named {point.name!r}"
            )
        self.register(entry)


mechanisms = Registry("mechanisms", "mechanism", ("treeattn.attention", "treeattn.models"))
tasks = Registry("tasks", "task", ("treeattn.tasks",))
datasets = Registry("datasets", "data set", ("treeattn.tasks.datasets",))
suites = Registry("suites", "evaluation suite", ("treeattn.evaluation",))
analyses = Registry("analyses", "analysis", ("treeattn.attention.registry", "treeattn.attention"))
parsers = Registry("parsers", "parser", ("treeattn.parsing.parser",))
KINDS = (mechanisms, tasks, datasets, suites, analyses, parsers)
