"""Data sets by name: each one's settings are the data section, a key of another data set is
an error naming both, and sections as checkpoints wrote them before still load."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import torch

from tests.helpers import train
from tests.test_engine import tiny_config
from treeattn.data.sst import load_sst
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.plugins import datasets
from treeattn.tasks import config_from_dict, load_config
from treeattn.tasks.datasets import DataSet, open_dataset
from treeattn.tasks.trained import load_trained

# The one data section ListOps, SST and labeled files shared before, at its defaults.
SHARED_SECTION = {
    "name": "listops",
    "root": None,
    "paths": {},
    "min_count": 1,
    "lowercase": False,
    "phrase_level": False,
    "train_size": 6000,
    "dev_size": 1000,
    "test_size": 1000,
    "max_depth": 3,
    "max_args": 5,
    "max_length": 80,
    "operators": ["MAX", "MIN", "MED", "SUM_MOD"],
}


def _settings(cls: type[DataSet]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls.Settings)}


def test_data_sets_are_registered_with_their_classes():
    assert datasets.names() == ["listops", "sst5", "sst2", "cola", "labeled", "text", "mccoy"]
    classes = {found.name: found.classes for found in datasets.entries()}
    assert classes["listops"] == tuple("0123456789")
    assert classes["sst5"] == ("0", "1", "2", "3", "4") and classes["sst2"] == ("0", "1")
    assert classes["cola"] == ("0", "1")
    assert classes["labeled"] is None  # named by the training labels
    with pytest.raises(ValueError, match="unknown data set 'sst7'; known: listops, sst5, sst2"):
        datasets["sst7"]

    class Other(DataSet):
        name = "sst5"

    with pytest.raises(ValueError, match="a data set named 'sst5' is already registered"):
        datasets.register(Other)


def test_each_data_set_has_its_own_settings_and_the_shared_ones():
    shared = {"name", "min_count", "lowercase"}
    assert _settings(datasets["listops"]) == shared | {
        "train_size",
        "dev_size",
        "test_size",
        "max_depth",
        "max_args",
        "max_length",
        "operators",
    }
    assert _settings(datasets["sst5"]) == shared | {
        "root",
        "phrase_level",
        "train_size",
        "trees",
        "parser",
    }
    assert _settings(datasets["sst2"]) == _settings(datasets["sst5"])
    assert _settings(datasets["cola"]) == shared | {"root", "train_size", "trees", "parser"}
    assert _settings(datasets["labeled"]) == shared | {"paths", "train_size"}
    assert "corpora" in _settings(datasets["text"])
    cfg = load_config(None, ["data.name=sst2", "data.min_count=2", "data.lowercase=true"])
    assert (cfg.data.name, cfg.data.min_count, cfg.data.lowercase) == ("sst2", 2, True)
    assert not open_dataset(load_config(None).data).phrase_level  # no phrase labels in ListOps


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data.name=sst2", "data.operators=[MAX]"], "data.operators is not a setting of sst2"),
        (["data.name=labeled", "data.root=x"], "data.root is not a setting of labeled (but of"),
        (["data.name=sst5", "data.corpora=[ptb]"], "(but of text); its settings: name, min_count"),
        (["data.name=sst5", "data.nope=1"], "data.nope is not a setting of sst5; its settings"),
        (["data.name=sst5", "data.phrase_level=1"], "config: data.phrase_level: expected bool"),
        (["data.train_size=0"], "data.train_size must be at least 1"),
        (["data.name=sst5", "data.min_count=0"], "data.min_count must be at least 1"),
    ],
)
def test_a_key_is_checked_against_the_data_set_named(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        load_config(None, overrides)


def test_a_section_written_whole_before_drops_other_data_sets_keys():
    sst = config_from_dict({"task": "classify", "data": {**SHARED_SECTION, "name": "sst5"}})
    assert dataclasses.asdict(sst.data) == {
        "name": "sst5",
        "min_count": 1,
        "lowercase": False,
        "root": None,
        "phrase_level": False,
        "train_size": None,  # ListOps' 6000 then, which SST did not read
        "trees": "gold",
        "parser": None,
    }
    # Older runs wrote neither paths nor operators.
    older = {k: v for k, v in SHARED_SECTION.items() if k not in ("paths", "operators")}
    assert config_from_dict({"data": older}).data == load_config(None).data
    # A section with only some of the keys is one written by hand: checked as any.
    partial = {key: value for key, value in SHARED_SECTION.items() if key != "phrase_level"}
    with pytest.raises(ValueError, match="data.root is not a setting of listops"):
        config_from_dict({"task": "classify", "data": partial})


def test_labeled_files_are_their_splits(tmp_path):
    train_file = tmp_path / "train.tsv"
    train_file.write_text("pos\tgood film\nneg\tbad film\n")
    cfg = load_config(
        None, ["data.name=labeled", *(f"data.paths.{s}={train_file}" for s in ("train", "dev"))]
    )
    dataset = open_dataset(cfg.data)
    assert dataset.splits == ("train", "dev")
    assert [ex.label for ex in dataset.load_split("dev")] == ["pos", "neg"]
    with pytest.raises(ValueError, match="split must be one of train, dev, not 'test'"):
        dataset.load_split("test")


def test_a_checkpoint_with_the_shared_data_section_evaluates_as_before(tmp_path):
    run = tmp_path / "run"
    train(tiny_config(run, "train.epochs=1"))
    expected = load_trained(run / "best.pt").evaluate("test")
    state = load_checkpoint(run / "best.pt")
    config = json.loads(state["config"])
    assert "phrase_level" not in config["data"]
    config["data"] = {**SHARED_SECTION, **config["data"]}  # as every run wrote it before
    torch.save({**state, "config": json.dumps(config, sort_keys=True)}, run / "old.pt")
    old = load_trained(run / "old.pt")
    assert dataclasses.asdict(old.cfg.data) == json.loads(state["config"])["data"]
    assert old.evaluate("test") == expected


def _phrases(name: str, split: str):
    """SST-5 or SST-2's ``split`` read with every phrase's label."""
    settings = load_config(None, [f"data.name={name}", "data.phrase_level=true"]).data
    return open_dataset(settings).load_split(split)


@pytest.mark.slow
def test_phrase_level_training_uses_every_labeled_node(shared_data):
    trees = load_sst("train", root=shared_data, fine_grained=True)
    nodes = [label for ex in trees for _, _, label in ex.phrase_labels]
    assert len(_phrases("sst5", "train")) == len(nodes) == 318_582
    sst2 = _phrases("sst2", "train")
    # Polar nodes of every training tree, neutral-rooted sentences included.
    assert len(sst2) == sum(label != 2 for label in nodes) == 98_794
    assert {ex.label for ex in sst2} == {0, 1}
    # Dev and test stay whole sentences.
    assert len(_phrases("sst2", "dev")) == 872
