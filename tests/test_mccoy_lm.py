"""McCoy et al.'s (2020) tasks as a causal language model learns them: the strings as a data
set with their gold trees, greedy continuation (a batch gives each prompt what it gets
alone), the scores wired to the data's metrics, a tree-regularized run that logs its tree
loss, and `treeattn generalize` / `generalize-curve` end to end."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.helpers import train
from treeattn.analysis.generalization import score_outputs
from treeattn.cli import main
from treeattn.data.mccoy import McCoyData
from treeattn.data.mccoy.scores import OBJECT_GAP, SUBJECT_GAP, subject_type
from treeattn.data.mccoy.transforms import agree_recent, move_first, move_main
from treeattn.models.causal_lm import CausalLanguageModel
from treeattn.models.continuation import greedy_continuations
from treeattn.models.inputs import EncoderInputs
from treeattn.models.registry import EncoderConfig, build_encoder
from treeattn.parsing.tree_source import GOLD, RIGHT_BRANCHING, TreeSource, right_branching
from treeattn.tasks import load_config, make_task
from treeattn.tasks.datasets import open_dataset
from treeattn.tasks.datasets.mccoy import McCoySettings
from treeattn.tasks.sentences import LabeledSentence

V = 20


def _tiny_lm() -> CausalLanguageModel:
    torch.manual_seed(0)
    config = EncoderConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0)
    return CausalLanguageModel(build_encoder(config, V), V).eval()


def _greedy_alone(model: CausalLanguageModel, prompt: list[int], steps: int) -> list[int]:
    """The literal reference: the whole sequence read again, the last position's argmax."""
    ids = list(prompt)
    for _ in range(steps):
        tokens = torch.tensor([ids])
        with torch.no_grad():
            logits = model(EncoderInputs(tokens, torch.zeros_like(tokens, dtype=torch.bool)))
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt) :]


def test_a_batch_continues_each_prompt_as_it_would_alone():
    model = _tiny_lm()
    prompts = [[3, 4, 5, 6, 7], [8, 9], [10, 11, 12]]
    limits = [6, 4, 5]
    together = greedy_continuations(model, prompts, stop_ids=[], max_new=limits)
    for prompt, limit, got in zip(prompts, limits, together, strict=True):
        assert got == _greedy_alone(model, prompt, limit)
    # A stop token ends its row (kept as the row's last) and no other.
    stop = together[0][1]
    stopped = greedy_continuations(model, prompts, stop_ids=[stop], max_new=limits)
    for got, full in zip(stopped, together, strict=True):
        cut = full.index(stop) + 1 if stop in full else len(full)
        assert got == full[:cut]


