"""Commands for parsers and parse trees: parse, export-parser, label-heads, evalb, show."""

from __future__ import annotations

import argparse
import sys

from treeattn.cli.arguments import positive
from treeattn.cli.io import run_on_lines
from treeattn.cli.status import OK
from treeattn.cli.text import add_split_sentences, line_sentences


def add_parse(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "parse",
        help="parse raw text: one sentence a line, trees out",
        description="Parse sentences, one per line, with the label attention parser (by "
        "default the accurate one shipped with treeattn, trained on the PTB sample and UD "
        "English-EWT: trees, Penn Treebank tags, Universal Dependencies). Sentences "
        "are tokenized as the Penn Treebank is (as UD English-EWT is where the output is "
        "Universal Dependencies), URLs and e-mail addresses kept whole "
        "(--tokenized: words split on spaces, as given); a line is one sentence, or with "
        "--split-sentences as many as it holds. Output comes in input order, one bracketed "
        "tree a line or CoNLL-U, whose FORMs, SpaceAfter=No and '# text' comments give back "
        "the original text. A bad line (empty, too long, not UTF-8) is an error naming "
        "file:line, exit status 2, and with -o nothing is written unless every line parsed.",
    )
    p.add_argument("input", nargs="?", default="-", help="text file, or - for stdin (default)")
    p.add_argument(
        "--model",
        help="accurate (default: the parser on the pretrained MiniLM encoder, trained on the "
        "PTB sample and UD English-EWT), fast (trained from scratch on the PTB sample, "
        "faster), accurate-ptb (the accurate parser before, PTB sample alone), or a parser "
        "file (.safetensors, or a checkpoint of a parse run)",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="quantize the linear layers to int8 (CPU; on the CPUs measured within a few "
        "percent of float32's speed, at 0.05 F1 less: see the model's card)",
    )
    p.add_argument(
        "--format",
        choices=("brackets", "conllu"),
        default="brackets",
        help="brackets: one bracketed tree a line, words as the Penn Treebank writes them "
        "(-LRB-); conllu: CoNLL-U with the original text (default: brackets)",
    )
    p.add_argument(
        "--dependencies",
        choices=("ud", "tree", "from-tree", "independent"),
        help="where CoNLL-U's heads come from: ud, Universal Dependencies from the arcs of a "
        "parser trained on them (default for such a parser: what spaCy, stanza and the CoNLL "
        "2018 scorer read); tree (or from-tree), the head-rule conversion of the predicted "
        "constituency tree, which always agrees with the brackets (default for any other "
        "constituency parser); independent, the parser's own arcs, decoded apart from the "
        "tree, whatever they learned (for a parser trained on UD, its UD arcs: the same as "
        "ud). A '# scheme' comment on each sentence says which",
    )
    p.add_argument("--tokenized", action="store_true", help="words are split on spaces already")
    add_split_sentences(p, "one tree each")
    p.add_argument("-o", "--out", metavar="FILE", help="write here (default: stdout)")
    p.set_defaults(run=_parse)


def _parse(args: argparse.Namespace) -> int:
    import time

    from treeattn.parsing import Parser
    from treeattn.trees.dependency import format_conllu
    from treeattn.trees.tokenize import with_text

    def parse(lines: list[str], where: str) -> tuple[str, int, float]:
        parser = Parser.load(args.model, int8=args.int8)
        if args.format == "brackets" and not parser.constituency:
            raise ValueError(f"{args.model}: a dependency-only parser; use --format conllu")
        if args.dependencies == "ud" and not parser.ud:  # said as the command line says it
            raise ValueError(
                f"{args.model}: a parser trained on {parser.treebank} has no Universal "
                "Dependencies; use --dependencies tree"
            )
        # Words as UD English EWT cuts them where the output is UD, else as the PTB.
        scheme = "ptb" if args.format == "brackets" else parser.token_scheme(args.dependencies)
        sentences = line_sentences(lines, where, args.split_sentences, args.tokenized, scheme)
        for sentence in sentences:  # checked here to name the input line, not the sentence
            place = sentence.place(where, args.split_sentences)
            if not sentence.tokens:
                raise ValueError(f"{place}: empty sentence")
            if len(sentence.tokens) > parser.max_length:
                raise ValueError(
                    f"{place}: {len(sentence.tokens)} words, more than the parser's limit of "
                    f"{parser.max_length}"
                )
        started = time.perf_counter()
        # The words go in as split here, so that each keeps its place in the line.
        parsed = parser.parse(
            [sentence.words for sentence in sentences],
            progress=sys.stderr.isatty(),
            where=where,
            dependencies=args.dependencies,
        )
        seconds = time.perf_counter() - started
        if args.format == "brackets":
            return "".join(p.tree.to_brackets() + "\n" for p in parsed), len(parsed), seconds
        trees = []
        for sentence, p in zip(sentences, parsed, strict=True):
            tree = with_text(p.dependencies, sentence.tokens, sentence.text)
            number = str(sentence.line)
            rest = dict(tree.metadata)  # the scheme, after sent_id and text as UD has them
            tree.metadata = {
                "sent_id": number + (f".{sentence.index}" if args.split_sentences else ""),
                "text": rest.pop("text"),
                **rest,
            }
            trees.append(tree)
        return format_conllu(trees), len(parsed), seconds

    return run_on_lines(args.input, args.out, parse)


