"""The one registry of plug-ins: names, duplicates, unknown names, the package's own entries
and other packages' entry points read on first use, and `treeattn plugins` listing every
kind."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from dataclasses import dataclass

import pytest

from treeattn import plugins
from treeattn.cli import main
from treeattn.plugins import Registry, UnknownName


@dataclass(frozen=True)
class Toy:
    name: str


def test_a_name_is_registered_once():
    toys = Registry("toys", "toy", ())
    first = toys.register(Toy("one"))
    assert toys.register(first) is first  # the same entry again: nothing changes
    with pytest.raises(ValueError, match="a toy named 'one' is already registered"):
        toys.register(Toy("one"))
    toys.unregister("one")
    assert toys.names() == [] and toys.register(Toy("one")) == first


@pytest.mark.parametrize("name", ["Tab Pairs", "2way", "-x", "", None])
def test_a_name_is_one_a_config_and_a_command_line_can_give(name):
    with pytest.raises(ValueError, match="lower-case letters"):
        Registry("toys", "toy", ()).register(Toy(name))


def test_an_unknown_name_lists_the_known_ones():
    toys = Registry("toys", "toy", ())
    for name in ("b", "a-1", "c_2"):
        toys.register(Toy(name))
    with pytest.raises(UnknownName, match=r"^unknown toy 'd'; known: b, a-1, c_2$"):
        toys["d"]
    # A missing key of the registry, and a wrong value in a config.
    assert issubclass(UnknownName, KeyError) and issubclass(UnknownName, ValueError)
    assert "d" not in toys and toys["a-1"] == Toy("a-1")


def test_entries_are_loaded_when_first_read(tmp_path, monkeypatch):
    """The package's own entries (the modules in ``built_in``) and another package's (its
    entry points, group treeattn.<kind>) are imported at the first read, not before."""
    (tmp_path / "toy_kind.py").write_text(
        "from treeattn.plugins import Registry\nTOYS = Registry('toys', 'toy', ('toy_own',))\n"
    )
    (tmp_path / "toy_own.py").write_text(
        "from tests.test_plugins import Toy\nfrom toy_kind import TOYS\nTOYS.register(Toy('own'))\n"
    )
    (tmp_path / "toy_outside.py").write_text(
        "from tests.test_plugins import Toy\nTOY = Toy('out')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("toy_kind", "toy_own", "toy_outside"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    asked = []

    def entry_points(group):
        asked.append(group)
        return [importlib.metadata.EntryPoint("out", "toy_outside:TOY", group)]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    from toy_kind import TOYS

    assert "toy_own" not in sys.modules and asked == []
    assert TOYS.names() == ["own", "out"] and asked == ["treeattn.toys"]
    assert TOYS["out"] == Toy("out") and asked == ["treeattn.toys"]  # read once


def test_an_entry_point_names_an_entry_of_its_own_name(monkeypatch):
    point = importlib.metadata.EntryPoint("other", "tests.test_plugins:Toy", "treeattn.toys")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [point])
    with pytest.raises(TypeError, match="entry point 'other' .* no toy named 'other'"):
        Registry("toys", "toy", ()).names()


def test_every_kind_has_its_group_and_entries():
    groups = {kind.kind: kind.group for kind in plugins.KINDS}
    assert groups == {
        kind: f"treeattn.{kind}"
        for kind in ("mechanisms", "tasks", "datasets", "suites", "analyses", "parsers")
    }
    assert all(kind.names() for kind in plugins.KINDS)
    # Mechanisms in one table: attention layers, whole encoders and losses alike.
    assert {"vanilla", "hierarchical", "tree-regularization"} <= set(plugins.mechanisms.names())


def test_mechanisms_are_listed_with_the_baseline_first():
    """The order the demo's table and ``treeattn plugins`` list them in, whichever module
    was imported first."""
    names = plugins.mechanisms.names()
    assert names[:4] == ["vanilla", "constituent", "distance", "structured"]
    assert names.index("hierarchical") < names.index("tree-lstm")


def test_a_mechanism_declares_registered_analyses_only():
    from treeattn.attention.registry import Capabilities

    with pytest.raises(ValueError, match=r"analyses \['nope'\]: known are attention"):
        Capabilities("one line", analyses=frozenset({"nope"}))


def test_plugins_lists_every_kind(capsys):
    assert main(["plugins"]) == 0
    text = capsys.readouterr().out
    for kind in plugins.KINDS:
        for name in kind.names():
            assert re.search(rf"^  {re.escape(name)} ", text, re.M), (kind.kind, name)
    assert re.search(r"^  induce +trees read off the model.*; constituent$", text, re.M)
    assert main(["mechanisms"]) == 0  # its name before there were other kinds
    assert capsys.readouterr().out == text


def test_the_toy_task_is_found_by_its_name_alone(tmp_path, capsys):
    """A task in a file of its own (tests/toy_task.py, registered where it is defined):
    a config names it, and `treeattn plugins` lists it with its splits."""
    from tests.toy_task import CountTask
    from treeattn.tasks import load_config, make_task

    assert plugins.tasks["count"] is CountTask
    cfg = load_config(None, ["task=count", "data.longest=5", f"out_dir={tmp_path}"])
    task = make_task(cfg)
    assert isinstance(task, CountTask) and task.cfg.data.longest == 5
    assert main(["plugins"]) == 0
    assert re.search(r"^  count +-; train, dev, test$", capsys.readouterr().out, re.M)
