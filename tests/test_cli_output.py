"""The analyses' reports, formatted by the analyses themselves, read exactly as the
command line printed them before it left the formatting to them (the expected texts were
printed by that command line for the same figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeattn.analysis import hierarchical
from treeattn.analysis.hierarchical import AttentionShares, CrossAttentionShares, LayerShares
from treeattn.analysis.induction_curve import CurvePoint, InductionCurve
from treeattn.analysis.induction_scores import score_variants
from treeattn.analysis.label_heads import LabelHeads, SpanContributions
from treeattn.analysis.latent_trees import latent_tree_table
from treeattn.cli import main
from treeattn.metrics.unsupervised import UnsupervisedF1, word_mask
from treeattn.trees import Tree
from treeattn.trees.induction import spans_to_tree

CROSS_ATTENTION = """\
val: 12 sentences, 345 target words
layer   nodes %  leaves %  nodes among keys %
1          12.3      87.7                40.0
2           5.0      95.0                40.0
"""


def cross_attention_shares() -> CrossAttentionShares:
    layers = [LayerShares(1, 12.3456, 87.6544, 40.0), LayerShares(2, 5.0, 95.0, 40.0)]
    return CrossAttentionShares("val", 12, 345, layers)


def test_cross_attention_shares(monkeypatch, capsys):
    assert cross_attention_shares().format() + "\n" == CROSS_ATTENTION
    # The command prints the report and nothing else.
    monkeypatch.setattr(hierarchical, "cross_attention_shares", lambda *_: cross_attention_shares())
    assert main(["cross-attention", "model.pt", "val"]) == 0
    assert capsys.readouterr().out == CROSS_ATTENTION


def test_attention_shares():
    shares = AttentionShares(
        "dev.txt",
        2,
        node_to_node=33.333,
        node_to_leaf=66.667,
        leaf_to_node=10.05,
        leaf_to_leaf=89.95,
    )
    assert shares.format() == (
        "attention share (%) over dev.txt, 2 sentences\n"
        "query   to nodes  to leaves\n"
        "node        33.3       66.7\n"
        "leaf        10.1       90.0"
    )


def test_latent_tree_table(tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n")
    trees = [  # [layer][head][sentence]: heads of two sentences
        [[[0, 1, 1], [2, 0]], [[0, 1, 2], [0, 1]]],
        [[[3, 3, 0], [2, 0]], [[2, 0, 2], [0, 1]]],
    ]
    assert latent_tree_table(trees, "dev.tsv", gold).format() + "\n" == (
        "latent trees of dev.tsv, 2 sentences\n"
        "trees                     count  length  depth  non-proj %\n"
        "layer 1 head 1                2     2.5   2.00         0.0\n"
        "layer 1 head 2                2     2.5   2.50         0.0\n"
        "layer 2 head 1                2     2.5   2.00         0.0\n"
        "layer 2 head 2                2     2.5   2.00         0.0\n"
        "gold.conllu                   1     2.0   2.00         0.0\n"
    )


def test_induction_curve():
    def f1(sentence: float, corpus: float) -> UnsupervisedF1:
        return UnsupervisedF1(sentence, corpus, 0.0, 0.0, 0, 0, 0, 3, 3)

    points = [
        CurvePoint(
            2, 812.345, {"paper": f1(21.25, 20), "release": f1(30, 29.94), "binary": f1(5, 100)}
        ),
        CurvePoint(4, 97.1, {"paper": f1(22, 23), "release": f1(31, 32), "binary": f1(6, 7)}),
    ]
    assert InductionCurve("runs/x", "dev", points).format() + "\n" == (
        "runs/x: dev perplexity; unlabeled F1 (sentence / corpus) on PTB dev\n"
        "   step perplexity         paper       release        binary\n"
        "      2      812.3   21.2 / 20.0   30.0 / 29.9    5.0 /100.0\n"
        "      4       97.1   22.0 / 23.0   31.0 / 32.0    6.0 /  7.0\n"
    )


def test_label_heads_table_and_plot(monkeypatch):
    from treeattn.analysis import label_heads

    long = "the very long sentence of many words goes on and on".split()
    spans = [
        SpanContributions("S", long, [0.1, 0.5, 0.25, 0.15]),
        SpanContributions("NP", ["the", "cat"], [0.4, 0.1, 0.3, 0.2]),
    ]
    heads = LabelHeads("the cat " * 50, spans)
    assert heads.format(top=2) + "\n" == (
        "constituent                              strongest heads (contribution)\n"
        "S the very long sentence of many words g 2: 0.500  3: 0.250\n"
        "NP the cat                               1: 0.400  3: 0.300\n"
    )
    drawn = {}

    def plot(matrix, rows, columns, out, title, axes):
        drawn.update(matrix=matrix, rows=rows, columns=columns, title=title, axes=axes)
        return Path(out)

    monkeypatch.setattr(label_heads, "plot_attention", plot)
    assert heads.plot("heads.png") == Path("heads.png")
    assert drawn["rows"] == ["S: the very long sentence of many words ", "NP: the cat"]
    assert drawn["columns"] == ["1", "2", "3", "4"] and drawn["matrix"][1] == [0.4, 0.1, 0.3, 0.2]
    assert len(drawn["title"]) == 90 and drawn["title"].endswith("th…")
    assert drawn["axes"] == ("label attention head", "constituent")


GOLD = [
    "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (NNS Dogs)) (VP (VBP bark) (ADVP (RB loudly))))",
    "(S (NP (DT A) (JJ big) (NN dog)) (VP (VBD ran) (PP (IN to) (NP (DT the) (NN park) "
    "(NN gate)))) (. .))",
]

SCORES = """\
PTB sample test, all 3 sentences (3 scored): unlabeled F1
trees            sentence F1  corpus F1
model, paper            13.3       16.7
model, release          33.3       16.7
model, binary            0.0        0.0
random                  15.0       20.0
left-branching          15.0       20.0
right-branching         78.3       70.0
recall by phrase type, paper: NP 25.0  VP 0.0  PP 0.0
recall by phrase type, release: NP 0.0  VP 33.3  PP 0.0
recall by phrase type, binary: NP 0.0  VP 0.0  PP 0.0

