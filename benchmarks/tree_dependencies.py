"""Brackets and CoNLL-U from one parse: the parser's own arcs against the head-rule
conversion of its predicted tree.

For each shipped parser, one pass of the network over each input gives the constituency
tree and the independent arcs (Eisner, each arc's best relation); the tree's head-rule
dependencies (``from-tree``, the default of ``treeattn parse``) come from the same tree.
On the PTB sample's test split (gold words): UAS/LAS of each against the gold head-rule
dependencies, punctuation left out (the paper's convention, as ``treeattn evaluate``) and
kept. On the test split and Multi30k val English (raw lines, tokenized as ``treeattn
parse`` does): the share of words whose independent head differs from the tree's, and the
share of the tree's phrases (every node above the tags) with exactly one word headed
outside them in each dependency tree (100% for the tree's own conversion).

    OMP_NUM_THREADS=1 python -m benchmarks.tree_dependencies --threads 1
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

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
from treeattn.data.multi30k import multi30k_path, read_lines
from treeattn.parsing import Parser
from treeattn.parsing.decoding import INDEPENDENT, Parsed, parse_all, tree_dependencies
from treeattn.tasks.parse import ParseTask, dependency_scores
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree


def one_headed_outside(tree: Tree, heads: Sequence[int]) -> tuple[int, int]:
    """(phrases with exactly one word headed outside them, phrases) of ``tree``."""
    phrases = tree.spans()
    whole = 0
    for _, start, end in phrases:
        outside = sum(not start < heads[k] <= end for k in range(start, end))  # heads 1-based
        whole += outside == 1
    return whole, len(phrases)


def both(parsed: Sequence[Parsed]) -> tuple[list[DependencyTree], list[DependencyTree]]:
    """The independent dependency trees and the head-rule conversions of the same parses."""
    own = [deps for _, deps in parsed]
    derived = [tree_dependencies(tree, deps.xpos) for tree, deps in parsed if tree is not None]
    return own, derived


def agreement(parsed: Sequence[Parsed]) -> dict[str, float]:
    """Percent of words whose two heads differ, and of phrases with one word headed outside
    them under each dependency tree."""
    own, derived = both(parsed)
    words = sum(d.n for d in own)
    differ = sum(
        a != b
        for o, d in zip(own, derived, strict=True)
        for a, b in zip(o.heads, d.heads, strict=True)
    )
    counts = {"independent": [0, 0], "from-tree": [0, 0]}
    for (tree, _), o, d in zip(parsed, own, derived, strict=True):
        for name, deps in (("independent", o), ("from-tree", d)):
            whole, phrases = one_headed_outside(tree, deps.heads)
            counts[name][0] += whole
            counts[name][1] += phrases
    return {
        "heads_differ": 100.0 * differ / words,
        **{f"one_outside_{k}": 100.0 * w / max(1, p) for k, (w, p) in counts.items()},
    }


def measure(model: str, multi30k: list[str], test_sentences: int | None) -> dict:
    parser = Parser.load(model, device="cpu")
    task = ParseTask.from_parser(parser)
    examples = task.read("test")[0][:test_sentences]
    # Gold words as the network reads them; one pass gives both dependency trees.
    data = parser.encode([ex.words for ex in examples])
    test = parse_all(
        parser.model, data, parser.vocab, parser.device, parser.max_tokens, False, False
    )
    own, derived = both(test)
    raw = parser.encode(parser.words(multi30k))
    val = parse_all(parser.model, raw, parser.vocab, parser.device, parser.max_tokens)
    return {
        "independent": dependency_scores(examples, own),
        "from-tree": dependency_scores(examples, derived),
        "ptb_test": agreement(test),
        "multi30k_val": agreement(val),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    quick = "the fast parser on 20 sentences of each input"
    add_run_arguments(parser, "tree_dependencies.json and .md", 0.0, quick, 1)
    parser.add_argument("--models", nargs="+", help="shipped parsers (accurate fast) or files")
    args = finish_run_arguments(parser.parse_args())
    if start_device(args) is None:
        return
    begin = time.perf_counter()
    multi30k = [line for line in read_lines(multi30k_path("val", "en")) if line.strip()]
    models = args.models or (["fast"] if args.quick else ["accurate", "fast"])
    size = 20 if args.quick else None
    results = {model: measure(model, multi30k[:size], size) for model in models}
    rows = []
    for model, r in results.items():
        for source in ("independent", "from-tree"):
            s = r[source]
            rows.append(
                [
                    model,
                    source,
                    *(fmt(s[k], 2) for k in ("uas", "las", "uas_punct", "las_punct")),
                    fmt(r["ptb_test"][f"one_outside_{source}"], 1),
                    fmt(r["multi30k_val"][f"one_outside_{source}"], 1),
                    fmt(r["ptb_test"]["heads_differ"], 1) if source == INDEPENDENT else "",
                    fmt(r["multi30k_val"]["heads_differ"], 1) if source == INDEPENDENT else "",
                ]
            )
    headers = [
        "parser",
        "dependencies",
        "UAS",
        "LAS",
        "UAS punct.",
        "LAS punct.",
        "one head outside, PTB test %",
        f"one head outside, Multi30k val ({len(multi30k)}) %",
        f"heads differ, PTB test ({size or 'all'}) %",
        "heads differ, Multi30k val %",
    ]
    markdown = markdown_table(headers, rows)
    info = machine_info(torch.device("cpu"))
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(
        args, "tree_dependencies", info, time.perf_counter() - begin, markdown, results=results
    )


if __name__ == "__main__":
    main()
