"""Run configuration: YAML files in configs/, overridden by ``key.sub=value`` pairs."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass
class DataConfig:
    """Which data set and how it is prepared.

    ``name``: ``listops`` (generated, no files), ``sst5`` or ``sst2`` (classification), or
    ``text`` (masked language modelling on the words of EWT, SST and the PTB sample).
    """

    name: str = "listops"
    root: str | None = None  # data folder; default from TREEATTN_DATA
    min_count: int = 1  # words seen fewer times in training become <unk>
    lowercase: bool = False
    # SST only: train on every labeled phrase (each node's words and label, Tai et al.
    # 2015) besides the sentences; dev and test stay sentence-level.
    phrase_level: bool = False
    # Masked language modelling (``text``): the share of words chosen, and how a chosen
    # word is shown (as <mask>, as a random word, as itself)
    mask_rate: float = 0.15
    mask_split: list = field(default_factory=lambda: [0.8, 0.1, 0.1])
    # ListOps generation (ignored for other data sets)
    train_size: int = 6000
    dev_size: int = 1000
    test_size: int = 1000
    max_depth: int = 3
    max_args: int = 5
    max_length: int = 80


@dataclass
class ModelConfig:
    attention: str = "vanilla"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    positions: str = "sinusoidal"
    max_length: int = 512
    # auto: mean over tokens for Transformer encoders, the root for tree encoders; or
    # mean, first (token encoders), root, mean (tree encoders: the mean over nodes)
    pooling: str = "auto"
    attention_options: dict = field(default_factory=dict)


@dataclass
class TrainConfig:
    epochs: int = 10
    max_tokens: int = 2048  # padded tokens per training batch
    eval_max_tokens: int = 8192
    lr: float = 2e-3
    weight_decay: float = 0.01
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1  # linear decay after warm-up ends at lr * min_lr_ratio
    clip_norm: float = 1.0
    checkpoint_every: int = 200  # steps between checkpoints (and one at each epoch end)
    log_every: int = 20
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    progress: bool = True


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    seed: int = 1
    out_dir: str = "runs/default"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self, where: str = "config") -> None:
        """Reject values no run can use, before any work starts."""
        positive = {
            "data.train_size": self.data.train_size,
            "data.dev_size": self.data.dev_size,
            "data.test_size": self.data.test_size,
            "data.min_count": self.data.min_count,
            "model.d_model": self.model.d_model,
            "model.n_heads": self.model.n_heads,
            "model.n_layers": self.model.n_layers,
            "model.d_ff": self.model.d_ff,
            "model.max_length": self.model.max_length,
            "train.epochs": self.train.epochs,
            "train.max_tokens": self.train.max_tokens,
            "train.eval_max_tokens": self.train.eval_max_tokens,
            "train.checkpoint_every": self.train.checkpoint_every,
            "train.log_every": self.train.log_every,
        }
        for key, value in positive.items():
            if value < 1:
                raise ValueError(f"{where}: {key} must be at least 1, got {value}")
        if self.model.d_model % self.model.n_heads:
            raise ValueError(
                f"{where}: model.d_model={self.model.d_model} is not divisible by "
                f"model.n_heads={self.model.n_heads}"
            )
        for key, value in (("model.dropout", self.model.dropout), ("train.lr", self.train.lr)):
            if not 0 <= value < (1 if key == "model.dropout" else float("inf")):
                raise ValueError(f"{where}: {key}={value} is out of range")

    def resume_key(self) -> dict[str, Any]:
        """What must match for a run to resume from a checkpoint: everything but where it
        is written and how progress is shown."""
        key = self.to_dict()
        key.pop("out_dir")
        key["train"].pop("progress")
        return key

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: dict[str, Any], where: str = "config") -> Config:
        return _build(cls, raw, where)


def _build(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping, got {raw!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(fields)}"
        )
    kwargs = {}
    for name, value in raw.items():
        kind = fields[name].type
        nested = {"DataConfig": DataConfig, "ModelConfig": ModelConfig, "TrainConfig": TrainConfig}
        if kind in nested:
            kwargs[name] = _build(nested[kind], value, f"{where}.{name}")
        else:
            kwargs[name] = _coerce(value, kind, f"{where}.{name}")
    return cls(**kwargs)


def _coerce(value: Any, kind: str, where: str) -> Any:
    # Field types are strings under ``from __future__ import annotations``.
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "float" and isinstance(value, str):
        # YAML 1.1 reads 3e-4 (no dot) as a string; it is meant as a number.
        try:
            return float(value)
        except ValueError:
            pass
    expected = {"int": int, "float": float, "bool": bool, "str": str, "dict": dict, "list": list}
    expected = expected.get(kind)
    if expected is not None and not isinstance(value, expected):
        raise ValueError(f"{where}: expected {kind}, got {value!r}")
    if expected is int and isinstance(value, bool):
        raise ValueError(f"{where}: expected int, got {value!r}")
    return value


def apply_override(raw: dict[str, Any], assignment: str) -> None:
    """Apply ``a.b=value`` to a raw config dict; the value is read as YAML (``1e-3``, ``true``)."""
    key, sep, text = assignment.partition("=")
    if not sep or not key:
        raise ValueError(f"override {assignment!r} is not of the form key=value")
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"override {assignment!r}: {part} is not a section")
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        value = text  # e.g. an unquoted string with a colon: take it literally
    node[parts[-1]] = value


def load_config(path: str | Path | None, overrides: list[str] = ()) -> Config:
    raw: dict[str, Any] = {}
    if path is not None:
        with Path(path).open(encoding="utf-8") as f:
            try:
                raw = yaml.safe_load(f) or {}
            except yaml.YAMLError as error:
                raise ValueError(f"{path}: not valid YAML: {error}") from None
    for assignment in overrides:
        apply_override(raw, assignment)
    cfg = Config.from_dict(raw, where=str(path or "config"))
    cfg.validate(where=str(path or "config"))
    return cfg
