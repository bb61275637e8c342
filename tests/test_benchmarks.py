"""The benchmark scripts run end to end (``--quick``); their timings are never asserted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.parametrize(
    "script",
    [
        "hierarchical_accumulation",
        "step_time",
        "structs",
        "constituent_prior",
        "distance_attention",
        "parser_chart",
        "translation",
        "tree_dependencies",
        "injection",
        "injection_smollm2",
        "tree_regularization",
        "spacy_speed",
        "lm_speed",
        "ewt_tags",
        "ewt_conll18",
        "parse_speed",
        "mccoy_parser_f1",
        "parser_questions",
    ],
)
@pytest.mark.slow
def test_benchmark_quick_run_writes_its_tables(tmp_path, script, request):
    needs_data = ("translation", "tree_dependencies", "spacy_speed", "lm_speed", "ewt_tags")
    needs_data += ("parse_speed", "mccoy_parser_f1", "parser_questions")
    if script in (*needs_data, "ewt_conll18"):
        # Multi30k, the PTB sample, BLiMP, EWT; skips without them
        request.getfixturevalue("shared_data")
    if script == "spacy_speed":
        pytest.importorskip("spacy", reason="spaCy not installed (the extra treeattn[spacy])")
    command = [sys.executable, "-m", f"benchmarks.{script}", "--quick", "--out", str(tmp_path)]
    env = {**os.environ, "TREEATTN_CACHE": str(tmp_path / "cache")}
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=300, env=env)
    results = json.loads((tmp_path / f"{script}.json").read_text())
    assert results and (tmp_path / f"{script}.md").read_text().count("|") > 10
    if script == "structs":
        # The stability table: ours stays finite and self-consistent at every score scale.
        ours = [row for row in results["stability"]["rows"] if row["library"] == "ours"]
        assert len(ours) == 6
        for row in ours:
            assert row["finite_items"] == row["batch"]
            assert row["max_head_sum_error"] < 1e-9
    if script == "constituent_prior":
        assert all(row["max_abs_diff_prior"] < 1e-6 for row in results["rows"])
    if script == "distance_attention":
        assert all(row["gates_agree"] for row in results["rows"])
    if script == "tree_dependencies":  # the tree's own conversion always agrees with it
        scores = results["results"]["fast"]
        assert scores["ptb_test"]["one_outside_from-tree"] == 100.0
        assert scores["multi30k_val"]["one_outside_from-tree"] == 100.0
    if script == "spacy_speed":  # the component's trees are the parser's
        for counts in results["agreement"].values():
            assert counts["same_tree"] == counts["sentences"] == counts["component_sentences"]
            assert counts["same_dependencies"] == counts["tokens_are_words"] > 0
        assert results["agreement"]["PTB test"]["same_as_cli"] == 20
    if script == "ewt_conll18":  # gold words align every word, questions are a part
        found = results["results"]["accurate"]
        words = found["gold words"]["all"]["Words"]
        assert words["correct"] == words["gold"] == words["predicted"] > 0
        assert 0 < found["questions"] < found["sentences"] == 40
    if script == "parse_speed":  # int8 and the encoder's layers in int8 are scored too
        scores = results["scores"]
        assert len(results["speed"]) == 12 and len(scores) == 8  # 3 inputs, 4 parsers
        assert all(0 < found["f1"] <= 100 for found in scores.values())
        assert "las" in scores["accurate int8 + feed-forward"]
    if script == "parser_questions":  # 20 EWT questions, each given a root; 18 written
        assert sum(results["counts"]["all"].values()) == 20
        assert len(results["written"]) == 18
        assert results["made_questions"][-1]["kind"] == "all"
    if script == "parser_chart":
        # Batched and one sentence at a time give the same loss (the library rows, when
        # installed, are reported, not asserted).
        ours = [row for row in results["rows"] if row["method"] == "one sentence at a time"]
        assert ours and all(row["agrees"] for row in ours)


@pytest.mark.slow
def test_the_classify_speed_benchmark_compares_runs_with_the_first(tmp_path):
    from tests.test_engine import TINY
    from treeattn.cli import main

    runs = []
    for attention in ("vanilla", "hierarchical"):
        out = tmp_path / attention
        sets = [*TINY, "train.epochs=1", f"model.attention={attention}", f"out_dir={out}"]
        assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
        runs.append(str(out))
    command = [sys.executable, "-m", "benchmarks.classify_speed", *runs, "--quick"]
    command += ["--out", str(tmp_path / "results")]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=300)
    results = json.loads((tmp_path / "results" / "classify_speed.json").read_text())
    assert [row["run"] for row in results["speed"]] == ["vanilla", "hierarchical"]
    table = (tmp_path / "results" / "classify_speed.md").read_text()
    assert "| vanilla |" in table and " 1.00 |" in table


@pytest.mark.slow
def test_the_precision_benchmark_times_both_on_a_config(tmp_path):
    command = [sys.executable, "-m", "benchmarks.precision", "configs/listops.yaml", "--quick"]
    command += ["--out", str(tmp_path)]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=300)
    results = json.loads((tmp_path / "precision.json").read_text())
    assert set(results["times"]) == {"float32", "bfloat16"}
    assert all(loss > 0 for loss in results["first_loss"].values())
