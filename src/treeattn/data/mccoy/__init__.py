"""Hierarchical generalization (McCoy, Frank & Linzen 2020): question formation and tense
reinflection, whose training data a linear rule and a hierarchical rule explain equally
well, and whose generalization set tells them apart.

- ``grammar``: the PCFGs (``cfgs/*.gr``) and sampling from them;
- ``sentences``: a sentence read back into the grammar's tree, with its main auxiliary,
  main verb and each verb's subject;
- ``transforms``: move-main / move-first, agree-subject / agree-recent, the two tasks;
- ``files``: the shared dev / test / gen files and their bracket versions;
- ``generate``: training sets with the paper's filter, cached;
- ``scores``: full-sequence accuracy, first-word and main-verb shares.

With the data folder present::

    data = McCoyData.load("question")
    example = data.example("my raven that doesn't sleep does change . quest".split())
    " ".join(example.target)  # "does my raven that doesn't sleep change ?"
"""

from treeattn.data.mccoy.files import (
    MCCOY_SPLITS,
    Example,
    McCoyData,
    parse_brackets,
    read_bracket_rows,
    unlabeled,
)
from treeattn.data.mccoy.generate import TRAIN_SIZE, generate_pairs, shared_mix, training_set
from treeattn.data.mccoy.scores import (
    first_word_shares,
    generalization_scores,
    main_verb_shares,
    sequence_accuracy,
)
from treeattn.data.mccoy.transforms import QUESTION, TASKS, TENSE

__all__ = [
    "MCCOY_SPLITS",
    "QUESTION",
    "TASKS",
    "TENSE",
    "TRAIN_SIZE",
    "Example",
    "McCoyData",
    "first_word_shares",
    "generalization_scores",
    "generate_pairs",
    "main_verb_shares",
    "parse_brackets",
    "read_bracket_rows",
    "sequence_accuracy",
    "shared_mix",
    "training_set",
    "unlabeled",
]
