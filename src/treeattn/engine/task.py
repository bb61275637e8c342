"""What the engine needs from a task, and nothing more.

A task owns everything that depends on what is learned: its config sections (``data`` and
``model``), its splits, its vocabularies, how examples become batches, the model, the loss,
the metrics and the predictions. The engine owns the loop around them (``trainer.py``).
Adding a task is one subclass of ``Task``, registered where it is defined; docs/TASKS.md
walks through it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from treeattn.engine.config import Config, make_config


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode for the block; its mode comes back even if the block raises
    (an evaluation in the middle of training must not leave dropout off)."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


@dataclass(frozen=True)
class Selection:
    """The score that picks the best checkpoint: ``metric`` of ``evaluate`` on ``split``."""

    split: str
    metric: str
    higher_is_better: bool

    def better(self, score: float, best: float | None) -> bool:
        if best is None:
            return True
        return score > best if self.higher_is_better else score < best


class Batch(Protocol):
    """Whatever a task's ``collate`` makes; the engine only moves it to a device."""

    def to(self, device: torch.device) -> Batch: ...


class Encoded(Protocol):
    """A split encoded once for the model. ``lengths[i]``: the size of example i that
    token-bucketed batches count (its padded width)."""

    lengths: Sequence[int]

    def __len__(self) -> int: ...

    def batch(self, indices: Sequence[int]) -> Batch: ...


