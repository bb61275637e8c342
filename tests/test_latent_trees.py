"""Structured attention in the engine, and the latent trees of a trained model."""

from __future__ import annotations

import pytest

from tests.test_engine import TINY
from treeattn.analysis.latent_trees import (
    latent_trees,
    load_structured,
    tree_depth,
    tree_statistics,
)
from treeattn.cli import main
from treeattn.models.registry import encoder_names
from treeattn.trees.dependency import DependencyTree


def test_tree_depth_counts_arcs_on_the_longest_root_path():
    assert tree_depth([0]) == 1
    assert tree_depth([0, 1, 2, 3]) == 4  # a chain
    assert tree_depth([2, 0, 2, 2]) == 2  # a star under word 2
    assert tree_depth([2, 0, 4, 2]) == 3


def test_tree_statistics():
    chain, star, crossing = [0, 1, 2, 3], [2, 0, 2, 2], [3, 4, 0, 3]
    assert not DependencyTree(["_"] * 4, crossing).is_projective()
    stats = tree_statistics([chain, star, crossing])
    assert stats["trees"] == 3 and stats["mean_length"] == 4
    assert stats["mean_depth"] == pytest.approx((4 + 2 + 3) / 3)
    assert stats["non_projective"] == pytest.approx(100 / 3)
    with pytest.raises(ValueError, match="no trees"):
        tree_statistics([])


@pytest.fixture(scope="module")
def structured_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("structured") / "run"
    sets = [*TINY, "model.attention=structured", f"out_dir={run}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    return run


def test_structured_is_a_model_of_the_engine_and_the_demo(structured_run):
    assert "structured" in encoder_names()
    assert (structured_run / "best.pt").exists()


def test_latent_trees_are_single_root_trees_over_each_sentence(structured_run):
    saved = load_structured(str(structured_run / "best.pt"))
    examples, where = saved.read("dev")
    trees = latent_trees(saved, examples, where)
    assert len(trees) == saved.cfg.model.n_layers
    assert all(len(per_head) == saved.cfg.model.n_heads for per_head in trees)
    for per_head in trees:
        for heads in per_head:
            for example, tree in zip(examples, heads, strict=True):
                assert len(tree) == len(example.tokens)
                DependencyTree(example.tokens, tree).validate(single_root=True)


def test_a_projective_model_has_projective_latent_trees(tmp_path):
    run = tmp_path / "run"
    options = ["model.attention=structured", "model.attention_options.structure=projective"]
    sets = [*TINY, *options, f"out_dir={run}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    saved = load_structured(str(run / "best.pt"))
    examples, where = saved.read("dev")
    for per_head in latent_trees(saved, examples, where):
        assert tree_statistics(per_head[0])["non_projective"] == 0.0


def test_latent_trees_command(structured_run, tmp_path, capsys):
    gold = tmp_path / "gold.conllu"
    out = tmp_path / "latent.conllu"
    gold.write_text("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n")
    checkpoint = str(structured_run / "best.pt")
    command = ["latent-trees", checkpoint, "dev", "--compare", str(gold), "--conllu", str(out)]
    assert main(command) == 0
    printed = capsys.readouterr().out
    assert "layer 2 head 2" in printed
    gold_row = next(line for line in printed.splitlines() if line.startswith("gold.conllu"))
    assert gold_row.split()[1:4] == ["1", "2.0", "2.00"]
    assert out.read_text().count("\n\n") == 40  # the dev sentences
    # Two roots in one sentence: the same error as every CoNLL-U reader gives.
    gold.write_text("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    assert main(command) == 2
    assert f"{gold}:" in capsys.readouterr().err


def test_latent_trees_command_refuses_other_models(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *(i for o in TINY for i in ("--set", o)), "--set", f"out_dir={run}"]) == 0
    capsys.readouterr()
    assert main(["latent-trees", str(run / "best.pt")]) == 2
    assert "needs a model whose mechanism supports it (structured)" in capsys.readouterr().err
