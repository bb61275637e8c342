"""Hierarchical generalization of a causal language model trained on McCoy et al.'s
``input output`` strings (the ``mccoy`` data set), as Murty et al. (2023) and Nandi,
Manning & Murty (2025) evaluate one: the output of each input is decoded greedily after
``<s>`` and the input (its task word last), up to the first ``?`` or ``.`` (kept, as the
references end in one) or ``</s>`` (dropped), and scored by the data's metrics
(``treeattn.data.mccoy.scores``).

Per split: full-sequence accuracy over every pair, and over the pairs whose task word
transforms (``quest``, ``PRESENT``; gen holds only those) the first-word shares of
question formation (main auxiliary / first auxiliary / neither) or the main-verb shares of
tense reinflection (agrees with the subject / with the most recent noun / other).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from treeattn.data.mccoy import Example, McCoyData, generalization_scores
from treeattn.data.mccoy.scores import AGREE_SUBJECT, MAIN, by_subject
from treeattn.data.mccoy.sentences import PERIOD, QUESTION_MARK
from treeattn.data.text import START
from treeattn.models.continuation import greedy_continuations
from treeattn.tasks.causal_lm import CausalLMTask
from treeattn.tasks.datasets import open_dataset
from treeattn.tasks.datasets.mccoy import MCCOY, McCoyStrings
from treeattn.tasks.language import END, WORDS
from treeattn.tasks.trained import Trained, load_trained

SEQUENCE = "sequence_accuracy"
# Room past the reference's length (the input's, less one) for an output that runs on.
EXTRA_TOKENS = 3


@dataclass(frozen=True)
class SplitScores:
    """One split's scores: ``pairs`` decoded, their full-sequence accuracy, and the
    task's shares (percentages) over the ``transform_pairs`` whose task word transforms."""

    split: str
    pairs: int
    sequence_accuracy: float
    transform_pairs: int
    shares: dict[str, float]
    # The transforming pairs' scores by what modifies the main subject (``by_subject``).
    by_subject: dict[str, dict[str, float]]


@dataclass(frozen=True)
class GeneralizationScores:
    """A checkpoint's scores on each split read, and the seconds decoding took."""

    checkpoint: str
    task: str
    transform_word: str
    splits: list[SplitScores]
    seconds: float

    def format(self, by_subject: bool = False) -> str:
        """The table, a row a split; with ``by_subject`` a row under it for each kind of
        main subject among its transforming pairs."""
        lines = [
            f"{self.checkpoint}: McCoy {self.task}, greedy outputs of a causal language model",
            table_header(self.transform_word, self.splits[0].shares),
        ]
        for split in self.splits:
            lines.append(table_row(split.split, split))
            if by_subject:
                lines += [subject_row(kind, scores) for kind, scores in split.by_subject.items()]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def table_header(transform_word: str, shares: dict[str, float], first: str = "split") -> str:
    cells = "".join(f" {name:>12}" for name in shares)
    return f"{first:<8} {'pairs':>6} {'sequence':>8} {transform_word + ' pairs':>14}{cells}"


def table_row(first: str, scores: SplitScores) -> str:
    cells = "".join(f" {value:>12.2f}" for value in scores.shares.values())
    return (
        f"{first:<8} {scores.pairs:>6} {scores.sequence_accuracy:>8.2f} "
        f"{scores.transform_pairs:>14}{cells}"
    )


def subject_row(kind: str, scores: dict[str, float]) -> str:
    """A ``by_subject`` row: the kind of subject, its pairs and its scores."""
    cells = "".join(
        f" {value:>12.2f}" for name, value in scores.items() if name not in ("pairs", SEQUENCE)
    )
    return f"  {kind:<28} {int(scores['pairs']):>6} {scores[SEQUENCE]:>8.2f}{cells}"


def headline_share(data: McCoyData) -> str:
    """The share that says the hierarchical rule was learned: the main auxiliary fronted
    (question formation), the main verb agreeing with its subject (tense)."""
    return MAIN if data.task.name == "question" else AGREE_SUBJECT


def load_string_model(checkpoint: str | Path, device: str = "auto") -> Trained:
    """A causal language model trained on McCoy strings over words, refused otherwise."""
    trained = load_trained(checkpoint, device)
    cfg = trained.cfg
    if cfg.task != CausalLMTask.name or cfg.data.name != MCCOY:
        raise ValueError(
            f"{checkpoint}: a {cfg.task} model on {cfg.data.name}; this reads a causal-lm "
            f"model trained on the {MCCOY} data set"
        )
    if cfg.data.vocabulary != WORDS:
        raise ValueError(
            f"{checkpoint}: outputs are decoded as words; train with data.vocabulary: words"
        )
    return trained


