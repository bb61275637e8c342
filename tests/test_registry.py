"""The encoder registry: what each mechanism declares, and a new mechanism registered in
one file (tests/toy_mechanism.py) trained through classification and translation with no
change to the tasks."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
import torch

from tests import toy_mechanism
from tests.helpers import train
from tests.test_engine import tiny_config
from tests.test_translate import prefixes, tiny, tree_cache  # noqa: F401  (fixtures)
from treeattn.attention.registry import Reads
from treeattn.models.inputs import EncoderInputs, InputEncoder
from treeattn.models.registry import _ENCODERS, encoder_entry, encoder_names, register_encoder
from treeattn.tasks import load_config
from treeattn.tasks.trained import load_trained
from treeattn.trees import Tree


@pytest.fixture(autouse=True)
def toy():
    """The toy mechanism, registered for one test only: the demo and other tests train
    every registered mechanism."""
    toy_mechanism.register()
    yield toy_mechanism
    _ENCODERS.pop(toy_mechanism.NAME)


def test_each_mechanism_declares_what_it_reads_and_its_options():
    declared = {name: encoder_entry(name) for name in encoder_names()}
    assert declared["vanilla"].reads == frozenset()
    assert declared["distance"].reads == {Reads.GAPS}
    assert declared["hierarchical"].reads == {Reads.TREES}
    assert declared["tree-lstm"].reads == {Reads.BINARY_TREES}
    assert [f.name for f in fields(declared["distance"].options)] == [
        "local_heads",
        "layers",
        "gate",
        "tau",
    ]
    hierarchical = {f.name: f.default for f in fields(declared["hierarchical"].options)}
    assert hierarchical["subtree_mask"] is True and "d_model" not in hierarchical
    with pytest.raises(ValueError, match="already registered"):
        register_encoder(declared["hierarchical"])
    with pytest.raises(ValueError, match="'nope' is not known; known: vanilla"):
        encoder_entry("nope")


def test_an_unknown_option_is_named_with_the_options_there_are():
    with pytest.raises(ValueError, match="attention_options.gates is not an option of distance"):
        load_config(None, ["model.attention=distance", "model.attention_options.gates=soft"])
    with pytest.raises(ValueError, match="its options: scale"):
        load_config(None, [f"model.attention={toy_mechanism.NAME}", "model.attention_options.x=1"])


def test_inputs_follow_the_declaration():
    tree = Tree.parse("(S (NP a b) (VP c))")
    for reads, present in (
        (frozenset(), set()),
        (frozenset({Reads.GAPS}), {"gaps"}),
        (frozenset({Reads.TREES}), {"trees", "node_labels"}),
    ):
        from treeattn.data.vocab import Vocab

        encoder = InputEncoder(reads, Vocab.build([["S", "NP", "VP"]]))
        item = encoder.sentence([3, 4, 5], tree, ["a", "b", "c"], "input")
        batch = encoder.batch([item])
        given = {f.name for f in fields(EncoderInputs) if getattr(batch, f.name) is not None}
        assert given == {"tokens", "pad_mask"} | present
    binary = InputEncoder(frozenset({Reads.BINARY_TREES}), Vocab.build([["S", "NP", "VP"]]))
    assert len(binary.node_labels(Tree.parse("(S a b c)"))) == 2  # binarized: two nodes


def test_a_new_mechanism_trains_through_classify(tmp_path):
    cfg = tiny_config(tmp_path / "run", f"model.attention={toy_mechanism.NAME}")
    results = train(cfg)
    assert 0 <= results["test_accuracy"] <= 100
    saved = load_trained(tmp_path / "run" / "best.pt")
    assert isinstance(saved.model.encoder, toy_mechanism.AncestorMeanEncoder)
    assert len(saved.predict(["[MAX 2 9 ]", "[MIN 3 [MAX 4 5 ] ]"], "input")) == 2


def test_a_new_mechanism_trains_through_translate(prefixes, tmp_path):  # noqa: F811
    extra = (
        f"model.attention={toy_mechanism.NAME}",
        "model.attention_options.scale=0.5",
        "train.epochs=null",
        "train.max_updates=3",
        "train.eval_every=3",
        "data.beam_size=1",  # greedy: an untrained model decodes to its length limit
    )
    train(tiny(prefixes, tmp_path / "run", *extra))
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "test_2016_flickr_bleu" in results
    saved = load_trained(tmp_path / "run" / "best.pt")
    assert saved.model.encoder.scale == 0.5
    pairs = saved.task.sources(["A dog runs."], "input")
    assert pairs[0].tree is not None  # the right-branching trees it was trained on
    data = saved.task.encode(pairs, "input")
    batch = data.batch([0])
    assert batch.inputs.trees is not None and torch.is_tensor(batch.inputs.node_labels)