class Task(ABC):
    """One task behind the engine: subclass it, set the class attributes, implement the
    abstract methods.

    ``Data`` and ``Model`` are the dataclasses of the config's ``data`` and ``model``
    sections; ``check_config`` rejects values no run can use, naming the key. ``headline``
    names the metrics of ``evaluate`` that runs report (results.json, ``treeattn report``,
    the demo table).
    """

    name: ClassVar[str]
    Data: ClassVar[type]
    Model: ClassVar[type]
    headline: ClassVar[tuple[str, ...]]
    train_split: ClassVar[str] = "train"

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    # -- configuration ------------------------------------------------------------------

    @classmethod
    def config_from_dict(cls, raw: dict[str, Any], where: str = "config") -> Config:
        """A validated config of this task from a raw (YAML or JSON) mapping."""
        raw = dict(raw)
        named = raw.pop("task", None)
        if named is not None and named != cls.name:
            raise ValueError(f"{where}: task {named!r} is not {cls.name!r}")
        data, model = raw.pop("data", {}), raw.pop("model", {})
        if named is None:
            data, model = cls.legacy_sections(data, model)
        data_class, data = cls.data_section(data, where)
        cfg = make_config(cls.name, data_class, cls.Model, data, model, raw, where)
        cls.check_config(cfg, where)
        cfg.validate(where)
        return cfg

    @classmethod
    def data_section(cls, data: Any, where: str) -> tuple[type, Any]:
        """The dataclass of the ``data`` section and the raw section to fill it with: by
        default ``Data``; a task whose data sets each have their own settings picks them
        here."""
        return cls.Data, data

    @classmethod
    def legacy_sections(cls, data: Any, model: Any) -> tuple[Any, Any]:
        """The ``data`` and ``model`` sections of a config that names no task (written
        before tasks had names), made readable as this task's."""
        return data, model

    @classmethod  # noqa: B027 (optional: a task without checks of its own)
    def check_config(cls, cfg: Config, where: str) -> None:
        """Reject ``data`` and ``model`` values that no run can use, naming the key."""

    @property
    def title(self) -> str:
        """What a run trains, for the learning curve's title."""
        return self.name

    # -- splits and data ----------------------------------------------------------------

    @property
    @abstractmethod
    def selection(self) -> Selection:
        """The split and metric that select the best checkpoint."""

    @property
    @abstractmethod
    def final_splits(self) -> tuple[str, ...]:
        """The splits the best checkpoint is scored on when training ends."""

    @property
    def held_out_split(self) -> str:
        """The split an analysis reads unless told: the first final split that chose no
        checkpoint (test; CoLA's in-domain dev; Multi30k's test_2016_flickr)."""
        held_out = [s for s in self.final_splits if s != self.selection.split]
        return (held_out or [self.selection.split])[0]

    @property
    def splits(self) -> tuple[str, ...]:
        """Every split training reads: training, selection and final ones, in that order."""
        names = [self.train_split, self.selection.split, *self.final_splits]
        return tuple(dict.fromkeys(names))

    @abstractmethod
    def read(self, source: str) -> tuple[list[Any], str]:
        """The examples of a split name or a file in the data set's format, and a name for
        them in errors (the data set and split, or the path)."""

    @abstractmethod
    def fit(self, train_examples: Sequence[Any]) -> None:
        """Build vocabularies (or subword models) from the training examples."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """What ``fit`` learned, as tensors and plain values (loadable with
        ``weights_only=True``); it goes into every checkpoint."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` gave, instead of ``fit``."""

    @abstractmethod
    def encode(self, examples: Sequence[Any], where: str) -> Encoded:
        """Examples as the model reads them, once; bad or over-long examples are an error
        naming ``where``, never dropped or truncated."""

    # -- model, loss, metrics, predictions ----------------------------------------------

    @abstractmethod
    def build_model(self) -> nn.Module:
        """A fresh model as the config describes it (after ``fit`` or ``load_state_dict``)."""

    def parameter_groups(self, model: nn.Module) -> list[dict[str, Any]]:
        """The optimiser's parameter groups: each a dict with ``params`` and, optionally,
        its own ``lr`` and ``warmup_steps`` (default: ``train.lr`` and
        ``train.warmup_steps``) and a ``name``. By default one group, every parameter (a
        pretrained part may learn at its own rate and warm up on its own)."""
        return [{"params": list(model.parameters())}]

    @abstractmethod
    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """The scalar training loss of one batch (``train.label_smoothing`` applies to
        cross-entropy losses)."""

    def loss_terms(self) -> dict[str, torch.Tensor]:
        """Named parts of the last ``loss`` (detached scalars, a tree loss say), which the
        trainer logs beside the training loss as ``train_<name>``; by default none."""
        return {}

    @abstractmethod
    def evaluate(self, model: nn.Module, data: Encoded, device: torch.device) -> dict[str, Any]:
        """Metrics of ``data``, the selection metric among them."""

    def report(self, model: nn.Module, data: Encoded, device: torch.device) -> str:
        """What ``treeattn evaluate`` prints: by default one metric a line."""
        lines = []
        for key, value in self.evaluate(model, data, device).items():
            lines.append(
                f"{key:<12} {value:.2f}" if isinstance(value, float) else f"{key:<12} {value}"
            )
        return "\n".join(lines)

    # The one tree source of a task whose models read trees (a ``TreeSource`` of
    # ``treeattn.parsing.tree_source``, which lies above the engine); None: it keeps none.
    tree_source: Any = None

    def use_trees(self, trees: str | None = None, parser: str | None = None) -> None:
        """From now on read the trees a command asks for (``--trees``, ``--parser``):
        ``trees`` names a kind of tree source (``gold``, ``parser``, ``right-branching``)
        or a file of trees, chosen outright whatever the model trained on; ``parser`` where
        the parser lies, which for a model trained on a parser's trees must be that parser
        unless ``trees`` says otherwise (``treeattn.parsing.tree_source``). By default a
        task's models read no trees, and this is an error."""
        raise ValueError(f"a {self.name} model reads no trees: --trees and --parser do not apply")

    # Formats ``predict`` can write; the first is the default. A ``jsonl`` output is one
    # JSON object per example, to which ``treeattn predict`` adds the input line.
    output_formats: ClassVar[tuple[str, ...]] = ("lines",)

    @abstractmethod
    def read_inputs(self, lines: Sequence[str], where: str) -> list[Any]:
        """Unlabeled inputs for ``predict``, one per line (``where``: the file, for errors)."""

    @abstractmethod
    def predict(
        self, model: nn.Module, data: Encoded, device: torch.device, output_format: str = ""
    ) -> list[str]:
        """One output per example (a line, or a block ending in a newline), in the order of
        ``data``, in one of ``output_formats`` (empty: the first)."""
