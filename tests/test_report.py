"""Run summaries: runs grouped by configuration, mean ± sd, the settings that differ."""

import json

import pytest

from treeattn.engine.report import differences, format_report, group_runs, held_out_score
from treeattn.viz.scores import plot_scores


def _run(root, name, seed, test, lr=1e-3, scores=None, model=None):
    folder = root / name
    folder.mkdir()
    config = {"task": "classify", "seed": seed, "out_dir": str(folder), "train": {"lr": lr}}
    config["model"] = model or {}
    results = {"finished": True, "params": 10, "train_seconds": 60.0 * seed, "best_epoch": 0}
    results.update(scores or {"dev_accuracy": test - 1, "test_accuracy": test})
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def test_runs_group_by_configuration_in_the_order_given(tmp_path):
    runs = [
        _run(tmp_path, "plain-s1", 1, 50.0),
        _run(tmp_path, "fast-s1", 1, 47.0, lr=2e-3),
        _run(tmp_path, "plain-s2", 2, 52.0),
        _run(tmp_path, "fast-seed2", 2, 49.0, lr=2e-3),
    ]
    groups = group_runs(runs)
    assert [(g.name, g.values("test_accuracy")) for g in groups] == [
        ("plain", [50.0, 52.0]),
        ("fast", [47.0, 49.0]),
    ]
    lines = format_report(groups).splitlines()
    # mean ± sample sd: sqrt(((50 - 51)^2 + (52 - 51)^2) / 1) = 1.41
    assert lines[2].split() == ["plain", "1,2", "50.00", "±", "1.41", "51.00", "±", "1.41", "90"]
    assert lines[3].split() == ["fast", "1,2", "47.00", "±", "1.41", "48.00", "±", "1.41", "90"]
    assert lines[-1] == "  fast: train.lr 0.002 (0.001)"


def test_differing_settings_read_as_a_config_file_writes_them(tmp_path):
    plain = _run(tmp_path, "plain-s1", 1, 50.0, model={"tied": False})
    masked = _run(tmp_path, "masked-s1", 1, 51.0, model={"tied": True, "layers": [4, 5]})
    reference, other = group_runs([plain, masked])
    assert differences(reference, other) == "model.tied true (false), model.layers [4, 5] (-)"


def test_one_configuration_lists_each_run(tmp_path):
    runs = [_run(tmp_path, "a-s1", 1, 50.0), _run(tmp_path, "a-s2", 2, 52.0)]
    report = format_report(group_runs(runs))
    assert "test accuracy  51.00 ± 1.41" in report
    assert sum(str(tmp_path / "a-s") in line for line in report.splitlines()) == 2


def test_configurations_that_share_a_name_are_told_apart(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    runs = [_run(tmp_path / "x", "run", 1, 50.0), _run(tmp_path / "y", "run", 1, 47.0, lr=2)]
    assert [g.name for g in group_runs(runs)] == ["run (1)", "run (2)"]


def test_runs_of_tasks_with_other_scores_are_refused(tmp_path):
    runs = [
        _run(tmp_path, "sst-s1", 1, 50.0),
        _run(tmp_path, "ptb-s1", 1, 0.0, lr=2, scores={"dev_f1": 88.0, "test_f1": 89.0}),
    ]
    with pytest.raises(ValueError, match="report runs of one task together"):
        group_runs(runs)


def test_a_plot_is_written_whole_or_not_at_all(tmp_path):
    path = plot_scores(
        [("plain", [50.0, 52.0]), ("tree", [51.0])], "test accuracy", tmp_path / "a.svg"
    )
    assert path.read_text().lstrip().startswith("<?xml") and list(tmp_path.iterdir()) == [path]
    with pytest.raises(ValueError, match="does not exist"):
        plot_scores([("plain", [50.0])], "test accuracy", tmp_path / "missing" / "a.png")
    with pytest.raises(ValueError, match="at least one run"):
        plot_scores([("plain", [])], "test accuracy", tmp_path / "b.png")
    assert list(tmp_path.iterdir()) == [path]


def test_a_language_models_syntactic_scores_join_its_run(tmp_path):
    scores = {"dev_perplexity": 80.0, "test_perplexity": 82.0}
    runs = [_run(tmp_path, f"lm-s{s}", s, 0.0, scores=scores) for s in (1, 2)]
    for folder, blimp in zip(runs, (60.0, 62.0), strict=True):
        headline = {"blimp": blimp, "syntaxgym": 40.0, "agreement_linzen": 70.0}
        (folder / "lm-eval.json").write_text(json.dumps({"headline": headline, "blimp": {}}))
    report = format_report(group_runs(runs))
    assert "blimp            61.00 ± 1.41" in report
    assert "agreement linzen 70.00 ± 0.00" in report
    # A run without lm-eval.json reports other scores: it is not averaged with these.
    runs.append(_run(tmp_path, "lm-s3", 3, 0.0, scores=scores))
    with pytest.raises(ValueError, match="report runs of one task together"):
        group_runs(runs)


def test_a_limited_lm_eval_is_reported_as_a_subset_never_as_the_full_score(tmp_path):
    scores = {"dev_perplexity": 80.0, "test_perplexity": 82.0}
    run = _run(tmp_path, "lm-s1", 1, 0.0, scores=scores)
    headline = {"blimp": 90.0, "syntaxgym": 40.0, "agreement_linzen": 70.0}
    document = {"limit": 50, "headline": headline, "blimp": {}}
    (run / "lm-eval.json").write_text(json.dumps(document))
    report = format_report(group_runs([run]))
    rows = [" ".join(line.split()) for line in report.splitlines()]
    assert "blimp (subset: 50 pairs a file) 90.00" in rows
    assert "syntaxgym (subset: 50 items a suite) 40.00" in rows
    assert "agreement linzen (subset: 50 items a set) 70.00" in rows
    assert "blimp 90.00" not in rows
    # Nor is it averaged with a run scored on everything.
    full = _run(tmp_path, "lm-s2", 2, 0.0, scores=scores)
    (full / "lm-eval.json").write_text(json.dumps({"limit": None, "headline": headline}))
    with pytest.raises(ValueError, match="report runs of one task together"):
        group_runs([run, full])


def test_a_plot_shows_the_first_held_out_score_unless_told():
    assert held_out_score(["dev_accuracy", "test_accuracy"]) == "test_accuracy"
    cola = ["dev_mcc", "dev_accuracy", "in_domain_mcc", "out_of_domain_mcc"]
    assert held_out_score(cola) == "in_domain_mcc"
    assert held_out_score(["dev_f1"]) == "dev_f1"