def add_label_heads(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "label-heads",
        help="each label attention head's contribution to each predicted constituent",
        description="Parse one sentence and show how much each label attention head "
        "contributes to each predicted constituent (Mrini et al. 2020, Fig. 6): a table of the "
        "strongest heads and a heat map (constituents x heads). A head's contribution is the "
        "sum of its part of the span vector, min-max scaled over the heads and passed "
        "through a softmax (as the authors' release). Needs a parser trained without the "
        "position-wise feed-forward layer (model.lal_feed_forward=false).",
    )
    p.add_argument("model", help="a parser (.safetensors, or a checkpoint of a parse run)")
    p.add_argument("sentence", help="the sentence (tokenized as the Penn Treebank is)")
    p.add_argument("--tokenized", action="store_true", help="words are split on spaces already")
    p.add_argument("-o", "--out", default="label_heads.png", help="image file (PNG or SVG)")
    p.add_argument("--top", type=positive, default=3, help="heads listed per constituent")
    p.set_defaults(run=_label_heads)


def _label_heads(args: argparse.Namespace) -> int:
    from treeattn.analysis.label_heads import label_heads
    from treeattn.parsing import Parser

    sentence = args.sentence.split() if args.tokenized else args.sentence
    heads = label_heads(Parser.load(args.model), sentence)
    print(heads.format(args.top))
    print(f"\nwritten to {heads.plot(args.out)}")
    return OK


def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-parser",
        help="write a parse checkpoint as a safetensors parser file",
        description="Write a checkpoint of a parse run as a safetensors parser file, the "
        "file `treeattn parse --model` and `Parser.load` read: its config and vocabularies "
        "in the metadata, its own weights as float16 and, of a pretrained backbone, only "
        "what training changed, as int8 changes from the source weights (unless --float32).",
    )
    p.add_argument("checkpoint", help="a best.pt of a parse run")
    p.add_argument("out", help="the .safetensors file to write")
    p.add_argument(
        "--float32", action="store_true", help="write every weight as float32, as trained"
    )
    p.set_defaults(run=_export)


def _export(args: argparse.Namespace) -> int:
    from treeattn.parsing import Parser

    if not args.out.endswith(".safetensors"):
        raise ValueError(f"{args.out}: a parser file ends in .safetensors")
    parser = Parser.load(args.checkpoint)
    path = parser.save(args.out, compact=not args.float32)
    print(f"written to {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return OK


def add_evalb(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evalb",
        help="EVALB bracket scores of predicted trees against gold trees",
        description="Labeled bracketing recall, precision and F1 with EVALB's COLLINS.prm "
        "conventions, printed in EVALB's own layout, with the official program's figures on "
        "messy output: a sentence whose words differ is an error sentence, an empty parse "
        "() or a blank line in a one-tree-per-line test file is skipped, and files with "
        "different tree counts are scored pair by pair; stderr says which and why "
        "(--strict: errors instead). Both files hold bracketed trees (one per line, or "
        "multi-line .mrg) for the same sentences in the same order.",
    )
    p.add_argument("gold")
    p.add_argument("predicted")
    p.add_argument(
        "--strict",
        action="store_true",
        help="make every error or skipped sentence (and a difference in tree counts) an error",
    )
    p.set_defaults(run=_evalb)


def _evalb(args: argparse.Namespace) -> int:
    from treeattn.metrics.evalb import evalb_files

    report = evalb_files(args.gold, args.predicted, strict=args.strict)
    print(report.text)
    problems = report.result.problems
    if problems:
        print(f"treeattn evalb: {len(problems)} problem(s), scored as EVALB does:", file=sys.stderr)
        for problem in problems[:5]:
            print(f"  {problem}", file=sys.stderr)
        if len(problems) > 5:
            print(f"  ... and {len(problems) - 5} more", file=sys.stderr)
    return OK


def add_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="pretty-print the trees of a treebank file",
        description="Draw the trees of a file of bracketed trees (PTB .mrg, SST, or one tree "
        "per line) as indented outlines.",
    )
    p.add_argument("treefile")
    p.add_argument(
        "--first", type=positive, default=1, help="number of the first tree shown (1-based)"
    )
    p.add_argument("--limit", type=positive, default=None, help="show at most this many trees")
    p.set_defaults(run=_show)


def _show(args: argparse.Namespace) -> int:
    from treeattn.trees.pretty import format_tree
    from treeattn.trees.treebank import read_treebank

    trees = read_treebank(args.treefile)
    if args.first > len(trees):
        raise ValueError(
            f"{args.treefile} holds {len(trees)} trees; --first {args.first} is past them"
        )
    chosen = trees[args.first - 1 :][: args.limit]
    for number, tree in enumerate(chosen, start=args.first):
        print(f"# tree {number} of {len(trees)}: {len(tree.leaves())} words")
        print(format_tree(tree))
        print()
    return OK
