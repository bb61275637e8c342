"""Unsupervised-parsing F1, attachment scores, accuracy, Matthews correlation and BLEU on
hand-computed cases."""

from __future__ import annotations

import pytest

from treeattn.metrics import (
    accuracy,
    attachment_scores,
    bleu,
    confusion_matrix,
    corpus_bleu,
    gold_spans,
    is_punctuation,
    left_branching_spans,
    matthews_correlation,
    nontrivial,
    project_spans,
    random_binary_spans,
    right_branching_spans,
    tree_spans,
    unlabeled_f1,
    word_mask,
)
from treeattn.trees.tree import Tree

# --------------------------------------------------------------------- unsupervised F1

# Kept words: The0 cat1 however2 sat3 on4 the5 mat6 (the commas and the period go).
# Spans: S(0,7) trivial, NP(0,2), ADVP(2,3) one word, VP(3,7), PP(4,7), NP(5,7).
PTB_TREE = (
    "( (S (NP-SBJ (DT The) (NN cat)) (, ,) (ADVP (RB however)) (, ,) "
    "(VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )"
)
PTB_GOLD = {(0, 2), (3, 7), (4, 7), (5, 7)}


def test_gold_spans_remove_punctuation_and_reindex():
    assert gold_spans(Tree.parse(PTB_TREE)) == PTB_GOLD


def test_gold_spans_drop_currency_traces_and_unary_duplicates():
    # Kept words: it0 costs1 5_2 (the trace and "$" go).
    # S -> VP covers everything after removal (trivial); NP(2,3) is one word.
    tree = Tree.parse("(S (NP-SBJ (-NONE- *)) (VP (VP (PRP it) (VBZ costs)) (NP ($ $) (CD 5))))")
    assert gold_spans(tree) == {(0, 2)}
    assert word_mask(tree) == [True, True, False, True]


def test_baseline_span_sets():
    assert left_branching_spans(5) == {(0, 2), (0, 3), (0, 4)}
    assert right_branching_spans(5) == {(1, 5), (2, 5), (3, 5)}
    assert left_branching_spans(2) == right_branching_spans(2) == set()


def test_left_versus_right_branching_on_four_words():
    # left {(0,2),(0,3)} and right {(1,4),(2,4)} share nothing: F1 0; each with itself: 100.
    left, right = left_branching_spans(4), right_branching_spans(4)
    assert unlabeled_f1([left], [right]).corpus_f1 == 0.0
    assert unlabeled_f1([left], [right]).sentence_f1 == 0.0
    assert unlabeled_f1([right], [right]).sentence_f1 == 100.0


def test_sentence_and_corpus_f1_by_hand():
    # Sentence 1: PTB_GOLD vs right-branching on 7 words {(1,7),(2,7),(3,7),(4,7),(5,7)}:
    #   tp 3, fp 2, fn 1 -> P 3/5, R 3/4, F1 = 0.9 / 1.35 = 66.67
    # Sentence 2: gold {(0,2),(2,4)} vs right-branching on 4 {(1,4),(2,4)}:
    #   tp 1, fp 1, fn 1 -> F1 50
    # Sentence mean (66.67 + 50) / 2 = 58.33; corpus: tp 4, fp 3, fn 2 ->
    #   P 4/7, R 4/6, F1 = (16/21) / (26/21) = 16/26 = 61.54
    gold = [PTB_GOLD, {(0, 2), (2, 4)}]
    pred = [right_branching_spans(7), right_branching_spans(4)]
    result = unlabeled_f1(gold, pred)
    assert result.sentence_f1 == pytest.approx((200 / 3 + 50) / 2)
    assert result.corpus_f1 == pytest.approx(1600 / 26)
    assert (result.true_positives, result.false_positives, result.false_negatives) == (4, 3, 2)
    # Left-branching on sentence 1: tp 1 -> P 1/5, R 1/4, F1 = 0.1 / 0.45 = 22.22
    left = unlabeled_f1([PTB_GOLD], [left_branching_spans(7)])
    assert left.sentence_f1 == pytest.approx(200 / 9)


def test_trivial_spans_are_excluded():
    # With lengths the whole-sentence (0,4) and one-word (1,2) spans go: gold {(0,2)},
    # pred {(2,4)} -> 0. Kept, (0,4) would be a shared hit: P = R = 1/2 -> 50.
    gold, pred = [{(0, 4), (0, 2), (1, 2)}], [{(0, 4), (2, 4)}]
    assert unlabeled_f1(gold, pred, lengths=[4]).corpus_f1 == 0.0
    assert unlabeled_f1(gold, pred).corpus_f1 == pytest.approx(50.0)
    assert nontrivial({(0, 4), (0, 2), (1, 2)}, 4) == {(0, 2)}
    assert tree_spans(Tree.parse("(X (X (X a) (X b)) (X c))")) == {(0, 2)}


