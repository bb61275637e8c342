"""The label attention parser on a pretrained backbone: it trains and evaluates, the
backbone learns in a parameter group of its own (its rate and warm-up), a frozen backbone
gets no gradient, padding changes nothing, an interrupted run resumes to the same weights,
and a parser file holds only the tuned weights and refuses another backbone.

The tiny random BERT of tests/test_backbone.py stands in for MiniLM.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, safe_open, save_file

from tests.helpers import train
from tests.test_backbone import write_tiny_bert
from tests.test_parser import SMALL, TOY
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.distributed import Replica
from treeattn.engine.trainer import Trainer
from treeattn.models.weights import WeightsError
from treeattn.parsing import Parser
from treeattn.parsing.encoding import encode
from treeattn.parsing.examples import ptb_example
from treeattn.parsing.vocab import ParserVocab
from treeattn.tasks import load_config, make_task
from treeattn.tasks.parse import ParseTask
from treeattn.trees import Tree

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture
def toy_treebank(tmp_path):
    path = tmp_path / "toy.txt"
    path.write_text("".join(line + "\n" for line in TOY * 3), encoding="utf-8")
    return [f"data.paths.{split}={path}" for split in ("train", "dev", "test")]


def settings(tiny_dir, toy_treebank, out_dir, *extra: str) -> list[str]:
    backbone = [
        f"model.backbone={tiny_dir}",
        "model.backbone_layers=[1, 2, 3]",
        "model.backbone_tune=2",
        "model.backbone_lr=0.002",
        "model.backbone_warmup=5",
    ]
    return [
        "task=parse",
        "data.name=files",
        *toy_treebank,
        *SMALL,
        *backbone,
        f"out_dir={out_dir}",
        *extra,
    ]


def test_a_parser_with_a_backbone_trains_and_evaluates(tmp_path, tiny_dir, toy_treebank):
    run = tmp_path / "run"
    results = train(load_config(None, settings(tiny_dir, toy_treebank, run, "train.epochs=4")))
    assert results["finished"] and "test_f1" in results and "test_uas" in results
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    losses = [r["train_loss"] for r in records if "train_loss" in r]
    assert losses and losses[-1] < losses[0]
    assert sum(r.get("split") == "dev" for r in records) == 4


def test_the_backbone_learns_at_its_own_rate_and_warm_up(tmp_path, tiny_dir, toy_treebank):
    cfg = load_config(None, settings(tiny_dir, toy_treebank, tmp_path, "train.epochs=2"))
    trainer = Trainer(make_task(cfg), Replica(0, 1, torch.device("cpu")))
    parser_group, backbone_group = trainer.optimizer.param_groups
    assert parser_group["name"] == "parser" and backbone_group["name"] == "backbone"
    assert parser_group["lr"] == pytest.approx(0.01 * 1 / 2)  # warm-up 2: update 0 at 1/2
    assert backbone_group["lr"] == pytest.approx(0.002 * 1 / 5)  # its own: 5 updates
    model = trainer.model
    tuned = {id(p) for p in backbone_group["params"]}
    encoder = model.backbone.encoder
    assert tuned == {id(p) for p in encoder.layers[1:].parameters()}  # the top 2 of 3
    assert all(id(p) not in tuned for p in model.backbone.mix.parameters())
    in_groups = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not any(id(p) in in_groups for p in encoder.layers[0].parameters())
    parser_factor, backbone_factor = trainer.scheduler.lr_lambdas
    assert [parser_factor(k) for k in (0, 1)] == pytest.approx([0.5, 1.0])
    assert [backbone_factor(k) for k in (0, 4)] == pytest.approx([0.2, 1.0])


def test_a_frozen_backbone_gets_no_gradient(tmp_path, tiny_dir, toy_treebank):
    extra = ("model.backbone_tune=none", "model.d_word=0")
    cfg = load_config(None, settings(tiny_dir, toy_treebank, tmp_path, *extra))
    task = make_task(cfg)
    examples, where = task.read("train")
    task.fit(examples)
    model = task.build_model()
    assert model.word_embed is None
    groups = task.parameter_groups(model)
    assert [group["name"] for group in groups] == ["parser"]
    task.loss(model, task.encode(examples, where).batch(list(range(4)))).backward()
    assert all(p.grad is None for p in model.backbone.encoder.parameters())
    assert all(p.grad is not None for p in model.backbone.mix.parameters())
    assert model.content.weight.grad is not None


def tiny_parser(tiny_dir, pooling="first"):
    """A small double-precision parser on the tiny BERT, its toy examples and their data."""
    cfg = ParseTask.config_from_dict(
        {
            "task": "parse",
            "model": {
                "d_word": 8,
                "d_char": 8,
                "d_content": 8,
                "d_position": 8,
                "n_layers": 1,
                "n_heads": 2,
                "d_kv": 8,
                "d_ff": 16,
                "lal_d_kv": 8,
                "lal_d_proj": 4,
                "backbone": str(tiny_dir),
                "backbone_layers": [0, 3],
                "backbone_pooling": pooling,
            },
        }
    )
    examples = [ptb_example(Tree.parse(line), "toy", i) for i, line in enumerate(TOY)]
    vocab = ParserVocab.fit(examples, 1)
    task = ParseTask(cfg)
    task.vocab = vocab
    return task.build_model().double().eval(), examples, encode(examples, vocab)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_a_padded_batch_scores_each_sentence_as_alone(tiny_dir, pooling):
    model, examples, data = tiny_parser(tiny_dir, pooling)

    def run(indices):
        batch = data.batch(indices)
        return model(batch.words, batch.chars, batch.pad_mask, sentences=batch.sentences)

    together = run(list(range(len(examples))))
    for i, ex in enumerate(examples):
        alone, n = run([i]), len(ex.words)
        torch.testing.assert_close(together.span_scores[i, :n, :n], alone.span_scores[0])
        torch.testing.assert_close(together.tag_logits[i, :n], alone.tag_logits[0])
        torch.testing.assert_close(together.arc_scores[i, : n + 1, : n + 1], alone.arc_scores[0])


def test_a_stopped_backbone_run_resumes_to_the_same_weights(tmp_path, tiny_dir, toy_treebank):
    extra = ("train.epochs=3", "train.checkpoint_every=2", "model.dropout=0.2")
    straight = train(load_config(None, settings(tiny_dir, toy_treebank, tmp_path / "a", *extra)))
    stopped = load_config(None, settings(tiny_dir, toy_treebank, tmp_path / "b", *extra))
    train(stopped, stop_after_steps=4)
    resumed = train(load_config(None, settings(tiny_dir, toy_treebank, tmp_path / "b", *extra)))
    assert resumed["test_f1"] == straight["test_f1"]
    a, b = load_checkpoint(tmp_path / "a" / "last.pt"), load_checkpoint(tmp_path / "b" / "last.pt")
    assert any(key.startswith("backbone.encoder.layers.2.") for key in a["model"])
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert len(b["optimizer"]["param_groups"]) == 2


def test_a_backbone_parser_file_holds_the_tuned_weights_and_parses_the_same(
    tmp_path, tiny_dir, toy_treebank
):
    run = tmp_path / "run"
    train(load_config(None, settings(tiny_dir, toy_treebank, run, "train.epochs=2")))
    checkpoint = Parser.load(run / "best.pt", device="cpu")
    sentences = [["the", "cat", "sat", "on", "the", "mat", "."], ["a", "dog", "saw", "it", "."]]
    expected = checkpoint.parse(sentences)
    path = checkpoint.save(tmp_path / "parser.safetensors", compact=False)
    stored = load_file(str(path))
    assert "backbone.encoder.layers.2.query.weight" in stored  # tuned
    assert "backbone.mix.weights" in stored
    assert not any(k.startswith("backbone.encoder.layers.0.") for k in stored)  # frozen
    assert not any(k.startswith("backbone.encoder.embeddings.") for k in stored)
    loaded = Parser.load(path, device="cpu")
    parsed = loaded.parse(sentences)
    for a, b in zip(expected, parsed, strict=True):
        assert str(a.tree) == str(b.tree)
        assert a.dependencies.heads == b.dependencies.heads
        assert a.dependencies.relations == b.dependencies.relations
    # Compact: the tuned matrices as int8 changes, rebuilt on the source to within a
    # step of the int8 grid; the other tuned weights as float16.
    compact = checkpoint.save(tmp_path / "compact.safetensors")
    packed = load_file(str(compact))
    name = "backbone.encoder.layers.2.query.weight"
    assert name not in packed and packed[name + "::delta"].dtype == torch.int8
    assert packed["backbone.encoder.layers.2.query.bias"].dtype == torch.float16
    assert packed["content.weight"].dtype == torch.float16
    rebuilt = Parser.load(compact, device="cpu")
    trained = checkpoint.model.backbone.encoder.layers[2].query.weight
    source = load_file(str(tiny_dir / "model.safetensors"))
    source = source["encoder.layer.2.attention.self.query.weight"]
    step = (trained - source).abs().amax(dim=1, keepdim=True) / 127
    error = (rebuilt.model.backbone.encoder.layers[2].query.weight - trained).abs()
    assert bool((error <= step / 2 + 1e-6).all()) and bool((trained != source).any())
    assert len(rebuilt.parse(sentences)) == 2
    # int8 quantizes the parser's own layers and the pretrained attention projections,
    # and leaves the pretrained feed-forward layers in float32.
    modules = dict(Parser.load(path, device="cpu", int8=True).model.named_modules())
    assert type(modules["backbone.encoder.layers.2.query"]) is not torch.nn.Linear
    assert type(modules["backbone.encoder.layers.2.feed_in"]) is torch.nn.Linear
    assert type(modules["content"]) is not torch.nn.Linear

    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    wrong = tmp_path / "wrong.safetensors"
    save_file(stored, str(wrong), metadata={**meta, "backbone_sha256": "0" * 64})
    with pytest.raises(WeightsError, match="sha256"):
        Parser.load(wrong, device="cpu")


def test_batches_pad_by_the_backbones_pieces(tiny_dir):
    model, examples, _ = tiny_parser(tiny_dir)
    sentences = [ex.words for ex in examples]
    widths = [len(ids) for ids, _ in model.backbone.splitter.rows(sentences)]
    assert model.batch_lengths(sentences) == widths
    assert widths != [len(words) + 2 for words in sentences]  # some word makes pieces
    model.backbone = None  # without one, the words (and start and stop) pad
    assert model.batch_lengths(sentences) == [len(words) + 2 for words in sentences]
