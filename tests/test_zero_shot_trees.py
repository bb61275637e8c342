"""Trees from a pretrained model with no training: the top-down split of adjacent-word
distances against a hand-worked example and a literal recursion, the distances between
vectors and distributions, perturbed masking's impacts against a literal loop on a tiny
random BERT, and `treeattn induce` on a tiny random model end to end."""

from __future__ import annotations

import json
import random

import pytest
import torch

from tests.test_backbone import CONFIG, VOCAB, random_bert_state, tiny_tokenizer, write_tiny_bert
from treeattn.analysis.zero_shot_trees import (
    ZeroShotModel,
    adjacent_attention_distances,
    adjacent_hidden_distances,
    hellinger_distance,
    impact_distances,
    jensen_shannon_distance,
    layer_trees,
    right_skewed,
)
from treeattn.cli import main
from treeattn.data.paths import data_dir
from treeattn.models.backbone import Backbone
from treeattn.models.pieces import PieceSplitter
from treeattn.models.transformers_encoder import TransformersEncoder
from treeattn.models.weights import read_directory
from treeattn.trees import Tree

pytest.importorskip("tokenizers")


# ---------------------------------------------------------------------------- the split
def literal_split(distances: list[float], start: int, end: int) -> set[tuple[int, int]]:
    """Shen et al. (2018) as defined: the span [start, end) splits at its largest gap
    (the leftmost of equal ones), and each side again; every span of two or more words."""
    if end - start < 2:
        return set()
    gaps = distances[start : end - 1]
    k = start + gaps.index(max(gaps)) + 1
    return {(start, end)} | literal_split(distances, start, k) | literal_split(distances, k, end)


def test_split_at_the_largest_distance_by_hand():
    # a b c d e, gaps 1 3 2 0.5: the largest (3) splits a b | c d e; in c d e the larger
    # gap (2) splits c | d e: ((a b) (c (d e))).
    words = ["a", "b", "c", "d", "e"]
    (tree,) = layer_trees(words, torch.tensor([[1.0, 3.0, 2.0, 0.5]]).numpy())
    assert tree == Tree.parse("(X (X a b) (X c (X d e)))")
    # Equal gaps split at the leftmost: a run of them is right-branching.
    (tree,) = layer_trees(["a", "b", "c"], torch.tensor([[2.0, 2.0]]).numpy())
    assert tree == Tree.parse("(X a (X b c))")
    # One tree per layer, each from its own row.
    trees = layer_trees(["a", "b", "c"], torch.tensor([[0.0, 1.0], [1.0, 0.0]]).numpy())
    assert trees == [Tree.parse("(X (X a b) c)"), Tree.parse("(X a (X b c))")]


def test_split_matches_the_literal_recursion():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 12)
        distances = [float(rng.randint(0, 4)) for _ in range(n - 1)]  # ties on purpose
        words = [f"w{i}" for i in range(n)]
        (tree,) = layer_trees(words, torch.tensor([distances]).reshape(1, n - 1).numpy())
        expected = literal_split(distances, 0, n)
        assert {s for s in tree.unlabeled_spans() if s[1] - s[0] >= 2} == expected


# ---------------------------------------------------------------------------- distances
def test_distances_between_vectors_and_distributions():
    vectors = torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    assert adjacent_hidden_distances(vectors, "l2").tolist() == [5.0, 5.0]
    cosine = adjacent_hidden_distances(torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 1.0]]), "cosine")
    assert cosine.tolist() == pytest.approx([1.0, 0.0])
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert jensen_shannon_distance(p, q).item() == pytest.approx(1.0)
    assert jensen_shannon_distance(p, p).item() == pytest.approx(0.0, abs=1e-6)
    assert hellinger_distance(p, q).item() == pytest.approx(1.0)
    half = torch.tensor([0.5, 0.5])
    # JS(p, half) = (KL(p|m) + KL(half|m)) / 2 with m = (3/4, 1/4), in bits.
    kl_p = torch.log2(torch.tensor(1 / 0.75))
    kl_half = 0.5 * torch.log2(torch.tensor(0.5 / 0.75)) + 0.5 * torch.log2(torch.tensor(2.0))
    assert jensen_shannon_distance(p, half).item() == pytest.approx(
        ((kl_p + kl_half) / 2).sqrt().item(), rel=1e-5
    )
    # Rows (H=2 heads, n=3 words, k=2 keys): each gap's distance is the heads' mean.
    rows = torch.stack([torch.stack([p, p, q]), torch.stack([p, q, q])])
    assert adjacent_attention_distances(rows, "hellinger").tolist() == pytest.approx([0.5, 0.5])
    # High impact either way joins two words: the mean impacts 2 and 3 give distances
    # 3 - 2 and 3 - 3.
    impacts = torch.tensor([[1.0, 4.0], [3.0, 2.0]])
    assert impact_distances(impacts).tolist() == [1.0, 0.0]


