import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import train
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.config import Config, apply_override, read_raw_config
from treeattn.engine.task import evaluating
from treeattn.tasks import load_config
from treeattn.tasks.trained import load_trained

TINY = [
    "data.train_size=120",
    "data.dev_size=40",
    "data.test_size=40",
    "data.max_length=30",
    "model.d_model=16",
    "model.n_heads=2",
    "model.d_ff=32",
    "train.epochs=2",
    "train.max_tokens=300",
    "train.warmup_steps=3",
    "train.log_every=2",
    "train.checkpoint_every=1000",
    "train.progress=false",
]


def tiny_config(out_dir, *extra: str) -> Config:
    return load_config(None, [*TINY, f"out_dir={out_dir}", *extra])


def test_overrides_are_typed_and_unknown_keys_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  d_model: 32\ntrain:\n  lr: 0.01\n")
    cfg = load_config(path, ["train.lr=3e-4", "train.progress=false", "seed=7"])
    assert cfg.model.d_model == 32
    assert cfg.train.lr == pytest.approx(3e-4)
    assert cfg.train.progress is False and cfg.seed == 7
    with pytest.raises(ValueError, match="unknown key"):
        load_config(None, ["train.learning_rate=1"])
    with pytest.raises(ValueError, match="expected int"):
        load_config(None, ["model.d_model=big"])
    with pytest.raises(ValueError, match="key=value"):
        apply_override({}, "train.lr")


def test_training_learns_and_writes_its_outputs(tmp_path):
    # Forty expressions, forty epochs, no dropout: the model must fit its training data.
    fit_small = ["data.train_size=40", "model.dropout=0.0", "train.lr=5e-3", "train.warmup_steps=5"]
    results = train(tiny_config(tmp_path, "train.epochs=40", *fit_small))
    assert results["finished"]
    for name in ("best.pt", "last.pt", "metrics.jsonl", "results.json", "learning_curve.png"):
        assert (tmp_path / name).exists(), name
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert sum(r.get("split") == "dev" for r in records) == 40
    losses = [r["train_loss"] for r in records if "train_loss" in r]
    assert losses[-1] < 0.6 * losses[0]
    trained = load_trained(tmp_path / "last.pt").evaluate("train")
    assert trained["accuracy"] >= 60  # chance is about 10
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["test_accuracy"] == results["test_accuracy"]
    best = load_trained(tmp_path / "best.pt").evaluate("test")
    assert best["accuracy"] == pytest.approx(results["test_accuracy"])


@pytest.mark.parametrize("stop_at", [3, 7, 10])  # mid-epoch 1, its last step, mid-epoch 2
def test_resumed_training_ends_with_the_same_weights(tmp_path, stop_at):
    periodic = "train.checkpoint_every=4"  # checkpoints between epoch ends too
    straight = tmp_path / "straight"
    expected = train(tiny_config(straight, periodic))
    interrupted = tmp_path / "interrupted"
    first = train(tiny_config(interrupted, periodic), stop_after_steps=stop_at)
    assert not first["finished"] and first["global_step"] == stop_at
    second = train(tiny_config(interrupted, periodic))
    assert second["finished"]
    for key in ("global_step", "best_epoch", "dev_accuracy", "test_accuracy"):
        assert second[key] == expected[key], key
    for name in ("last.pt", "best.pt"):
        a = load_checkpoint(straight / name)
        b = load_checkpoint(interrupted / name)
        for key, value in a["model"].items():
            assert torch.equal(value, b["model"][key]), (name, key)
    # The resumed run logged each step once.
    steps = [
        json.loads(line)["step"]
        for line in (interrupted / "metrics.jsonl").read_text().splitlines()
        if "train_loss" in line
    ]
    assert steps == sorted(set(steps))


def test_resume_refuses_a_different_config_but_not_a_different_display(tmp_path):
    train(tiny_config(tmp_path), stop_after_steps=2)
    with pytest.raises(ValueError, match=r"another configuration \(train.lr: 0.002 -> 0.5\)"):
        train(tiny_config(tmp_path, "train.lr=0.5"))
    # Showing a progress bar or not changes nothing that is computed.
    assert train(tiny_config(tmp_path, "train.progress=true"))["finished"]


