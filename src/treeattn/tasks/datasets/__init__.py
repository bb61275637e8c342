"""Data sets by name, as tasks are: each one a ``DataSet`` with its own settings, the
config's ``data`` section when ``data.name`` names it.

>>> dataset_class("sst2").classes
('0', '1')
>>> settings_class({"name": "sst5", "phrase_level": True}, "config").__name__
'SstSettings'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from treeattn.tasks.datasets.base import SPLITS, DataSet, SentenceSettings
from treeattn.tasks.datasets.cola import Cola, ColaSettings
from treeattn.tasks.datasets.labeled import LabeledFiles, LabeledSettings, read_labeled_file
from treeattn.tasks.datasets.listops import ListOps, ListOpsSettings
from treeattn.tasks.datasets.mccoy import McCoySettings, McCoyStrings
from treeattn.tasks.datasets.sst import Sst2, Sst5, SstSettings
from treeattn.tasks.datasets.text import Text, TextSettings
from treeattn.tasks.sentences import LabeledSentence

__all__ = [
    "SPLITS",
    "ColaSettings",
    "DataSet",
    "LabeledSettings",
    "ListOpsSettings",
    "McCoySettings",
    "SentenceSettings",
    "SstSettings",
    "TextSettings",
    "dataset_class",
    "dataset_names",
    "open_dataset",
    "read_examples",
    "read_labeled_file",
    "register_dataset",
    "settings_class",
]

_DATASETS: dict[str, type[DataSet]] = {}


def register_dataset(cls: type[DataSet]) -> type[DataSet]:
    """Make ``cls`` available as ``data.name: <cls.name>`` (usable as a decorator)."""
    if cls.name in _DATASETS and _DATASETS[cls.name] is not cls:
        raise ValueError(f"a data set named {cls.name!r} is already registered")
    _DATASETS[cls.name] = cls
    return cls


def dataset_names() -> list[str]:
    return list(_DATASETS)


def dataset_class(name: str) -> type[DataSet]:
    if name not in _DATASETS:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(_DATASETS)}")
    return _DATASETS[name]


def open_dataset(settings: Any) -> DataSet:
    """The data set ``settings`` (a ``data`` section) names, reading as they say."""
    return dataset_class(settings.name)(settings)


for _cls in (ListOps, Sst5, Sst2, Cola, LabeledFiles, Text, McCoyStrings):
    register_dataset(_cls)


def settings_class(raw: dict[str, Any], where: str) -> type:
    """The settings dataclass of the data set ``raw['name']`` names, for a raw ``data``
    section: a key it does not have is an error naming the key, the data set, its settings
    and the data sets that have the key."""
    name = raw.get("name")
    cls = dataset_class(name).Settings
    fields = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key in fields:
            continue
        owners = [
            other
            for other, found in _DATASETS.items()
            if key in {f.name for f in dataclasses.fields(found.Settings)}
        ]
        elsewhere = f" (but of {', '.join(owners)})" if owners else ""
        raise ValueError(
            f"{where}: data.{key} is not a setting of {name}{elsewhere}; "
            f"its settings: {', '.join(fields)}"
        )
    return cls


def read_examples(
    dataset: DataSet, source: str, whole_trees: bool
) -> tuple[list[LabeledSentence], str]:
    """The examples of ``source``, a split name of the data set or a file in its format, and
    a name for them in errors; no example at all is an error."""
    if source in dataset.splits:
        examples = dataset.load_split(source, whole_trees)
        where = f"{dataset.settings.name} {source}"
    elif Path(source).is_file():
        examples, where = dataset.read_file(source, whole_trees), source
    else:
        raise FileNotFoundError(
            f"{source!r} is neither a split name ({', '.join(dataset.splits)}) nor an existing file"
        )
    if not examples:
        raise ValueError(f"{where}: no examples")
    return examples, where