PTB sample test, <= 6 words (2 scored): unlabeled F1
trees            sentence F1  corpus F1
model, paper            20.0       28.6
model, release          50.0       28.6
model, binary            0.0        0.0
random                  12.5       20.0
left-branching          12.5       20.0
right-branching         87.5       80.0
recall by phrase type, paper: NP 50.0  VP 0.0  PP 0.0
recall by phrase type, release: NP 0.0  VP 50.0  PP 0.0
recall by phrase type, binary: NP 0.0  VP 0.0  PP 0.0

"""


def test_induction_scores():
    gold = [Tree.parse(line) for line in GOLD]
    words = [[w for w, kept in zip(t.leaves(), word_mask(t), strict=True) if kept] for t in gold]
    by_variant = {  # over the words kept, as a model reads them without punctuation
        "paper": [spans_to_tree(w, {(0, len(w)), (0, 2)}) for w in words],
        "release": [spans_to_tree(w, {(0, len(w)), (1, len(w))}) for w in words],
        "binary": [spans_to_tree(w, {(0, len(w))}) for w in words],
    }
    assert score_variants(gold, by_variant, "PTB sample test", 6).format() + "\n" == SCORES


@pytest.mark.parametrize("variant", ["tree", ""])
def test_an_unknown_variant_is_refused_before_any_work(variant):
    from treeattn.analysis.induction_scores import induce_ptb

    with pytest.raises(ValueError, match="unknown induction variant"):
        induce_ptb(None, "test", None, variant)  # type: ignore[arg-type]