@pytest.fixture(scope="module")
def small_root(tmp_path_factory):
    """A copy of mccoy2020/ with the grammars and the first 400 lines of each split: the
    shared files as the tests need them, read in a moment."""
    from treeattn.data.paths import data_dir

    shared = None if data_dir() is None else data_dir() / "mccoy2020"
    if shared is None or not shared.is_dir():
        pytest.skip("McCoy data (mccoy2020/) not found: set TREEATTN_DATA")
    root = tmp_path_factory.mktemp("data") / "mccoy2020"
    shutil.copytree(shared / "cfgs", root / "cfgs")
    for path in shared.glob("*.*"):
        if path.suffix in (".dev", ".test", ".gen"):
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:400]
            (root / path.name).write_text("".join(lines), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def question(small_root) -> McCoyData:
    return McCoyData.load("question", small_root)


def test_scores_count_outputs_as_the_data_metrics_do(question):
    test = question.load_split("test")[:200]
    right = [list(pair.target) for pair in test]
    scores = score_outputs(question, "test", test, right)
    quest = sum(pair.task_word == "quest" for pair in test)
    assert (scores.pairs, scores.transform_pairs) == (200, quest)
    assert scores.sequence_accuracy == 100.0
    # In distribution the two auxiliaries are one word: fronting it is the main one's.
    assert scores.shares == {"main_aux": 100.0, "first_aux": 0.0, "neither_aux": 0.0}

    gen = question.load_split("gen")[:40]
    linear = [move_first(pair.sentence, question.lexicon) for pair in gen[:30]]
    hierarchical = [move_main(pair.sentence, question.lexicon) for pair in gen[30:38]]
    neither = [["the", "yak", "?"]] * 2
    scores = score_outputs(question, "gen", gen, linear + hierarchical + neither)
    assert scores.sequence_accuracy == pytest.approx(100 * 8 / 40)
    assert scores.shares == pytest.approx(
        {"main_aux": 100 * 8 / 40, "first_aux": 100 * 30 / 40, "neither_aux": 100 * 2 / 40}
    )


def test_gen_scores_break_down_by_the_kind_of_subject(question):
    gen = question.load_split("gen")[:200]
    kinds = [subject_type(pair.sentence) for pair in gen]
    assert set(kinds) == {SUBJECT_GAP, OBJECT_GAP}  # gen: a relative clause on every subject
    raven = "our raven who my tyrannosaurus doesn't confuse does amuse some unicorns . quest"
    assert subject_type(question.example(raven.split()).sentence) == OBJECT_GAP
    raven = "our raven who doesn't confuse my tyrannosaurus does amuse some unicorns . quest"
    assert subject_type(question.example(raven.split()).sentence) == SUBJECT_GAP
    # The hierarchical rule where the clause has no subject of its own, the linear one
    # where it has.
    outputs = [
        (move_main if kind == SUBJECT_GAP else move_first)(pair.sentence, question.lexicon)
        for pair, kind in zip(gen, kinds, strict=True)
    ]
    scores = score_outputs(question, "gen", gen, outputs)
    subject_gap, object_gap = scores.by_subject[SUBJECT_GAP], scores.by_subject[OBJECT_GAP]
    assert subject_gap["pairs"] + object_gap["pairs"] == 200
    assert (subject_gap["main_aux"], object_gap["first_aux"]) == (100.0, 100.0)
    share = 100 * subject_gap["pairs"] / 200
    assert scores.shares["main_aux"] == pytest.approx(share)


def test_tense_scores_read_the_main_verb(small_root):
    tense = McCoyData.load("tense", small_root)
    gen = tense.load_split("gen")[:50]
    recent = [agree_recent(pair.sentence, tense.lexicon) for pair in gen]
    scores = score_outputs(tense, "gen", gen, recent)
    assert scores.transform_pairs == 50
    assert scores.shares["agree_recent"] == 100.0 - scores.shares["agree_subject"] > 90


def _tiny_config(root, out_dir, *extra: str):
    return load_config(
        None,
        [
            "task=causal-lm",
            "data.name=mccoy",
            f"data.root={root}",
            "data.task=question",
            "data.train_size=300",
            "data.vocabulary=words",
            "model.d_model=16",
            "model.n_heads=2",
            "model.n_layers=2",
            "model.d_ff=32",
            "model.max_length=64",
            "train.epochs=null",
            "train.max_updates=4",
            "train.max_tokens=1024",
            "train.log_every=2",
            "train.keep_every=2",
            "train.progress=false",
            f"out_dir={out_dir}",
            *extra,
        ],
    )


TREE_REG = [
    "data.trees=gold",
    "model.tree_loss=tree-regularization",
    "model.tree_loss_options={layers: [1]}",
]


@pytest.fixture(scope="module")
def tree_run(small_root, tmp_path_factory):
    """A tiny tree-regularized run (4 updates, step-2.pt and step-4.pt kept), its
    training set drawn into a cache of its own."""
    root = tmp_path_factory.mktemp("mccoy-lm")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TREEATTN_CACHE", str(root / "cache"))
        train(_tiny_config(small_root, root / "run", *TREE_REG))
    return root / "run"


def test_every_training_string_has_a_gold_tree_over_exactly_its_words(
    small_root, tree_run, monkeypatch
):
    monkeypatch.setenv("TREEATTN_CACHE", str(tree_run.parent / "cache"))
    task = make_task(_tiny_config(small_root, tree_run.parent / "unused", *TREE_REG))
    strings, _ = task.read("train")
    assert len(strings) == 300
    for string in strings:
        assert string.tokens[0] == "<s>" and string.tokens[-1] == "</s>"
        assert string.tree.leaves() == string.tokens[1:-1]
        source, output = string.tree.children  # the input's tree, then the output's
        assert source.leaves()[-1] in ("decl", "quest")
        assert output.leaves()[-1] in (".", "?")
    dev, _ = task.read("dev")  # only the training split's trees feed the loss
    assert all(string.tree is None for string in dev)


class _Recording(TreeSource):
    """Right-branching trees, each call's sentences kept: what a parser would be asked."""

    def __init__(self) -> None:
        super().__init__(RIGHT_BRANCHING)
        self.asked: list[list[list[str]]] = []

    def trees(self, sentences, where, progress=True, cache=True):
        self.asked.append([list(words) for words in sentences])
        return super().trees(sentences, where, progress, cache)


def test_made_trees_join_each_part_made_alone_as_the_gold_tree_joins_them(small_root):
    strings = open_dataset(McCoySettings(root=str(small_root), task="question", trees=GOLD))
    rows = strings.load_split("test")[:60]
    source = _Recording()
    made = strings.made_trees(source, rows, "test")
    (asked,) = source.asked  # one call: every input sentence and output at once
    inputs = [row.tokens[: row.tokens.index(row.tree.children[0].leaves()[-1])] for row in rows]
    outputs = [row.tree.children[1].leaves() for row in rows]
    # Each distinct sentence asked once (a declarative's output is its input sentence).
    assert len(asked) == len({tuple(w) for w in asked}) < 2 * len(rows)
    assert {tuple(w) for w in asked} == {tuple(w) for w in inputs + outputs}
    for row, tree, words, output in zip(rows, made, inputs, outputs, strict=True):
        gold = row.tree
        assert (tree.label, tree.leaves()) == (gold.label, gold.leaves())
        source_tree, output_tree = tree.children
        assert source_tree.label == "TOP" and source_tree.children[1] == gold.leaves()[len(words)]
        assert source_tree.children[0] == right_branching(words)
        assert output_tree == right_branching(output)
    bad = [LabeledSentence(["the", "yak", "."], 0)]
    with pytest.raises(ValueError, match="string 1 is not a sentence, a task word"):
        strings.made_trees(source, bad, "file.tsv")


def test_tree_regularization_trains_and_its_loss_is_logged(tree_run):
    records = [json.loads(line) for line in (tree_run / "metrics.jsonl").open()]
    logged = [r for r in records if "train_loss" in r]
    assert [r["step"] for r in logged] == [2, 4]
    assert all(r["train_tree_loss"] > 0 for r in logged)
    assert json.loads((tree_run / "results.json").read_text())["global_step"] == 4


def test_generalize_decodes_and_scores_a_checkpoint(tree_run, tmp_path, capsys):
    out = tmp_path / "scores.json"
    argv = ["generalize", str(tree_run / "last.pt"), "--limit", "12", "--device", "cpu"]
    assert main([*argv, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "main_aux" in printed and "gen" in printed
    scores = json.loads(out.read_text())
    assert [s["split"] for s in scores["splits"]] == ["test", "gen"]
    for split in scores["splits"]:
        assert split["pairs"] == 12
        assert sum(split["shares"].values()) == pytest.approx(100.0)
    assert scores["splits"][1]["transform_pairs"] == 12  # gen: questions only

    plot, curve = tmp_path / "curve.png", tmp_path / "curve.json"
    argv = ["generalize-curve", str(tree_run), "--limit", "6", "--plot", str(plot)]
    assert main([*argv, "-o", str(curve)]) == 0
    (run,) = json.loads(curve.read_text())
    assert [p["step"] for p in run["points"]] == [2, 4] and run["headline"] == "main_aux"
    assert plot.stat().st_size > 0


def test_configs_name_what_the_strings_allow():
    for task in ("question", "tense"):
        for suffix in ("", "-tree-regularization"):
            cfg = load_config(f"configs/mccoy-{task}-lm{suffix}.yaml")
            assert (cfg.data.name, cfg.data.task) == ("mccoy", task)
    with pytest.raises(ValueError, match="data.trees='gold': text takes null, parser"):
        load_config(None, ["task=causal-lm", "data.name=text", "data.trees=gold"])
    with pytest.raises(ValueError, match="masked language modelling reads text"):
        load_config(None, ["task=mlm", "data.name=mccoy"])
    with pytest.raises(ValueError, match="data.task='questions'"):
        load_config(None, ["task=causal-lm", "data.name=mccoy", "data.task=questions"])


@pytest.mark.slow
def test_the_generalization_demo_trains_both_models_and_tables_their_rules(
    small_root, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    tiny = [
        f"data.root={small_root}",
        "data.train_size=300",
        "model.d_model=16",
        "model.n_heads=2",
        "model.n_layers=4",
        "model.d_ff=32",
        "train.max_updates=2",
        "train.eval_every=2",
        "train.checkpoint_every=2",
    ]
    sets = [item for value in tiny for item in ("--set", value)]
    out = tmp_path / "demo"
    assert main(["demo", "--task", "question-formation", "--out", str(out), *sets]) == 0
    rows = json.loads((out / "results.json").read_text())["models"]
    assert list(rows) == ["plain", "tree-regularization"]
    for name, row in rows.items():
        assert row["updates"] == 2
        assert row["gen_main_aux"] + row["gen_first_aux"] <= 100.0
        config = json.loads((out / name / "config.json").read_text())
        assert (config["model"]["tree_loss"] is None) == (name == "plain")
    printed = capsys.readouterr().out
    assert "task: question formation (McCoy et al. 2020)" in printed
    assert "gen main aux" in printed and "tree-regularization  gold" in printed


def test_the_generalization_demo_is_the_configs_cut_short():
    from treeattn.demo_generalization import MODELS, SETTINGS, UPDATES

    cut = [
        f"train.max_updates={UPDATES}",
        "train.warmup_steps=100",
        f"train.eval_every={UPDATES}",
        f"train.checkpoint_every={UPDATES}",
        "train.keep_every=null",
        "out_dir=runs/default",
    ]
    for name, suffix in (("plain", ""), ("tree-regularization", "-tree-regularization")):
        extra, _, _ = MODELS[name]
        from_file = load_config(f"configs/mccoy-question-lm{suffix}.yaml", cut)
        assert from_file == load_config(None, [*SETTINGS, *extra])