def test_a_finished_inverse_sqrt_run_trains_further_to_the_same_weights(tmp_path):
    schedule = "train.schedule=inverse_sqrt"
    straight = tmp_path / "straight"
    expected = train(tiny_config(straight, schedule, "train.epochs=3"))
    extended = tmp_path / "extended"
    first = train(tiny_config(extended, schedule, "train.epochs=1"))
    assert first["finished"] and (extended / "results.json").exists()
    further = tiny_config(extended, schedule, "train.epochs=3")
    train(further, stop_after_steps=first["global_step"] + 1)
    assert not (extended / "results.json").exists()  # the shorter run's is not this one's
    again = train(further)
    for key in ("global_step", "best_epoch", "dev_accuracy", "test_accuracy"):
        assert again[key] == expected[key], key
    assert json.loads((extended / "config.json").read_text())["train"]["epochs"] == 3
    a, b = load_checkpoint(straight / "last.pt"), load_checkpoint(extended / "last.pt")
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    # Cut shorter than what it has done, it would misreport; under a schedule that decays
    # to the last update, a longer run is another run.
    with pytest.raises(ValueError, match=r"has done 3 epochs, more than train.epochs=2"):
        train(tiny_config(extended, schedule, "train.epochs=2"))
    linear = tmp_path / "linear"
    train(tiny_config(linear, "train.epochs=1"))
    with pytest.raises(ValueError, match=r"train.epochs: 1 -> 3"):
        train(tiny_config(linear, "train.epochs=3"))


def test_a_fresh_start_leaves_nothing_of_the_earlier_run(tmp_path):
    train(tiny_config(tmp_path))
    assert (tmp_path / "results.json").exists()
    train(tiny_config(tmp_path, "seed=5"), resume=False, stop_after_steps=1)
    assert not (tmp_path / "results.json").exists()
    assert not (tmp_path / "best.pt").exists()
    assert load_checkpoint(tmp_path / "last.pt")["global_step"] == 1


