"""A tree loss in training (``model.tree_loss``): classification from scratch and on a
pretrained backbone reads the chosen layers' states in the task's own pass, weight 0 gives
the plain training step exactly, the loss is logged apart, evaluation needs no trees, and
bad settings are named. The tiny random BERT of tests/test_backbone.py stands in for
MiniLM."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers import train
from tests.test_classify_backbone import data, settings, tiny_dir  # noqa: F401  (fixtures)
from tests.test_engine import TINY, tiny_config
from treeattn.attention.registry import LAYER
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.task import evaluating
from treeattn.models.tree_loss import keeping_states
from treeattn.tasks import load_config, make_task

pytest.importorskip("tokenizers")

TREE_LOSS = ["model.tree_loss=tree-regularization", "model.tree_loss_options.layers=[1, 2]"]


def weights(run) -> dict[str, torch.Tensor]:
    return load_checkpoint(run / "last.pt")["model"]


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def scratch(run, *extra):
    return tiny_config(run, "train.max_updates=3", "train.epochs=1", *extra)


def test_from_scratch_weight_zero_is_the_plain_step_and_the_loss_is_logged(tmp_path):
    train(scratch(tmp_path / "plain"))
    train(scratch(tmp_path / "zero", *TREE_LOSS, "model.tree_loss_weight=0"))
    train(scratch(tmp_path / "one", *TREE_LOSS))
    plain = weights(tmp_path / "plain")
    assert same_weights(plain, weights(tmp_path / "zero"))
    assert not same_weights(plain, weights(tmp_path / "one"))
    records = [json.loads(line) for line in (tmp_path / "one/metrics.jsonl").open()]
    logged = [r for r in records if "train_loss" in r]
    assert logged and all(r["train_tree_loss"] > 0 for r in logged)
    zero = [json.loads(line) for line in (tmp_path / "zero/metrics.jsonl").open()]
    assert all("train_tree_loss" in r for r in zero if "train_loss" in r)


def test_on_a_backbone_weight_zero_is_the_plain_step(tmp_path, tiny_dir, data):  # noqa: F811
    def run(name, *extra):
        cfg = load_config(
            None,
            settings(tiny_dir, data, tmp_path / name, "vanilla", "train.max_updates=3", *extra),
        )
        results = train(cfg)
        assert results["finished"] and 0 <= results["test_accuracy"] <= 100
        return weights(tmp_path / name)

    plain = run("plain")
    assert same_weights(plain, run("zero", *TREE_LOSS, "model.tree_loss_weight=0"))
    assert not same_weights(plain, run("one", *TREE_LOSS))


def test_the_states_kept_are_the_encoders_own(tmp_path, tiny_dir, data):  # noqa: F811
    """The watchers keep the backbone's hidden states over its pieces, and the Transformer
    encoder's layer outputs, of the very pass the task runs."""
    cfg = load_config(None, settings(tiny_dir, data, tmp_path, "vanilla", *TREE_LOSS))
    task = make_task(cfg)
    examples, where = task.read("train")
    task.fit(examples)
    model = task.build_model()
    batch = task.encode(examples, where).batch([0, 3])
    assert batch.tree_targets is not None
    encoder = model.encoder
    with evaluating(model), torch.no_grad():
        with keeping_states(encoder, [-1, 1, 0]) as kept:
            model(batch.inputs)
        every = encoder.backbone.hidden_states(batch.inputs.pieces)
    for state, index in zip(kept, [3, 1, 0], strict=True):
        torch.testing.assert_close(state, every[index])
    positions = encoder.state_positions(batch.inputs)
    pieces = batch.inputs.pieces
    # "unbelievably" is three pieces: its first and last differ; [CLS] is no word's.
    assert positions.first[1, 0] == 1 and positions.last[1, 0] == 3
    assert positions.first.tolist() == pieces.first_piece.tolist()

    scratch_cfg = tiny_config(tmp_path / "scratch", *TREE_LOSS)
    task = make_task(scratch_cfg)
    examples, where = task.read("train")
    task.fit(examples)
    model = task.build_model()
    batch = task.encode(examples, where).batch([0, 1, 2])
    encoder = model.encoder
    with evaluating(model), torch.no_grad():
        with keeping_states(encoder, [2, 0]) as kept:
            model(batch.inputs)
        x = encoder.dropout(
            encoder.embed(batch.inputs.tokens) * encoder.d_model**0.5
            + encoder.position_table[: batch.inputs.tokens.shape[1]]
        )
        layers = [x]
        for index, layer in enumerate(encoder.layers):
            layers.append(layer(layers[-1], batch.inputs.pad_mask, {LAYER: index}))
    torch.testing.assert_close(kept[0], layers[2])
    torch.testing.assert_close(kept[1], layers[0])


