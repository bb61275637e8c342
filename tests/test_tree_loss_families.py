"""``model.tree_loss`` on a backbone of another family than BERT (the tiny random
RoBERTa-like encoder and Llama-like decoder of tests/test_classify_families.py, read
through ``transformers``): the loss reads the model's own hidden states over its pieces,
weight 0 gives the plain training step exactly, and a weight changes it."""

from __future__ import annotations

import torch

from tests.helpers import train
from tests.test_classify_families import data, folder  # noqa: F401  (fixtures)
from tests.test_tree_loss_training import TREE_LOSS, same_weights, weights
from treeattn.engine.task import evaluating
from treeattn.models.tree_loss import keeping_states
from treeattn.tasks import load_config, make_task


def settings(folder, data, out_dir, *extra):  # noqa: F811  (the fixtures' names)
    return [
        "task=classify",
        "data.name=labeled",
        *(f"data.paths.{split}={data}" for split in ("train", "dev", "test")),
        f"model.backbone={folder}",
        "model.n_layers=0",
        "model.dropout=0.0",
        "train.max_updates=3",
        "train.epochs=1",
        "train.max_tokens=40",
        "train.progress=false",
        f"out_dir={out_dir}",
        *extra,
    ]


def test_weight_zero_is_the_plain_step(tmp_path, folder, data):  # noqa: F811
    def run(name, *extra):
        train(load_config(None, settings(folder, data, tmp_path / name, *extra)))
        return weights(tmp_path / name)

    plain = run("plain")
    assert same_weights(plain, run("zero", *TREE_LOSS, "model.tree_loss_weight=0"))
    assert not same_weights(plain, run("one", *TREE_LOSS))


def test_the_states_read_are_the_models_own(tmp_path, folder, data):  # noqa: F811
    task = make_task(load_config(None, settings(folder, data, tmp_path, *TREE_LOSS)))
    examples, where = task.read("train")
    task.fit(examples)
    model = task.build_model()
    batch = task.encode(examples, where).batch([0, 3])
    encoder = model.encoder
    with evaluating(model), torch.no_grad():
        with keeping_states(encoder, [1, 2]) as kept:
            model(batch.inputs)
        every = encoder.backbone.hidden_states(batch.inputs.pieces)
    torch.testing.assert_close(kept[0], every[1])
    torch.testing.assert_close(kept[1], every[2])
    positions = encoder.state_positions(batch.inputs)
    owners = batch.inputs.pieces.word_of_piece
    for b in range(2):
        for word in range(int((~positions.pad_mask[b]).sum())):
            owned = (owners[b] == word).nonzero().flatten().tolist()
            if owned:  # a word with no piece of its own shares the one before it
                assert positions.first[b, word] == owned[0]
                assert positions.last[b, word] == owned[-1]
            else:
                assert positions.first[b, word] == positions.last[b, word]
    assert task.tree_loss(kept, batch.tree_targets, positions) > 0
