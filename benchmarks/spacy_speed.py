"""The spaCy component against ``treeattn parse`` on the same text: speed and agreement.

For each input (the 413 test sentences of the PTB sample, their words joined by spaces as
``parse_speed`` writes them, and 2,000 lines of Multi30k val English), the time of
``nlp.pipe`` over the lines (``spacy.blank("en")`` and the component, which cuts sentences
by the parser's rule) against the parser's own ``parse`` of the sentences' words as
``treeattn parse --split-sentences`` cuts them for brackets (its sentences and words, then
the same API call), on the same parser object, so that both parse the same sentences. Each
time is the median of ``--repeats`` interleaved rounds (a random order each round) after a
warm-up on a few lines; the parser is loaded once, outside the timing. The ratio is the
parser's seconds over the component's (1.0: as fast; 0.9: 10% slower). Then agreement on the
last round's output: the component's trees (``Span._.tree``) against the parser's, and,
where spaCy's tokens are the parser's words, its heads, relations and tags against the
parser's dependencies; on the PTB test, also against the brackets that ``treeattn parse
--split-sentences`` writes.

    OMP_NUM_THREADS=2 python -m benchmarks.spacy_speed --threads 2 --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    fmt,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from benchmarks.parse_speed import multi30k_text, ptb_test_text
from treeattn.cli.text import line_sentences
from treeattn.trees import Tree

WARM_UP_LINES = 20
PARSER, COMPONENT = "Parser.parse (treeattn parse)", "nlp.pipe (the component)"


def agreement(docs: list[Any], parsed: list[Any]) -> dict[str, int]:
    """How many of the component's sentences have the parser's tree and, of those whose
    tokens are the parser's words, its heads, relations and tags."""
    sentences = [sent for doc in docs for sent in doc.sents]
    counts = {"sentences": len(parsed), "component_sentences": len(sentences)}
    counts["same_tree"] = sum(s._.tree == p.tree for s, p in zip(sentences, parsed, strict=False))
    one_to_one = same_dependencies = 0
    for sent, parse in zip(sentences, parsed, strict=False):
        if any(t.is_space for t in sent) or Tree.parse(sent._.parse_string).leaves() != parse.words:
            continue
        one_to_one += 1
        heads = [0 if t.head.i == t.i else t.head.i - sent.start + 1 for t in sent]
        same_dependencies += (
            heads == parse.dependencies.heads
            and [t.dep_ for t in sent] == parse.dependencies.relations
            and [t.tag_ for t in sent] == parse.dependencies.xpos
        )
    counts["tokens_are_words"] = one_to_one
    counts["same_dependencies"] = same_dependencies
    return counts


def ptb_words(lines: list[str]) -> list[list[str]]:
    """The words of each sentence of ``lines`` as ``treeattn parse --split-sentences`` cuts
    them for brackets (the Penn Treebank's cut, whatever the parser's dependencies)."""
    return [sentence.words for sentence in line_sentences(lines, "input", split=True)]


def cli_brackets(lines: list[str], model: str) -> list[str]:
    """What ``treeattn parse --split-sentences --model MODEL`` writes for ``lines``."""
    from treeattn.cli import main

    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.txt", Path(folder) / "out.txt"
        source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        if main(["parse", str(source), "--split-sentences", "--model", model, "-o", str(out)]):
            raise RuntimeError("treeattn parse failed")
        return out.read_text(encoding="utf-8").splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "spacy_speed.json and .md", 0.0, "20 lines of each input", 3)
    parser.add_argument("--model", default="accurate", help="the parser (accurate)")
    parser.add_argument("--lines", type=int, default=2000, help="Multi30k lines (2000)")
    args = finish_run_arguments(parser.parse_args())
    if start_device(args) is None:
        return
    import spacy

    from treeattn.integrations.spacy import NAME

    begin = time.perf_counter()
    nlp = spacy.blank("en")
    component = nlp.add_pipe(NAME, config={"model": args.model})
    api = component.parser
    if api.device.type != "cpu":
        raise SystemExit(f"the parser loaded on {api.device}; this benchmark times the CPU")
    inputs = {"PTB test": ptb_test_text(), "Multi30k val": multi30k_text(args.lines)}
    if args.quick:
        inputs = {name: lines[:20] for name, lines in inputs.items()}
    rows, speed, agreements = [], [], {}
    order = random.Random(args.seed)
    for name, lines in inputs.items():
        steps = {
            PARSER: lambda text: api.parse(ptb_words(text)),
            COMPONENT: lambda text: list(nlp.pipe(text)),
        }
        for step in steps.values():  # warm-up: first-call allocations
            step(lines[:WARM_UP_LINES])
        times: dict[str, list[float]] = {step: [] for step in steps}
        outputs: dict[str, Any] = {}
        for _ in range(args.repeats):
            for step in order.sample(list(steps), len(steps)):
                started = time.perf_counter()
                outputs[step] = steps[step](lines)
                times[step].append(time.perf_counter() - started)
        parsed, docs = outputs[PARSER], outputs[COMPONENT]
        counts = agreement(docs, parsed)
        if name == "PTB test":
            written = cli_brackets(lines, args.model)
            trees = [sent._.tree.to_brackets() for doc in docs for sent in doc.sents]
            counts["same_as_cli"] = sum(a == b for a, b in zip(trees, written, strict=False))
            counts["cli_sentences"] = len(written)
        agreements[name] = counts
        medians = {step: statistics.median(seconds) for step, seconds in times.items()}
        baseline = medians[PARSER]
        for step, median in medians.items():
            rows.append(
                [
                    f"{name} ({len(lines)} lines, {len(parsed)} sentences)",
                    step,
                    fmt(median, 2),
                    fmt(len(parsed) / median, 0),
                    fmt(baseline / median, 2),
                ]
            )
            speed.append({"input": name, "step": step, "seconds": times[step]})
    markdown = markdown_table(
        ["input", "what", "seconds (median)", "sentences/s", "speed against the parser"], rows
    )
    agree_rows = [
        [
            name,
            f"{c['same_tree']} / {c['sentences']}",
            f"{c['same_dependencies']} / {c['tokens_are_words']}",
            f"{c['same_as_cli']} / {c['cli_sentences']}" if "same_as_cli" in c else "-",
        ]
        for name, c in agreements.items()
    ]
    markdown += "\n\n" + markdown_table(
        [
            "input",
            "same tree as the parser",
            "same tags, heads, relations (tokens = words)",
            "same brackets as `treeattn parse`",
        ],
        agree_rows,
    )
    info = machine_info(torch.device("cpu"))
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(
        args,
        "spacy_speed",
        info,
        time.perf_counter() - begin,
        markdown,
        speed=speed,
        agreement=agreements,
        spacy=spacy.__version__,
    )


if __name__ == "__main__":
    main()
