"""CoLA as a classify data set: the reader on the real files and on broken ones, the carved
dev split, Matthews correlation as what chooses and reports, and ``data.train_size`` (the
same first N sentences for every model) on CoLA, SST-2 and labeled files."""

from __future__ import annotations

import doctest
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import train
from treeattn.data import cola as cola_data
from treeattn.data import sampling
from treeattn.data.cola import carved_dev, load_cola, read_cola_file
from treeattn.engine.report import format_report, group_runs
from treeattn.errors import FormatError
from treeattn.tasks import config_from_dict, load_config, make_task
from treeattn.tasks.datasets import open_dataset

# A tiny from-scratch encoder: what is checked is the plumbing, not what it learns.
TINY = [
    "data.name=cola",
    "model.d_model=16",
    "model.n_heads=2",
    "model.d_ff=32",
    "model.n_layers=1",
    "train.max_updates=2",
    "train.max_tokens=2000",
    "train.eval_max_tokens=8000",
    "train.progress=false",
    "train.device=cpu",
]


def test_the_docstring_examples_hold():
    assert doctest.testmod(sampling).failed == 0
    assert doctest.testmod(cola_data).failed == 0


# --------------------------------------------------------------------- the real files


def test_the_release_files_are_read_whole(shared_data):
    counts = {}
    for name, file in cola_data.COLA_FILES.items():
        rows = read_cola_file(shared_data / "cola" / file)
        counts[name] = (len(rows), Counter(row.label for row in rows))
    assert counts == {
        "train": (8551, Counter({1: 6023, 0: 2528})),  # SOURCE.md's counts
        "in_domain": (527, Counter({1: 365, 0: 162})),
        "out_of_domain": (516, Counter({1: 354, 0: 162})),
    }
    first = read_cola_file(shared_data / "cola" / "in_domain_train.tsv")[0]
    assert (first.source, first.label, first.mark, first.line) == ("gj04", 1, "", 1)
    assert first.sentence.startswith("Our friends won't buy this analysis, let alone")
    # The one unacceptable sentence of the release without a mark is read as labeled.
    unmarked = read_cola_file(shared_data / "cola" / "in_domain_train.tsv")[1513]
    assert (unmarked.label, unmarked.mark, unmarked.source) == (0, "", "r-67")


def test_dev_is_a_fixed_tenth_carved_from_train(shared_data):
    train_rows, dev_rows = load_cola("train", shared_data), load_cola("dev", shared_data)
    assert (len(train_rows), len(dev_rows)) == (7696, 855)
    assert Counter(row.label for row in dev_rows) == Counter({1: 629, 0: 226})
    lines = [row.line for row in train_rows + dev_rows]
    assert sorted(lines) == list(range(1, 8552))  # every line once, in one of the two
    again = load_cola("dev", shared_data)
    assert [row.line for row in again] == [row.line for row in dev_rows]
    # Pinned: a change to the carve would score every checkpoint on other sentences.
    assert carved_dev(8551)[:8] == [8, 11, 12, 65, 66, 69, 101, 111]
    assert [row.line - 1 for row in dev_rows[:8]] == carved_dev(8551)[:8]


@pytest.mark.slow
def test_the_data_set_reads_words_and_scores_by_matthews_correlation(shared_data):
    task = make_task(load_config(None, ["data.name=cola"]))
    assert task.splits == ("train", "dev", "in_domain", "out_of_domain")
    assert task.final_splits == ("dev", "in_domain", "out_of_domain")
    assert task.headline == ("mcc", "accuracy")
    assert (task.selection.split, task.selection.metric) == ("dev", "mcc")
    # Analyses read the first held-out split unless told: CoLA has no test.
    assert task.held_out_split == "in_domain"
    assert make_task(load_config(None, ["data.name=sst2"])).held_out_split == "test"
    sizes = {split: len(task.read(split)[0]) for split in task.splits}
    assert sizes == {"train": 7696, "dev": 855, "in_domain": 527, "out_of_domain": 516}
    first = task.read("train")[0][0]
    # The Penn Treebank words the parser reads; labels are class ids.
    assert first.tokens[:5] == ["Our", "friends", "wo", "n't", "buy"]
    assert first.label == 1 and first.tree is None  # no trees: a vanilla model reads none
    # SST keeps accuracy alone
    assert make_task(load_config(None, ["data.name=sst2"])).headline == ("accuracy",)


