"""docs/CONFIG.md against the code: it lists every key of every config section, with the
code's default, and no key the code does not have.

The doc's tables, as read here: a table whose header row starts with ``| key |`` lists a
key a row, its full dotted name in backticks in the first column and its default in the
third (compared with the code's when it is one value in backticks, read as YAML). A table
belongs to the heading above it, whose names in backticks say whose keys it lists: data
sets for ``data.*`` keys (or the task, for a task with one data section whatever it
reads), tasks for ``model.*`` keys, mechanisms for ``model.attention_options.*`` keys (on
a pretrained backbone when the heading says "backbone"), losses for
``model.tree_loss_options.*`` keys. Top-level and ``train.*`` keys need no name.

The keys are taken from a fresh interpreter, so that what the tests register themselves
(``tests/toy_mechanism.py``) is not asked for: the doc covers what the package registers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

DOC = Path(__file__).parents[1] / "docs" / "CONFIG.md"
NAME = "docs/CONFIG.md"  # in messages
BACKBONE = "on a backbone"
# The kinds of key, by prefix, longest first: each names its sections by what they belong to.
KINDS = (
    ("model.attention_options.", "mechanism"),
    ("model.tree_loss_options.", "loss"),
    ("model.", "task"),
    ("data.", "data set"),
    ("train.", ""),
)

# A section: (kind, name); its keys: dotted key -> [default], or [] where there is none.
Sections = dict[tuple[str, str], dict[str, list[Any]]]


def _keys(cls: type, prefix: str) -> dict[str, list[Any]]:
    keys = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            keys[prefix + f.name] = [f.default]
        elif f.default_factory is not dataclasses.MISSING:
            keys[prefix + f.name] = [f.default_factory()]
        else:
            keys[prefix + f.name] = []
    return keys


def code_sections() -> Sections:
    """Every config section the package has, with its keys: the engine's, each task's data
    section (per data set where it lists them) and model section, and each registered
    mechanism's options (apart on a pretrained backbone where they differ there), and each
    loss mechanism's options."""
    from treeattn import plugins
    from treeattn.attention.registry import loss_names
    from treeattn.engine.config import Config, TrainConfig
    from treeattn.models.registry import encoder_entry, encoder_names

    top = _keys(Config, "")
    for section in ("data", "model", "train"):
        del top[section]
    sections: Sections = {("", ""): top | _keys(TrainConfig, "train.")}
    by_dataset: dict[str, dict[str, dict[str, list[Any]]]] = {}  # data set -> task -> keys
    for task in plugins.tasks.entries():
        name = task.name
        sections[("task", name)] = _keys(task.Model, "model.")
        datasets = getattr(task, "datasets", None)
        if datasets is None:
            sections[("data set", name)] = _keys(task.Data, "data.")
        for dataset in datasets or ():
            data_class, _ = task.data_section({"name": dataset}, NAME)
            by_dataset.setdefault(dataset, {})[name] = _keys(data_class, "data.")
    # A data set is listed under its name with the keys of the first task that reads it; a
    # task that reads it with keys of its own (text in mlm, with its masking) lists those
    # under the task's name.
    for dataset, tasks in by_dataset.items():
        first, *others = tasks.items()
        sections[("data set", dataset)] = first[1]
        sections.update({("data set", task): keys for task, keys in others if keys != first[1]})
    prefix = "model.attention_options."
    for name in encoder_names():
        plain = _keys(encoder_entry(name).options, prefix)
        sections[("mechanism", name)] = plain
        inside = _keys(encoder_entry(name, backbone=True).options, prefix)
        if inside != plain:
            sections[("mechanism " + BACKBONE, name)] = inside
    for name in loss_names():
        options = plugins.mechanisms[name].capabilities.loss.Options
        sections[("loss", name)] = _keys(options, "model.tree_loss_options.")
    return sections


@pytest.fixture(scope="module")
def sections() -> Sections:
    import treeattn

    env = {**os.environ, "PYTHONPATH": str(Path(treeattn.__file__).parents[1])}
    found = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env)
    assert found.returncode == 0, found.stderr
    raw = json.loads(found.stdout)
    return {tuple(key.split("/", 1)): keys for key, keys in raw.items()}


