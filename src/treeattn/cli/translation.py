"""Commands for translation models: translate, cross-attention."""

from __future__ import annotations

import argparse
import sys

from treeattn.cli.arguments import TREE_KINDS, add_tree_options, positive, use_tree_options
from treeattn.cli.io import run_on_lines
from treeattn.cli.status import OK
from treeattn.cli.text import add_split_sentences, several_sentences, warn_several_sentences


def add_translate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "translate",
        help="translate raw text with a translation checkpoint, one line a sentence",
        description="Translate sentences, one per line, with a checkpoint of a translate run: "
        "one detokenized line out per line in, in order, an empty line for an empty line. A "
        "model whose encoder reads trees parses the input first with the parser it was "
        "trained with (or reads the trees of --trees). A line is one sentence; --split-sentences "
        "translates each sentence of a line apart and joins the translations. Beam search "
        "(--beam 1: greedy). A bad line (not UTF-8, too long for the model) is an error "
        "naming file:line, and so is an input without a sentence: exit status 2, and with -o "
        "nothing is written unless every line was translated.",
    )
    p.add_argument("model", help="a best.pt or last.pt of a translate run")
    p.add_argument("input", nargs="?", default="-", help="text file, or - for stdin (default)")
    p.add_argument("-o", "--out", metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--beam", type=positive, help="beam size (default: the model's, 4)")
    add_tree_options(
        p,
        "the source trees, one bracketed tree per input line (empty where the line is), "
        "leaves as the Penn Treebank tokenizes the line",
    )
    add_split_sentences(p, "translated apart, joined by a space")
    p.add_argument(
        "--cache",
        action="store_true",
        help="keep the parser's trees of this input under $TREEATTN_CACHE/trees, to "
        "translate it again without parsing (default: parse, keep nothing)",
    )
    p.set_defaults(run=_translate)


def _translate(args: argparse.Namespace) -> int:
    def translate(lines: list[str], where: str) -> tuple[str, int, float]:
        outputs, seconds = translate_lines(args, lines, where)
        done = sum(1 for line in lines if line.strip())
        return "".join(out + "\n" for out in outputs), done, seconds

    return run_on_lines(args.input, args.out, translate, blank_lines=True)


def translate_lines(
    args: argparse.Namespace, lines: list[str], where: str
) -> tuple[list[str], float]:
    """One translation per line of ``lines``, "" for a blank line, and the seconds they
    took once the model was loaded (parsing the input included), as the options in
    ``args`` say: with ``split_sentences`` each sentence of a line is translated apart and
    the translations joined by a space; with ``cache`` the parser's trees of the input are
    kept in ``$TREEATTN_CACHE``; ``trees`` and ``parser`` as ``add_tree_options`` says."""
    import time

    from treeattn.parsing.tree_source import read_aligned_trees
    from treeattn.tasks.trained import load_trained
    from treeattn.tasks.translate import TranslateTask
    from treeattn.trees.tokenize import sentence_spans

    trained = load_trained(args.model)
    task = trained.task
    if not isinstance(task, TranslateTask):
        raise ValueError(f"{args.model}: a {trained.cfg.task} model, not a translation model")
    # A file of trees is read here, one tree a line of the input, blank lines kept.
    kind = args.trees if args.trees in TREE_KINDS else None
    use_tree_options(task, kind, args.parser)
    split, beam, cache = args.split_sentences, args.beam, args.cache
    trees_file = None if args.trees in (None, *TREE_KINDS) else args.trees
    if split and trees_file is not None:
        raise ValueError("--trees holds one tree a line; it cannot go with --split-sentences")
    started = time.perf_counter()
    numbers = [k for k, line in enumerate(lines, start=1) if line.strip()]
    trees = None if trees_file is None else read_aligned_trees(trees_file, len(lines), numbers)
    if not split:
        warn_several_sentences(several_sentences(lines), where)
    # Each sentence with the number of its line, for errors and to join the outputs.
    units = [
        (k, lines[k - 1][a:b])
        for k in numbers
        for a, b in (sentence_spans(lines[k - 1]) if split else [(0, len(lines[k - 1]))])
    ]
    if not units:
        return [""] * len(lines), time.perf_counter() - started
    texts, found_in = [text for _, text in units], [k for k, _ in units]
    pairs = task.sources(texts, where, found_in, trees, trees_file or "", cache)
    data = task.encode(pairs, where)
    found = task.translations(trained.model, data, trained.device, beam, sys.stderr.isatty())
    joined: dict[int, list[str]] = {}
    for k, text in zip(found_in, found, strict=True):
        joined.setdefault(k, []).append(text)
    outputs = [" ".join(joined.get(k, [])) for k in range(1, len(lines) + 1)]
    return outputs, time.perf_counter() - started


def add_cross_attention(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cross-attention",
        help="how a tree translation model's decoder divides attention: phrase nodes vs words",
        description="For a translation model with the hierarchical encoder: the share of the "
        "decoder's cross-attention on the source tree's phrase nodes and on its leaves "
        "(subword pieces), per layer, averaged over heads and every reference word of a "
        "split read with teacher forcing (Nguyen et al. 2020, Table 4), beside the share "
        "of nodes among the keys (what uniform attention would give).",
    )
    p.add_argument("model", help="a best.pt or last.pt of a translate run (hierarchical)")
    p.add_argument("data", nargs="?", default="test_2016_flickr", help="split name or prefix")
    p.set_defaults(run=_cross_attention)


def _cross_attention(args: argparse.Namespace) -> int:
    from treeattn.analysis.hierarchical import cross_attention_shares

    print(cross_attention_shares(args.model, args.data).format())
    return OK
