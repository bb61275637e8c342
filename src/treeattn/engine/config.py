"""Run configuration: YAML files in configs/, overridden by ``key.sub=value`` pairs.

A config names its task (``task: NAME``); the task owns the ``data`` and ``model``
sections and the engine the rest: ``train``, ``seed`` and ``out_dir``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from treeattn.engine.precision import PRECISIONS

SCHEDULES = ("linear", "inverse_sqrt")


@dataclass
class TrainConfig:
    # Training ends after ``epochs`` epochs or ``max_updates`` updates, whichever comes
    # first; either may be null (no limit), not both.
    epochs: int | None = 10
    max_updates: int | None = None
    max_tokens: int = 2048  # padded tokens per training batch
    eval_max_tokens: int = 8192
    lr: float = 2e-3
    weight_decay: float = 0.01  # AdamW's decoupled decay; 0 gives Adam
    beta1: float = 0.9  # Adam's moment decay rates
    beta2: float = 0.999
    # linear: warm-up, then linear decay to lr * min_lr_ratio at the last update.
    # inverse_sqrt: warm-up, then lr * sqrt(warmup_steps / update) (fairseq's).
    schedule: str = "linear"
    warmup_steps: int = 100
    warmup_init_lr: float = 0.0  # the warm-up's starting rate
    min_lr_ratio: float = 0.1
    label_smoothing: float = 0.0  # for tasks whose loss is cross-entropy
    clip_norm: float = 1.0
    eval_every: int | None = None  # updates between evaluations (besides each epoch's end)
    # false: evaluate only every ``eval_every`` updates and when training ends (for runs
    # whose epochs are short and whose evaluation is slow: translation's beam search)
    eval_each_epoch: bool = True
    checkpoint_every: int = 200  # updates between checkpoints (and one at each evaluation)
    keep_every: int | None = None  # keep the weights every k updates, as step-K.pt
    log_every: int = 20
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    # float32; bfloat16: the training forward pass under autocast (matrix products in
    # bfloat16; the weights, gradients, optimizer and evaluation stay float32); auto:
    # bfloat16 where the hardware computes it natively, else float32 (engine/precision.py)
    precision: str = "float32"
    progress: bool = True  # a progress bar, on a terminal only


@dataclass
class Config:
    """``data`` and ``model`` are the task's own section dataclasses."""

    task: str
    data: Any
    model: Any
    train: TrainConfig = field(default_factory=TrainConfig)
    seed: int = 1
    out_dir: str = "runs/default"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self, where: str = "config") -> None:
        """Reject engine values no run can use, before any work starts."""
        t = self.train
        positive = {
            "train.max_tokens": t.max_tokens,
            "train.eval_max_tokens": t.eval_max_tokens,
            "train.checkpoint_every": t.checkpoint_every,
            "train.log_every": t.log_every,
        }
        optional = {
            "train.epochs": t.epochs,
            "train.max_updates": t.max_updates,
            "train.eval_every": t.eval_every,
            "train.keep_every": t.keep_every,
        }
        positive.update({k: v for k, v in optional.items() if v is not None})
        check_positive(positive, where)
        if t.epochs is None and t.max_updates is None:
            raise ValueError(f"{where}: train.epochs and train.max_updates are both null")
        if t.warmup_steps < 0:
            raise ValueError(f"{where}: train.warmup_steps must be at least 0")
        if t.schedule not in SCHEDULES:
            raise ValueError(
                f"{where}: train.schedule={t.schedule!r}; use {' or '.join(SCHEDULES)}"
            )
        if t.precision not in PRECISIONS:
            raise ValueError(
                f"{where}: train.precision={t.precision!r}; use {', '.join(PRECISIONS)}"
            )
        if t.schedule == "inverse_sqrt" and t.warmup_steps < 1:
            raise ValueError(f"{where}: train.schedule=inverse_sqrt needs train.warmup_steps >= 1")
        ranges = {
            "train.lr": (t.lr, 0, float("inf")),
            "train.label_smoothing": (t.label_smoothing, 0, 1),
            "train.warmup_init_lr": (t.warmup_init_lr, 0, t.lr + 1e-12),
            "train.beta1": (t.beta1, 0, 1),
            "train.beta2": (t.beta2, 0, 1),
        }
        for key, (value, low, high) in ranges.items():
            if not low <= value < high:
                raise ValueError(f"{where}: {key}={value} is out of range")

    def resume_key(self) -> dict[str, Any]:
        """What must match for a run to resume from a checkpoint: everything but where it
        is written and how progress is shown, and under the inverse-square-root schedule
        (whose rate never looks at where training ends) how long it trains, so that a
        finished run can be trained further."""
        key = self.to_dict()
        key.pop("out_dir")
        key["train"].pop("progress")
        if self.train.schedule == "inverse_sqrt":
            key["train"].pop("epochs")
            key["train"].pop("max_updates")
        return key

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def check_positive(values: dict[str, int], where: str) -> None:
    """Each value (by its dotted key) must be at least 1."""
    for key, value in values.items():
        if value < 1:
            raise ValueError(f"{where}: {key} must be at least 1, got {value}")


