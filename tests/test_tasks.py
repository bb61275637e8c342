"""The task layer: tasks by name in configs, old configs and checkpoints, a toy task through
the unchanged engine, the engine's options for every task, labeled sentence files, predict."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.helpers import train
from tests.test_engine import TINY, tiny_config
from tests.toy_task import CountTask, count_config
from treeattn.cli import main
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.schedule import warmup_inverse_sqrt, warmup_linear_decay
from treeattn.engine.trainer import train as train_task
from treeattn.tasks import load_config, make_task
from treeattn.tasks.trained import load_trained

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------- configs


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_passes_its_task_checks(path):
    # Each one names a task whose checks (data, model, mechanism and loss options) pass.
    assert load_config(path).task


def test_configs_name_their_task_and_old_ones_are_read_as_before():
    assert load_config(ROOT / "configs" / "text-constituent.yaml").task == "mlm"
    assert load_config(ROOT / "configs" / "sst5-vanilla.yaml").task == "classify"
    assert load_config(None).task == "classify"  # the ListOps default
    named = load_config(None, ["task=mlm", "data.name=text"])
    assert named.task == "mlm" and "phrase_level" not in named.to_dict()["data"]
    # A config written before tasks had names holds every key of the shared data section.
    old = load_config(None, ["data.name=text", "data.train_size=6000", "model.pooling=auto"])
    assert old.task == "mlm"
    # Once a task is named, keys it does not have are errors, as any unknown key.
    with pytest.raises(ValueError, match=r"config: unknown key\(s\) data\.train_size"):
        load_config(None, ["task=mlm", "data.name=text", "data.train_size=6000"])
    with pytest.raises(ValueError, match="unknown task 'tag'; known: classify, mlm, parse"):
        load_config(None, ["task=tag"])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data.mask_rate=2", "data.name=text"], "data.mask_rate must lie in (0, 1)"),
        (["task=mlm", "data.name=sst5"], "data.name='sst5'; masked language modelling reads text"),
        (["task=classify", "data.name=text"], "data.name='text' is not a classification data set"),
        (["data.name=labeled", "data.paths.train=a.txt"], "data.paths.dev is missing"),
        (
            ["data.phrase_level=true"],
            "data.phrase_level is not a setting of listops (but of sst5, sst2)",
        ),
        (
            ["data.name=sst5", "data.dev_size=200"],
            "data.dev_size is not a setting of sst5 (but of listops); its settings: name, "
            "min_count, lowercase, root, phrase_level, train_size",
        ),
        (["data.paths.train=a.txt"], "data.paths is not a setting of listops (but of labeled)"),
        (["model.attention=nope"], "model.attention='nope' is not known"),
        (["model.pooling=root"], "model.pooling='root' does not fit vanilla"),
        (
            ["model.attention=distance", "model.attention_options.gaet=soft"],
            "model.attention_options.gaet is not an option of distance; its options: "
            "local_heads, layers, gate, tau",
        ),
        (["data.name=sst7"], "data.name='sst7' is not a classification data set; known: "),
        (["train.schedule=cosine"], "train.schedule='cosine'; use linear or inverse_sqrt"),
        (["train.epochs=null"], "train.epochs and train.max_updates are both null"),
        (["train.eval_every=0"], "train.eval_every must be at least 1"),
        (["train.label_smoothing=1.0"], "train.label_smoothing=1.0 is out of range"),
        (["model.attention_dropout=1.0"], "model.attention_dropout=1.0 is out of range"),
        (
            ["model.attention=tree-lstm", "model.attention_dropout=0"],
            "model.attention_dropout: tree-lstm has no attention",
        ),
    ],
)
def test_each_section_is_checked_up_front_naming_the_key(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        load_config(None, overrides)


def test_the_engine_names_no_task_data_set_or_metric():
    forbidden = re.compile(
        r"(from|import) treeattn\.tasks|[\"']text[\"']|"
        r"\b(accuracy|perplexity|masked_lm|sst\d?|listops|classify|mlm)\b",
        re.IGNORECASE,
    )
    engine = ROOT / "src" / "treeattn" / "engine"
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(engine.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if forbidden.search(line)
    ]
    assert not found, found


# ---------------------------------------------------------------- a task of its own


@pytest.mark.slow
def test_a_toy_task_trains_through_the_engine_and_resumes_after_a_kill(tmp_path):
    settings = ["train.epochs=25", "train.max_tokens=40", "train.lr=0.05", "train.warmup_steps=5"]
    settings += ["train.checkpoint_every=3", "train.log_every=3"]
    straight = train_task(CountTask(count_config(tmp_path / "straight", *settings)))
    assert straight["finished"] and straight["test_error"] < 0.5  # words counted
    records = [r for r in _records(tmp_path / "straight") if r.get("split") == "dev"]
    best = min(records, key=lambda r: r["error"])  # lower is better for this task
    assert straight["best_step"] == best["step"]

    killed = tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.toy_task", str(killed), *settings],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300  # a guard against a hang, not a timing
    while not (killed / "last.pt").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "training never checkpointed"
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)  # no chance to save anything more
    process.wait(timeout=60)
    stopped_at = load_checkpoint(killed / "last.pt")["global_step"]
    assert 0 < stopped_at < straight["global_step"]
    resumed = train_task(CountTask(count_config(killed, *settings)))
    assert resumed["test_error"] == straight["test_error"]
    a, b = load_checkpoint(tmp_path / "straight" / "last.pt"), load_checkpoint(killed / "last.pt")
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert a["task_state"] == {"vocab_size": 10}


def test_updates_evaluations_and_kept_checkpoints_count_in_updates(tmp_path):
    settings = ["train.epochs=null", "train.max_updates=10", "train.eval_every=4"]
    settings += ["train.keep_every=5", "train.max_tokens=40"]
    results = train_task(CountTask(count_config(tmp_path, *settings)))
    assert results["finished"] and results["global_step"] == 10
    dev_steps = [r["step"] for r in _records(tmp_path) if r.get("split") == "dev"]
    assert dev_steps == [4, 8, 10]  # every 4 updates, and where training stops
    assert sorted(p.name for p in tmp_path.glob("step-*.pt")) == ["step-10.pt", "step-5.pt"]
    assert results["best_step"] in dev_steps
    # A finished run asked again trains no further.
    assert train_task(CountTask(count_config(tmp_path, *settings)))["global_step"] == 10


def test_evaluations_can_skip_the_epochs_ends(tmp_path):
    """An epoch is 36 updates here: with eval_each_epoch off, only every 5th update and the
    last one are evaluated."""
    settings = ["train.epochs=2", "train.eval_every=5", "train.max_tokens=40"]
    for each_epoch, extra in ((True, [36]), (False, [])):
        out = tmp_path / str(each_epoch)
        options = [*settings, f"train.eval_each_epoch={str(each_epoch).lower()}"]
        results = train_task(CountTask(count_config(out, *options)))
        assert results["global_step"] == 72
        dev_steps = [r["step"] for r in _records(out) if r.get("split") == "dev"]
        assert dev_steps == sorted([*range(5, 72, 5), 72, *extra])


def test_inverse_sqrt_follows_fairseq():
    lr, init, warmup = 1e-2, 1e-4, 4
    factor = warmup_inverse_sqrt(warmup, init / lr)
    for update in range(12):  # fairseq: init + n (lr - init) / warmup, then lr sqrt(w / n)
        expected = (
            init + update * (lr - init) / warmup
            if update < warmup
            else lr * math.sqrt(warmup / update)
        )
        assert factor(update) * lr == pytest.approx(expected)
    # The linear schedule is unchanged by a zero start: (k + 1) / warmup, then decay.
    linear = warmup_linear_decay(4, 20, 0.1)
    assert [linear(k) for k in (0, 3, 20)] == [0.25, 1.0, pytest.approx(0.1)]


def test_the_schedule_and_label_smoothing_reach_a_training_run(tmp_path):
    run = tmp_path / "run"
    settings = ["train.schedule=inverse_sqrt", "train.warmup_steps=4", "train.lr=0.01"]
    settings += ["train.warmup_init_lr=1e-4", "train.log_every=1", "train.label_smoothing=0.1"]
    train(tiny_config(run, *settings))
    lrs = {r["step"]: r["lr"] for r in _records(run) if "lr" in r}
    assert lrs[2] == pytest.approx(1e-4 + 2 * (0.01 - 1e-4) / 4)
    assert lrs[9] == pytest.approx(0.01 * math.sqrt(4 / 9))
    adam = tmp_path / "adam"
    train(tiny_config(adam, "train.beta2=0.98", "train.weight_decay=0"), stop_after_steps=2)
    group = load_checkpoint(adam / "last.pt")["optimizer"]["param_groups"][0]
    assert tuple(group["betas"]) == (0.9, 0.98) and group["weight_decay"] == 0

    task = make_task(tiny_config(run, "train.label_smoothing=0.1"))
    task.fit(task.read("train")[0])
    data = task.encode(*task.read("dev"))
    batch = data.batch(range(4))
    model = task.build_model().eval()
    logits = model(batch.inputs)
    expected = F.cross_entropy(logits, batch.labels, label_smoothing=0.1)
    torch.testing.assert_close(task.loss(model, batch), expected)
    assert not torch.allclose(expected, F.cross_entropy(logits, batch.labels))


# ---------------------------------------------------------------- old checkpoints


def test_checkpoints_written_before_the_task_layer_still_load(tmp_path, capsys):
    # Written by treeattn before tasks had names (see fixtures/README.md): the task is read
    # from data.name, the vocabularies from the top level of the checkpoint.
    vanilla = str(FIXTURES / "legacy-listops-vanilla.pt")
    assert "task_state" not in load_checkpoint(vanilla)
    assert main(["evaluate", vanilla, "test", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 20
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("[MAX 2 9 ]\n[MIN 3 [MAX 4 5 ] ]\n")
    assert main(["predict", vanilla, str(inputs)]) == 0
    assert all(line in [str(k) for k in range(10)] for line in capsys.readouterr().out.split())

    # Its accumulation predates the per-head fix (issue of the paper's w and embeddings):
    # another model, refused with the reason rather than a shape error.
    hierarchical = str(FIXTURES / "legacy-listops-hierarchical.pt")
    assert main(["attention", hierarchical, "test", "--out", str(tmp_path)]) == 2
    assert "made per head" in capsys.readouterr().err
    structured = str(FIXTURES / "legacy-listops-structured.pt")
    assert main(["latent-trees", structured, "dev"]) == 0
    assert "layer 2 head 2" in capsys.readouterr().out

    constituent = str(FIXTURES / "legacy-text-constituent.pt")
    assert load_trained(constituent).cfg.task == "mlm"
    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat\n")
    assert main(["induce", constituent, str(text)]) == 0
    assert capsys.readouterr().out.startswith("(X ")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["induce", constituent, str(empty)]) == 2
    assert f"{empty}: empty input" in capsys.readouterr().err
    assert (
        main(["constituent-prior", constituent, "the cat sat", "-o", str(tmp_path / "p.png")]) == 0
    )
    assert (tmp_path / "p.png").stat().st_size > 0


def test_an_old_run_resumes_under_the_task_layer(tmp_path):
    # A last.pt laid out as before the task layer: vocabulary at the top, no task name.
    run = tmp_path / "run"
    train(tiny_config(run), stop_after_steps=3)
    state = load_checkpoint(run / "last.pt")
    config = json.loads(state["config"])
    config.pop("task")
    config["data"].update(mask_rate=0.15, mask_split=[0.8, 0.1, 0.1])
    old = {**state, **state.pop("task_state"), "config": json.dumps(config)}
    old.pop("best_step")
    torch.save(old, run / "last.pt")
    expected = train(tiny_config(tmp_path / "straight"))
    assert train(tiny_config(run))["test_accuracy"] == expected["test_accuracy"]


# ---------------------------------------------------------------- classify: files, predict


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_a_labeled_sentence_file_trains_and_predicts(tmp_path, capsys):
    words = ["good", "fine", "bad", "awful"]
    rows = [f"{'pos' if w in ('good', 'fine') else 'neg'}\tthe film was {w}" for w in words * 10]
    train_file = _write(tmp_path / "train.tsv", rows)
    dev_file = _write(tmp_path / "dev.tsv", rows[:8])
    tree = "(pos (NP (DT the) (NN film)) (VP (VBD was) (JJ good)))"
    trees = _write(tmp_path / "test.txt", [tree] * 3)
    paths = [f"data.paths.train={train_file}", f"data.paths.dev={dev_file}"]
    model_and_training = [option for option in TINY if not option.startswith("data.")]
    settings = [*model_and_training, "data.name=labeled", *paths, f"data.paths.test={trees}"]
    settings += ["train.epochs=30", "model.dropout=0.0", "train.lr=5e-3", f"out_dir={tmp_path}/r"]
    results = train(load_config(None, settings))
    assert results["test_accuracy"] == 100.0 and "dev_accuracy" in results
    model = str(tmp_path / "r" / "best.pt")
    assert load_checkpoint(model)["task_state"]["classes"] == ["neg", "pos"]
    inputs = _write(
        tmp_path / "in.txt",
        ["the film was awful", "(S (NP (DT the) (NN film)) (VP (VBD was) (JJ fine)))"],
    )
    assert main(["predict", model, inputs]) == 0
    captured = capsys.readouterr()
    assert captured.out == "neg\npos\n" and "warning" not in captured.err
    two = _write(tmp_path / "two.txt", ["The film was good. It was fine.", "the film was fine"])
    assert main(["predict", model, two]) == 0
    captured = capsys.readouterr()
    assert f"{two}:1: the line seems to hold several sentences; read as one\n" in captured.err
    assert f"{two}:2" not in captured.err and len(captured.out.splitlines()) == 2
    unknown = _write(tmp_path / "odd.tsv", ["meh\tthe film was good"])
    assert main(["evaluate", model, unknown]) == 2
    assert "sentence 1 has the label 'meh', which training did not have" in capsys.readouterr().err
    no_tab = _write(tmp_path / "bad.tsv", ["pos the film"])
    assert main(["evaluate", model, no_tab]) == 2
    assert f"{no_tab}:1:1: expected 'LABEL<TAB>sentence'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "names"),
    [
        ("sst5", ["very negative", "negative", "neutral", "positive", "very positive"]),
        ("sst2", ["negative", "positive"]),
    ],
)
def test_sst_predictions_are_class_names_of_ptb_words(name, names):
    from treeattn.tasks.sentences import LabeledSentence

    task = make_task(
        load_config(None, [f"data.name={name}", "model.d_model=16", "model.n_heads=2"])
    )
    assert task.dataset.class_names == tuple(names)
    words = ["it", "was", "n't", "good", "."]
    task.fit([LabeledSentence(words, str(k)) for k in range(len(names))])
    lines = ["It wasn't good.", "It was n't good .", "I loved every minute of it."]
    examples = task.read_inputs(lines, "in.txt")
    assert examples[0].tokens == examples[1].tokens == ["It", "was", "n't", "good", "."]
    assert examples[2].tokens[-2:] == ["it", "."]  # not "it."
    model = task.build_model()
    with torch.no_grad():  # every class, by its name: the bias decides
        for param in model.parameters():
            param.zero_()
        for k, expected in enumerate(names):
            bias = [p for n, p in model.named_parameters() if n.endswith("bias")][-1]
            bias.zero_()
            bias[k] = 1.0
            data = task.encode(examples, "in.txt")
            assert task.predict(model, data, torch.device("cpu")) == [expected] * 3
            # Every class by name, in the classes' order; the bias's class the likeliest.
            line = task.predict(model, data, torch.device("cpu"), "probabilities")[0]
            fields = [field.rsplit("=", 1) for field in line.split("\t")]
            assert [name for name, _ in fields] == names
            shares = [float(share) for _, share in fields]
            assert max(shares) == shares[k] and sum(shares) == pytest.approx(1, abs=1e-3)
            record = json.loads(task.predict(model, data, torch.device("cpu"), "jsonl")[0])
            assert record["label"] == expected and list(record["probabilities"]) == names
            assert list(record["probabilities"].values()) == pytest.approx(shares, abs=1e-4)


def test_predict_gives_one_label_per_line_in_order(tmp_path, capsys):
    from treeattn.data.listops import generate_listops, write_listops

    run = tmp_path / "run"
    train(tiny_config(run))
    examples = generate_listops(25, 7, max_length=30)
    labeled = tmp_path / "labeled.tsv"
    write_listops(labeled, examples)
    expressions = _write(tmp_path / "x.txt", [" ".join(ex.tokens) for ex in examples])
    assert main(["predict", str(run / "best.pt"), expressions, "-o", str(tmp_path / "out")]) == 0
    predicted = (tmp_path / "out").read_text().split("\n")[:-1]
    assert len(predicted) == 25
    right = sum(p == str(ex.label) for p, ex in zip(predicted, examples, strict=True))
    assert load_trained(run / "best.pt").evaluate(str(labeled))["accuracy"] == 100 * right / 25
    empty_line = _write(tmp_path / "gap.txt", ["[MAX 2 9 ]", "", "[MIN 1 2 ]"])
    assert main(["predict", str(run / "best.pt"), empty_line]) == 2
    assert f"{empty_line}:2:1: empty line" in capsys.readouterr().err


def test_predict_formats_of_a_classifier(tmp_path, capsys):
    model = str(FIXTURES / "legacy-listops-vanilla.pt")
    lines = ["[MAX 2 9 ]", "[MIN 3 [MAX 4 5 ] ]", "[SM 1 2 ]"]
    inputs = _write(tmp_path / "in.txt", lines)
    outputs = {}
    for output_format in ("", "label", "probabilities", "jsonl"):
        chosen = ["--format", output_format] if output_format else []
        assert main(["predict", model, inputs, *chosen]) == 0
        outputs[output_format] = capsys.readouterr().out.splitlines()
    labels = outputs[""]
    assert outputs["label"] == labels and len(labels) == 3
    classes = [str(k) for k in range(10)]
    for line, label, text in zip(outputs["probabilities"], labels, outputs["jsonl"], strict=True):
        shares = dict(field.split("=") for field in line.split("\t"))
        assert list(shares) == classes and max(shares, key=lambda c: float(shares[c])) == label
        assert sum(map(float, shares.values())) == pytest.approx(1, abs=1e-3)
        record = json.loads(text)
        assert list(record) == ["input", "label", "probabilities"]
        assert record["label"] == label and list(record["probabilities"]) == classes
    assert [json.loads(text)["input"] for text in outputs["jsonl"]] == lines


@pytest.mark.parametrize(
    ("model", "formats"),
    [
        (FIXTURES / "legacy-listops-vanilla.pt", "label, probabilities, jsonl"),
        (FIXTURES / "legacy-text-constituent.pt", "lines"),
        ("fast", "brackets, conllu"),
    ],
)
def test_an_unknown_predict_format_names_the_tasks_formats(tmp_path, capsys, model, formats):
    from treeattn.parsing.parser import model_path

    path = model_path(model) if model == "fast" else model
    inputs = _write(tmp_path / "in.txt", ["Dogs bark ."])
    assert main(["predict", str(path), inputs, "--format", "xml"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"writes {formats}, not 'xml'\n") and "--format" in err


def test_masked_lm_predict_fills_in_the_masks(tmp_path, capsys):
    model = str(FIXTURES / "legacy-text-constituent.pt")
    inputs = _write(tmp_path / "in.txt", ["The <mask> sat on the mat", "no mask here"])
    assert main(["predict", model, inputs]) == 0
    first, second = capsys.readouterr().out.splitlines()
    words = first.split()
    assert len(words) == 6 and words[2:] == ["sat", "on", "the", "mat"] and words[0] == "the"
    assert words[1] not in ("<mask>", "<pad>", "<unk>")
    assert second == "no mask here"
