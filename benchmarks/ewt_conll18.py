"""Universal Dependencies from a parser, scored by the CoNLL 2018 shared task's measures on
UD English-EWT: the parser reads each sentence's raw text (its ``# text``, tokenized by the
parser as ``treeattn parse`` does) and, apart, EWT's gold words (``--tokenized``); both
CoNLL-U outputs (``--format conllu --dependencies ud``) are scored by udapi's
``eval.Conll18`` (a port of the shared task's script: words aligned by their forms,
punctuation counted, relation subtypes dropped), on every sentence and on the questions
alone (the sentences whose last or second-to-last gold word is "?"). Tokens, which the
port leaves out, are scored here as the shared task defines them: a token is a
multi-word token's line or a word in none, placed by its characters in the text with
white space left out, and it is correct where gold has a token of the same characters.

``--spacy``: the spaCy component (``spacy.blank("en")`` and ``treeattn_parser``, each line
one sentence, as the command line reads it) on the same raw text, its tokens written as
CoNLL-U words and scored alike, then scored against the command line's output as if it
were gold (how far the two agree), with the sentences whose tokens are the command line's
words counted apart; and the speed of ``nlp.pipe`` over the lines against
``Parser.parse`` of the command line's words (the same parser object, medians of
``--repeats`` interleaved rounds after a warm-up on a few lines).

Needs udapi (the ``dev`` extra). ``--models``: parser files or shipped names.

    OMP_NUM_THREADS=2 python -m benchmarks.ewt_conll18 --threads 2 --models runs/x/best.pt
    OMP_NUM_THREADS=1 python -m benchmarks.ewt_conll18 --threads 1 --spacy --repeats 3
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
from benchmarks.ewt_tags import is_question
from treeattn.data.ud import load_ud, ud_path

# What eval.Conll18 counts (and ``token_counts`` for Tokens), and the scores reported.
COUNTED = ("Tokens", "Words", "XPOS", "UAS", "LAS")


def conllu_blocks(path: Path) -> list[str]:
    """The sentences of a CoNLL-U file, each as its text block (comments included)."""
    text = path.read_text(encoding="utf-8")
    return [block + "\n\n" for block in text.strip("\n").split("\n\n")]


def udapy() -> str:
    found = shutil.which("udapy") or str(Path(sys.executable).with_name("udapy"))
    if not Path(found).exists():
        raise SystemExit("udapy not found: install the dev extra (pip install -e '.[dev]')")
    return found


def conll18_counts(gold: Path, predicted: Path) -> dict[str, dict[str, int]]:
    """eval.Conll18's counts: for each measure, correct, gold, predicted and aligned."""
    command = [
        udapy(),
        "read.Conllu",
        "zone=gold",
        f"files={gold}",
        "read.Conllu",
        "zone=pred",
        f"files={predicted}",
        "ignore_sent_id=1",
        "eval.Conll18",
        "print_counts=1",
    ]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    counts = {}
    for line in out.splitlines():
        name, *numbers = (part.strip() for part in line.split("|"))
        if name in COUNTED:
            correct, gold_n, predicted_n, aligned = map(int, numbers)
            counts[name] = {
                "correct": correct,
                "gold": gold_n,
                "predicted": predicted_n,
                "aligned": aligned,
            }
    counts["Tokens"] = token_counts(gold, predicted)
    return counts


def token_spans(path: Path) -> list[tuple[int, int]]:
    """Each token of a CoNLL-U file (a multi-word token's line, or a word in none) as the
    characters it covers in the file's text with white space left out."""
    spans, position, inside = [], 0, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line:
            inside = 0  # the next sentence numbers its words from 1 again
            continue
        if line.startswith("#"):
            continue
        number, form = line.split("\t")[:2]
        if "." in number:  # an empty node: no characters
            continue
        if "-" in number:
            first, last = (int(k) for k in number.split("-"))
            inside = last
        elif int(number) <= inside:
            continue  # a word of the multi-word token before
        size = len("".join(form.split()))
        spans.append((position, position + size))
        position += size
    return spans


def token_counts(gold: Path, predicted: Path) -> dict[str, int]:
    """Tokens as the shared task scores them: correct where both files have a token of the
    same characters."""
    gold_spans, predicted_spans = token_spans(gold), token_spans(predicted)
    if [end for _, end in gold_spans[-1:]] != [end for _, end in predicted_spans[-1:]]:
        raise SystemExit(f"{predicted}: its text is not {gold}'s (white space left out)")
    correct = len(set(gold_spans) & set(predicted_spans))
    return {
        "correct": correct,
        "gold": len(gold_spans),
        "predicted": len(predicted_spans),
        "aligned": correct,
    }