def test_cola_has_no_gold_trees():
    with pytest.raises(ValueError, match="CoLA has no trees of its own: use parser or right"):
        load_config(None, ["data.name=cola", "data.trees=gold"])


# --------------------------------------------------------------------- broken files


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("gj04\t1\tDogs bark.", ":2:1: 3 tab-separated columns, expected 4 (source, label"),
        ("gj04\tyes\t\tDogs bark.", ":2:6: label 'yes' is not 0 or 1"),
        ("gj04\t0\t*\t  ", ":2:10: empty sentence"),
        ("\t1\t\tDogs bark.", ":2:1: empty source code"),
    ],
)
def test_a_bad_line_is_named_by_file_line_and_column(tmp_path, line, message):
    path = tmp_path / "bad.tsv"
    path.write_text(f"gj04\t1\t\tCats sleep.\n{line}\n")
    with pytest.raises(FormatError) as error:
        read_cola_file(path)
    assert str(error.value).startswith(f"{path}{message}")  # the second line


def test_an_empty_line_between_sentences_is_an_error(tmp_path):
    path = tmp_path / "gap.tsv"
    path.write_text("gj04\t1\t\tCats sleep.\n\ngj04\t0\t*\tSleep cats.\n")
    with pytest.raises(FormatError, match=r"gap.tsv:2:1: empty line"):
        read_cola_file(path)


