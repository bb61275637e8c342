"""The parser package on its own: label sets, vocabularies old and new, settings, the files
it reads, and no dependence on the task layer."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from treeattn.data.vocab import MASK, PAD, UNK
from treeattn.parsing import Parser
from treeattn.parsing.config import ParserConfig
from treeattn.parsing.examples import ParseExample
from treeattn.parsing.parser import VERSION
from treeattn.parsing.vocab import EMPTY, IGNORE, LabelSet, ParserVocab
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree

PARSING = Path(__file__).parents[1] / "src" / "treeattn" / "parsing"


def toy_vocab() -> ParserVocab:
    tree = Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat)))")
    deps = DependencyTree(["the", "cat", "sat"], [2, 3, 0], ["NP/DT", "S/NP", "ROOT"])
    return ParserVocab.fit([ParseExample(tree.leaves(), tree.tags(), tree, deps)])


def test_a_label_set_has_no_special_entries():
    labels = LabelSet.build([["NP", "VP", "NP", "ADJP"]])
    assert labels.names == ["NP", "ADJP", "VP"]  # most frequent first, ties by spelling
    assert labels.encode(["VP", "PP"]) == [2, IGNORE] and labels.decode([0, 1]) == ["NP", "ADJP"]
    with pytest.raises(ValueError, match="unique"):
        LabelSet(["NP", "NP"])


def test_the_chart_labels_begin_with_the_empty_label():
    vocab = toy_vocab()
    assert vocab.labels.names[0] == EMPTY and set(vocab.labels.names[1:]) == {"S", "NP", "VP"}
    assert vocab.constituency and vocab.sizes()["n_labels"] == 4


def test_vocabularies_of_version_1_read_as_today():
    vocab = toy_vocab()
    state = vocab.state_dict()
    old = {k: v for k, v in state.items() if k != "version"}
    for name in ("tags", "labels", "rels"):
        old[name] = [PAD, UNK, MASK, *state[name]]
    assert ParserVocab.from_state(old).state_dict() == state
    assert ParserVocab.from_state(json.loads(json.dumps(state))).state_dict() == state
    with pytest.raises(ValueError, match="version 1 state"):
        ParserVocab.from_state({**old, "tags": state["tags"]})


def test_parser_settings_name_a_bad_key():
    assert ParserConfig.from_dict({"d_word": 8}, "x").d_word == 8
    with pytest.raises(ValueError, match=r"x: unknown key\(s\) model\.d_wrod"):
        ParserConfig.from_dict({"d_wrod": 8}, "x")
    with pytest.raises(ValueError, match="x: model.decoder='cky'"):
        ParserConfig.from_dict({"decoder": "cky"}, "x")
    with pytest.raises(ValueError, match="x: model.d_kv must be even"):
        ParserConfig.from_dict({"d_kv": 7}, "x")


@pytest.mark.slow
def test_the_parser_package_does_not_read_the_task_layer():
    for module in PARSING.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.startswith("treeattn.tasks")], module.name
    code = (
        "import sys, treeattn.parsing, treeattn.parsing.decoding\n"
        "assert not [m for m in sys.modules if m.startswith('treeattn.tasks')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_a_checkpoint_of_another_task_or_with_a_bad_config_is_refused(tmp_path):
    state = toy_vocab().state_dict()
    classify = tmp_path / "classify.pt"
    other = {"model": {}, "config": json.dumps({"task": "classify"}), "task_state": {}}
    torch.save(other, classify)
    with pytest.raises(ValueError, match="a classify model, not a parser"):
        Parser.load(classify)
    config = {"task": "parse", "model": {"d_wrod": 3}}
    bad = tmp_path / "bad.pt"
    torch.save({"model": {}, "config": json.dumps(config), "task_state": state}, bad)
    with pytest.raises(ValueError, match="unknown key.*d_wrod"):
        Parser.load(bad)


def test_the_shipped_parser_saved_anew_parses_the_same(tmp_path):
    from safetensors import safe_open

    sentences = ["The cat sat on the mat.", 'Dogs bark (loudly) at "strangers".']
    shipped = Parser.load(device="cpu")
    path = shipped.save(tmp_path / "again.safetensors")
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    assert meta["version"] == VERSION and PAD not in json.loads(meta["task_state"])["tags"]
    again = Parser.load(path, device="cpu")
    for before, after in zip(shipped.parse(sentences), again.parse(sentences), strict=True):
        assert before.tree.to_brackets() == after.tree.to_brackets()
        assert before.dependencies == after.dependencies
    # Written aside and renamed, with the permissions of any new file here (the umask's).
    assert [p.name for p in tmp_path.iterdir()] == ["again.safetensors"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
