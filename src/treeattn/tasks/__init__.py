"""Tasks by name (``plugins.tasks``, each registered where it is defined), and configs
read into a task's sections.

A config names its task (``task: classify``); one without a name is read as configs were
before tasks had names: ``data.name: text`` is masked language modelling, anything else
classification.

>>> cfg = load_config(None, ["task=classify", "data.name=sst5"])
>>> type(make_task(cfg)).__name__
'ClassifyTask'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# isort: off
# Each task registers itself where it is defined: in this order, the order listed.
from treeattn.tasks import classify, mlm, parse, translate, causal_lm  # noqa: F401
from treeattn.tasks import hierarchical_generalization  # noqa: F401

# isort: on
from treeattn import plugins
from treeattn.engine.config import Config, read_raw_config
from treeattn.engine.task import Task
from treeattn.tasks.classify import ClassifyTask
from treeattn.tasks.mlm import MaskedLMTask


def _named_task(raw: dict[str, Any]) -> str:
    """The task a raw config names, or the one its data set implies when it names none."""
    if "task" in raw:
        if not isinstance(raw["task"], str):
            known = ", ".join(plugins.tasks.names())
            raise ValueError(f"task must be a name ({known}), got {raw['task']!r}")
        return raw["task"]
    data = raw.get("data")
    name = data.get("name") if isinstance(data, dict) else None
    return MaskedLMTask.name if name in MaskedLMTask.datasets else ClassifyTask.name


def config_from_dict(raw: dict[str, Any], where: str = "config") -> Config:
    """A validated config from a raw mapping (a YAML file's, or a checkpoint's JSON)."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping, got {raw!r}")
    try:
        cls = plugins.tasks[_named_task(raw)]
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return cls.config_from_dict(raw, where)


def load_config(path: str | Path | None, overrides: list[str] = ()) -> Config:
    """A config file (or the defaults: ListOps classification) with ``key=value`` overrides;
    every value is checked, and a wrong one named, before any work starts."""
    raw = read_raw_config(path, overrides)
    return config_from_dict(raw, where=str(path or "config"))


def make_task(cfg: Config) -> Task:
    """The task a config names, ready to train (``treeattn.engine.trainer.train``)."""
    return plugins.tasks[cfg.task](cfg)
