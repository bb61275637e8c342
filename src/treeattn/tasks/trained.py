"""A trained model read back from its checkpoint, with its task: for scoring, predicting
and looking inside."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from treeattn import plugins
from treeattn.engine.checkpoint import load_checkpoint, task_state
from treeattn.engine.config import Config
from treeattn.engine.distributed import pick_device
from treeattn.engine.task import Encoded, Task
from treeattn.parsing import Parser
from treeattn.tasks import config_from_dict, make_task
from treeattn.tasks.parse import ParseTask


@dataclass
class Trained:
    """A model in evaluation mode on ``device``, and the task that reads its data."""

    cfg: Config
    task: Task
    model: nn.Module
    device: torch.device

    def read(self, source: str) -> tuple[list[Any], str]:
        """The examples of a split name or a file, and their name for errors."""
        return self.task.read(source)

    def encode(self, examples: list[Any], where: str) -> Encoded:
        return self.task.encode(examples, where)

    def evaluate(self, source: str) -> dict[str, Any]:
        """The task's metrics on a split name or a file."""
        examples, where = self.read(source)
        data = self.encode(examples, where)
        return {"data": where, **self.task.evaluate(self.model, data, self.device)}

    def report(self, source: str) -> str:
        """The task's report on a split name or a file, as ``treeattn evaluate`` prints it."""
        examples, where = self.read(source)
        data = self.encode(examples, where)
        return f"{'data':<12} {where}\n" + self.task.report(self.model, data, self.device)

    def predict(self, lines: list[str], where: str, output_format: str = "") -> list[str]:
        """One output per input line, in order, in one of the task's ``output_formats``.
        A task's ``jsonl`` objects get the input line first, as ``"input"`` (the task sees
        only the encoded examples)."""
        formats = self.task.output_formats
        if output_format and output_format not in formats:
            raise ValueError(
                f"--format: a {self.cfg.task} model writes {', '.join(formats)}, "
                f"not {output_format!r}"
            )
        examples = self.task.read_inputs(lines, where)
        if not examples:
            raise ValueError(f"{where}: no input lines")
        data = self.encode(examples, where)
        output_format = output_format or formats[0]
        outputs = self.task.predict(self.model, data, self.device, output_format)
        if output_format != "jsonl":
            return outputs
        return [
            json.dumps({"input": line, **json.loads(out)}, ensure_ascii=False)
            for line, out in zip(lines, outputs, strict=True)
        ]


def load_trained(checkpoint: str | Path, device: str = "auto") -> Trained:
    """A checkpoint written by ``treeattn train`` (also one written before tasks had names),
    a parser file (``.safetensors``, ``treeattn export-parser``) or a shipped parser's name
    (``plugins.parsers``: ``accurate``, ``fast``, ``accurate-ptb``)."""
    if str(checkpoint) in plugins.parsers or str(checkpoint).endswith(".safetensors"):
        parser = Parser.load(checkpoint, device)
        task = ParseTask.from_parser(parser)
        return Trained(task.cfg, task, parser.model, parser.device)
    if not Path(checkpoint).is_file():
        raise FileNotFoundError(
            f"no checkpoint at {checkpoint}, nor a shipped parser of that name "
            f"({', '.join(plugins.parsers.names())})"
        )
    state = load_checkpoint(checkpoint)
    if not isinstance(state, dict) or not {"model", "config"} <= set(state):
        raise ValueError(f"{checkpoint}: not a checkpoint written by `treeattn train`")
    cfg = config_from_dict(json.loads(state["config"]), where=f"{checkpoint} config")
    task = make_task(cfg)
    try:
        task.load_state_dict(task_state(state))
    except (KeyError, ValueError, TypeError) as error:
        raise ValueError(
            f"{checkpoint}: the {cfg.task} task's state is unreadable: {error}"
        ) from None
    target = pick_device(device)
    model = task.build_model().to(target)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as error:  # weights of another version of the model
        raise ValueError(f"{checkpoint}: the weights do not fit the model: {error}") from None
    return Trained(cfg, task, model.eval(), target)
