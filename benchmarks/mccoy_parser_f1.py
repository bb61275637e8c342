"""The default parser's trees of McCoy et al.'s (2020) sentences against the grammar's: the
silver trees a model trained with ``data.trees: parser`` reads, scored where the gold
ones are known.

For each task (question formation, tense reinflection): the input sentences (the
declarative with its full stop, no task word) and the correct outputs of the first
``--train`` generated training pairs (what tree regularization reads) and of the shared
gen split (where the two rules part), each parsed alone from its words as
``treeattn.tasks.datasets.mccoy`` parses them. Scores: corpus unlabeled F1 over spans of
two or more words, the whole sentence and the final ``.`` or ``?`` left out (as EVALB
leaves punctuation out; ``treeattn.metrics.unsupervised``), and the share of sentences
whose spans are exactly the grammar's.

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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parser", default=None, help="accurate (the default), fast, or a file")
    p.add_argument("--train", type=int, default=2000, help="generated training pairs scored")
    p.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
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
    for name in args.tasks:
        data = McCoyData.load(name)
        splits = {
            "train": training_set(data, train_size)[: args.train],
            "gen": data.load_split("gen")[:limit],
        }
        for split, examples in splits.items():
            for part in ("input", "output"):
                if part == "input":
                    words = [e.source[:-1] for e in examples]
                    gold = [e.sentence.tree for e in examples]
                else:
                    words = [e.target for e in examples]
                    gold = [data.output_tree(e) for e in examples]
                parsed = sentence_trees(source, words, f"{name} {split} {part}s")
                result = {"task": name, "split": split, "part": part, **scores(gold, parsed)}
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
    seconds = time.perf_counter() - start
    info = machine_info(device)
    table = markdown_table(
        ["task", "split", "part", "sentences", "unlabeled F1", "exact tree %"], rows
    )
    parser = args.parser or "accurate"
    markdown = f"McCoy sentences, parser {parser} ({machine_line(info)})\n\n{table}\n"
    print(markdown)
    write_results(args, "mccoy_parser_f1", info, seconds, markdown, results=results)


if __name__ == "__main__":
    main()
