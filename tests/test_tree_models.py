"""Tree models (hierarchical accumulation, Tree-LSTM) in the engine: training, resume,
phrase-level SST, evaluation, the attention command, bad input."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import train
from tests.test_engine import tiny_config
from treeattn.attention.registry import Reads
from treeattn.cli import main
from treeattn.data.vocab import Vocab
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.models.inputs import InputEncoder
from treeattn.models.registry import encoder_names
from treeattn.tasks import load_config, make_task
from treeattn.tasks.datasets import open_dataset
from treeattn.tasks.encoding import EncodedSet, input_encoder
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import load_trained
from treeattn.trees import Tree

FIT_SMALL = [
    "data.train_size=40",
    "model.dropout=0.0",
    "train.lr=5e-3",
    "train.warmup_steps=5",
    "train.epochs=40",
    "model.pooling=root",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hierarchical", "tree-lstm"])
def test_tree_models_fit_a_small_training_set(tmp_path, name):
    results = train(tiny_config(tmp_path, f"model.attention={name}", *FIT_SMALL))
    assert results["finished"]
    assert load_trained(tmp_path / "last.pt").evaluate("train")["accuracy"] >= 60  # chance ~10
    best = load_trained(tmp_path / "best.pt").evaluate("test")
    assert best["accuracy"] == pytest.approx(results["test_accuracy"])
    assert "node_vocab" in load_checkpoint(tmp_path / "best.pt")["task_state"]


def test_a_stopped_hierarchical_run_resumes_to_the_same_weights(tmp_path):
    extra = ["model.attention=hierarchical", "model.pooling=root", "train.checkpoint_every=4"]
    expected = train(tiny_config(tmp_path / "straight", *extra))
    first = train(tiny_config(tmp_path / "stopped", *extra), stop_after_steps=5)
    assert not first["finished"]
    second = train(tiny_config(tmp_path / "stopped", *extra))
    assert second["test_accuracy"] == expected["test_accuracy"]
    a = load_checkpoint(tmp_path / "straight" / "last.pt")["model"]
    b = load_checkpoint(tmp_path / "stopped" / "last.pt")["model"]
    assert all(torch.equal(a[key], b[key]) for key in a)


def test_demo_and_configs_know_the_tree_models():
    assert {"vanilla", "hierarchical", "tree-lstm"} <= set(encoder_names())
    for path in ("configs/sst5-hierarchical.yaml", "configs/sst2-tree-lstm.yaml"):
        cfg = load_config(path)
        assert cfg.model.pooling == "root" and cfg.data.phrase_level


def trees(node_vocab: Vocab) -> InputEncoder:
    """What hierarchical accumulation reads: the constituency trees."""
    return InputEncoder(frozenset({Reads.TREES}), node_vocab)


@pytest.mark.slow
def test_sst_whole_trees_carry_every_phrase_label(shared_data):
    cfg5 = load_config("configs/sst5-hierarchical.yaml").data
    train5 = open_dataset(cfg5).load_split("train", whole_trees=True)
    assert len(train5) == 8544
    assert all(ex.tree.label == "X" for ex in train5[:50])  # labels hidden from the model
    cfg2 = load_config("configs/sst2-hierarchical.yaml").data
    train2 = open_dataset(cfg2).load_split("train", whole_trees=True)
    # Neutral-root sentences stay for their polar phrases, with the root label ignored.
    assert len(train2) == 8544 and sum(ex.label == -1 for ex in train2) > 1000
    assert len(open_dataset(cfg2).load_split("test", whole_trees=True)) == 1821

    vocab = Vocab.build(ex.tokens for ex in train5[:200])
    node_vocab = Vocab.build([["X"]])
    encoded = EncodedSet(train5[:200], vocab, trees(node_vocab))
    batch = encoded.batch(list(range(200)))
    assert torch.equal(batch.node_targets[:, 0], batch.labels)  # the root is node 0
    labeled = int((batch.node_targets >= 0).sum() + (batch.leaf_targets >= 0).sum())
    assert labeled == sum(len(ex.phrase_labels) for ex in train5[:200])


def test_phrase_level_loss_counts_every_labeled_node():
    tree = Tree.parse("(X (X a b) c)")
    example = LabeledSentence(["a", "b", "c"], 1, tree, ((0, 3, 1), (0, 2, 0), (2, 3, 1)))
    vocab, node_vocab = Vocab.build([["a", "b", "c"]]), Vocab.build([["X"]])
    batch = EncodedSet([example], vocab, trees(node_vocab)).batch([0])
    assert batch.node_targets.tolist() == [[1, 0]]
    assert batch.leaf_targets.tolist() == [[-1, -1, 1]]

    class Fixed(torch.nn.Module):  # logits chosen by hand
        def forward(self, inputs, every_node=False):
            assert every_node
            return torch.tensor([[[0.0, 2.0], [1.0, 0.0]]]), torch.zeros(1, 3, 2)

    expected = torch.nn.functional.cross_entropy(
        torch.tensor([[0.0, 2.0], [1.0, 0.0], [0.0, 0.0]]), torch.tensor([1, 0, 1])
    )
    task = make_task(load_config("configs/sst5-hierarchical.yaml"))
    torch.testing.assert_close(task.loss(Fixed(), batch), expected)


def test_a_unary_chain_gives_each_of_its_nodes_its_own_label():
    # (3 (1 (2 a) (4 b))): the root and its only child share the span (0, 2).
    tree = Tree.parse("(X (X (X a) (X b)))")
    phrases = ((0, 2, 3), (0, 2, 1), (0, 1, 2), (1, 2, 4))
    example = LabeledSentence(["a", "b"], 3, tree, phrases)
    batch = EncodedSet([example], Vocab.build([["a", "b"]]), trees(Vocab.build([["X"]]))).batch([0])
    assert batch.node_targets.tolist() == [[3, 1]]
    assert batch.leaf_targets.tolist() == [[2, 4]]
    # A one-word sentence: its root node and its word each keep their own label.
    single = LabeledSentence(["a"], 3, Tree.parse("(X a)"), ((0, 1, 3),))
    lonely = LabeledSentence(["a"], 0, Tree.parse("(X (X a))"), ((0, 1, 0), (0, 1, 4)))
    batch = EncodedSet([single, lonely], Vocab.build([["a"]]), trees(Vocab.build([["X"]]))).batch(
        [0, 1]
    )
    assert batch.node_targets.tolist() == [[3], [0]]
    assert batch.leaf_targets.tolist() == [[-1], [4]]


def test_evaluation_skips_unlabeled_sentences_and_a_batch_without_labels_adds_nothing():
    examples = [
        LabeledSentence(["a", "b"], 1, Tree.parse("(X a b)"), ((0, 2, 1),)),
        LabeledSentence(["b"], -1, Tree.parse("(X b)"), ((0, 1, -1),)),
    ]
    encoded = EncodedSet(examples, Vocab.build([["a", "b"]]), trees(Vocab.build([["X"]])))

    class Constant(torch.nn.Module):  # always predicts class 1 of SST-5's five
        def forward(self, inputs, every_node=False):
            B, m = inputs.node_labels.shape
            logits = torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0])
            if every_node:
                return logits.expand(B, m, 5), logits.expand(B, inputs.tokens.shape[1], 5)
            return logits.expand(B, 5)

    task = make_task(load_config("configs/sst5-hierarchical.yaml", ["train.eval_max_tokens=100"]))
    result = task.evaluate(Constant(), encoded, torch.device("cpu"))
    assert result["accuracy"] == 100.0 and result["count"] == 1
    assert task.loss(Constant(), encoded.batch([1])).item() == 0.0


def test_a_tree_too_deep_for_the_model_is_refused_before_training(tmp_path):
    cfg = load_config("configs/sst5-hierarchical.yaml", ["model.attention_options.max_depth=2"])
    deep = LabeledSentence(["a", "b", "c", "d"], 0, Tree.parse("(X a (X b (X c d)))"))
    vocab, node_vocab = Vocab.build([["a"]]), Vocab.build([["X"]])
    with pytest.raises(
        ValueError, match=r"sst5 dev: sentence 2: .* 3 nodes deep, more than .*max_depth=2"
    ):
        EncodedSet(
            [LabeledSentence(["a"], 0, Tree.parse("(X a)")), deep],
            vocab,
            input_encoder(cfg.model, node_vocab),
            "sst5 dev",
        )
    task = make_task(load_config("configs/sst5-hierarchical.yaml", ["model.pooling=mean"]))
    task.vocab, task.node_vocab = vocab, node_vocab
    with pytest.raises(ValueError, match="pooling='mean' cannot be used"):
        task.build_model()


def test_leaves_that_do_not_match_the_tokens_name_the_sentence():
    good = LabeledSentence(["a", "b"], 0, Tree.parse("(X a b)"))
    bad = LabeledSentence(["a", "c"], 0, Tree.parse("(X a b)"))
    vocab, node_vocab = Vocab.build([["a", "b"]]), Vocab.build([["X"]])
    with pytest.raises(
        ValueError, match="sst5 dev: sentence 2: .*leaf 2 is 'b' but token 2 is 'c'"
    ):
        EncodedSet([good, bad], vocab, trees(node_vocab), where="sst5 dev")


def test_a_tree_deeper_than_the_embedding_tables_is_an_error(tmp_path):
    cfg = tiny_config(
        tmp_path, "model.attention=hierarchical", "model.attention_options.max_depth=2"
    )
    with pytest.raises(ValueError, match="max_depth=2"):
        train(cfg)


@pytest.mark.slow
def test_attention_command_draws_and_reports_shares(tmp_path, capsys):
    run = tmp_path / "run"
    sets = [
        item
        for o in ("model.attention=hierarchical", "model.pooling=root", f"out_dir={run}")
        for item in ("--set", o)
    ]
    from tests.test_engine import TINY

    assert main(["train", *(i for o in TINY for i in ("--set", o)), *sets]) == 0
    capsys.readouterr()
    out = tmp_path / "pictures"
    assert (
        main(["attention", str(run / "best.pt"), "dev", "--sentence", "2", "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    for name in ("tree-2.png", "attention-2-layer2.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    node_row = next(line for line in printed.splitlines() if line.startswith("node "))
    to_nodes, to_leaves = (float(x) for x in node_row.split()[1:])
    assert to_nodes + to_leaves == pytest.approx(100.0, abs=0.2)
    leaf_row = next(line for line in printed.splitlines() if line.startswith("leaf "))
    assert float(leaf_row.split()[1]) == 0.0  # the subtree mask keeps leaves off nodes
    assert main(["attention", str(run / "best.pt"), "dev", "--sentence", "999"]) == 2
    assert "sentence 999 does not exist" in capsys.readouterr().err


def test_attention_command_refuses_a_token_model(tmp_path, capsys):
    from tests.test_engine import TINY

    run = tmp_path / "run"
    assert main(["train", *(i for o in TINY for i in ("--set", o)), "--set", f"out_dir={run}"]) == 0
    capsys.readouterr()
    assert main(["attention", str(run / "best.pt")]) == 2
    assert "needs a model whose mechanism supports it (hierarchical)" in capsys.readouterr().err
