"""Scoring language models on targeted syntactic evaluations: BLiMP minimal pairs,
SyntaxGym surprisal suites and subject-verb agreement, for causal models (log-
probabilities) and masked ones (pseudo-log-likelihood), ``transformers`` models in a local
folder and this project's own language models alike.

>>> from treeattn.evaluation import evaluate_language_model
>>> result = evaluate_language_model("runs/causal-lm/best.pt", limit=50)  # doctest: +SKIP
>>> result.headline()  # doctest: +SKIP
{'blimp': 61.3, 'syntaxgym': 48.2, 'agreement_linzen': 70.1, 'agreement_gulordava': 58.0}
"""

from treeattn.evaluation.models import ProjectLM, TransformersLM, load_language_model
from treeattn.evaluation.run import LmEvaluation, evaluate_language_model
from treeattn.evaluation.scoring import LanguageModel, Scorer, TextScores

__all__ = [
    "LanguageModel",
    "LmEvaluation",
    "ProjectLM",
    "Scorer",
    "TextScores",
    "TransformersLM",
    "evaluate_language_model",
    "load_language_model",
]