def test_right_skewness_bias_by_hand():
    # Gaps 2 1 3 (mean 2) with bias 1.5 gain 3 x (1, 2/3, 1/3): 5 3 4, so the first gap
    # now splits first (a | b c d), then the last (4 > 3): (a ((b c) d)).
    distances = torch.tensor([[2.0, 1.0, 3.0]]).numpy()
    assert right_skewed(distances, 1.5).tolist() == [pytest.approx([5.0, 3.0, 4.0])]
    (plain,) = layer_trees(list("abcd"), distances)
    assert plain == Tree.parse("(X (X a (X b c)) d)")
    (skewed,) = layer_trees(list("abcd"), distances, bias=1.5)
    assert skewed == Tree.parse("(X a (X (X b c) d))")
    assert right_skewed(distances, 0.0) is distances


# ---------------------------------------------------------------------------- a tiny BERT
MASKED_CONFIG = {**CONFIG, "vocab_size": len(VOCAB) + 1, "max_position_embeddings": 512}


def write_masked_bert(folder):
    """The tiny random BERT with a [MASK] token (the last id) and 512 positions."""
    from safetensors.torch import save

    tokenizer = tiny_tokenizer()
    tokenizer.add_special_tokens(["[MASK]"])
    (folder / "config.json").write_text(json.dumps(MASKED_CONFIG), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(save(random_bert_state(MASKED_CONFIG, seed=3)))
    (folder / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def masked_dir(tmp_path_factory):
    return write_masked_bert(tmp_path_factory.mktemp("masked-bert"))


@pytest.fixture(scope="module")
def masked_model(masked_dir):
    return ZeroShotModel.load(masked_dir)


def literal_impacts(model: ZeroShotModel, words: list[str]) -> torch.Tensor:
    """Perturbed masking as defined, one masked sentence at a time: for each word i, its
    state (mean of its pieces) with i masked, and with i and j masked."""
    batch = model.backbone.pieces([words])
    ids, owner = batch.piece_ids[0].tolist(), batch.word_of_piece[0].tolist()
    mask = model.mask_id

    def state_of(i: int, masked: set[int]) -> list[torch.Tensor]:
        copy = [mask if owner[k] in masked else piece for k, piece in enumerate(ids)]
        with torch.no_grad():
            states = model.backbone.encoder(torch.tensor([copy]), torch.zeros(1, len(copy)) > 0)
        mine = [k for k in range(len(ids)) if owner[k] == i]
        return [s[0, mine].mean(0) for s in states]

    n = len(words)
    layers = model.n_layers + 1
    matrix = torch.zeros(layers, n, n)
    for i in range(n):
        alone = state_of(i, {i})
        for j in range(n):
            both = state_of(i, {i, j})
            for layer in range(layers):
                matrix[layer, i, j] = (alone[layer] - both[layer]).norm()
    return matrix


def test_impact_matrix_matches_a_literal_loop(masked_model):
    assert masked_model.mask_id == len(VOCAB)
    words = ["Unbelievably", "the", "cat", ",", "sat", "on", "the", "mat", "."]
    expected = literal_impacts(masked_model, words)
    for budget in (4096, 40):  # every copy in one batch, or a few copies a batch
        masked_model.max_tokens = budget
        found = masked_model.impact_matrix(words)
        assert found.shape == (masked_model.n_layers + 1, len(words), len(words))
        torch.testing.assert_close(found, expected, atol=1e-5, rtol=1e-5)
    masked_model.max_tokens = 4096
    assert expected[0].abs().max() == 0  # the embeddings of masked i ignore j
    assert expected[1:].abs().max() > 0
    # The adjacent impacts among kept words are the matrix's two off-diagonals.
    kept = [0, 1, 2, 4, 5, 7]
    adjacent = masked_model.adjacent_impacts(words, kept)
    left, right = torch.tensor(kept[:-1]), torch.tensor(kept[1:])
    torch.testing.assert_close(adjacent[:, 0], expected[:, left, right], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(adjacent[:, 1], expected[:, right, left], atol=1e-5, rtol=1e-5)


def test_distances_of_a_padded_batch_are_each_sentences_own(masked_model):
    sentences = [["the", "cat", "sat", "on", "the", "mat", "."], ["Zq", "cat"], ["mat"]]
    kept = [[0, 1, 2, 3, 4, 5], [0, 1], [0]]
    methods = ["hidden", "attention", "perturbed"]
    together = masked_model.distances(sentences, kept, methods)
    for i, words in enumerate(sentences):
        alone = masked_model.distances([words], [kept[i]], methods)
        for method in methods:
            torch.testing.assert_close(
                torch.from_numpy(together[method][i]),
                torch.from_numpy(alone[method][0]),
                atol=1e-5,
                rtol=1e-5,
            )
    assert together["hidden"][0].shape == (masked_model.n_layers + 1, 5)
    assert together["attention"][0].shape == (masked_model.n_layers, 5)
    assert together["perturbed"][2].shape == (masked_model.n_layers, 0)


def test_a_transformers_model_gives_the_same_distances(masked_dir, masked_model):
    # The same BERT weights run by transformers (any family's path: hidden states and
    # eager attention from the model's own outputs) give what this package's BERT gives.
    pytest.importorskip("transformers")
    files = read_directory(masked_dir)
    backbone = Backbone(
        TransformersEncoder.from_files(files),
        PieceSplitter.from_files(files),
        pooling="mean",
        tune="none",
    )
    other = ZeroShotModel(backbone, "transformers")
    sentences = [["Unbelievably", ",", "the", "cat", "sat", "."], ["the", "mat"]]
    kept = [[0, 2, 3, 4], [0, 1]]
    methods = ["hidden", "attention", "perturbed"]
    ours = masked_model.distances(sentences, kept, methods, "cosine", "hellinger")
    theirs = other.distances(sentences, kept, methods, "cosine", "hellinger")
    for method in methods:
        for mine, its in zip(ours[method], theirs[method], strict=True):
            torch.testing.assert_close(
                torch.from_numpy(its), torch.from_numpy(mine), atol=1e-4, rtol=1e-4
            )


# ---------------------------------------------------------------------------- the command
def test_induce_reads_trees_off_a_tiny_model(masked_dir, tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat.\nUnbelievably, cats sat\n", encoding="utf-8")
    argv = ["induce", str(masked_dir), str(text), "--layer", "2"]
    assert main([*argv, "--methods", "perturbed"]) == 0
    out, err = capsys.readouterr()
    trees = [Tree.parse(line) for line in out.splitlines()]
    assert [t.leaves() for t in trees] == [
        ["The", "cat", "sat", "on", "the", "mat"],
        ["Unbelievably", "cats", "sat"],
    ]
    assert "perturbed distances at layer 2" in err and "removed 2 of 11 words" in err
    assert main([*argv, "--no-drop-punctuation", "--methods", "attention"]) == 0
    assert Tree.parse(capsys.readouterr().out.splitlines()[0]).leaves()[-1] == "."
    assert main([*argv, "--variant", "release"]) == 2
    assert "--variant is for a Tree Transformer" in capsys.readouterr().err
    assert main([*argv[:3], "--layer", "7"]) == 2
    assert "layer 7: hidden l2 reads layers 0..3" in capsys.readouterr().err


def test_induce_refuses_perturbed_masking_without_a_mask_token(tmp_path, capsys):
    plain = write_tiny_bert(tmp_path)
    text = tmp_path / "text.txt"
    text.write_text("the cat sat\n", encoding="utf-8")
    argv = ["induce", str(plain), str(text), "--layer", "1", "--methods", "perturbed"]
    assert main(argv) == 2
    assert "no mask token: perturbed masking is for masked LMs" in capsys.readouterr().err


@pytest.mark.slow
def test_induce_scores_every_layer_on_the_ptb_sample(masked_dir, tmp_path, capsys):
    root = data_dir()
    if root is None or not (root / "ptb-sample").is_dir():
        pytest.skip("the PTB sample is not found: set TREEATTN_DATA")
    plot, scores, trees = tmp_path / "layers.png", tmp_path / "scores.json", tmp_path / "t.txt"
    argv = ["induce", str(masked_dir), "--ptb", "test", "--methods", "hidden", "attention"]
    argv += ["--hidden-distance", "cosine", "--plot", str(plot), "--json", str(scores)]
    argv += ["--right-bias", "1.5"]
    assert main([*argv, "-o", str(trees)]) == 0
    printed = capsys.readouterr().out
    assert "layer chosen by sentence F1 on PTB sample dev" in printed
    assert "removed 1120 of 9615 words (by PTB tag)" in printed
    for row in ("model, hidden cosine L", "model, attention js L", "right-branching", "random"):
        assert row in printed
    assert "<= 10 words" in printed and "sentences/s" in printed
    assert plot.read_bytes()[:4] == b"\x89PNG"
    found = json.loads(scores.read_text())
    assert [m["method"] for m in found["methods"]] == ["hidden", "attention"]
    assert found["right_bias"] == 1.5 and "right-skewness bias 1.5" in printed
    hidden = found["methods"][0]
    assert hidden["layers"] == [0, 1, 2, 3] and len(hidden["dev"]) == len(hidden["test"]) == 4
    best = max(range(4), key=lambda k: hidden["dev"][k]["sentence_f1"])
    assert hidden["chosen_layer"] == best
    assert found["baselines"]["right-branching"]["sentence_f1"] == pytest.approx(40.2, abs=0.05)
    lines = trees.read_text().splitlines()
    assert len(lines) == 413 and "," not in Tree.parse(lines[0]).leaves()


def test_the_command_offers_the_distances_there_are():
    from treeattn.analysis import zero_shot_names, zero_shot_trees

    assert tuple(zero_shot_trees.HIDDEN_DISTANCES) == zero_shot_names.HIDDEN_DISTANCE_NAMES
    assert tuple(zero_shot_trees.ATTENTION_DISTANCES) == zero_shot_names.ATTENTION_DISTANCE_NAMES
