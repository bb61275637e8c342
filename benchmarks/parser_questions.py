"""Questions and imperatives in the parser's brackets: the label at the root of the trees
it gives questions, on UD English EWT and on sentences written for this benchmark.

EWT (``--split``, default test): the sentences that end in a question mark (their last
word, after closing quotes and brackets, holds a ``?``) and begin with a wh-word or an
auxiliary or modal verb (``WH_WORDS``, ``AUXILIARIES``: their first word, after opening
quotes and brackets, lowercased). Each is parsed from its raw text (its ``# text``) as
``treeattn parse`` reads a line, and its root is the label of the tree's top node (the
Penn Treebank's outer unlabeled bracket, when a parser writes one, is passed over). The
Treebank writes a wh-question as SBARQ (``(SBARQ (WHNP What) (SQ do you want) ?)``) and a
yes/no question as SQ (``(SQ Is it raining ?)``): the share whose root is one of them is
the score. The roots are counted for the wh-questions and the yes/no questions apart.

Question trees made from the PTB sample's ``--ptb-split`` (default dev, held out from
training; ``treeattn.data.questions``, every declarative the rules take, each as one kind
drawn with ``--seed``): the parser's EVALB F1 (COLLINS.prm) on them, of each kind and in
all, parsed from their words.

``QUESTIONS`` and ``IMPERATIVES`` are sentences written for this benchmark, never seen in
training: each tree's root and the labels under it are shown; an imperative is right as
the Treebank writes it, an S with a VP and no subject before it (``(S (VP Close the door)
.)``).

    OMP_NUM_THREADS=1 python -m benchmarks.parser_questions --threads 1
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

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
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.questions import KINDS, base_forms_from_ud, make_questions
from treeattn.data.ud import load_ud
from treeattn.metrics.evalb import evalb
from treeattn.parsing import Parser
from treeattn.trees import Tree

WH_WORDS = frozenset(["what", "who", "whom", "whose", "which", "when", "where", "why", "how"])
# Forms of be, do and have, and the modals; EWT cuts "can't" and "won't" as "ca" + "n't"
# and "wo" + "n't".
AUXILIARIES = frozenset(
    ["am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "had"]
    + ["can", "ca", "could", "will", "wo", "would", "shall", "should", "may", "might", "must"]
)
QUESTION_ROOTS = ("SBARQ", "SQ")
OPENING = frozenset(['"', "'", "``", "`", "(", "[", "-LRB-", "-LSB-", "“", "‘"])
CLOSING = frozenset(['"', "'", "''", ")", "]", "-RRB-", "-RSB-", "”", "’"])
# Labels of a parser's outer bracket, above the sentence's own root.
TOP_LABELS = frozenset(["", "TOP", "ROOT"])

QUESTIONS = [
    "Why did the committee reject the plan?",
    "What do you want?",
    "Is it raining?",
    "Who wrote this letter?",
    "Where does your sister live?",
    "Can you help me with the boxes?",
    "Did they finish the report on time?",
    "How many people came to the meeting?",
    "Which train should we take to Boston?",
    "Have you ever seen a whale?",
    "Does the shop open on Sundays?",
    "When will the new bridge be finished?",
]
IMPERATIVES = [
    "Close the door.",
    "Please send me the file by Friday.",
    "Turn left at the second light.",
    "Don't touch the wires.",
    "Call me when you arrive.",
    "Take two tablets after each meal.",
]


def question_kind(words: list[str]) -> str | None:
    """``"wh"`` or ``"yes/no"`` for a question as this benchmark selects them (see the
    module's docstring), else None."""
    start, end = 0, len(words)
    while start < end and words[start] in OPENING:
        start += 1
    while end > start and words[end - 1] in CLOSING:
        end -= 1
    if start == end or "?" not in words[end - 1]:
        return None
    first = words[start].lower()
    if first in WH_WORDS:
        return "wh"
    if first in AUXILIARIES:
        return "yes/no"
    return None


def root_node(tree: Tree) -> Tree:
    """The sentence's own root: below an outer bracket with one tree inside."""
    while tree.label in TOP_LABELS and len(tree.children) == 1:
        child = tree.children[0]
        if not isinstance(child, Tree):
            break
        tree = child
    return tree


def top_labels(tree: Tree) -> str:
    """The root and the labels of its children, as ``S -> VP .``."""
    root = root_node(tree)
    under = " ".join(c.label if isinstance(c, Tree) else c for c in root.children)
    return f"{root.label} -> {under}"


def is_imperative_tree(tree: Tree) -> bool:
    """An S with a VP and no noun phrase before it (no subject): ``(S (VP Close the door)
    .)``, ``(S (INTJ Please) (VP send it) .)``."""
    root = root_node(tree)
    if root.label != "S":
        return False
    for child in root.children:
        if isinstance(child, Tree) and child.label == "VP":
            return True
        if isinstance(child, Tree) and child.label.split("-")[0] == "NP":
            return False
    return False


def ewt_questions(split: str, limit: int | None) -> list[tuple[str, str]]:
    """(kind, raw text) of the questions of an EWT split, in order (the first ``limit``)."""
    found = []
    for sentence in load_ud(split):
        kind = question_kind(sentence.words)
        if kind is not None:
            found.append((kind, sentence.metadata["text"]))
    return found[:limit]


def root_counts(kinds: list[str], roots: list[str]) -> dict[str, Counter[str]]:
    """The roots' counts for each kind of question and for all of them."""
    counts: dict[str, Counter[str]] = {"all": Counter()}
    for kind, root in zip(kinds, roots, strict=True):
        counts.setdefault(kind, Counter())[root] += 1
        counts["all"][root] += 1
    return counts


def share(counter: Counter[str]) -> float:
    return 100.0 * sum(counter[label] for label in QUESTION_ROOTS) / max(1, counter.total())


def made_question_scores(parser: Parser, split: str, seed: int, limit: int | None) -> list[dict]:
    """EVALB F1 of ``parser`` on question trees made from a PTB sample split, by kind."""
    trees = [e.tree for e in load_ptb_sample(split)][:limit]
    made = make_questions(trees, 1.0, base_forms_from_ud(load_ud("train")), seed=seed)
    parsed = [p.tree for p in parser.parse([t.leaves() for t in made.trees])]
    rows = []
    for kind in (*KINDS, "all"):
        chosen = [k for k, found in enumerate(made.kinds) if kind in (found, "all")]
        if not chosen:
            continue
        result = evalb([made.trees[k] for k in chosen], [parsed[k] for k in chosen])
        rows.append({"kind": kind, "sentences": len(chosen), "f1": result.fmeasure})
    rows[-1]["summary"] = made.summary()
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parser", default=None, help="accurate (the default), fast, or a file")
    p.add_argument("--split", default="test", choices=["train", "dev", "test"])
    p.add_argument("--examples", type=int, default=15, help="wrong EWT questions listed")
    p.add_argument("--ptb-split", default="dev", choices=["train", "dev", "test"])
    add_run_arguments(p, "parser_questions.json/.md", 0.0, "20 EWT questions")
    args = finish_run_arguments(p.parse_args(argv))
    device = start_device(args)
    if device is None:
        return
    start = time.perf_counter()
    selected = ewt_questions(args.split, 20 if args.quick else None)
    kinds = [kind for kind, _ in selected]
    parser = Parser.load(args.parser, device=str(device))
    trees = [parse.tree for parse in parser.parse([text for _, text in selected])]
    roots = [root_node(tree).label for tree in trees]
    counts = root_counts(kinds, roots)
    written = parser.parse(QUESTIONS + IMPERATIVES)
    made = made_question_scores(parser, args.ptb_split, args.seed, 40 if args.quick else None)
    seconds = time.perf_counter() - start

    order = ["wh", "yes/no", "all"]
    share_rows = [
        [
            kind,
            counts.get(kind, Counter()).total(),
            *(counts.get(kind, Counter())[label] for label in QUESTION_ROOTS),
            fmt(share(counts.get(kind, Counter()))),
        ]
        for kind in order
    ]
    labels = [label for label, _ in counts["all"].most_common()]
    label_rows = [
        [label, *(counts.get(kind, Counter())[label] for kind in order)] for label in labels
    ]
    wrong = [
        [kind, text.replace("|", "\\|"), top_labels(tree)]
        for (kind, text), tree, root in zip(selected, trees, roots, strict=True)
        if root not in QUESTION_ROOTS
    ]
    written_rows = []
    for number, parse in enumerate(written):
        question = number < len(QUESTIONS)
        right = (
            root_node(parse.tree).label in QUESTION_ROOTS
            if question
            else is_imperative_tree(parse.tree)
        )
        written_rows.append(
            [
                "question" if question else "imperative",
                " ".join(parse.words),
                top_labels(parse.tree),
                "yes" if right else "no",
            ]
        )
    info = machine_info(device)
    name = args.parser or "accurate"
    markdown = (
        f"Questions in the brackets of parser {name}, EWT {args.split} "
        f"({machine_line(info)}, {seconds:.0f} s)\n\n"
        + markdown_table(["questions", "sentences", *QUESTION_ROOTS, "SBARQ or SQ %"], share_rows)
        + "\n\nTheir roots:\n\n"
        + markdown_table(["root", *order], label_rows)
        + f"\n\nThe first {min(args.examples, len(wrong))} of {len(wrong)} whose root is "
        "neither:\n\n"
        + markdown_table(["questions", "text", "root -> its children"], wrong[: args.examples])
        + f"\n\nQuestion trees made from the PTB sample's {args.ptb_split} split "
        f"({made[-1]['summary']}):\n\n"
        + markdown_table(
            ["kind", "sentences", "EVALB F1"],
            [[row["kind"], row["sentences"], fmt(row["f1"], 2)] for row in made],
        )
        + "\n\nSentences written for this benchmark:\n\n"
        + markdown_table(["kind", "words", "root -> its children", "as the Treebank"], written_rows)
    )
    print(markdown)
    write_results(
        args,
        "parser_questions",
        info,
        seconds,
        markdown,
        parser=name,
        counts={kind: dict(counter) for kind, counter in counts.items()},
        shares={kind: share(counts.get(kind, Counter())) for kind in order},
        made_questions=made,
        wrong=[{"kind": k, "text": t, "top": top} for k, t, top in wrong],
        written=[
            {"kind": kind, "words": words, "top": top, "right": right == "yes"}
            for kind, words, top, right in written_rows
        ],
    )


if __name__ == "__main__":
    main()
