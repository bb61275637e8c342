"""The evaluator against minicons on one causal model: the same BLiMP sentences scored by
``treeattn.evaluation`` and by minicons' ``IncrementalLMScorer`` (summed log-probabilities
after the model's start token; each sentence's token scores summed in float64 on both sides),
their speed and the largest difference per sentence.

minicons is not one of this project's dependencies: it runs in an environment of its own
(with the same torch and transformers), from the same checkout. Two commands:

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.lm_minicons ours --threads 1
    OMP_NUM_THREADS=1 MC_VENV/bin/python -m benchmarks.lm_minicons minicons --threads 1

``ours`` loads ``smollm2-135m`` (hash-checked), scores both sentences of the first
``--pairs`` pairs of each ``--files`` BLiMP file and writes them, with the GGUF file's
path and sha256, to ``--out``/ours.json. ``minicons`` reads that file, checks the GGUF
file's hash, loads it with ``transformers`` as ``ours`` did, scores the same sentences in
batches of ``--batch-size`` in their order (as a user would call ``sequence_score``), and
writes minicons.json and a Markdown table: pairs per second of each (model loading left
out), their ratio, the largest absolute difference per sentence and the pairs decided
differently. This module imports nothing of treeattn on the minicons side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from pathlib import Path

DEFAULT_FILES = ("anaphor_gender_agreement", "regular_plural_subject_verb_agreement_1")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("side", choices=("ours", "minicons"))
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES), help="BLiMP files")
    parser.add_argument("--pairs", type=int, default=1000, help="first pairs of each file")
    parser.add_argument("--batch-tokens", type=int, default=4096, help="ours: tokens a batch")
    parser.add_argument("--batch-size", type=int, default=64, help="minicons: texts a batch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/benchmarks/lm_minicons"))
    parser.add_argument("--data", type=Path, help="the data folder (default: TREEATTN_DATA)")
    return parser.parse_args()


def _machine(threads: int) -> dict:
    import torch

    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {"cpu": model, "cores": os.cpu_count(), "torch": torch.__version__, "threads": threads}


def _score_ours(args: argparse.Namespace) -> dict:
    from treeattn.data.paths import require_data
    from treeattn.evaluation import Scorer, TransformersLM
    from treeattn.evaluation.blimp import read_pairs
    from treeattn.models.packaged_lm import PACKAGED_LMS, load_gguf, packaged_gguf

    folder = args.data or require_data("blimp").parent
    pairs = [
        p for f in args.files for p in read_pairs(folder / "blimp" / f"{f}.jsonl")[: args.pairs]
    ]
    texts = [text for pair in pairs for text in (pair.good, pair.bad)]
    path = packaged_gguf("smollm2-135m")
    started = time.perf_counter()
    model, tokenizer = load_gguf(path)
    loaded = time.perf_counter() - started
    lm = TransformersLM(model, tokenizer, "causal", name="smollm2-135m")
    started = time.perf_counter()
    totals = [s.total for s in Scorer(lm, batch_tokens=args.batch_tokens).score(texts)]
    seconds = time.perf_counter() - started
    return {
        "gguf": str(path),
        "sha256": PACKAGED_LMS["smollm2-135m"].sha256,
        "texts": texts,
        "totals": totals,
        "load_seconds": loaded,
        "seconds": seconds,
        "pairs_per_second": len(pairs) / seconds,
    }


def _summed_in_float64(token_scores):
    # minicons hands each sentence's float32 token scores to the reduction; summed in
    # float32 they would carry rounding (about 1e-5 at 60 nats) that ours, summed in
    # float64, does not.
    return token_scores.double().sum(0).item()


def _score_minicons(args: argparse.Namespace, ours: dict) -> dict:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from minicons import scorer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(ours["gguf"])
    if hashlib.sha256(path.read_bytes()).hexdigest() != ours["sha256"]:
        raise SystemExit(f"{path}: not the file ours.json scored")
    where = {"gguf_file": path.name, "local_files_only": True}
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, **where)
    model = AutoModelForCausalLM.from_pretrained(path.parent, **where).eval()
    lm = scorer.IncrementalLMScorer(model, "cpu", tokenizer=tokenizer)
    loaded = time.perf_counter() - started
    texts, size = ours["texts"], args.batch_size
    started = time.perf_counter()
    totals = []
    for at in range(0, len(texts), size):
        totals += lm.sequence_score(
            texts[at : at + size], reduction=_summed_in_float64, bos_token=True
        )
    seconds = time.perf_counter() - started
    return {
        "totals": totals,
        "load_seconds": loaded,
        "seconds": seconds,
        "pairs_per_second": len(texts) / 2 / seconds,
    }


def _compare(ours: dict, theirs: dict) -> dict:
    diffs = [abs(a - b) for a, b in zip(ours["totals"], theirs["totals"], strict=True)]

    def decisions(totals: list[float]) -> list[bool]:
        return [good > bad for good, bad in zip(totals[0::2], totals[1::2], strict=True)]

    differ = sum(
        a != b for a, b in zip(decisions(ours["totals"]), decisions(theirs["totals"]), strict=True)
    )
    return {
        "pairs": len(diffs) // 2,
        "ratio": ours["pairs_per_second"] / theirs["pairs_per_second"],
        "max_difference": max(diffs),
        "decisions_differ": differ,
        "accuracy_ours": 100 * sum(decisions(ours["totals"])) / (len(diffs) // 2),
        "accuracy_minicons": 100 * sum(decisions(theirs["totals"])) / (len(diffs) // 2),
    }


def main() -> None:
    args = _arguments()
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    if args.side == "ours":
        found = _score_ours(args)
        found.update(settings=settings, machine=_machine(args.threads))
        (args.out / "ours.json").write_text(json.dumps(found, indent=1) + "\n")
        print(f"ours: {found['pairs_per_second']:.2f} pairs/s, load {found['load_seconds']:.1f} s")
        return
    ours = json.loads((args.out / "ours.json").read_text())
    theirs = _score_minicons(args, ours)
    theirs.update(settings=settings, machine=_machine(args.threads))
    (args.out / "minicons.json").write_text(json.dumps(theirs, indent=1) + "\n")
    summary = _compare(ours, theirs)
    (args.out / "comparison.json").write_text(json.dumps(summary, indent=1) + "\n")
    rows = [
        ("pairs", f"{summary['pairs']}"),
        ("treeattn pairs/s", f"{ours['pairs_per_second']:.2f}"),
        ("minicons pairs/s", f"{theirs['pairs_per_second']:.2f}"),
        ("ratio (treeattn / minicons)", f"{summary['ratio']:.2f}"),
        ("largest difference per sentence", f"{summary['max_difference']:.2e}"),
        ("pairs decided differently", f"{summary['decisions_differ']}"),
        (
            "accuracy treeattn / minicons",
            f"{summary['accuracy_ours']:.1f} / {summary['accuracy_minicons']:.1f}",
        ),
    ]
    table = "| measure | value |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    (args.out / "comparison.md").write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