def f1(count: dict[str, int]) -> float:
    """The shared task's F1: correct against both the gold and the predicted words."""
    total = count["gold"] + count["predicted"]
    return 100.0 * 2 * count["correct"] / total if total else 0.0


def parse_conllu(model: str, lines: list[str], tokenized: bool, out: Path) -> float:
    """``treeattn parse`` on ``lines`` into ``out``: wall seconds."""
    source = out.with_suffix(".txt")
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    command = [sys.executable, "-m", "treeattn.cli", "parse", "--model", model]
    command += ["--format", "conllu", "--dependencies", "ud", str(source), "-o", str(out)]
    if tokenized:
        command.append("--tokenized")
    begin = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - begin


def score(model: str, split: str, limit: int | None, folder: Path) -> dict:
    trees = load_ud(split)[:limit]
    gold_blocks = conllu_blocks(ud_path(split))[:limit]
    questions = [i for i, tree in enumerate(trees) if is_question(tree.words)]
    inputs = {
        "raw text": ([tree.metadata["text"] for tree in trees], False),
        "gold words": ([" ".join(tree.words) for tree in trees], True),
    }
    gold_all = folder / "gold.conllu"
    gold_all.write_text("".join(gold_blocks), encoding="utf-8")
    gold_questions = folder / "gold-questions.conllu"
    gold_questions.write_text("".join(gold_blocks[i] for i in questions), encoding="utf-8")
    result = {}
    for name, (lines, tokenized) in inputs.items():
        predicted = folder / f"{name.replace(' ', '-')}.conllu"
        seconds = parse_conllu(model, lines, tokenized, predicted)
        blocks = conllu_blocks(predicted)
        if len(blocks) != len(trees):
            raise SystemExit(f"{predicted}: {len(blocks)} sentences for {len(trees)} lines")
        chosen = folder / f"{name.replace(' ', '-')}-questions.conllu"
        chosen.write_text("".join(blocks[i] for i in questions), encoding="utf-8")
        result[name] = {
            "seconds": seconds,
            "all": conll18_counts(gold_all, predicted),
            "questions": conll18_counts(gold_questions, chosen),
        }
    result["sentences"], result["questions"] = len(trees), len(questions)
    return result


def spacy_conllu(docs: list) -> str:
    """spaCy docs as CoNLL-U, one sentence a doc, each token a word (white space tokens
    left out: the component hangs them on a neighbour and nothing on them)."""
    out = []
    for number, doc in enumerate(docs, start=1):
        kept = [t for t in doc if not t.is_space]
        place = {t.i: k + 1 for k, t in enumerate(kept)}
        lines = [f"# sent_id = {number}", f"# text = {doc.text.strip()}"]
        for k, t in enumerate(kept, start=1):
            head = 0 if t.head.i == t.i else place[t.head.i]
            misc = "_" if t.whitespace_ or k == len(kept) else "SpaceAfter=No"
            row = [str(k), t.text, "_", "_", t.tag_, "_", str(head), t.dep_, "_", misc]
            lines.append("\t".join(row))
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def same_words(a: Path, b: Path) -> tuple[int, int]:
    """Of the sentences of two CoNLL-U files whose words are the same, how many, and how
    many of those differ in a head, relation or tag."""
    from treeattn.trees.dependency import read_conllu

    same = differ = 0
    for x, y in zip(read_conllu(a, False), read_conllu(b, False), strict=True):
        if x.words == y.words:
            same += 1
            differ += (x.heads, x.relations, x.xpos) != (y.heads, y.relations, y.xpos)
    return same, differ