def strings_of(trained: Trained) -> McCoyStrings:
    """The model's data set (its task, grammar and shared files)."""
    return open_dataset(trained.cfg.data)


def read_pairs(strings: McCoyStrings, source: str) -> tuple[list[Example], str]:
    """The pairs of a split name, or of a file of ``input<TAB>output`` lines."""
    if source in strings.splits:
        return strings.pairs(source), source
    if os.path.isfile(source):
        return strings.data.read(source), source
    raise FileNotFoundError(
        f"{source!r} is neither a split ({', '.join(strings.splits)}) nor an existing file"
    )


def decode_outputs(
    trained: Trained, pairs: Sequence[Example], batch_rows: int = 256, progress: bool = False
) -> list[list[str]]:
    """Each pair's output as the model continues ``<s>`` and its input, greedily; batches of
    ``batch_rows`` inputs of about one length."""
    vocab = trained.task.vocab
    stops = [vocab.index[w] for w in (QUESTION_MARK, PERIOD, END) if w in vocab.index]
    limit = trained.cfg.model.max_length
    prompts = [vocab.encode([START, *pair.source]) for pair in pairs]
    too_long = [k for k, p in enumerate(prompts, start=1) if len(p) >= limit]
    if too_long:
        raise ValueError(f"pair {too_long[0]}: its input fills model.max_length={limit}")
    room = [
        min(len(pair.source) + EXTRA_TOKENS, limit - len(prompt))
        for pair, prompt in zip(pairs, prompts, strict=True)
    ]
    order = sorted(range(len(prompts)), key=lambda k: len(prompts[k]))
    outputs: list[list[str]] = [[] for _ in prompts]
    batches = [order[i : i + batch_rows] for i in range(0, len(order), batch_rows)]
    for rows in tqdm(batches, unit="batch", disable=not progress, leave=False):
        continued = greedy_continuations(
            trained.model,
            [prompts[k] for k in rows],
            stops,
            [room[k] for k in rows],
            trained.device,
        )
        for k, ids in zip(rows, continued, strict=True):
            words = vocab.decode(ids)
            outputs[k] = words[:-1] if words and words[-1] == END else words
    return outputs


def score_outputs(
    data: McCoyData, split: str, pairs: Sequence[Example], outputs: Sequence[Sequence[str]]
) -> SplitScores:
    """Full-sequence accuracy of every pair and the task's shares over the transforming
    ones (``treeattn.data.mccoy.scores``)."""
    everything = generalization_scores(data, outputs, pairs)
    chosen = [k for k, pair in enumerate(pairs) if pair.task_word == data.task.transform_word]
    transformed = generalization_scores(
        data, [outputs[k] for k in chosen], [pairs[k] for k in chosen]
    )
    shares = {name: value for name, value in transformed.items() if name != SEQUENCE}
    kinds = by_subject(data, [outputs[k] for k in chosen], [pairs[k] for k in chosen])
    return SplitScores(split, len(pairs), everything[SEQUENCE], len(chosen), shares, kinds)


def score_trained(
    trained: Trained,
    sources: Sequence[str] = ("test", "gen"),
    limit: int | None = None,
    batch_rows: int = 256,
    progress: bool = False,
    name: str = "",
) -> GeneralizationScores:
    """The scores of a loaded model on each split name or file of ``sources`` (each cut to
    its first ``limit`` pairs, where given)."""
    strings = strings_of(trained)
    data = strings.data
    started = time.perf_counter()
    scores = []
    for source in sources:
        pairs, where = read_pairs(strings, source)
        pairs = pairs[:limit] if limit else pairs
        outputs = decode_outputs(trained, pairs, batch_rows, progress)
        scores.append(score_outputs(data, where, pairs, outputs))
    seconds = time.perf_counter() - started
    return GeneralizationScores(
        name, data.task.name, data.task.transform_word, scores, round(seconds, 2)
    )


def score_checkpoint(
    checkpoint: str | Path,
    sources: Sequence[str] = ("test", "gen"),
    limit: int | None = None,
    batch_rows: int = 256,
    device: str = "auto",
    progress: bool = False,
) -> GeneralizationScores:
    """``score_trained`` of the model a checkpoint holds."""
    trained = load_string_model(checkpoint, device)
    return score_trained(trained, sources, limit, batch_rows, progress, str(checkpoint))
