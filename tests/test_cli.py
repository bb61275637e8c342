import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import torch

from tests.test_engine import TINY
from treeattn.cli import main


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for command in (
        "train",
        "evaluate",
        "report",
        "attention",
        "latent-trees",
        "evalb",
        "show",
        "demo",
    ):
        assert command in text


def test_the_command_line_guide_has_a_row_with_an_example_for_every_command():
    import argparse

    from treeattn.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    guide = Path(__file__).parents[1] / "docs" / "guides" / "command-line.md"
    section = guide.read_text(encoding="utf-8").split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \|[^\n]*\| `treeattn ([\w-]+)[^`\n]*` \|$", section, re.M)
    assert sorted(name for name, _ in rows) == sorted(sub.choices)
    assert all(name == example for name, example in rows)  # each example runs its command


def test_train_then_evaluate_a_split_and_a_file(tmp_path, capsys):
    from treeattn.data.listops import generate_listops, write_listops

    run = tmp_path / "run"
    sets = [item for pair in (("--set", o) for o in TINY) for item in pair]
    assert main(["train", *sets, "--set", f"out_dir={run}"]) == 0
    results = json.loads((run / "results.json").read_text())
    capsys.readouterr()
    assert main(["evaluate", str(run / "best.pt"), "test", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["accuracy"] == pytest.approx(results["test_accuracy"])
    data = tmp_path / "extra.tsv"
    write_listops(data, generate_listops(30, 99, max_length=30))
    assert main(["evaluate", str(run / "best.pt"), str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 30
    assert main(["report", str(run), str(run)]) == 0
    report = capsys.readouterr().out
    assert f"test accuracy  {results['test_accuracy']:.2f} ± 0.00" in report
    # A run saved before a key existed is the same configuration; another lr is not.
    older = tmp_path / "older"
    shutil.copytree(run, older)
    config = json.loads((older / "config.json").read_text())
    del config["model"]["attention_dropout"], config["train"]["eval_each_epoch"]
    (older / "config.json").write_text(json.dumps(config))
    assert main(["report", str(run), str(older)]) == 0
    # Another learning rate is another configuration: a line each, and what differs.
    lr = config["train"]["lr"]
    config["train"]["lr"] = lr * 2
    (older / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    plot = tmp_path / "scores.png"
    assert main(["report", str(run), str(older), str(run), "--plot", str(plot)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "configuration",
        "seeds",
        "dev",
        "accuracy",
        "test",
        "accuracy",
        "train",
        "s",
    ]
    assert lines[2].split()[:2] == ["run", "1,1"] and lines[3].split()[:2] == ["older", "1"]
    assert f"older: train.lr {lr * 2} ({lr})" in lines[-2]
    assert lines[-1] == f"written to {plot}" and plot.read_bytes()[:4] == b"\x89PNG"
    assert main(["report", str(run), str(older), "--plot", str(plot), "--score", "bleu"]) == 2
    assert "--score bleu: the runs report dev_accuracy, test_accuracy" in capsys.readouterr().err


def test_errors_are_reported_without_a_traceback(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "missing.pt"), "test"]) == 2
    assert "no checkpoint at" in capsys.readouterr().err
    config = tmp_path / "bad.yaml"
    config.write_text("train:\n  epochs: many\n")
    assert main(["train", str(config)]) == 2
    assert "train.epochs: expected int" in capsys.readouterr().err


def test_demo_writes_its_table(tmp_path, capsys):
    sets = [item for pair in (("--set", o) for o in TINY) for item in pair]
    assert main(["demo", "--out", str(tmp_path), *sets]) == 0
    table = json.loads((tmp_path / "results.json").read_text())["models"]
    assert {"vanilla", "hierarchical", "tree-lstm"} <= set(table)
    run = json.loads((tmp_path / "vanilla" / "results.json").read_text())
    for key in ("dev_accuracy", "test_accuracy", "params", "train_seconds"):
        assert table["vanilla"][key] == run[key]
    out = capsys.readouterr().out
    assert "model          tree      params dev accuracy test accuracy  train s  what it" in out
    assert f"vanilla        none   {run['params']:>9,} {run['dev_accuracy']:>12.2f}" in out
    # Every row says what the model reads and what it is.
    rows = [line for line in out.splitlines() if line.split(" ")[0] in table]
    assert len(rows) == len(table)
    assert all(line.split()[1] in ("gold", "latent", "none") for line in rows)
    assert "Tree-LSTM" in next(line for line in rows if line.startswith("tree-lstm"))
    # The run used the demo's settings, with the overrides after them.
    config = json.loads((tmp_path / "vanilla" / "config.json").read_text())
    assert config["data"]["operators"] == ["MAX", "MIN", "MED"]
    assert config["data"]["train_size"] == 120


def test_evalb_and_show_read_tree_files(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("(S (NP (DT The)) (VP (VB cat) (VBD sat)) (. .))\n")
    assert main(["evalb", str(gold), str(pred)]) == 0
    out = capsys.readouterr().out
    # Gold S, NP(0,2), VP(2,3); predicted S, NP(0,1), VP(1,3): one of three brackets matched;
    # two of the three scored words (the period is not scored) have the right tag.
    assert "Bracketing Recall         =  33.33" in out
    assert "Tagging accuracy          =  66.67" in out
    assert main(["show", str(gold)]) == 0
    assert "(NP (DT The) (NN cat))" in capsys.readouterr().out
    pred.write_text("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)\n")
    assert main(["evalb", str(gold), str(pred)]) == 2
    assert "pred.txt:1:1: unbalanced" in capsys.readouterr().err


def test_bad_arguments_get_clear_messages(tmp_path, capsys):
    config = tmp_path / "broken.yaml"
    config.write_text("train: [unclosed\n")
    assert main(["train", str(config)]) == 2
    assert "broken.yaml: not valid YAML" in capsys.readouterr().err
    assert main(["show", str(tmp_path)]) == 2
    assert "treeattn: error:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["show", str(config), "--limit", "0"])


def test_more_bad_input_is_named_not_traced(tmp_path, capsys):
    sets = [item for o in TINY for item in ("--set", o)]
    run = tmp_path / "run"
    assert main(["train", *sets, "--set", f"out_dir={run}"]) == 0
    capsys.readouterr()
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    assert main(["evaluate", str(run / "best.pt"), str(empty)]) == 2
    assert f"{empty}: no examples" in capsys.readouterr().err
    tensor_file = tmp_path / "tensor.pt"

    torch.save(torch.zeros(3), tensor_file)
    assert main(["evaluate", str(tensor_file), "test"]) == 2
    assert "not a checkpoint written by `treeattn train`" in capsys.readouterr().err
    bad_option = ["--set", "model.attention_options={foo: 1}", "--set", f"out_dir={tmp_path}/b"]
    assert main(["train", *sets, *bad_option]) == 2
    assert "model.attention_options.foo is not an option of vanilla" in capsys.readouterr().err
    assert main(["train", *sets, "--set", "train.device=gpu"]) == 2
    assert "use auto, cpu, cuda or cuda:N" in capsys.readouterr().err
    trees = tmp_path / "trees.txt"
    trees.write_text("(S (NP a) (VP b))\n")
    assert main(["show", str(trees), "--first", "2"]) == 2
    assert "holds 1 trees; --first 2 is past them" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly(tmp_path):
    import subprocess
    import sys

    trees = tmp_path / "trees.txt"
    trees.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n" * 5000)
    command = f"{sys.executable} -m treeattn.cli show {trees} | head -n 1"
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("# tree 1 of 5000")
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr


def test_every_line_reader_allows_blank_lines_at_the_end_only(tmp_path, capsys):
    tree = "(S (NP (DT the) (NN cat)) (VP (VBD sat)))"
    trailing = tmp_path / "trailing.txt"
    trailing.write_text(f"{tree}\n\n\n")
    assert main(["show", str(trailing)]) == 0
    between = tmp_path / "between.txt"
    between.write_text(f"{tree}\n\n{tree}\n")
    capsys.readouterr()
    assert main(["show", str(between)]) == 2
    assert f"{between}:2:1: empty line" in capsys.readouterr().err
    from treeattn.data.listops import read_listops

    rows = tmp_path / "rows.tsv"
    rows.write_text("9\t[MAX 2 9 ]\n\n")
    assert len(read_listops(rows)) == 1


def test_an_empty_input_file_is_an_error_naming_it(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for args in (["evalb", str(empty), str(empty)], ["show", str(empty)]):
        assert main(args) == 2
        assert f"{empty}: no tree in the file" in capsys.readouterr().err


def _help(capsys, *command: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_the_top_level_help_names_every_task(capsys):
    from treeattn import plugins

    text = " ".join(_help(capsys).split())
    for name in [t.name for t in plugins.tasks.entries() if t.__module__.startswith("treeattn.")]:
        assert re.search(rf"\b{re.escape(name)}\b", text), name


@pytest.mark.parametrize("command", ["view", "predict", "evaluate", "translate"])
def test_a_help_that_names_the_shipped_parsers_names_them_all(capsys, command):
    from treeattn import plugins

    text = " ".join(_help(capsys, command).split())
    assert all(re.search(rf"\b{name}\b", text) for name in plugins.parsers.names()), command


def test_a_checkpoint_that_is_not_there_is_told_from_the_shipped_parsers(capsys, tmp_path):
    assert main(["view", "acurate", "-o", str(tmp_path / "page.html")]) == 2
    error = capsys.readouterr().err
    assert "no checkpoint at acurate, nor a shipped parser of that name" in error
    assert "accurate, fast, accurate-ptb" in error


def test_the_top_level_help_fits_an_80_column_terminal(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    long = [line for line in _help(capsys).splitlines() if len(line) > 79]
    assert long == []  # a longer example would break across lines


def test_train_and_evaluate_help_name_every_task_and_its_splits(capsys):
    from treeattn import plugins
    from treeattn.tasks import load_config, make_task

    train_help = " ".join(_help(capsys, "train").split())
    evaluate_help = " ".join(_help(capsys, "evaluate").split())
    # The package's own tasks (a test may have registered one of its own beside them).
    for name in [t.name for t in plugins.tasks.entries() if t.__module__.startswith("treeattn.")]:
        assert name in train_help
        splits = make_task(load_config(None, [f"task={name}"])).splits
        # Each task's splits, in order, after its name.
        assert re.search(rf"{name}[^:]*: {', '.join(splits)}", evaluate_help), name
    assert "`treeattn mechanisms`" in train_help


def test_the_tree_options_name_the_tree_sources_kinds(capsys):
    from treeattn.cli.arguments import TREE_KINDS
    from treeattn.parsing.tree_source import FILES, KINDS

    # Files come with their sentences (translate --trees FILE), not as a kind to choose.
    assert TREE_KINDS == tuple(kind for kind in KINDS if kind != FILES)
    for command in ("evaluate", "predict", "translate"):
        text = " ".join(_help(capsys, command).split())
        assert "--trees KIND" in text and "--parser MODEL" in text, command
        assert all(kind in text for kind in TREE_KINDS), command


def test_parse_help_explains_every_option(capsys):
    text = _help(capsys, "parse")
    for option in ("--format", "--split-sentences", "--tokenized"):
        described = re.search(rf"^ +{option}[^\n]*\n(?: {{10,}}[^\n]*\n)*", text, re.M)
        assert described and len(described.group().split()) > 3, option


def test_mechanisms_lists_the_registry(capsys):
    from treeattn import plugins
    from treeattn.attention.registry import Mechanism
    from treeattn.attention.vanilla import VanillaSelfAttention
    from treeattn.models.registry import encoder_names

    assert main(["mechanisms"]) == 0
    text = capsys.readouterr().out
    for name in encoder_names():
        assert re.search(rf"^  {re.escape(name)} ", text, re.M), name
    assert "local_heads=2" in text and "test_2016_flickr" in text
    # Which injections have a causal form, as each declares it.
    for name in encoder_names():
        injection = plugins.mechanisms[name].capabilities.injection
        if injection is not None:
            after = text.split(f"\n  {name} ", 1)[1]
            line = re.search(r"inside a pretrained encoder: .*", after).group()
            assert ("in decoders too (causal)" in line) == injection.causal_form, name
    # Every data set a task reads, as the guides and the configs name them.
    assert re.search(r"^  parse +ptb-sample, ud-en-ewt, joint, files;", text, re.M)
    # A mechanism registered later is listed too: the list is the registry's.
    later = type("Later", (VanillaSelfAttention,), {})
    plugins.mechanisms.register(Mechanism("listed-later", layer=later))
    try:
        assert main(["mechanisms"]) == 0
        assert "  listed-later " in capsys.readouterr().out
    finally:
        plugins.mechanisms.unregister("listed-later")


def test_the_show_example_of_the_help_names_a_file_that_exists(capsys, shared_data):
    (line,) = [line for line in _help(capsys).splitlines() if "treeattn show" in line]
    args = shlex.split(line.replace("$TREEATTN_DATA", str(shared_data)))[1:]
    assert Path(args[1]).is_file()
    assert main(args) == 0
