"""The command line's exit statuses, one per kind of outcome (``treeattn.cli.status``):
0 success, 1 failed work, 2 bad input (one line naming file:line), 130 interrupted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_engine import TINY
from treeattn.cli import main
from treeattn.cli.io import read_lines
from treeattn.cli.status import BAD_INPUT, FAILED, INTERRUPTED

VANILLA = str(Path(__file__).parent / "fixtures" / "legacy-listops-vanilla.pt")
SETS = [item for option in TINY for item in ("--set", option)]


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("treeattn: error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture
def latin1(tmp_path) -> Path:
    path = tmp_path / "latin1.txt"
    path.write_bytes("a dog\ncaf\xe9 au lait\n".encode("latin-1"))
    return path


def test_parse_a_bad_file(latin1, tmp_path, capsys):
    out = tmp_path / "trees.txt"
    assert main(["parse", str(latin1), "-o", str(out)]) == BAD_INPUT
    assert f"{latin1}:2:4: not valid UTF-8" in one_error_line(capsys)
    assert not out.exists()


def test_predict_a_bad_file(latin1, tmp_path, capsys):
    assert main(["predict", VANILLA, str(latin1)]) == BAD_INPUT
    assert f"{latin1}:2:4: not valid UTF-8" in one_error_line(capsys)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert main(["predict", VANILLA, str(empty)]) == BAD_INPUT
    assert f"{empty}: empty input, no sentence to read" in one_error_line(capsys)


def test_evaluate_a_bad_file_and_a_file_that_is_no_checkpoint(tmp_path, capsys):
    rows = tmp_path / "rows.tsv"
    rows.write_text("9\t[MAX 2 9 ]\n9 [MAX 2 9 ]\n")
    assert main(["evaluate", VANILLA, str(rows)]) == BAD_INPUT
    assert f"{rows}:2:1: expected 'label<TAB>expression'" in one_error_line(capsys)
    assert main(["evaluate", str(rows), "test"]) == BAD_INPUT
    # One error, though torch's reason, quoted in it, runs over several lines.
    assert f"{rows}: not a treeattn checkpoint" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "absent.pt"), "test"]) == BAD_INPUT
    assert "no checkpoint at" in one_error_line(capsys)


def test_train_a_bad_config_value(tmp_path, capsys):
    out = f"out_dir={tmp_path / 'run'}"
    assert main(["train", "--set", "train.epochs=many", "--set", out]) == BAD_INPUT
    assert "train.epochs: expected int" in one_error_line(capsys)
    assert main(["train", "--set", "model.attention=nope", "--set", out]) == BAD_INPUT
    assert "model.attention='nope' is not known" in one_error_line(capsys)
    assert main(["train", str(tmp_path / "absent.yaml")]) == BAD_INPUT
    one_error_line(capsys)


def test_translate_a_bad_file_or_a_missing_model(latin1, tmp_path, capsys):
    # The input is read before the model is loaded: a bad line fails at once.
    assert main(["translate", str(tmp_path / "absent.pt"), str(latin1)]) == BAD_INPUT
    assert f"{latin1}:2:4: not valid UTF-8" in one_error_line(capsys)
    text = tmp_path / "text.txt"
    text.write_text("A dog runs.\n")
    assert main(["translate", str(tmp_path / "absent.pt"), str(text)]) == BAD_INPUT
    assert "no checkpoint at" in one_error_line(capsys)
    assert main(["translate", VANILLA, str(text)]) == BAD_INPUT
    assert "not a translation model" in one_error_line(capsys)


def test_a_bad_argument_is_bad_input_too(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["show", "trees.txt", "--limit", "0"])
    assert exit_info.value.code == BAD_INPUT


def test_ctrl_c_in_any_command_is_one_line_and_130(monkeypatch, tmp_path, capsys):
    from treeattn.trees import treebank

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(treebank, "read_treebank", interrupted)
    assert main(["show", str(tmp_path / "trees.txt")]) == INTERRUPTED
    assert capsys.readouterr().err == "treeattn: interrupted\n"


def stop_at_the_first_step(monkeypatch) -> None:
    """As if Ctrl-C came during the first training step."""
    from treeattn.engine import trainer

    enter = trainer._StopRequest.__enter__

    def requested(self):
        enter(self)
        self.requested = True
        return self

    monkeypatch.setattr(trainer._StopRequest, "__enter__", requested)


def test_train_stopped_by_ctrl_c_saves_and_exits_130(monkeypatch, tmp_path, capsys):
    stop_at_the_first_step(monkeypatch)
    run = tmp_path / "run"
    assert main(["train", *SETS, "--set", f"out_dir={run}"]) == INTERRUPTED
    out, err = capsys.readouterr()
    results = json.loads(out)
    assert results["finished"] is False and results["global_step"] == 1
    assert (run / "last.pt").exists() and "the same command resumes" in err


def test_the_demo_stops_with_its_first_interrupted_model(monkeypatch, tmp_path, capsys):
    stop_at_the_first_step(monkeypatch)
    assert main(["demo", "--out", str(tmp_path), *SETS]) == INTERRUPTED
    assert capsys.readouterr().err.endswith("treeattn: interrupted\n")
    assert not (tmp_path / "results.json").exists()
    # Only the models that had started: as many as train at once.
    from treeattn.demo import worker_shape
    from treeattn.models.registry import encoder_names

    workers, _ = worker_shape(len(encoder_names()))
    assert 1 <= len(list(tmp_path.iterdir())) <= workers


def test_a_diverged_run_is_failed_work(monkeypatch, tmp_path, capsys):
    from treeattn.trees import treebank

    def diverged(*_):
        raise FloatingPointError("training loss became nan by step 3")

    monkeypatch.setattr(treebank, "read_treebank", diverged)
    assert main(["show", str(tmp_path / "trees.txt")]) == FAILED
    assert "loss became nan" in one_error_line(capsys)


def test_help_imports_no_torch_and_the_module_runs():
    check = (
        "import sys, contextlib, io\n"
        "from treeattn.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'exit status:' in out.getvalue()\n"
        "assert 'torch' not in sys.modules, 'torch imported for --help'\n"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=300)
    done = subprocess.run(
        [sys.executable, "-m", "treeattn.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.startswith("treeattn ")


def test_one_line_reader_for_every_command(tmp_path, monkeypatch):
    text = tmp_path / "text.txt"
    text.write_text("a b\n\nc\n\n\n")
    assert read_lines(str(text)) == (["a b", "", "c"], str(text))
    assert read_lines(str(text), blank_lines=True) == (["a b", "", "c", "", ""], str(text))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n")
    for source in (empty, blank):  # refused alike with blank lines kept or not
        for keep in (False, True):
            with pytest.raises(ValueError, match=f"{source}: empty input"):
                read_lines(str(source), blank_lines=keep)

    class Stdin:
        buffer = __import__("io").BytesIO(b"\xef\xbb\xbfx y\r\nz\n")

    monkeypatch.setattr(sys, "stdin", Stdin)
    assert read_lines("-") == (["x y", "z"], "<stdin>")


def test_closed_stdin_and_a_bad_output_path_are_bad_input(tmp_path, monkeypatch, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Dogs bark .\n")
    monkeypatch.setattr(sys, "stdin", None)  # as Python starts with ``<&-``
    assert main(["parse", "-"]) == BAD_INPUT
    assert "<stdin>: standard input is closed" in capsys.readouterr().err
    assert main(["parse", str(source), "--tokenized", "-o", str(tmp_path)]) == BAD_INPUT
    assert "is a directory" in capsys.readouterr().err
    missing = tmp_path / "nowhere" / "out.txt"
    assert main(["parse", str(source), "--tokenized", "-o", str(missing)]) == BAD_INPUT
    assert f"the directory {missing.parent} does not exist" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.partial"))  # nothing left behind
    out = tmp_path / "out.txt"
    assert main(["parse", str(source), "--tokenized", "-o", str(out)]) == 0
    assert out.read_text().startswith("(")


def test_ud_from_a_parser_without_it_is_refused_in_the_command_line_s_words(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Dogs bark .\n")
    command = ["parse", str(source), "--tokenized", "--model", "fast", "--format", "conllu"]
    assert main([*command, "--dependencies", "ud"]) == BAD_INPUT
    error = one_error_line(capsys)
    assert "has no Universal Dependencies; use --dependencies tree" in error
    assert "dependencies='tree'" not in error
