"""A tiny Tree Transformer trained by masked LM on the shared raw text, then used end to
end: perplexity, induced trees for a text file and for the PTB sample, prior heat maps."""

from __future__ import annotations

import math

import pytest

from tests.helpers import train
from treeattn.cli import main
from treeattn.data.paths import data_dir
from treeattn.tasks import load_config
from treeattn.trees import Tree

TINY_TEXT = [
    "data.name=text",
    "data.lowercase=true",
    "data.min_count=3",
    "model.attention=constituent",
    "model.d_model=16",
    "model.n_heads=2",
    "model.n_layers=3",
    "model.d_ff=32",
    "train.epochs=1",
    "train.max_tokens=16384",
    "train.eval_max_tokens=32768",
    "train.progress=false",
]


@pytest.fixture(scope="module")
def tree_transformer(tmp_path_factory):
    root = data_dir()
    if root is None or not root.is_dir():
        pytest.skip("evaluation data not found: set TREEATTN_DATA")
    run = tmp_path_factory.mktemp("text") / "run"
    results = train(load_config(None, [*TINY_TEXT, f"out_dir={run}"]))
    return run, results


def test_masked_lm_training_reports_perplexity(tree_transformer):
    run, results = tree_transformer
    assert results["finished"] and (run / "best.pt").exists()
    for key in ("dev_perplexity", "test_perplexity"):
        assert math.isfinite(results[key]) and 1 < results[key]


def test_evaluate_and_report_give_perplexity(tree_transformer, capsys):
    run, results = tree_transformer
    assert main(["evaluate", str(run / "best.pt"), "test"]) == 0
    assert f"perplexity   {results['test_perplexity']:.2f}" in capsys.readouterr().out
    assert main(["report", str(run)]) == 0
    assert f"test perplexity {results['test_perplexity']:.2f}" in capsys.readouterr().out


def test_induce_writes_one_tree_per_line(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat .\nHello\nA very old man came\n", encoding="utf-8")
    assert main(["induce", str(run / "best.pt"), str(text)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for line, sentence in zip(lines, text.read_text().splitlines(), strict=True):
        assert Tree.parse(line).leaves() == sentence.split()
    # Raw text is tokenized as `treeattn parse` tokenizes it; --tokenized takes it as it is.
    raw = tmp_path / "raw.txt"
    raw.write_text('The mat, "they" said.\n', encoding="utf-8")
    assert main(["induce", str(run / "best.pt"), str(raw)]) == 0
    words = Tree.parse(capsys.readouterr().out).leaves()
    assert words == ["The", "mat", ",", "``", "they", "''", "said", "."]
    assert main(["induce", str(run / "best.pt"), str(raw), "--tokenized"]) == 0
    assert Tree.parse(capsys.readouterr().out).leaves() == ["The", "mat,", '"they"', "said."]
    text.write_text("one line\n\nanother\n", encoding="utf-8")
    assert main(["induce", str(run / "best.pt"), str(text)]) == 1
    assert f"{text}:2:1: empty" in capsys.readouterr().err
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    assert main(["induce", str(run / "best.pt"), str(latin)]) == 1
    assert f"{latin}:1:4: not valid UTF-8" in capsys.readouterr().err


def test_induce_scores_the_ptb_sample(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    out = tmp_path / "trees.txt"
    assert main(["induce", str(run / "best.pt"), "--ptb", "test", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    for row in ("model", "random", "left-branching", "right-branching", "recall by phrase type"):
        assert row in printed
    assert "<= 10 words" in printed
    assert len(out.read_text().splitlines()) == 413


def test_constituent_prior_command_draws_a_png(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    png = tmp_path / "prior.png"
    argv = ["constituent-prior", str(run / "best.pt"), "the cat sat", "-o", str(png)]
    assert main([*argv, "--layers", "0", "2"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main([*argv, "--layers", "5"]) == 1
    assert "layer 5 is not in 0..2" in capsys.readouterr().err


def test_induce_refuses_other_models_and_both_inputs(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    assert main(["induce", str(run / "best.pt")]) == 1
    assert "either TEXTFILE or --ptb" in capsys.readouterr().err
