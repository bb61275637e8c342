"""Metrics the papers report: EVALB bracket F1, unsupervised-parsing F1, UAS/LAS,
accuracy, Matthews correlation and BLEU.

Metrics take Python values (trees, span sets, label lists, strings), never tensors, and
every rate they return is a percentage in [0, 100].
"""

from treeattn.metrics.bleu import BleuResult, bleu, corpus_bleu
from treeattn.metrics.classification import (
    ClassScores,
    ConfusionMatrix,
    accuracy,
    confusion_matrix,
    matthews_correlation,
)
from treeattn.metrics.dependency import (
    PUNCT_TAGS,
    AttachmentScores,
    attachment_scores,
    is_punctuation,
)
from treeattn.metrics.evalb import (
    COLLINS,
    EvalbParams,
    EvalbReport,
    EvalbResult,
    EvalbTotals,
    SentenceResult,
    evalb,
    evalb_files,
    format_evalb,
)
from treeattn.metrics.unsupervised import (
    REMOVED_TAGS,
    UnsupervisedF1,
    gold_spans,
    left_branching_spans,
    nontrivial,
    project_spans,
    random_binary_spans,
    right_branching_spans,
    tree_spans,
    unlabeled_f1,
    word_mask,
)

__all__ = [
    "COLLINS",
    "PUNCT_TAGS",
    "REMOVED_TAGS",
    "AttachmentScores",
    "BleuResult",
    "ClassScores",
    "ConfusionMatrix",
    "EvalbParams",
    "EvalbReport",
    "EvalbResult",
    "EvalbTotals",
    "SentenceResult",
    "UnsupervisedF1",
    "accuracy",
    "attachment_scores",
    "bleu",
    "confusion_matrix",
    "corpus_bleu",
    "evalb",
    "evalb_files",
    "format_evalb",
    "gold_spans",
    "is_punctuation",
    "left_branching_spans",
    "matthews_correlation",
    "nontrivial",
    "project_spans",
    "random_binary_spans",
    "right_branching_spans",
    "tree_spans",
    "unlabeled_f1",
    "word_mask",
]