def test_a_file_in_its_format_is_read_as_sentences(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("x\t1\t\tThe cat (a tabby) sleeps.\nx\t0\t*\tCat the sleeps.\n")
    dataset = open_dataset(load_config(None, ["data.name=cola"]).data)
    rows = dataset.read_file(path)
    assert [row.label for row in rows] == [1, 0]
    assert rows[0].tokens == ["The", "cat", "-LRB-", "a", "tabby", "-RRB-", "sleeps", "."]


# --------------------------------------------------------------------- small training sets


def test_the_first_of_a_shuffle_is_fixed_and_nested():
    items = list(range(100))
    ten = sampling.first_of_shuffle(items, 10, "demo")
    assert ten == sampling.first_of_shuffle(items, 10, "demo")  # the same every call
    assert ten == sorted(ten) and len(set(ten)) == 10  # in their own order
    assert set(ten) < set(sampling.first_of_shuffle(items, 20, "demo"))  # nested
    assert ten != sampling.first_of_shuffle(items, 10, "other")  # the seed matters
    assert ten != items[:10]  # a shuffle, not the head of the file
    assert sampling.first_of_shuffle(items, None, "demo") == items
    with pytest.raises(ValueError, match="data.train_size=101, but x has 100 sentences"):
        sampling.first_of_shuffle(items, 101, "demo", "x")


@pytest.mark.slow
def test_train_size_gives_every_model_the_same_sentences(shared_data):
    def words(*overrides: str) -> list[list[str]]:
        task = make_task(load_config(None, ["data.name=cola", *overrides]))
        return [ex.tokens for ex in task.read("train")[0]]

    thousand = words("data.train_size=1000")
    assert len(thousand) == 1000
    # Whatever the run's seed or model: the data fixes them.
    assert words("data.train_size=1000", "seed=7", "model.attention=constituent") == thousand
    bigger = words("data.train_size=2000")
    assert all(sentence in bigger for sentence in thousand)
    everything = words()
    assert all(sentence in everything for sentence in bigger)  # never a dev sentence
    dev = make_task(load_config(None, ["data.name=cola", "data.train_size=1000"])).read("dev")
    assert len(dev[0]) == 855  # the other splits stay whole
    with pytest.raises(ValueError, match="data.train_size=8000, but cola train has 7,696"):
        words("data.train_size=8000")


@pytest.mark.slow
def test_train_size_on_sst2_keeps_sentences_and_their_phrases(shared_data):
    def read(*overrides: str) -> list:
        return open_dataset(load_config(None, ["data.name=sst2", *overrides]).data).load_split(
            "train"
        )

    sentences = read("data.train_size=1000")
    assert len(sentences) == 1000 and {ex.label for ex in sentences} == {0, 1}
    # Phrase-level training reads the phrases of the same sentences (none whose root is
    # neutral): the whole sentences among its rows are those.
    phrases = read("data.train_size=1000", "data.phrase_level=true")
    assert len(phrases) > 10 * len(sentences)
    whole = sorted(ex.tokens for ex in sentences)
    longest = {len(ex.tokens) for ex in sentences}
    rows = sorted(ex.tokens for ex in phrases if len(ex.tokens) in longest)
    assert all(tokens in rows for tokens in whole)
    assert max(len(ex.tokens) for ex in phrases) == max(longest)


def test_train_size_on_labeled_files(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("".join(f"{k % 2}\tsentence {k}\n" for k in range(50)))
    overrides = ["data.name=labeled", f"data.paths.train={path}", f"data.paths.dev={path}"]
    task = make_task(load_config(None, [*overrides, "data.train_size=5"]))
    chosen = [" ".join(ex.tokens) for ex in task.read("train")[0]]
    assert len(chosen) == 5 and len(task.read("dev")[0]) == 50
    again = make_task(load_config(None, [*overrides, "data.train_size=5", "seed=9"]))
    assert [" ".join(ex.tokens) for ex in again.read("train")[0]] == chosen


def test_train_size_must_be_positive():
    with pytest.raises(ValueError, match="data.train_size must be at least 1, got 0"):
        load_config(None, ["data.name=sst2", "data.train_size=0"])


def test_an_old_sst_section_does_not_read_listops_train_size():
    old = {"name": "sst2", "root": None, "min_count": 1, "lowercase": False}
    old |= {"phrase_level": False, "train_size": 6000, "dev_size": 1000, "test_size": 1000}
    old |= {"max_depth": 3, "max_args": 5, "max_length": 80}
    assert config_from_dict({"task": "classify", "data": old}).data.train_size is None


# --------------------------------------------------------------------- a run


def test_a_run_reports_mcc_and_accuracy_on_both_held_out_splits(shared_data, tmp_path):
    run = tmp_path / "cola-s1"
    results = train(load_config(None, [*TINY, f"out_dir={run}", "data.train_size=200"]))
    scores = [key for key in results if key.endswith(("_mcc", "_accuracy"))]
    assert scores == [
        f"{split}_{metric}"
        for split in ("dev", "in_domain", "out_of_domain")
        for metric in ("mcc", "accuracy")
    ]
    assert all(-100 <= results[key] <= 100 for key in scores)
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    validations = [record for record in logged if "mcc" in record]
    assert validations and all(record["split"] == "dev" for record in validations)
    table = format_report(group_runs([run]))
    assert "out of domain mcc" in table and "in domain accuracy" in table


# --------------------------------------------------------------------- configs and trees

CONFIGS = sorted(Path(__file__).parent.parent.glob("configs/cola-minilm-*.yaml"))


def test_the_cola_configs_hold_five_mechanisms_on_one_schedule():
    names = {path.stem for path in CONFIGS}
    mechanisms = ("vanilla", "distance", "constituent", "hierarchical", "tree-regularization")
    assert names == {f"cola-minilm-{m}" for m in mechanisms}
    for path in CONFIGS:
        cfg = load_config(path)
        make_task(cfg)  # checked as a run checks it
        m, t = cfg.model, cfg.train
        assert (cfg.data.name, cfg.data.trees, cfg.data.train_size) == ("cola", "parser", None)
        assert (m.backbone, m.backbone_lr, t.lr, t.precision, t.epochs) == (
            "minilm",
            1e-4,
            2e-4,
            "auto",
            6,
        ), path
        mechanism = path.stem.split("-minilm-")[1]
        assert mechanism in (m.attention, m.tree_loss)


def test_parser_trees_of_raw_sentences_are_logged_and_made_as_sst_s(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "mine.tsv"
    path.write_text("x\t1\t\tThe cat (a tabby) sleeps.\nx\t0\t*\tCat the sleeps on.\n")
    task = make_task(load_config(None, ["data.name=cola", "model.attention=distance"]))
    parsed, _ = task.read(str(path))
    assert f"{path}: the parser's trees of all 2 sentences (accurate, sha256 " in (
        capsys.readouterr().err
    )
    for ex in parsed:  # binary, every node X, the tokenizer's words as its leaves
        assert ex.tree.leaves() == ex.tokens
        assert all(len(t.children) <= 2 and t.label == "X" for t in ex.tree.subtrees())
    assert parsed[0].tokens[2] == "-LRB-"
    assert len(list((tmp_path / "cache" / "trees").glob("*.txt"))) == 1  # kept
    vanilla = make_task(load_config(None, ["data.name=cola"]))
    assert all(ex.tree is None for ex in vanilla.read(str(path))[0])  # nothing parsed
    assert "parser's trees" not in capsys.readouterr().err