def test_sentences_without_gold_spans():
    # A two-word sentence has no non-trivial span: left out of the sentence mean by
    # default, 100 with count_empty_gold when the prediction is empty too.
    gold, pred = [PTB_GOLD, set()], [PTB_GOLD, set()]
    assert unlabeled_f1(gold, pred).scored_sentences == 1
    assert unlabeled_f1(gold, pred).sentence_f1 == 100.0
    assert unlabeled_f1(gold, [PTB_GOLD, {(0, 2)}], count_empty_gold=True).sentence_f1 == 50.0
    # An empty prediction against gold spans scores 0.
    assert unlabeled_f1([PTB_GOLD], [set()]).sentence_f1 == 0.0


def test_prediction_over_all_words_is_projected():
    # A tree over the 10 words with punctuation; the mask removes positions 2, 4 and 9.
    tree = Tree.parse(PTB_TREE)
    mask = word_mask(tree)
    assert mask == [True, True, False, True, False, True, True, True, True, False]
    # (0,3) "The cat ," -> (0,2); (5,10) "sat on the mat ." -> (3,7); (2,3) "," vanishes.
    assert project_spans({(0, 3), (5, 10), (2, 3)}, mask) == {(0, 2), (3, 7)}


def test_random_binary_spans_are_reproducible_trees():
    spans = random_binary_spans(12, 7)
    assert spans == random_binary_spans(12, 7)
    assert len(spans) == 10  # n - 1 internal nodes minus the root
    for i, j in spans:
        assert 0 <= i < j <= 12 and 2 <= j - i < 12
        for k, m in spans:  # a tree's spans nest or are disjoint
            assert not (i < k < j < m)
    assert any(random_binary_spans(12, s) != spans for s in range(5))


# --------------------------------------------------------------------- UAS / LAS

# "John saw Mary ." and "Go !"
GOLD_HEADS = [[2, 0, 2, 2], [0, 1]]
GOLD_RELS = [["nsubj", "root", "obj", "punct"], ["root", "punct"]]
PRED_HEADS = [[2, 0, 2, 3], [0, 1]]
PRED_RELS = [["nsubj", "root", "iobj", "punct"], ["root", "discourse"]]
TAGS = [["NNP", "VBD", "NNP", "."], ["VB", "."]]
WORDS = [["John", "saw", "Mary", "."], ["Go", "!"]]


def test_attachment_scores_with_punctuation():
    # Heads right: John saw Mary | Go ! = 5 of 6 -> UAS 83.33
    # Heads and labels right: John saw | Go = 3 of 6 -> LAS 50
    s = attachment_scores(GOLD_HEADS, GOLD_RELS, PRED_HEADS, PRED_RELS)
    assert (s.tokens, s.correct_heads, s.correct_labeled) == (6, 5, 3)
    assert s.uas == pytest.approx(500 / 6) and s.las == pytest.approx(50.0)


def test_attachment_scores_without_punctuation():
    # Scored: John saw Mary | Go = 4 tokens; heads all right -> UAS 100;
    # labels right: John saw | Go = 3 -> LAS 75
    for kwargs in ({"tags": TAGS}, {"words": WORDS}):
        s = attachment_scores(
            GOLD_HEADS, GOLD_RELS, PRED_HEADS, PRED_RELS, ignore_punct=True, **kwargs
        )
        assert (s.tokens, s.uas, s.las) == (4, 100.0, 75.0)
    assert is_punctuation(tag="PUNCT") and is_punctuation(word="--")
    assert not is_punctuation(tag="-LRB-") and not is_punctuation(word="A.")


def test_attachment_scores_options_and_errors():
    s = attachment_scores([[0, 1]], [["root", "nsubj:pass"]], [[0, 1]], [["root", "nsubj"]])
    assert s.las == 50.0
    s = attachment_scores(
        [[0, 1]], [["root", "nsubj:pass"]], [[0, 1]], [["root", "nsubj"]], universal_rels=True
    )
    assert s.las == 100.0
    assert attachment_scores([[0, 1]], None, [[0, 2]], None).las is None
    with pytest.raises(ValueError, match="needs words or tags"):
        attachment_scores(GOLD_HEADS, None, PRED_HEADS, None, ignore_punct=True)
    with pytest.raises(ValueError, match="sentence 2 has 1 tokens"):
        attachment_scores(GOLD_HEADS, None, [[2, 0, 2, 3], [0]], None)


# --------------------------------------------------------------------- classification


def test_accuracy_and_confusion_matrix():
    gold = ["neg", "neg", "pos", "pos", "pos"]
    pred = ["neg", "pos", "pos", "pos", "neg"]
    assert accuracy(gold, pred) == pytest.approx(60.0)
    matrix = confusion_matrix(gold, pred)
    assert matrix.labels == ["neg", "pos"]
    assert matrix.counts == [[1, 1], [1, 2]]  # rows gold, columns predicted
    scores = matrix.per_class()
    # pos: P 2/3, R 2/3 -> F1 66.67; neg: P 1/2, R 1/2 -> F1 50; macro 58.33
    assert scores["pos"].f1 == pytest.approx(200 / 3) and scores["neg"].support == 2
    assert matrix.macro_f1() == pytest.approx((200 / 3 + 50) / 2)
    assert matrix.accuracy == pytest.approx(60.0)
    with pytest.raises(ValueError):
        accuracy([1, 2], [1])


