"""Sentence classification on a pretrained backbone (``model.backbone``): every mechanism
trains and evaluates (inside the backbone's heads or on its word vectors), the backbone
learns in a parameter group of its own, a frozen one gets no gradient, padding changes
nothing, whole-sentence ranges give the plain model, a stopped run resumes, a trained
model predicts raw sentences, and a run or a trained model reads the weights once.

The tiny random BERT of tests/test_backbone.py stands in for MiniLM.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.helpers import train
from tests.test_backbone import write_tiny_bert
from treeattn.cli import main
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.distributed import Replica
from treeattn.engine.task import evaluating
from treeattn.engine.trainer import Trainer
from treeattn.models.weights import WeightsError, packaged_archive
from treeattn.tasks import load_config, make_task
from treeattn.tasks.trained import load_trained

pytest.importorskip("tokenizers")

ROWS = [
    "(pos (X (X the) (X cat)) (X (X sat) (X (X on) (X mat))))",
    "(neg (X (X the) (X mat)) (X sat))",
    "(pos (X cat) (X (X sat) (X .)))",
    "(neg (X (X unbelievably) (X (X mat) (X ,))) (X (X on) (X zq)))",
]
MECHANISMS = {
    "vanilla": ["model.n_layers=0"],
    "distance": ["model.attention_options.layers=[1, 2]", "model.attention_options.heads=[0, 1]"],
    "distance-soft": [
        "model.attention=distance",
        "model.attention_options.layers=[0]",
        "model.attention_options.heads=[3]",
        "model.attention_options.gate=soft",
    ],
    "constituent": ["model.attention_options.layers=[0, 1]", "model.attention_options.heads=[2]"],
    "hierarchical": ["model.n_layers=1", "model.d_model=16", "model.n_heads=2", "model.d_ff=32"],
    "tree-lstm": ["model.d_model=8"],  # another size than the backbone's: projected
    "structured": ["model.n_layers=1", "model.d_model=16", "model.n_heads=2"],
}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("labeled") / "trees.txt"
    path.write_text("".join(row + "\n" for row in ROWS * 4), encoding="utf-8")
    return path


def settings(tiny_dir: Path, data: Path, out_dir: Path, name: str, *extra: str) -> list[str]:
    attention = (
        []
        if any(e.startswith("model.attention=") for e in MECHANISMS[name])
        else [f"model.attention={name}"]
    )
    return [
        "task=classify",
        "data.name=labeled",
        *(f"data.paths.{split}={data}" for split in ("train", "dev", "test")),
        f"model.backbone={tiny_dir}",
        "model.backbone_lr=0.002",
        "model.backbone_warmup=3",
        "model.dropout=0.0",
        "train.epochs=2",
        "train.max_tokens=40",
        "train.warmup_steps=2",
        "train.progress=false",
        f"out_dir={out_dir}",
        *attention,
        *MECHANISMS[name],
        *extra,
    ]


def built(tiny_dir, data, tmp_path, name, *extra):
    task = make_task(load_config(None, settings(tiny_dir, data, tmp_path, name, *extra)))
    examples, where = task.read("train")
    task.fit(examples)
    return task, task.build_model(), task.encode(examples, where)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_each_mechanism_trains_and_evaluates(tmp_path, tiny_dir, data, name):
    results = train(load_config(None, settings(tiny_dir, data, tmp_path, name)))
    assert results["finished"] and 0 <= results["test_accuracy"] <= 100
    cfg = load_config(None, settings(tiny_dir, data, tmp_path / "groups", name))
    trainer = Trainer(make_task(cfg), Replica(0, 1, torch.device("cpu")))
    own, backbone = trainer.optimizer.param_groups
    assert own["name"] == "classifier" and backbone["name"] == "backbone"
    encoder = trainer.model.encoder.backbone.encoder
    pretrained = [*encoder.embeddings.parameters(), *encoder.layers.parameters()]
    assert {id(p) for p in backbone["params"]} == {id(p) for p in pretrained}
    assert [f(0) for f in trainer.scheduler.lr_lambdas] == pytest.approx([1 / 2, 1 / 3])
    injected = getattr(encoder, "syntax_injection", None)
    assert (injected is not None) == name.startswith(("distance", "constituent"))
    links = [] if injected is None else list(injected.parameters())
    assert bool(links) == (name == "constituent")  # the one new part: at the head's rate
    assert {id(p) for p in links} <= {id(p) for p in own["params"]}


def test_a_frozen_backbone_gets_no_gradient_but_the_links_learn(tmp_path, tiny_dir, data):
    task, model, encoded = built(
        tiny_dir, data, tmp_path, "constituent", "model.backbone_tune=none"
    )
    assert [group["name"] for group in task.parameter_groups(model)] == ["classifier"]
    task.loss(model, encoded.batch(list(range(6)))).backward()
    encoder = model.encoder.backbone.encoder
    assert all(
        p.grad is None for p in [*encoder.embeddings.parameters(), *encoder.layers.parameters()]
    )
    links = dict(encoder.syntax_injection.named_parameters())
    assert links and all(p.grad is not None for p in links.values())
    # Through the frozen layers above them too (a key's bias adds the same score to both
    # neighbours: no gradient by design).
    assert all(p.grad.abs().sum() > 0 for k, p in links.items() if k.endswith("weight"))
    assert model.head.weight.grad is not None


@pytest.mark.parametrize(
    "name", ["vanilla", "distance", "constituent", "hierarchical", "tree-lstm"]
)
def test_a_padded_batch_classifies_each_sentence_as_alone(tmp_path, tiny_dir, data, name):
    task, model, encoded = built(tiny_dir, data, tmp_path, name)
    with evaluating(model), torch.no_grad():
        together = model(encoded.batch([0, 1, 2, 3]).inputs)
        alone = torch.cat([model(encoded.batch([k]).inputs) for k in range(4)])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


def test_whole_sentence_ranges_give_the_plain_model(tmp_path, tiny_dir):
    # Flat trees: every gap has the same distance, so every word's range is its sentence.
    flat = tmp_path / "flat.txt"
    rows = [["the", "cat", "sat", "on", "mat"], ["a", "mat", "sat"], ["unbelievably", ","]]
    flat.write_text(
        "".join(
            f"({k % 2} {' '.join(f'(X {w})' for w in words)})\n" for k, words in enumerate(rows)
        )
    )
    every = [
        "model.attention_options.layers=[0, 1, 2]",
        "model.attention_options.heads=[0, 1, 2, 3]",
    ]
    _, injected, encoded = built(tiny_dir, flat, tmp_path, "distance", *every)
    _, plain, _ = built(tiny_dir, flat, tmp_path, "vanilla")
    plain.load_state_dict(injected.state_dict())
    batch = encoded.batch([0, 1, 2]).inputs
    with evaluating(injected), evaluating(plain), torch.no_grad():
        torch.testing.assert_close(injected(batch), plain(batch), atol=1e-6, rtol=0)


def test_a_stopped_run_resumes_to_the_same_weights(tmp_path, tiny_dir, data):
    extra = ("train.epochs=3", "train.checkpoint_every=2", "model.dropout=0.2")
    straight = train(
        load_config(None, settings(tiny_dir, data, tmp_path / "a", "constituent", *extra))
    )
    stopped = settings(tiny_dir, data, tmp_path / "b", "constituent", *extra)
    assert not train(load_config(None, stopped), stop_after_steps=3)["finished"]
    resumed = train(load_config(None, stopped))
    assert resumed["test_accuracy"] == straight["test_accuracy"]
    a, b = load_checkpoint(tmp_path / "a" / "last.pt"), load_checkpoint(tmp_path / "b" / "last.pt")
    assert any("syntax_injection.links" in key for key in a["model"])
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


@pytest.mark.parametrize("name", ["vanilla", "distance"])
def test_a_trained_model_predicts_raw_sentences(tmp_path, tiny_dir, data, name, capsys):
    train(load_config(None, settings(tiny_dir, data, tmp_path, name)))
    lines = tmp_path / "in.txt"
    lines.write_text("The cat sat on the mat.\n(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n")
    assert main(["predict", str(tmp_path / "best.pt"), str(lines)]) == 0
    predicted = capsys.readouterr().out.splitlines()
    assert len(predicted) == 2 and set(predicted) <= {"neg", "pos"}


@pytest.fixture
def weight_reads(monkeypatch) -> list[int]:
    """The size of each pretrained weights file read from now on: every read goes through
    ``safetensors.torch.load`` (``treeattn.models.weights``)."""
    import safetensors.torch

    reads: list[int] = []
    load = safetensors.torch.load

    def counted(data: bytes) -> dict[str, torch.Tensor]:
        reads.append(len(data))
        return load(data)

    monkeypatch.setattr(safetensors.torch, "load", counted)
    return reads


@pytest.mark.parametrize("name", ["distance", "hierarchical"])
def test_a_run_and_its_trained_model_read_the_weights_once(
    tmp_path, tiny_dir, data, name, weight_reads
):
    """Words are split into pieces by the tokenizer alone: a whole training run (data read
    and encoded, the model built, trained, scored) reads the backbone's weights once, and
    so does loading the trained model to predict."""
    train(load_config(None, settings(tiny_dir, data, tmp_path, name, "train.epochs=1")))
    assert len(weight_reads) == 1
    weight_reads.clear()
    trained = load_trained(tmp_path / "best.pt", device="cpu")
    tree = "(S (NP (DT the) (NN cat)) (VP (VBD sat)))"  # given: no parser (and its weights)
    assert len(trained.predict([tree], "input")) == 1
    assert len(weight_reads) == 1


def test_setting_up_a_run_on_minilm_reads_its_weights_once(tmp_path, data, weight_reads):
    try:
        packaged_archive()
    except WeightsError as error:
        pytest.skip(str(error))
    built(Path("minilm"), data, tmp_path, "distance")
    assert len(weight_reads) == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["model.attention=hierarchical", "model.n_layers=0"], "leaves hierarchical out"),
        (["model.attention=distance", "model.attention_options.heads=[0]"], "layers is needed"),
        (["model.attention=distance", "model.attention_options.local_heads=2"], "not an option"),
        (["model.backbone_tune=some"], "model.backbone_tune='some'"),
    ],
)
def test_settings_no_run_can_use_are_refused_by_key(tiny_dir, extra, message):
    with pytest.raises(ValueError, match=message):
        make_task(
            load_config(
                None, ["task=classify", "data.name=sst2", f"model.backbone={tiny_dir}", *extra]
            )
        )


def test_parser_trees_cannot_give_phrase_labels():
    for trees in ("parser", "right-branching"):
        with pytest.raises(ValueError, match=f"the {trees} trees do not have; use data.trees=gold"):
            make_task(
                load_config(
                    None, ["data.name=sst5", f"data.trees={trees}", "data.phrase_level=true"]
                )
            )


CONFIGS = sorted(Path(__file__).parent.parent.glob("configs/sst*-minilm-*.yaml"))


def test_the_minilm_configs_hold_the_six_mechanisms_on_both_data_sets():
    names = {path.stem for path in CONFIGS}
    mechanisms = ("vanilla", "distance", "constituent", "hierarchical", "tree-lstm", "structured")
    assert names == {f"{d}-minilm-{m}" for d in ("sst2", "sst5") for m in mechanisms}
    for path in CONFIGS:
        task = make_task(load_config(path))  # checked as a run checks it
        m = task.cfg.model
        settings = (m.backbone, m.backbone_lr, task.cfg.train.lr, task.cfg.train.precision)
        assert settings == ("minilm", 3e-5, 2e-4, "auto"), path
        assert m.attention == path.stem.split("-minilm-")[1] and not task.cfg.data.phrase_level


SST = [
    "(3 (2 (2 The) (2 film)) (3 (2 was) (3 good)))",
    "(1 (2 It) (1 (1 (2 was) (1 (1 bad) (2 ,))) (2 (2 sadly) (2 .))))",
]


def test_parser_trees_replace_the_gold_ones_where_the_model_reads_trees(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "sst.txt"
    path.write_text("".join(row + "\n" for row in SST), encoding="utf-8")
    overrides = ["data.name=sst5", "model.attention=tree-lstm"]
    gold, _ = make_task(load_config(None, overrides)).read(str(path))
    parsed, _ = make_task(load_config(None, [*overrides, "data.trees=parser"])).read(str(path))
    assert [ex.tokens for ex in parsed] == [ex.tokens for ex in gold]
    assert [ex.label for ex in parsed] == [3, 1]
    for ex in parsed:  # made as SST's: binary, every node X
        assert ex.tree.leaves() == ex.tokens
        assert all(len(t.children) <= 2 and t.label == "X" for t in ex.tree.subtrees())
    assert [str(ex.tree) for ex in parsed] != [str(ex.tree) for ex in gold]


@pytest.mark.parametrize(("mechanism", "tune"), [("distance", "all"), ("constituent", 1)])
def test_the_backbone_passes_syntax_as_its_encoder_does(tiny_dir, mechanism, tune):
    from treeattn.models.backbone import load_backbone
    from treeattn.models.syntax_injection import inject_syntax
    from treeattn.trees import Tree

    backbone = load_backbone(tiny_dir, tune=tune).eval()
    injection = inject_syntax(backbone.encoder, mechanism, layers=[0, 2], heads=[1, 3])
    trees = [Tree.parse(row) for row in ROWS]
    batch = backbone.pieces([tree.leaves() for tree in trees])
    syntax = injection.inputs(trees, batch.word_of_piece, batch.pad_mask)
    ours = backbone.hidden_states(batch, syntax)
    theirs = backbone.encoder(batch.piece_ids, batch.pad_mask, syntax=syntax)
    plain = backbone.hidden_states(batch)
    for mine, expected in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, expected, atol=0, rtol=0)
    assert not torch.allclose(ours[-1], plain[-1])  # the syntax changed something


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hierarchical", "tree-lstm"])
def test_phrase_labels_reach_every_node_of_a_tree_model_on_a_backbone(shared_data, tiny_dir, name):
    cfg = load_config(
        None,
        [
            "task=classify",
            "data.name=sst5",
            "data.phrase_level=true",
            f"model.backbone={tiny_dir}",
            f"model.attention={name}",
            *MECHANISMS[name],
        ],
    )
    task = make_task(cfg)
    examples, where = task.read("train")
    task.fit(examples)
    model = task.build_model()
    short = [ex for ex in examples if len(ex.tokens) <= 4][:3]  # the tiny BERT's 24 positions
    batch = task.encode(short, where).batch([0, 1, 2])
    assert batch.node_targets is not None and int((batch.node_targets >= 0).sum()) > 3
    task.loss(model, batch).backward()
    query = model.encoder.backbone.encoder.layers[-1].query.weight
    assert query.grad is not None and float(query.grad.abs().sum()) > 0


def test_a_model_trained_on_gold_trees_is_scored_on_the_parsers(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "sst.txt"
    path.write_text("".join(row + "\n" for row in SST), encoding="utf-8")
    overrides = ["data.name=sst5", "model.attention=tree-lstm", "data.phrase_level=true"]
    task = make_task(load_config(None, overrides))
    gold, _ = task.read(str(path))
    task.use_trees("parser")
    parsed, _ = task.read(str(path))
    expected, _ = make_task(load_config(None, [*overrides[:2], "data.trees=parser"])).read(
        str(path)
    )
    assert [str(ex.tree) for ex in parsed] == [str(ex.tree) for ex in expected]
    assert [str(ex.tree) for ex in parsed] != [str(ex.tree) for ex in gold]
    task.use_trees("gold")
    assert [str(ex.tree) for ex in task.read(str(path))[0]] == [str(ex.tree) for ex in gold]
    plain = make_task(load_config(None, ["data.name=sst5", "model.attention=vanilla"]))
    with pytest.raises(ValueError, match="a vanilla model on sst5 reads no trees"):
        plain.use_trees("parser")
    with pytest.raises(ValueError, match="--trees files: this model reads gold, parser, right-"):
        task.use_trees("files")


def test_evaluate_refuses_trees_for_a_model_without_them(tmp_path, capsys):
    from tests.test_engine import TINY

    sets = [*TINY, "train.max_updates=2", "train.epochs=null", f"out_dir={tmp_path}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "best.pt"), "test", "--trees", "parser"]) == 2
    error = "a vanilla model on listops reads no trees: --trees and --parser do not apply"
    assert error in capsys.readouterr().err
    assert main(["predict", str(tmp_path / "best.pt"), "--parser", "fast"]) == 2
    assert error in capsys.readouterr().err