def test_invalid_settings_are_refused_before_any_work():
    for override, message in [
        ("train.epochs=0", "train.epochs must be at least 1"),
        ("data.train_size=0", "data.train_size must be at least 1"),
        ("model.n_heads=3", "not divisible by model.n_heads=3"),
        ("model.dropout=1.5", "model.dropout=1.5 is out of range"),
        ("train.precision=float16", "train.precision='float16'; use auto, float32, bfloat16"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            load_config(None, [override])


def test_yaml_numbers_without_a_dot_are_floats(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  lr: 3e-4\n")
    assert load_config(path).train.lr == pytest.approx(3e-4)


def test_checkpoints_refuse_pickled_objects(tmp_path):
    # Any class outside the safe allow-list would be code run at load time.
    path = tmp_path / "evil.pt"
    torch.save({"model": argparse.Namespace(command="rm -rf /")}, path)
    with pytest.raises(ValueError, match="holding Python objects") as refused:
        load_checkpoint(path)
    assert "weights_only" not in str(refused.value)  # never the advice to load it unsafely
    (tmp_path / "text.pt").write_text("not a checkpoint\n")
    with pytest.raises(ValueError, match="not a treeattn checkpoint"):
        load_checkpoint(tmp_path / "text.pt")


def test_a_diverging_loss_stops_with_a_clear_error(tmp_path):
    with pytest.raises(FloatingPointError, match=r"training loss became (nan|inf) by step \d+"):
        train(tiny_config(tmp_path, "train.lr=1e30", "train.warmup_steps=1"))


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_the_run_resumes_to_the_same_weights(tmp_path):
    longer = ["data.train_size=600", "train.epochs=3"]
    straight = tmp_path / "straight"
    train(tiny_config(straight, *longer))
    stopped = tmp_path / "stopped"
    sets = [item for o in [*TINY, *longer, f"out_dir={stopped}"] for item in ("--set", o)]
    # Same thread count as this process: it decides the order of floating-point sums.
    env = {**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())}
    process = subprocess.Popen(
        [sys.executable, "-m", "treeattn.cli", "train", *sets],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = stopped / "metrics.jsonl"
    deadline = time.monotonic() + 300  # a guard against a hang, not a timing
    while not (log.exists() and "train_loss" in log.read_text()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "training never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err  # interrupted, after saving a checkpoint
    assert json.loads(out)["finished"] is False
    state = load_checkpoint(stopped / "last.pt")
    assert f"checkpoint saved at update {state['global_step']} in {stopped / 'last.pt'}" in err
    total = load_checkpoint(straight / "last.pt")["global_step"]
    assert 0 < state["global_step"] < total
    train(tiny_config(stopped, *longer))
    resumed = load_checkpoint(stopped / "last.pt")
    assert resumed["global_step"] == total
    for key, value in load_checkpoint(straight / "last.pt")["model"].items():
        assert torch.equal(value, resumed["model"][key]), key


def test_the_demo_setup_is_configs_listops_yaml():
    # docs/results/listops.md#listops-the-demo describes the demo by this file; the demo
    # itself uses the defaults with its SETTINGS.
    from treeattn.demo import SETTINGS

    path = Path(__file__).parents[1] / "configs" / "listops.yaml"
    from_file = load_config(path, ["out_dir=runs/default"])
    assert from_file == load_config(None, list(SETTINGS))


def test_a_failed_start_leaves_no_folder_and_a_resume_says_where_it_starts(tmp_path, capsys):
    run = tmp_path / "run"
    with pytest.raises(ValueError, match="max_depth=2"):
        train(
            tiny_config(run, "model.attention=hierarchical", "model.attention_options.max_depth=2")
        )
    assert not run.exists()
    train(tiny_config(run), stop_after_steps=2)
    assert "stopped: checkpoint saved at update 2" in capsys.readouterr().err
    train(tiny_config(run))
    assert f"resuming from update 2 of {run / 'last.pt'}" in capsys.readouterr().err


def test_evaluating_restores_the_mode_even_when_the_block_raises():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    with pytest.raises(RuntimeError), evaluating(model):
        assert not model.training and not model[1].training
        raise RuntimeError("decoding failed")
    assert model.training and model[1].training
    model.eval()
    with evaluating(model):
        pass
    assert not model.training


def test_bfloat16_training_multiplies_in_bfloat16_and_keeps_float32_weights(tmp_path):
    from treeattn.engine.distributed import Replica
    from treeattn.engine.trainer import Trainer
    from treeattn.tasks import make_task

    seen = {"train": set(), "eval": set()}

    def record(module, inputs, output):
        seen["train" if module.training else "eval"].add(output.dtype)

    cfg = tiny_config(tmp_path, "train.precision=bfloat16", "train.epochs=1")
    trainer = Trainer(make_task(cfg), Replica(0, 1, torch.device("cpu")))
    for module in trainer.model.modules():
        if isinstance(module, torch.nn.Linear):
            module.register_forward_hook(record)
    results = trainer.run()
    assert results["finished"] and 0 <= results["test_accuracy"] <= 100
    assert seen == {"train": {torch.bfloat16}, "eval": {torch.float32}}
    weights = load_checkpoint(tmp_path / "best.pt")["model"]
    assert {w.dtype for w in weights.values() if w.is_floating_point()} == {torch.float32}
    assert results["precision"] == "bfloat16"


def test_auto_precision_is_bfloat16_only_where_the_hardware_computes_it(tmp_path, monkeypatch):
    from treeattn.engine import precision

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n", encoding="utf-8")
    assert precision.cpu_flags(cpuinfo) == {"fpu", "sse2", "avx2", "avx512f"}
    assert precision.cpu_flags(tmp_path / "none") == frozenset()
    cpu = torch.device("cpu")
    assert not precision.native_bfloat16(cpu, frozenset({"avx2", "avx512f"}))
    assert precision.native_bfloat16(cpu, frozenset({"avx2", "avx512_bf16"}))
    assert precision.native_bfloat16(cpu, frozenset({"amx_bf16"}))
    assert precision.resolve_precision("float32", cpu)[0] == "float32"
    assert precision.resolve_precision("bfloat16", cpu)[0] == "bfloat16"
    for flags, chosen in (
        (frozenset({"avx2"}), "float32"),
        (frozenset({"avx512_bf16"}), "bfloat16"),
    ):
        monkeypatch.setattr(precision, "cpu_flags", lambda flags=flags: flags)
        assert precision.resolve_precision("auto", cpu)[0] == chosen


def test_an_auto_run_says_and_records_what_it_chose(tmp_path, capsys):
    from treeattn.engine.precision import resolve_precision

    results = train(tiny_config(tmp_path, "train.precision=auto", "train.epochs=1"))
    chosen, why = resolve_precision("auto", torch.device("cpu"))
    assert results["precision"] == chosen
    assert f"precision: {chosen} ({why})" in capsys.readouterr().err


def test_best_epoch_counts_as_the_log_counts(tmp_path, capsys):
    results = train(tiny_config(tmp_path, "train.epochs=3", "train.progress=true"))
    logged = re.findall(
        r"^epoch (\d+) update \d+: dev accuracy ([\d.]+)", capsys.readouterr().out, re.M
    )
    best = max(logged, key=lambda line: float(line[1]))  # the first epoch with the best score
    assert results["best_epoch"] == int(best[0]) and 1 <= results["best_epoch"] <= 3


def test_a_log_without_a_bar_hears_from_training_between_evaluations(tmp_path, monkeypatch, capsys):
    from treeattn.engine import trainer

    monkeypatch.setattr(trainer, "PROGRESS_LINE_SECONDS", 0.0)
    train(tiny_config(tmp_path, "train.epochs=1", "train.progress=true"))
    lines = [line for line in capsys.readouterr().err.splitlines() if "updates/s" in line]
    assert lines and re.fullmatch(r"epoch 1/1: update 1 of \d+, [\d.]+ updates/s", lines[0])


def test_the_log_s_rate_is_true_after_checkpoints_and_its_end_is_max_updates(
    tmp_path, monkeypatch, capsys
):
    """A clock that moves 1 s at every reading: no line may claim more than one update a
    second, even with a checkpoint (which restarts the training-time clock) at every update;
    and a run stopped by train.max_updates says it stops there."""
    from treeattn.engine import trainer

    ticks = iter(range(10**6))
    monkeypatch.setattr(trainer.time, "perf_counter", lambda: float(next(ticks)))
    monkeypatch.setattr(trainer, "PROGRESS_LINE_SECONDS", 0.0)
    settings = ("train.epochs=null", "train.max_updates=5", "train.checkpoint_every=1")
    train(tiny_config(tmp_path, *settings, "train.progress=true"))
    lines = [line for line in capsys.readouterr().err.splitlines() if "updates/s" in line]
    found = [re.fullmatch(r"epoch 1: update (\d+) of (\d+), ([\d.]+) updates/s", x) for x in lines]
    assert len(found) == 5 and all(found)
    assert {int(m.group(2)) for m in found} == {5}
    assert max(float(m.group(3)) for m in found) <= 1.0


def test_training_says_what_it_does_from_its_first_second(tmp_path, capsys):
    train(tiny_config(tmp_path, "train.epochs=1", "train.progress=true"))
    lines = capsys.readouterr().err.splitlines()
    assert lines[:3] == [
        "reading train, dev, test",
        "fitting the vocabularies on train",
        "encoding the examples",
    ]


def test_a_config_that_is_not_utf8_is_named_with_line_and_column(tmp_path):
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"task: classify\ndata:\n  name: caf\xe9\n")
    with pytest.raises(ValueError) as error:
        read_raw_config(latin)
    assert str(error.value).startswith(f"{latin}, line 3, column 12: not UTF-8 text (byte 0xe9)")


def test_a_file_that_is_no_config_is_named_not_echoed(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("Remember to try a lower learning rate. " * 200, encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_raw_config(notes)
    message = str(error.value)
    assert message.startswith(f"{notes}: not a config") and "read plain text" in message
    assert "Remember" not in message
