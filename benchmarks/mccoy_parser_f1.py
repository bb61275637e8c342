"""The default parser's trees of McCoy et al.'s (2020) sentences against the grammar's: the
silver trees a model trained with ``data.trees: parser`` reads, scored where the gold
ones are known.

For each task (question formation, tense reinflection): the input sentences (the
declarative with its full stop, no task word) and the correct outputs of the first
``--train`` generated training pairs (what tree regularization reads) and of the shared
gen split (where the two rules part), each parsed alone from its words as
``treeattn.tasks.datasets.mccoy`` parses them (a split's inputs and outputs in one call,
as training makes them, so that a training run's cached trees serve ``--train 100000``).
Scores: corpus unlabeled F1 over spans of two or more words, the whole sentence and the
final ``.`` or ``?`` left out (as EVALB leaves punctuation out;
``treeattn.metrics.unsupervised``), and the share of sentences whose spans are exactly the
grammar's. The inputs are also scored by what modifies their main subject
(``treeattn.data.mccoy.scores.subject_type``), with the share whose whole main subject is a
span of the parser's tree.

    OMP_NUM_THREADS=2 python -m benchmarks.mccoy_parser_f1 --threads 2
"""

from __future__ import annotations

import argparse
import time

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
from treeattn.data.mccoy import TASKS, TRAIN_SIZE, McCoyData, training_set
from treeattn.data.mccoy.scores import subject_type
from treeattn.metrics.unsupervised import nontrivial, project_spans, unlabeled_f1
from treeattn.parsing.tree_source import PARSER, TreeSource
from treeattn.tasks.datasets.mccoy import sentence_trees
from treeattn.trees import Tree

PUNCTUATION = {".", "?"}


def word_spans(tree: Tree) -> set[tuple[int, int]]:
    """The tree's spans of two or more words over its words without the final ``.`` or
    ``?``, the whole sentence left out: as EVALB leaves punctuation out, so that where
    each convention hangs the full stop (the grammar beside the sentence, the Treebank
    inside it) counts for nothing."""
    keep = [word not in PUNCTUATION for word in tree.leaves()]
    spans = project_spans(tree.unlabeled_spans(include_preterminals=True), keep)
    return nontrivial(spans, sum(keep))


def scores(gold: list[Tree], parsed: list[Tree]) -> dict[str, float]:
    """Corpus unlabeled F1 and the exact share of ``parsed`` against ``gold``."""
    gold_spans = [word_spans(t) for t in gold]
    parsed_spans = [word_spans(t) for t in parsed]
    f1 = unlabeled_f1(gold_spans, parsed_spans)
    exact = sum(g == p for g, p in zip(gold_spans, parsed_spans, strict=True))
    return {
        "sentences": len(gold),
        "f1": f1.corpus_f1,
        "precision": f1.corpus_precision,
        "recall": f1.corpus_recall,
        "exact": 100.0 * exact / len(gold),
    }


def subject_spans(gold: Tree, parsed: Tree) -> tuple[bool, bool]:
    """Whether ``parsed`` has the gold tree's main subject as a span (the longest of the
    gold spans that begin the sentence; the whole sentence is not one of them), and
    whether its spans inside the subject are exactly the gold ones."""
    gold_spans, parsed_spans = word_spans(gold), word_spans(parsed)
    start, end = max((span for span in gold_spans if span[0] == 0), key=lambda span: span[1])

    def inside(spans: set[tuple[int, int]]) -> set[tuple[int, int]]:
        return {span for span in spans if start <= span[0] and span[1] <= end}

    return (start, end) in parsed_spans, inside(gold_spans) == inside(parsed_spans)


def by_subject(gold: list[Tree], parsed: list[Tree], kinds: list[str]) -> list[dict]:
    """``scores`` of the sentences of each kind of main subject, in order of first
    appearance, with the shares whose main subject the parser keeps whole and whose
    subject it brackets exactly as the grammar does."""
    groups: dict[str, list[int]] = {}
    for k, kind in enumerate(kinds):
        groups.setdefault(kind, []).append(k)
    results = []
    for kind, chosen in groups.items():
        g, p = [gold[k] for k in chosen], [parsed[k] for k in chosen]
        kept, exact = zip(*(subject_spans(a, b) for a, b in zip(g, p, strict=True)), strict=True)
        results.append(
            {
                "subject": kind,
                **scores(g, p),
                "subject_kept": 100.0 * sum(kept) / len(g),
                "subject_exact": 100.0 * sum(exact) / len(g),
            }
        )
    return results


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parser", default=None, help="accurate (the default), fast, or a file")
    p.add_argument("--train", type=int, default=2000, help="generated training pairs scored")
    p.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    p.add_argument("--splits", nargs="+", choices=["train", "gen"], default=["train", "gen"])
    add_run_arguments(p, "mccoy_parser_f1.json/.md", 0.0, "20 pairs a split")
    args = finish_run_arguments(p.parse_args(argv))
    device = start_device(args)
    if device is None:
        return
    # --quick: 20 pairs a split, the training pairs drawn as a set of their own (no
    # 100,000 to draw first).
    limit = 20 if args.quick else None
    train_size = 20 if args.quick else TRAIN_SIZE
    source = TreeSource(PARSER, args.parser)
    start = time.perf_counter()
    rows, results = [], []
    subject_rows, subject_results = [], []
    for name in args.tasks:
        data = McCoyData.load(name)
        splits = {
            "train": training_set(data, train_size)[: args.train],
            "gen": data.load_split("gen")[:limit],
        }
        for split in args.splits:
            examples = splits[split]
            inputs = [e.source[:-1] for e in examples]
            outputs = [e.target for e in examples]
            parsed = sentence_trees(source, inputs + outputs, f"{name} {split} sentences")
            parts = {
                "input": ([e.sentence.tree for e in examples], parsed[: len(examples)]),
                "output": ([data.output_tree(e) for e in examples], parsed[len(examples) :]),
            }
            for part, (gold, made) in parts.items():
                result = {"task": name, "split": split, "part": part, **scores(gold, made)}
                results.append(result)
                rows.append(
                    [
                        name,
                        split,
                        part,
                        result["sentences"],
                        fmt(result["f1"]),
                        fmt(result["exact"]),
                    ]
                )
                print(rows[-1], flush=True)
            gold, made = parts["input"]
            kinds = [subject_type(e.sentence) for e in examples]
            for result in by_subject(gold, made, kinds):
                subject_results.append({"task": name, "split": split, **result})
                subject_rows.append(
                    [
                        name,
                        split,
                        result["subject"],
                        result["sentences"],
                        fmt(result["f1"]),
                        fmt(result["exact"]),
                        fmt(result["subject_kept"]),
                        fmt(result["subject_exact"]),
                    ]
                )
    seconds = time.perf_counter() - start
    info = machine_info(device)
    table = markdown_table(
        ["task", "split", "part", "sentences", "unlabeled F1", "exact tree %"], rows
    )
    subject_table = markdown_table(
        [
            "task",
            "split",
            "main subject",
            "inputs",
            "unlabeled F1",
            "exact tree %",
            "subject kept %",
            "subject exact %",
        ],
        subject_rows,
    )
    parser = args.parser or "accurate"
    markdown = (
        f"McCoy sentences, parser {parser} ({machine_line(info)})\n\n{table}\n\n"
        f"The inputs by what modifies the main subject:\n\n{subject_table}\n"
    )
    print(markdown)
    write_results(
        args,
        "mccoy_parser_f1",
        info,
        seconds,
        markdown,
        results=results,
        by_subject=subject_results,
    )


if __name__ == "__main__":
    main()