def doc_rows(text: str) -> list[tuple[int, str, str, str]]:
    """(line number, heading, key, default cell) of each row of the key tables."""
    rows, heading, in_table, fenced = [], "", False, False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if not line.startswith("|"):
            in_table = False
        elif cells[0] == "key":
            in_table = True
        elif in_table and not set(cells[0]) <= set("-: "):
            key = re.fullmatch(r"`([\w.]+)`", cells[0])
            if key is None or len(cells) < 3:
                raise AssertionError(f"{NAME}:{number}: expected | `dotted.key` | type | default |")
            rows.append((number, heading, key.group(1), cells[2]))
    return rows


def _kind(key: str) -> str:
    return next((kind for prefix, kind in KINDS if key.startswith(prefix)), "")


def check(text: str, sections: Sections) -> list[str]:
    """What is wrong with the doc ``text`` against ``sections``, one line each."""
    problems, listed = [], set()
    for number, heading, key, default in doc_rows(text):
        where = f"{NAME}:{number}"
        kind = _kind(key)
        if kind == "mechanism" and "backbone" in heading.lower():
            kind += " " + BACKBONE
        names = re.findall(r"`([^`]+)`", heading) if kind else [""]
        if not names:
            problems.append(f"{where}: the heading of `{key}` names no {kind}")
        for name in names:
            keys = sections.get((kind, name))
            if keys is None:
                problems.append(f"{where}: `{name}` (heading {heading!r}) is no {kind}")
            elif key not in keys:
                owner = f" of {kind} {name}" if kind else ""
                problems.append(f"{where}: `{key}` is not a config key{owner}")
            else:
                listed.add((kind, name, key))
                value = re.fullmatch(r"`([^`]*)`", default)
                if value and keys[key] != [yaml.safe_load(value.group(1))]:
                    code = keys[key][0] if keys[key] else "none"
                    problems.append(f"{where}: `{key}` defaults to {code!r}, not {default}")
    for (kind, name), keys in sections.items():
        for key in keys:
            if (kind, name, key) not in listed:
                owner = f" (of {kind} {name})" if kind else ""
                problems.append(f"{NAME} does not list `{key}`{owner}")
    return problems


def test_the_reference_lists_every_key_and_no_other(sections):
    problems = check(DOC.read_text(encoding="utf-8"), sections)
    assert not problems, "\n".join(problems)


def test_a_missing_or_invented_key_is_named(sections):
    text = DOC.read_text(encoding="utf-8")
    missing = re.sub(r"^\| `train\.clip_norm` \|.*\n", "", text, flags=re.M)
    assert check(missing, sections) == [f"{NAME} does not list `train.clip_norm`"]
    row = re.search(r"^\| `data\.max_depth` \|.*\n", text, flags=re.M).group()
    invented = text.replace(row, row + row.replace("max_depth", "max_height"))
    (problem,) = check(invented, sections)
    assert problem.endswith("`data.max_height` is not a config key of data set listops")
    (problem,) = check(text.replace(row, row.replace("`3`", "`4`")), sections)
    assert problem.endswith("`data.max_depth` defaults to 3, not `4`")


def test_a_mechanism_registered_by_the_tests_is_not_asked_for(sections):
    from tests import toy_mechanism
    from treeattn import plugins

    toy_mechanism.register()
    try:
        assert ("mechanism", toy_mechanism.NAME) in code_sections()
    finally:
        plugins.mechanisms.unregister(toy_mechanism.NAME)
    assert ("mechanism", toy_mechanism.NAME) not in sections
    assert ("mechanism", "distance") in sections
    # On a backbone, distance goes inside its attention (options of its own); structured
    # runs on top, with the options it has anywhere.
    assert ("mechanism " + BACKBONE, "distance") in sections
    assert ("mechanism " + BACKBONE, "structured") not in sections


if __name__ == "__main__":
    # The fixture's fresh interpreter: every section's keys as JSON.
    found = {f"{kind}/{name}": keys for (kind, name), keys in code_sections().items()}
    print(json.dumps(found))