def test_evaluation_reads_no_tree_and_a_training_sentence_without_one_is_named(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("pos\tthe cat sat\nneg\tthe mat\n", encoding="utf-8")
    cfg = load_config(
        None,
        [
            "task=classify",
            "data.name=labeled",
            *(f"data.paths.{split}={raw}" for split in ("train", "dev", "test")),
            *TREE_LOSS,
            f"out_dir={tmp_path / 'run'}",
        ],
    )
    task = make_task(cfg)
    with pytest.raises(ValueError, match="sentence 1 has no tree, which model.tree_loss"):
        task.read("train")
    examples, where = task.read("dev")  # evaluation needs none
    assert [ex.tree for ex in examples] == [None, None]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["model.tree_loss=nothing"], "model.tree_loss='nothing' is not a loss; known: tree-"),
        (["model.tree_loss_options.layers=[1]"], "tree_loss_options without model.tree_loss"),
        ([*TREE_LOSS, "model.tree_loss_weight=-1"], "tree_loss_weight must be 0 or more"),
        ([*TREE_LOSS, "model.tree_loss_options.dims=2"], "tree_loss_options: dims=2"),
        ([*TREE_LOSS, "model.attention=tree-lstm"], "TreeLSTMEncoder does not give"),
    ],
)
def test_bad_settings_are_named(tmp_path, extra, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(tmp_path, *extra)


def test_a_loss_on_frozen_layers_is_named(tmp_path, tiny_dir, data):  # noqa: F811
    extra = [*TREE_LOSS, "model.backbone_tune=1"]  # layers 1 and 2 of 3 stay frozen
    cfg = load_config(None, settings(tiny_dir, data, tmp_path, "vanilla", *extra))
    with pytest.raises(ValueError, match="no weight below those states trains"):
        train(cfg)


def test_a_layer_the_encoder_has_not_is_named(tmp_path):
    cfg = scratch(
        tmp_path, "model.tree_loss=tree-regularization", "model.tree_loss_options.layers=[5]"
    )
    with pytest.raises(ValueError, match="5 is not a hidden state of the encoder"):
        train(cfg)


def test_on_cola_only_the_training_split_gets_trees(tmp_path, shared_data):
    """CoLA has no trees of its own: the loss learns from the tree source's trees of the
    training sentences (right-branching here; the parser's by default), and the held-out
    splits are read without any."""
    sizes = [key for key in TINY if not key.startswith("data.")]
    cfg = load_config(
        None,
        [
            *sizes,
            "task=classify",
            "data.name=cola",
            "data.train_size=40",
            "data.trees=right-branching",
            "train.max_updates=2",
            f"out_dir={tmp_path}",
            *TREE_LOSS,
        ],
    )
    task = make_task(cfg)
    examples, _ = task.read("train")
    assert len(examples) == 40 and all(ex.tree is not None for ex in examples)
    for split in (task.selection.split, *task.final_splits):
        held_out, _ = task.read(split)
        assert all(ex.tree is None for ex in held_out), split
    assert train(cfg)["finished"]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").open()]
    assert any("train_tree_loss" in r for r in records)
