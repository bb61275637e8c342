"""Penn Treebank tags on web text: each parser tags the words of UD English EWT (its gold
words, so that tagging alone is measured) and is scored against EWT's XPOS.

EWT writes Penn Treebank tags with OntoNotes' additions (HYPH, NFP, ADD, AFX, GW, XX),
which the Wall Street Journal never uses, and tags some uses otherwise than the WSJ
(``to`` as a preposition ``IN``, dashes and semicolons ``,``). Beside the raw accuracy:
the accuracy against EWT's tags written as the WSJ writes the same uses
(``wsj_convention``, what a joint parser learns), and on the tokens whose gold tag the
WSJ also uses (the tags of the PTB sample). Questions are the sentences whose last or
second-to-last word is "?". The words reach each parser as joint training reads them
(brackets as ``-LRB-``).

    python -m benchmarks.ewt_tags --threads 1
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

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
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.ud import load_ud
from treeattn.parsing import Parser
from treeattn.trees.labels import wsj_convention
from treeattn.trees.tokenize import escape


def wsj_tags() -> frozenset[str]:
    """Every part-of-speech tag of the PTB sample (traces left out)."""
    return frozenset(tag for e in load_ptb_sample(clean=True) for tag in e.tree.tags())


def is_question(words: Sequence[str]) -> bool:
    return "?" in words[-2:]


@dataclass
class TagScores:
    """Counts of right tags: all tokens, against the WSJ's convention, on the tokens
    whose gold tag the WSJ uses, in questions."""

    right: int = 0
    tokens: int = 0
    right_matched: int = 0
    right_shared: int = 0
    shared: int = 0
    right_questions: int = 0
    questions: int = 0

    def rows(self) -> list[str]:
        def rate(right: int, total: int) -> str:
            return fmt(100.0 * right / max(1, total), 2)

        return [
            rate(self.right, self.tokens),
            rate(self.right_matched, self.tokens),
            rate(self.right_shared, self.shared),
            f"{self.tokens - self.shared:,}",
            rate(self.right_questions, self.questions),
        ]


def score_tags(
    gold: Sequence[Sequence[str]],
    guessed: Sequence[Sequence[str]],
    words: Sequence[Sequence[str]],
    shared: frozenset[str],
) -> tuple[TagScores, dict[tuple[str, str], Counter[str]]]:
    """Scores of ``guessed`` against ``gold`` tags, sentence by sentence, and the words of
    each (gold, guessed) confusion with their counts."""
    scores: TagScores = TagScores()
    confusions: dict[tuple[str, str], Counter[str]] = {}
    for gold_tags, tags, sentence in zip(gold, guessed, words, strict=True):
        question = is_question(sentence)
        matched = wsj_convention(sentence, gold_tags)
        for word, g, m, t in zip(sentence, gold_tags, matched, tags, strict=True):
            right = g == t
            scores.tokens += 1
            scores.right += right
            scores.right_matched += m == t
            if g in shared:
                scores.shared += 1
                scores.right_shared += right
            if question:
                scores.questions += 1
                scores.right_questions += right
            if not right:
                confusions.setdefault((g, t), Counter())[word.lower()] += 1
    return scores, confusions


def measure(name: str, words, gold, shared, confusions: int) -> dict:
    """One parser's scores, its seconds and its commonest errors."""
    begin = time.perf_counter()
    parses = Parser.load(name).parse(words)
    seconds = time.perf_counter() - begin
    scores, errors = score_tags(gold, [p.dependencies.xpos for p in parses], words, shared)
    commonest = sorted(errors.items(), key=lambda item: -item[1].total())[:confusions]
    return {
        "scores": asdict(scores),
        "row": scores.rows(),
        "seconds": seconds,
        "errors": [
            {"gold": g, "guessed": t, "count": found.total(), "words": found.most_common(4)}
            for (g, t), found in commonest
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    quick = "the fast parser on 40 sentences"
    add_run_arguments(parser, "ewt_tags.json and .md", 0.0, quick, 1)
    parser.add_argument("--models", nargs="+", help="shipped parsers (accurate fast) or files")
    parser.add_argument("--split", default="test", help="EWT split (default: test)")
    parser.add_argument("--confusions", type=int, default=10, help="commonest errors shown")
    args = finish_run_arguments(parser.parse_args())
    if start_device(args) is None:
        return
    begin = time.perf_counter()
    sentences = load_ud(args.split)[: 40 if args.quick else None]
    words = [escape(s.words) for s in sentences]
    gold = [s.xpos for s in sentences]
    shared = wsj_tags()
    models = args.models or (["fast"] if args.quick else ["accurate", "fast"])
    results = {name: measure(name, words, gold, shared, args.confusions) for name in models}
    questions = sum(is_question(w) for w in words)
    headers = [
        "parser",
        "tags %",
        "as the WSJ tags the uses %",
        "on WSJ's tags %",
        "tokens with other tags",
        "questions %",
        "s",
    ]
    rows = [[name, *r["row"], f"{r['seconds']:.0f}"] for name, r in results.items()]
    lines = [
        f"EWT {args.split}: {len(words):,} sentences ({questions} questions), "
        f"{sum(map(len, words)):,} tokens; {len(shared)} tags in the PTB sample",
        "",
        markdown_table(headers, rows),
        "",
        "Commonest errors (gold->guessed count: commonest words):",
    ]
    for name, r in results.items():
        lines.append(f"- {name}:")
        for e in r["errors"]:
            shown = ", ".join(f"{w} {n}" for w, n in e["words"])
            lines.append(f"  - {e['gold']}->{e['guessed']} {e['count']}: {shown}")
    markdown = "\n".join(lines)
    info = machine_info(torch.device("cpu"))
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(args, "ewt_tags", info, time.perf_counter() - begin, markdown, results=results)


if __name__ == "__main__":
    main()