def score_spacy(
    model: str, split: str, limit: int | None, folder: Path, repeats: int, seed: int
) -> dict:
    """The component on the raw text, scored against gold and against the command line's
    CoNLL-U (``folder/raw-text.conllu``, which ``score`` wrote), and its speed against
    ``Parser.parse``."""
    import spacy

    from treeattn.cli.text import line_sentences
    from treeattn.integrations.spacy import NAME

    lines = [tree.metadata["text"] for tree in load_ud(split)[:limit]]
    nlp = spacy.blank("en")
    component = nlp.add_pipe(NAME, config={"model": model})
    api = component.parser

    def docs_of(text: list[str]) -> list:
        made = []
        for line in text:  # one sentence a line, as the command line reads it
            doc = nlp.make_doc(line)
            for token in doc:
                token.is_sent_start = token.i == 0
            made.append(doc)
        return made

    scheme = api.token_scheme()
    words = [s.words for s in line_sentences(lines, "input", False, scheme=scheme)]
    steps = {
        "Parser.parse": lambda k: api.parse(words[:k]),
        "nlp.pipe": lambda k: list(component.pipe(docs_of(lines[:k]))),
    }
    for step in steps.values():  # warm-up
        step(20)
    times: dict[str, list[float]] = {step: [] for step in steps}
    order, docs = random.Random(seed), []
    for _ in range(repeats):
        for step in order.sample(list(steps), len(steps)):
            started = time.perf_counter()
            found = steps[step](len(lines))
            times[step].append(time.perf_counter() - started)
            if step == "nlp.pipe":
                docs = found
    predicted = folder / "spacy.conllu"
    predicted.write_text(spacy_conllu(docs), encoding="utf-8")
    command_line = folder / "raw-text.conllu"
    same, differ = same_words(command_line, predicted)
    medians = {step: statistics.median(seconds) for step, seconds in times.items()}
    return {
        "all": conll18_counts(folder / "gold.conllu", predicted),
        "against the command line": conll18_counts(command_line, predicted),
        "same_words": same,  # sentences whose tokens are the command line's words
        "same_words_differ": differ,  # of those, with other heads, relations or tags
        "seconds": times,
        "ratio": medians["Parser.parse"] / medians["nlp.pipe"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "ewt_conll18.json and .md", 0.0, "40 sentences", 1)
    parser.add_argument("--models", nargs="+", default=["accurate"], help="parsers to score")
    parser.add_argument("--split", default="test", help="EWT split (default: test)")
    parser.add_argument(
        "--spacy", action="store_true", help="the spaCy component too: scores and speed"
    )
    args = finish_run_arguments(parser.parse_args())
    if start_device(args) is None:
        return
    if args.threads is not None:  # the parses run in child processes
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    begin = time.perf_counter()
    results, rows = {}, []
    for model in args.models:
        limit = 40 if args.quick else None
        with tempfile.TemporaryDirectory() as folder:
            found = score(model, args.split, limit, Path(folder))
            if args.spacy:
                found["spacy"] = score_spacy(
                    model, args.split, limit, Path(folder), args.repeats, args.seed
                )
        results[model] = found
        for name in ("raw text", "gold words"):
            for subset in ("all", "questions"):
                counts = found[name][subset]
                sentences = found["sentences" if subset == "all" else "questions"]
                rows.append(
                    [
                        model,
                        name,
                        f"{subset} ({sentences})",
                        *(fmt(f1(counts[m]), 2) for m in COUNTED),
                    ]
                )
        if args.spacy:
            component = found["spacy"]
            for name in ("all", "against the command line"):
                counts = component[name]
                rows.append(
                    [
                        model,
                        "raw text, spaCy component",
                        f"{name} ({found['sentences']})",
                        *(fmt(f1(counts[m]), 2) for m in COUNTED),
                    ]
                )
    headers = [
        "parser",
        "input",
        "sentences",
        "Tokens F1",
        "Words F1",
        "XPOS F1",
        "UAS F1",
        "LAS F1",
    ]
    markdown = (
        f"UD English-EWT {args.split}, eval.Conll18 (punctuation counted)\n\n"
        + markdown_table(headers, rows)
    )
    for model, found in results.items():
        if "spacy" in found:
            component = found["spacy"]
            seconds = {k: statistics.median(v) for k, v in component["seconds"].items()}
            markdown += (
                f"\n\n{model}, spaCy component: "
                f"{component['same_words']} sentences whose tokens are the command line's "
                f"words, {component['same_words_differ']} of them with other "
                f"heads, relations or tags; nlp.pipe {seconds['nlp.pipe']:.2f} s against "
                f"Parser.parse {seconds['Parser.parse']:.2f} s (medians), "
                f"ratio {component['ratio']:.2f}"
            )
    info = machine_info(torch.device("cpu"))
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(args, "ewt_conll18", info, time.perf_counter() - begin, markdown, results=results)


if __name__ == "__main__":
    main()
