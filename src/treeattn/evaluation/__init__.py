"""Scoring language models on targeted syntactic evaluations: BLiMP minimal pairs,
SyntaxGym surprisal suites, subject-verb agreement and perplexity (each an evaluation
suite, registered by name in ``treeattn.plugins.suites``), for causal models (log-
probabilities) and masked ones (pseudo-log-likelihood), ``transformers`` models in a local
folder and this project's own language models alike.

>>> from treeattn.evaluation import evaluate_language_model
>>> result = evaluate_language_model("runs/causal-lm/best.pt", limit=50)  # doctest: +SKIP
>>> result.headline()  # doctest: +SKIP
{'blimp': 61.3, 'syntaxgym': 48.2, 'agreement_linzen': 70.1, 'agreement_gulordava': 58.0}

The suites' registry imports no torch (the command line's options come from it); the
models, the scorer and the call that runs them are imported when first asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

# isort: off
# Each suite registers itself where it is defined: in this order, the order they run in.
from treeattn.evaluation import blimp, syntaxgym, agreement, perplexity  # noqa: F401

# isort: on
from treeattn.evaluation.suites import EvaluationSuite

# Where each name that needs torch lives, imported on first use.
_LAZY = {
    "LanguageModel": "scoring",
    "Scorer": "scoring",
    "TextScores": "scoring",
    "LmEvaluation": "run",
    "evaluate_language_model": "run",
    "ProjectLM": "models",
    "TransformersLM": "models",
    "load_language_model": "models",
}

__all__ = [
    "EvaluationSuite",
    "LanguageModel",
    "LmEvaluation",
    "ProjectLM",
    "Scorer",
    "TextScores",
    "TransformersLM",
    "evaluate_language_model",
    "load_language_model",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"treeattn.evaluation.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
