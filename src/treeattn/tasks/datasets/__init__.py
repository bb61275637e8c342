"""Data sets by name, as tasks are: each one a ``DataSet`` with its own settings, the
config's ``data`` section when ``data.name`` names it, registered where it is defined
(``plugins.datasets``).

>>> plugins.datasets["sst2"].classes
('0', '1')
>>> settings_class({"name": "sst5", "phrase_level": True}, "config").__name__
'SstSettings'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

# isort: off
# Each data set registers itself where it is defined: in this order, the order listed.
from treeattn.tasks.datasets import listops, sst, cola, labeled, text, mccoy  # noqa: F401

# isort: on
from treeattn import plugins
from treeattn.tasks.datasets.base import SPLITS, DataSet, SentenceSettings
from treeattn.tasks.datasets.cola import ColaSettings
from treeattn.tasks.datasets.labeled import LabeledSettings, read_labeled_file
from treeattn.tasks.datasets.listops import ListOpsSettings
from treeattn.tasks.datasets.mccoy import McCoySettings
from treeattn.tasks.datasets.sst import SstSettings
from treeattn.tasks.datasets.text import TextSettings
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
    "open_dataset",
    "read_examples",
    "read_labeled_file",
    "settings_class",
]


def open_dataset(settings: Any) -> DataSet:
    """The data set ``settings`` (a ``data`` section) names, reading as they say."""
    return plugins.datasets[settings.name](settings)


def settings_class(raw: dict[str, Any], where: str) -> type:
    """The settings dataclass of the data set ``raw['name']`` names, for a raw ``data``
    section: a key it does not have is an error naming the key, the data set, its settings
    and the data sets that have the key."""
    name = raw.get("name")
    cls = plugins.datasets[name].Settings
    fields = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key in fields:
            continue
        owners = [
            found.name
            for found in plugins.datasets.entries()
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
