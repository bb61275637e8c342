"""treeattn: syntax inside Transformer attention.

The names most programs start from are here, ``from treeattn import Parser, Tree,
tokenize``; each lives in its own module (``treeattn.parsing``, ``treeattn.trees``, ...),
where the rest of the library is. They load on first use, so that importing the package
(and ``treeattn --help``) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Each name and the module that defines it.
_EXPORTS = {
    "Tree": "treeattn.trees",
    "DependencyTree": "treeattn.trees",
    "read_treebank": "treeattn.trees",
    "read_conllu": "treeattn.trees",
    "write_conllu": "treeattn.trees",
    "to_dependency": "treeattn.trees",
    "tokenize": "treeattn.trees.tokenize",
    "tokenize_with_offsets": "treeattn.trees.tokenize",
    "Parser": "treeattn.parsing",
    "Parse": "treeattn.parsing",
    "TreeSource": "treeattn.parsing.tree_source",
    "sentence_trees": "treeattn.parsing.sentence_trees",
    "TransformerEncoder": "treeattn.models.encoder",
    "load_backbone": "treeattn.models.backbone",
    "inject_syntax": "treeattn.models.syntax_injection",
    "TreeRegularizer": "treeattn.models.tree_loss",
    "load_config": "treeattn.tasks",
    "make_task": "treeattn.tasks",
    "train": "treeattn.engine.trainer",
    "load_trained": "treeattn.tasks.trained",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'treeattn' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
