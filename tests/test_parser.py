"""The label attention parser: the Label Attention Layer against the paper's equations, span
vectors, the hinge loss against every tree, unary chains, a small treebank end to end."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch.testing import assert_close

from tests.helpers import train
from treeattn.attention.label import LabelAttention
from treeattn.cli import main
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.parsing.config import ParserConfig
from treeattn.parsing.encoding import gold_chart
from treeattn.parsing.network import LabelAttentionParser
from treeattn.structs.cky import spans_tensor
from treeattn.tasks import load_config, make_task
from treeattn.tasks.parse import hinge_loss
from treeattn.trees import Tree
from treeattn.trees.transforms import chain_spans, tree_from_chain_spans

# ---------------------------------------------------------------- the Label Attention Layer


def literal_label_attention(layer: LabelAttention, x: torch.Tensor) -> torch.Tensor:
    """One sentence (T, d), no padding, one head and one word at a time, from §2 and Figs.
    2-4 of the paper (and the release's scaling by sqrt(d_model)):

    a_l = softmax_t(q_l . k_{l,t} / sqrt(d)), k_{l,t} = [x^c_t W^K_{c,l}; x^p_t W^K_{p,l}]
    c_l = sum_t a_{l,t} v_{l,t}, v_{l,t} = [x^c_t W^V_{c,l}; x^p_t W^V_{p,l}]
    r_{t,l} = x_t + [c^c_l W^O_c; c^p_l W^O_p]       (one residual connection per head)
    out_t = [LN(W^R r_{t,1}); ...; LN(W^R r_{t,H})]  (concatenation)
    """
    d = x.shape[1]
    parts = layer.parts
    rows = []
    for t in range(x.shape[0]):
        per_head = []
        for h in range(layer.n_heads):
            q = torch.cat([w[h] for w in layer.w_q])
            scores = []
            values = []
            for s in range(x.shape[0]):
                pieces = x[s].split(parts)
                key = torch.cat([p @ w[h] for p, w in zip(pieces, layer.w_k, strict=True)])
                values.append(torch.cat([p @ w[h] for p, w in zip(pieces, layer.w_v, strict=True)]))
                scores.append(q @ key / math.sqrt(d))
            weights = torch.softmax(torch.stack(scores), 0)
            c = sum(a * v for a, v in zip(weights, values, strict=True))
            halves = c.split(c.shape[0] // len(parts))
            projected = torch.cat([w_o(half) for w_o, half in zip(layer.w_o, halves, strict=True)])
            r = x[t] + projected
            per_head.append(layer.norm(layer.reduce(r)))
        rows.append(torch.cat(per_head))
    return torch.stack(rows)


@pytest.mark.parametrize("d_position", [None, 6])
def test_label_attention_follows_the_equations_with_padding(d_position):
    torch.manual_seed(0)
    layer = LabelAttention(16, n_heads=3, d_kv=4, d_proj=6, d_position=d_position).double()
    layer.eval()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    pad_mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    out = layer(x, pad_mask)
    assert out.shape == (2, 5, 18)
    assert_close(out[0], literal_label_attention(layer, x[0]))
    # The padded sentence equals itself alone.
    assert_close(out[1, :3], literal_label_attention(layer, x[1, :3]))
    assert_close(out[1, :3], layer(x[1:, :3], pad_mask[1:, :3])[0])


@pytest.mark.parametrize(
    "options",
    [
        {"query": "vector", "combine": "concat"},
        {"query": "matrix", "combine": "concat"},
        {"query": "vector", "combine": "self"},
        {"query": "matrix", "combine": "self", "d_position": 4},
    ],
)
def test_label_attention_gradcheck(options):
    torch.manual_seed(1)
    layer = LabelAttention(8, n_heads=2, d_kv=4, d_proj=4, **options).double().eval()
    x = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    pad_mask = torch.tensor([[False] * 4, [False, False, True, True]])
    assert torch.autograd.gradcheck(lambda x: layer(x, pad_mask), (x,))


def test_residual_dropout_drops_the_same_features_for_every_word():
    torch.manual_seed(2)
    layer = LabelAttention(8, n_heads=2, d_kv=4, d_proj=4, residual_dropout=0.5).train()
    x = torch.zeros(1, 3, 8)  # every word the same: any difference between words is dropout
    out = layer(x, torch.zeros(1, 3, dtype=torch.bool))
    assert_close(out[0, 0], out[0, 1]) and assert_close(out[0, 1], out[0, 2])


# ---------------------------------------------------------------- span vectors


TINY_SIZES = dict(
    d_word=8,
    d_char=8,
    d_content=8,
    d_position=8,
    max_length=20,
    n_layers=1,
    n_heads=2,
    d_kv=8,
    d_ff=16,
    lal_d_kv=8,
    lal_d_proj=4,
    d_label_hidden=8,
    d_tag_hidden=8,
    d_arc=8,
    d_rel=8,
)


def tiny_parser(**changes) -> LabelAttentionParser:
    sizes = ParserConfig(**TINY_SIZES)
    for key, value in changes.items():
        setattr(sizes, key, value)
    counts = {"n_words": 12, "n_chars": 10, "n_tags": 2, "n_labels": 4, "n_rels": 3}
    return LabelAttentionParser(sizes, **counts).double().eval()


@pytest.mark.parametrize("label_attention", [True, False])
def test_span_scores_are_the_paper_span_vectors_through_the_label_mlp(label_attention):
    torch.manual_seed(3)
    model = tiny_parser(label_attention=label_attention)
    words = torch.tensor([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]])
    chars = torch.randint(1, 10, (2, 5, 3))
    pad_mask = words == 0
    out = model(words, chars, pad_mask)
    x = model.encode(words, chars, pad_mask)  # (B, T, D) token vectors
    width = model.sizes.lal_d_proj if label_attention else 2
    half = width // 2

    def forward_half(token):  # h->: the first half of each head's part (or even features)
        return token.view(-1, width)[:, :half].flatten() if label_attention else token[0::2]

    def backward_half(token):
        return token.view(-1, width)[:, half:].flatten() if label_attention else token[1::2]

    for b, n in ((0, 3), (1, 1)):
        for i in range(n):  # words i..j inclusive (0-based) are tokens i+1..j+1
            for j in range(i, n):
                # s_ij = [h->_j - h->_{i-1}; h<-_{j+1} - h<-_i] in the paper's 1-based words
                s = torch.cat(
                    [
                        forward_half(x[b, j + 1]) - forward_half(x[b, i]),
                        backward_half(x[b, j + 2]) - backward_half(x[b, i + 1]),
                    ]
                )
                hidden = torch.relu(model.label_norm(model.label_hidden(s)))
                expected = torch.cat([torch.zeros(1, dtype=s.dtype), model.label_out(hidden)])
                assert_close(out.span_scores[b, i, j], expected)
    # A padded sentence scores as it does alone.
    alone = model(words[1:, :3], chars[1:, :3], pad_mask[1:, :3])
    assert_close(out.span_scores[1, :1, :1], alone.span_scores[0])
    assert_close(out.arc_scores[1, :2, :2], alone.arc_scores[0])


# ---------------------------------------------------------------- the hinge loss


def binary_trees(start: int, end: int):
    """Every binary bracketing of words start..end-1, as lists of (start, end) spans."""
    if end - start == 1:
        yield [(start, end)]
        return
    for split in range(start + 1, end):
        for left in binary_trees(start, split):
            for right in binary_trees(split, end):
                yield [(start, end), *left, *right]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_hinge_loss_is_the_best_violation_over_every_labeled_tree(n):
    torch.manual_seed(n)
    labels = 3  # the empty label and two others
    scores = torch.randn(1, n, n, labels, dtype=torch.float64)
    scores[..., 0] = 0
    gold_spans = [(1, 0, n)] + ([(2, 0, 2)] if n > 2 else [])
    gold = gold_chart([gold_spans], torch.tensor([n]), labels).double()
    gold_labels = {
        (i, j): int(gold[0, i, j - 1].argmax()) for i in range(n) for j in range(i + 1, n + 1)
    }
    gold_score = sum(
        float(scores[0, i, j - 1, k])
        for (i, j), k in gold_labels.items()
        if (i, j) in {(s, e) for _, s, e in gold_spans}
    )
    best = -math.inf
    for spans in binary_trees(0, n):
        for assignment in itertools.product(range(labels), repeat=len(spans)):
            score = sum(
                float(scores[0, i, j - 1, k]) for (i, j), k in zip(spans, assignment, strict=True)
            )
            hamming = sum(k != gold_labels[span] for span, k in zip(spans, assignment, strict=True))
            best = max(best, score + hamming)
    loss = hinge_loss(scores, gold, torch.tensor([n]))
    assert loss.item() == pytest.approx(best - gold_score)
    # Zero exactly when gold beats every tree by at least its Hamming distance: a gold
    # chart scored far above the rest gives 0, and lowering it by less than 1 does not.
    strong = torch.where(gold.bool(), 5.0, -5.0).double()
    strong[..., 0] = 0
    assert hinge_loss(strong, gold, torch.tensor([n])).item() == 0.0
    if n > 1:
        weak = strong.clone()
        i, j = 0, n - 1
        weak[0, i, j, 1] = -0.5  # the gold root label now loses to the empty label by 0.5
        assert hinge_loss(weak, gold, torch.tensor([n])).item() > 0


# ---------------------------------------------------------------- unary chains


def test_unary_chains_collapse_and_restore():
    tree = Tree.parse("(S (S (VP (VB go))) (NP (NP (PRP it))) (. .))")
    spans = chain_spans(tree)
    assert spans == [("S", 0, 3), ("S+VP", 0, 1), ("NP+NP", 1, 2)]
    assert tree_from_chain_spans(tree.leaves(), spans, tree.tags()) == tree
    # No span over every word: a TOP node covers them.
    assert (
        tree_from_chain_spans(["a", "b"], [], ["DT", "NN"]).to_brackets() == "(TOP (DT a) (NN b))"
    )


@pytest.mark.slow
def test_unary_chains_round_trip_on_every_ptb_sample_tree(shared_data):
    from treeattn.data.ptb import load_ptb_sample

    for entry in load_ptb_sample(None, clean=True):
        tree = entry.tree
        restored = tree_from_chain_spans(tree.leaves(), chain_spans(tree), tree.tags())
        assert restored == tree, f"{entry.source}:{entry.line}"


# ---------------------------------------------------------------- end to end


TOY = [
    "(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (DT a) (NN dog)) (VP (VBD ran)) (. .))",
    "(S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (NN dog))) (. .))",
    "(S (NP (DT the) (NN dog)) (VP (VBD sat)) (. .))",
]
SMALL = [
    "model.d_word=16",
    "model.d_char=16",
    "model.d_content=16",
    "model.d_position=16",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.d_kv=8",
    "model.d_ff=32",
    "model.lal_d_kv=8",
    "model.lal_d_proj=4",
    "model.d_label_hidden=16",
    "model.d_arc=16",
    "model.d_rel=8",
    "model.dropout=0.0",
    "model.word_dropout=0.0",
    "train.lr=0.01",
    "train.warmup_steps=2",
    "train.max_tokens=200",
    "train.progress=false",
]


@pytest.fixture
def toy_treebank(tmp_path):
    path = tmp_path / "toy.txt"
    path.write_text("".join(line + "\n" for line in TOY * 3), encoding="utf-8")
    return [f"data.paths.{split}={path}" for split in ("train", "dev", "test")]


def test_a_parser_trains_on_a_toy_treebank_and_predicts(tmp_path, toy_treebank, capsys):
    run = tmp_path / "run"
    settings = ["task=parse", "data.name=files", *toy_treebank, *SMALL, f"out_dir={run}"]
    results = train(load_config(None, [*settings, "train.epochs=40"]))
    assert results["test_f1"] > 80 and results["test_uas"] > 80  # chance is far below
    inputs = tmp_path / "in.txt"
    inputs.write_text("the cat sat on the mat .\na dog ran.\n")  # raw text as parse reads it
    assert main(["predict", str(run / "best.pt"), str(inputs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    trees = [Tree.parse(line) for line in lines]  # brackets that read back
    assert [t.leaves() for t in trees] == [
        ["the", "cat", "sat", "on", "the", "mat", "."],
        ["a", "dog", "ran", "."],
    ]
    assert main(["evaluate", str(run / "best.pt"), "test", "--json"]) == 0
    assert '"f1"' in capsys.readouterr().out


def test_a_stopped_parser_run_resumes_to_the_same_weights(tmp_path, toy_treebank):
    settings = ["task=parse", "data.name=files", *toy_treebank, *SMALL, "train.epochs=3"]
    settings += ["train.checkpoint_every=2", "model.dropout=0.2", "model.word_dropout=0.2"]
    straight = train(load_config(None, [*settings, f"out_dir={tmp_path / 'a'}"]))
    train(load_config(None, [*settings, f"out_dir={tmp_path / 'b'}"]), stop_after_steps=4)
    resumed = train(load_config(None, [*settings, f"out_dir={tmp_path / 'b'}"]))
    assert resumed["test_f1"] == straight["test_f1"]
    a, b = load_checkpoint(tmp_path / "a" / "last.pt"), load_checkpoint(tmp_path / "b" / "last.pt")
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_a_dependency_only_parser_reads_conllu(tmp_path, capsys):
    from treeattn.trees.dependency import DependencyTree, write_conllu

    trees = [
        DependencyTree(
            ["the", "cat", "sat"], [2, 3, 0], ["det", "nsubj", "root"], upos=["DET", "NOUN", "VERB"]
        ),
        DependencyTree(["dogs", "bark"], [2, 0], ["nsubj", "root"], upos=["NOUN", "VERB"]),
    ] * 4
    path = tmp_path / "toy.conllu"
    write_conllu(path, trees)
    paths = [f"data.paths.{split}={path}" for split in ("train", "dev", "test")]
    run = tmp_path / "run"
    results = train(
        load_config(
            None,
            ["task=parse", "data.name=files", *paths, *SMALL, "train.epochs=30", f"out_dir={run}"],
        )
    )
    assert "test_f1" not in results and results["test_uas"] == 100.0
    inputs = tmp_path / "in.txt"
    inputs.write_text("the cat sat\n")
    assert main(["predict", str(run / "best.pt"), str(inputs)]) == 0
    scheme = "the parser's own arcs, relations of its training treebank (toy.conllu)"
    assert capsys.readouterr().out.startswith(f"# scheme = {scheme}\n1\tthe\t")


def train_on_files(paths: list[str]) -> int:
    """``treeattn train`` of a parser on the files named by ``paths`` (``data.paths.*=``)."""
    sets = ["task=parse", "data.name=files", *paths]
    return main(["train", *(x for setting in sets for x in ("--set", setting))])


def test_bad_parser_input_is_named(tmp_path, capsys):
    cycle = tmp_path / "cycle.conllu"
    cycle.write_text("1\ta\t_\t_\t_\t_\t2\tdep\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n")
    paths = [f"data.paths.{split}={cycle}" for split in ("train", "dev", "test")]
    assert train_on_files(paths) == 2
    assert f"{cycle}:1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="data.paths.dev is missing"):
        load_config(None, ["task=parse", "data.name=files", f"data.paths.train={cycle}"])
    broken = tmp_path / "broken.txt"
    broken.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat))\n")
    paths = [f"data.paths.{split}={broken}" for split in ("train", "dev", "test")]
    assert train_on_files(paths) == 2
    assert f"{broken}:1" in capsys.readouterr().err
    task = make_task(load_config(None, ["task=parse", "model.max_length=3"]))
    with pytest.raises(
        ValueError, match="<in>: sentence 1 has 4 words, more than model.max_length=3"
    ):
        task.read_inputs(["a b c d"], "<in>")


def test_gold_chart_marks_every_other_cell_empty():
    chart = gold_chart([[(2, 0, 3), (1, 1, 3)]], torch.tensor([3]), 3)
    assert chart[0, 0, 2].tolist() == [0, 0, 1] and chart[0, 1, 2].tolist() == [0, 1, 0]
    assert chart[0, 0, 0].tolist() == [1, 0, 0] and chart[0, 2, 0].tolist() == [0, 0, 0]
    assert torch.equal(chart[..., 1:], spans_tensor([[(1, 0, 3), (0, 1, 3)]], 3, 2))