def test_matthews_correlation_of_a_confusion_matrix_by_hand():
    # TP 6, TN 3, FP 2, FN 1 (1 acceptable, 0 not):
    # (6*3 - 2*1) / sqrt((6+2)(6+1)(3+2)(3+1)) = 16 / sqrt(1120) = 0.478091
    gold = [1] * 6 + [0] * 3 + [0] * 2 + [1] * 1
    pred = [1] * 6 + [0] * 3 + [1] * 2 + [0] * 1
    assert confusion_matrix(gold, pred).counts == [[3, 2], [1, 6]]
    assert matthews_correlation(gold, pred) == pytest.approx(47.8091, abs=1e-4)
    assert matthews_correlation(pred, gold) == pytest.approx(47.8091, abs=1e-4)  # symmetric
    assert matthews_correlation(gold, gold) == pytest.approx(100.0)
    assert matthews_correlation(gold, [1 - y for y in gold]) == pytest.approx(-100.0)
    # Labels are names as well as numbers; which class is "positive" does not matter.
    names = {0: "unacceptable", 1: "acceptable"}
    named = matthews_correlation([names[y] for y in gold], [names[y] for y in pred])
    assert named == pytest.approx(47.8091, abs=1e-4)


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ([1, 0, 1, 1, 0], [1, 1, 1, 1, 1]),  # a model that always says one class
        ([1, 0, 1, 1, 0], [0, 0, 0, 0, 0]),
        ([1, 1, 1], [1, 0, 1]),  # gold of one class
        ([1, 1], [1, 1]),  # both one class, even where every answer is right
        ([], []),
    ],
)
def test_matthews_correlation_is_zero_where_undefined(gold, pred):
    assert matthews_correlation(gold, pred) == 0.0


def _one_hot_correlation(gold: list[int], pred: list[int], classes: int) -> float:
    """Pearson's correlation between the gold and predicted one-hot matrices, literally
    (Gorodkin 2004's definition of the K-class Matthews correlation), times 100."""

    def centred(labels: list[int]) -> list[list[float]]:
        rows = [[1.0 if y == k else 0.0 for k in range(classes)] for y in labels]
        means = [sum(row[k] for row in rows) / len(rows) for k in range(classes)]
        return [[row[k] - means[k] for k in range(classes)] for row in rows]

    def cov(a: list[list[float]], b: list[list[float]]) -> float:
        return sum(x * y for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))

    x, y = centred(gold), centred(pred)
    return 100 * cov(x, y) / (cov(x, x) * cov(y, y)) ** 0.5


def test_matthews_correlation_of_several_classes_is_the_one_hot_correlation():
    gold = [0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 1, 2]
    pred = [0, 1, 1, 1, 2, 2, 2, 0, 2, 0, 0, 1]
    assert matthews_correlation(gold, pred) == pytest.approx(_one_hot_correlation(gold, pred, 3))
    binary_gold, binary_pred = [1, 1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 1, 1, 0]
    expected = _one_hot_correlation(binary_gold, binary_pred, 2)
    assert matthews_correlation(binary_gold, binary_pred) == pytest.approx(expected)


# --------------------------------------------------------------------- BLEU


def test_bleu_identical_is_100():
    sentences = ["the cat sat on the mat .", "a dog barked loudly !"]
    assert corpus_bleu(sentences, sentences) == pytest.approx(100.0)


def test_bleu_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="no hypotheses"):
        corpus_bleu([], [])
    with pytest.raises(ValueError, match="no hypotheses"):
        bleu([], [[], []])
    with pytest.raises(ValueError, match="no references"):
        corpus_bleu(["a cat"], [])
    with pytest.raises(ValueError, match="0 sentences for 1 hypotheses"):
        corpus_bleu(["a cat"], [[]])


def test_bleu_small_case_by_hand():
    # hyp "the cat sat on the mat", ref "the cat sat on a mat" (6 tokens each, BP 1):
    # 1-gram 5/6, 2-gram 3/5, 3-gram 2/4, 4-gram 1/3 -> (5/6*3/5*1/2*1/3)^(1/4) = 12^(-1/4)
    result = bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert result.score == pytest.approx(100 * 12 ** (-0.25))
    assert "tok:13a" in result.signature and "nrefs:1" in result.signature
    # A short hypothesis with all n-grams right: BP = exp(1 - 6/5) = 81.87
    short = corpus_bleu(["the cat sat on the"], ["the cat sat on the mat"])
    assert short == pytest.approx(100 * 2.718281828459045 ** (-0.2))
    # Two reference streams: the second one matches exactly.
    two = bleu(["the cat sat on the mat"], [["a cat sat on a mat"], ["the cat sat on the mat"]])
    assert two.score == pytest.approx(100.0) and "nrefs:2" in two.signature
