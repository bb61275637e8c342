"""A tiny Tree Transformer trained by masked LM on the shared raw text, then used end to
end: perplexity, induced trees for a text file and for the PTB sample, prior heat maps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import train
from treeattn.cli import main
from treeattn.data.paths import data_dir
from treeattn.tasks import load_config
from treeattn.tasks.trained import load_trained
from treeattn.trees import Tree

TINY_TEXT = [  # the text as the release shows it, and checkpoints kept for a curve
    "data.name=text",
    "data.corpora=[ptb]",
    "data.lowercase=true",
    "data.drop_punctuation=true",
    "data.normalize_numbers=true",
    "data.start_token=true",
    "data.min_count=3",
    "model.attention=constituent",
    "model.d_model=16",
    "model.n_heads=2",
    "model.n_layers=3",
    "model.d_ff=32",
    "train.epochs=1",
    "train.max_tokens=16384",
    "train.eval_max_tokens=32768",
    "train.keep_every=2",
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


@pytest.mark.slow
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
    assert main(["induce", str(run / "best.pt"), str(text), "--no-drop-punctuation"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for line, sentence in zip(lines, text.read_text().splitlines(), strict=True):
        assert Tree.parse(line).leaves() == sentence.split()
    # Raw text is tokenized as `treeattn parse` tokenizes it; --tokenized takes it as it is.
    # The model was trained without punctuation, so it is removed (and said so) by default.
    raw = tmp_path / "raw.txt"
    raw.write_text('The mat, "they" said $ 5.\n', encoding="utf-8")
    assert main(["induce", str(run / "best.pt"), str(raw)]) == 0
    out, err = capsys.readouterr()
    assert Tree.parse(out).leaves() == ["The", "mat", "they", "said", "5"]
    assert "punctuation removed, lowercased, words with a digit as N" in err
    assert "removed 5 of 10 words (character rule)" in err
    for word in (",", "``", "''", "$", "."):
        assert f" {word} 1" in err
    assert main(["induce", str(run / "best.pt"), str(raw), "--no-drop-punctuation"]) == 0
    words = Tree.parse(capsys.readouterr().out).leaves()
    assert words == ["The", "mat", ",", "``", "they", "''", "said", "$", "5", "."]
    assert main(["induce", str(run / "best.pt"), str(raw), "--tokenized"]) == 0
    assert Tree.parse(capsys.readouterr().out).leaves() == ["The", "mat,", '"they"', "said", "5."]
    raw.write_text("a b\n...\n", encoding="utf-8")
    assert main(["induce", str(run / "best.pt"), str(raw)]) == 2
    assert f"{raw}: sentence 2 is all punctuation" in capsys.readouterr().err
    text.write_text("one line\n\nanother\n", encoding="utf-8")
    assert main(["induce", str(run / "best.pt"), str(text)]) == 2
    assert f"{text}:2:1: empty" in capsys.readouterr().err
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    assert main(["induce", str(run / "best.pt"), str(latin)]) == 2
    assert f"{latin}:1:4: not valid UTF-8" in capsys.readouterr().err


def test_induce_scores_the_ptb_sample(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    out = tmp_path / "trees.txt"
    assert main(["induce", str(run / "best.pt"), "--ptb", "test", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = ("model, paper", "model, release", "model, binary", "random", "right-branching")
    for row in (*rows, "recall by phrase type, release"):
        assert row in printed
    assert "<= 10 words" in printed
    # Punctuation (by PTB tag) is removed before parsing and from the gold trees.
    assert "removed 1120 of 9615 words (by PTB tag): , 454 . 403 $ 110" in printed
    assert "gold trees are scored over the same words" in printed
    trees = [Tree.parse(line) for line in out.read_text().splitlines()]
    assert len(trees) == 413 and "," not in trees[0].leaves()


@pytest.mark.slow
def test_induce_curve_prints_a_row_per_kept_checkpoint(tree_transformer, capsys):
    run, _ = tree_transformer
    kept = sorted(run.glob("step-*.pt"))
    assert len(kept) >= 2
    assert main(["induce-curve", str(run), "--ptb", "dev"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "unlabeled F1 (sentence / corpus) on PTB dev" in lines[0]
    assert lines[1].split() == ["step", "perplexity", "paper", "release", "binary"]
    steps = [int(line.split()[0]) for line in lines[2:]]
    assert steps == sorted(int(p.stem.split("-")[1]) for p in kept)
    last = lines[-1].split()
    perplexity = load_trained(kept[-1]).evaluate("dev")["perplexity"]
    assert float(last[1]) == pytest.approx(perplexity, abs=0.05)
    for cell in (last[2], last[4], last[5], last[7], last[8], last[10]):
        assert 0 <= float(cell.strip("/")) <= 100
    assert main(["induce-curve", str(run.parent)]) == 2
    assert "no step-K.pt checkpoints; train with train.keep_every" in capsys.readouterr().err


def test_predict_fills_masks_without_showing_the_start_token(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    inputs = tmp_path / "masked.txt"
    inputs.write_text("The <mask> rose 5 % .\n", encoding="utf-8")
    assert main(["predict", str(run / "best.pt"), str(inputs)]) == 0
    words = capsys.readouterr().out.split()
    assert len(words) == 5 and words[0] == "the" and words[2:] == ["rose", "N", "%"]


def test_constituent_prior_command_draws_a_png(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    png = tmp_path / "prior.png"
    argv = ["constituent-prior", str(run / "best.pt"), "the cat sat", "-o", str(png)]
    assert main([*argv, "--layers", "0", "2"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main([*argv, "--layers", "5"]) == 2
    assert "layer 5 is not in 0..2" in capsys.readouterr().err


def test_the_prior_drawn_is_each_layers_over_the_words_alone(tree_transformer):
    """The prior's first off-diagonal holds the links the induced trees read (the start
    token's left out), its diagonal 1: C[i, j] is the product of the links between."""
    from treeattn.analysis.constituent_prior import load_prior_model, sentence_priors
    from treeattn.analysis.induction import induce_links

    run, _ = tree_transformer
    saved = load_prior_model(run / "best.pt")
    words = "the cat sat on the mat".split()
    priors = sentence_priors(saved, words)
    (links,) = induce_links(saved, [words])  # (L, n-1)
    assert len(priors) == len(links) == 3
    for prior, layer in zip(priors, links, strict=True):
        assert prior.shape == (6, 6)
        np.testing.assert_allclose(np.diagonal(prior), 1.0)
        np.testing.assert_allclose(np.diagonal(prior, 1), layer, rtol=1e-5)
        np.testing.assert_allclose(prior[0, 5], np.prod(layer), rtol=1e-5)
        np.testing.assert_allclose(prior, prior.T)


def test_the_prior_is_refused_for_a_mechanism_that_does_not_declare_it(tmp_path, capsys):
    vanilla = Path(__file__).parent / "fixtures" / "legacy-listops-vanilla.pt"
    argv = ["constituent-prior", str(vanilla), "the cat", "-o", str(tmp_path / "p.png")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "`treeattn constituent-prior` needs a model whose mechanism supports it" in err
    assert "(constituent), not 'vanilla'" in err and not (tmp_path / "p.png").exists()


def test_induce_refuses_other_models_and_both_inputs(tree_transformer, tmp_path, capsys):
    run, _ = tree_transformer
    assert main(["induce", str(run / "best.pt")]) == 2
    assert "either TEXTFILE or --ptb" in capsys.readouterr().err