def make_config(
    task: str,
    data_cls: type,
    model_cls: type,
    data: Any,
    model: Any,
    rest: dict[str, Any],
    where: str = "config",
) -> Config:
    """A ``Config`` of ``task`` whose sections are built from raw mappings (unknown keys and
    wrongly typed values are errors naming the key)."""
    engine_fields = {"train", "seed", "out_dir"}
    unknown = sorted(set(rest) - engine_fields)
    if unknown:
        known = ", ".join(["task", "data", "model", *sorted(engine_fields)])
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {known}")
    fields = {f.name: f.type for f in dataclasses.fields(Config)}
    values = {
        name: _coerce(value, fields[name], f"{where}: {name}")
        for name, value in rest.items()
        if name != "train"
    }
    return Config(
        task=task,
        data=build_section(data_cls, data, where, "data"),
        model=build_section(model_cls, model, where, "model"),
        train=build_section(TrainConfig, rest.get("train", {}), where, "train"),
        **values,
    )


def build_section(cls: type, raw: Any, where: str, section: str) -> Any:
    """The dataclass ``cls`` of the config section ``section`` from a mapping, each value
    checked against its field's type; errors name ``where`` (the config) and the key as
    ``section.key``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: {section}: expected a mapping, got {raw!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        keys = ", ".join(f"{section}.{key}" for key in unknown)
        raise ValueError(f"{where}: unknown key(s) {keys}; {section} has: {', '.join(fields)}")
    return cls(
        **{
            name: _coerce(value, fields[name].type, f"{where}: {section}.{name}")
            for name, value in raw.items()
        }
    )


def _coerce(value: Any, kind: str, where: str) -> Any:
    # Field types are strings under ``from __future__ import annotations``.
    if kind.endswith(" | None"):
        if value is None:
            return None
        kind = kind.removesuffix(" | None")
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
    key, sep, value_text = assignment.partition("=")
    if not sep or not key:
        raise ValueError(f"override {assignment!r} is not of the form key=value")
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"override {assignment!r}: {part} is not a section")
    try:
        value = yaml.safe_load(value_text) if value_text else ""
    except yaml.YAMLError:
        value = value_text  # e.g. an unquoted string with a colon: take it literally
    node[parts[-1]] = value


def read_raw_config(path: str | Path | None, overrides: list[str] = ()) -> dict[str, Any]:
    """A YAML config file (or nothing) with ``--set`` overrides applied, not yet checked."""
    raw: dict[str, Any] = {}
    if path is not None:
        data = Path(path).read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:  # where, as a person finds it in an editor
            before = data[: error.start]
            line, column = before.count(b"\n") + 1, error.start - (before.rfind(b"\n") + 1) + 1
            raise ValueError(
                f"{path}, line {line}, column {column}: not UTF-8 text (byte "
                f"0x{data[error.start]:02x}); save the config as UTF-8"
            ) from None
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not valid YAML: {error}") from None
        if not isinstance(raw, dict):  # named by its kind: the file itself may be long
            kind = "plain text" if isinstance(raw, str) else f"a YAML {type(raw).__name__}"
            raise ValueError(
                f"{path}: not a config: expected YAML sections (task:, data:, model:, "
                f"train:), read {kind}"
            )
    for assignment in overrides:
        apply_override(raw, assignment)
    return raw
