"""Evaluation suites as plug-ins: the package's four in their order, a suite defined in a
test file alone (tests/toy_suite.py) run end to end by ``treeattn lm-eval``, one found
through the ``treeattn.suites`` entry-point group, and a registry read without torch."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys

import pytest

from tests import toy_suite
from treeattn.cli import main
from treeattn.engine.report import lm_eval_scores
from treeattn.evaluation import evaluate_language_model
from treeattn.evaluation.scoring import TableModel
from treeattn.plugins import suites as registry

BIGRAMS = {("<s>", "the"): 0.5, ("the", "dog"): 0.4, ("dog", "barks"): 0.6, ("dog", "bark"): 0.1}


@pytest.fixture
def toy():
    toy_suite.register()
    try:
        yield toy_suite.NAME
    finally:
        toy_suite.unregister()


def test_the_package_s_suites_are_registered_in_their_order():
    assert registry.names()[:4] == ["blimp", "syntaxgym", "agreement", "perplexity"]
    shared = {suite.name: suite.shared for suite in registry.entries()}
    assert shared == {"blimp": "blimp", "syntaxgym": "syntaxgym", "agreement": "sva"} | {
        "perplexity": None
    }
    assert all(suite.description and suite.option.help for suite in registry.entries())


def test_a_suite_in_a_file_of_its_own_runs_through_lm_eval(toy, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        "treeattn.evaluation.run.load_language_model", lambda *_: TableModel(BIGRAMS)
    )
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the dog barks\tthe dog bark\nthe dog bark\tthe dog barks\n", "utf-8")
    out = tmp_path / "scores.json"
    assert main(["lm-eval", "table", "--only", toy, f"--{toy}", str(pairs), "-o", str(out)]) == 0
    printed = capsys.readouterr()
    rows = [line.split() for line in printed.out.splitlines()]
    assert ["tab", "pairs", "accuracy", "n"] in rows and ["overall", "50.0", "2"] in rows
    assert "BLiMP" not in printed.out and f"scored in {toy} " in printed.err
    scores = json.loads(out.read_text())
    assert scores["headline"] == {toy: 50.0} and scores[toy] == {"overall": 50.0, "count": 2}
    assert list(scores["seconds"]) == [toy]
    assert lm_eval_scores(scores) == {toy: 50.0}  # what `treeattn report` reads
    # --limit reaches it; the library call takes it by name, after the package's own.
    again = evaluate_language_model(
        TableModel(BIGRAMS), blimp=None, syntaxgym=None, agreement=None, limit=1, **{toy: pairs}
    )
    assert again.headline() == {toy: 100.0} and again.to_dict()["limit"] == 1
    # Named in --only without its file, it says what it needs.
    assert main(["lm-eval", "table", "--only", toy]) == 2
    assert f"--only {toy} needs --{toy} FILE" in capsys.readouterr().err
    # `treeattn plugins` lists it with the package's registry.
    assert main(["mechanisms"]) == 0
    listed = capsys.readouterr().out
    assert re.search(rf"^  {toy} +none \(--{toy} FILE\); tab-separated pairs", listed, re.M)
    assert re.search(r"^  blimp +\$TREEATTN_DATA/blimp/; minimal pairs", listed, re.M)


def test_an_unregistered_suite_is_gone_from_the_command(tmp_path, capsys):
    toy_suite.register()
    toy_suite.unregister()
    with pytest.raises(SystemExit):
        main(["lm-eval", "table", "--only", toy_suite.NAME])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(TypeError, match="no suite named tab-pairs"):
        evaluate_language_model(TableModel(BIGRAMS), **{toy_suite.NAME: "x.tsv"})


def test_an_installed_package_s_suite_is_found_by_its_entry_point(monkeypatch):
    entry = importlib.metadata.EntryPoint(toy_suite.NAME, "tests.toy_suite:SUITE", registry.group)
    asked = []

    def entry_points(group):
        asked.append(group)
        return [entry]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_loaded", False)  # as if the registry were read first now
    try:
        assert registry.names()[-1] == toy_suite.NAME
        assert isinstance(registry[toy_suite.NAME], toy_suite.TabPairsSuite)
        registry.names()
        assert asked == [registry.group]  # read once
    finally:
        toy_suite.unregister()


def test_a_broken_plug_in_is_named(monkeypatch):
    entry = importlib.metadata.EntryPoint("broken", "no_such_module:Suite", registry.group)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [entry])
    monkeypatch.setattr(registry, "_loaded", False)
    with pytest.raises(RuntimeError, match="evaluation suite 'broken' .*failed to load"):
        registry.names()


def test_a_suite_name_must_be_an_option_name():
    suite = toy_suite.TabPairsSuite()
    suite.name = "Tab Pairs"
    with pytest.raises(ValueError, match="lower-case letters"):
        registry.register(suite)


def test_the_registry_and_the_command_s_options_need_no_torch():
    check = (
        "import sys, argparse\n"
        "from treeattn.cli.lm_eval import add_lm_eval\n"
        "add_lm_eval(argparse.ArgumentParser().add_subparsers())\n"
        "from treeattn.plugins import suites\n"
        "assert suites.names()[:4] == ['blimp', 'syntaxgym', 'agreement', 'perplexity']\n"
        "assert 'torch' not in sys.modules, 'torch imported to read the suites'\n"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=300)
