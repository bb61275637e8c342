"""The ``treeattn`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the commands import torch only when they run
    from treeattn.data.text import TextOptions
    from treeattn.tasks.trained import Trained
    from treeattn.trees import Tree

DESCRIPTION = """\
treeattn: syntax inside Transformer attention.

Train, evaluate and run Transformer encoders whose attention mechanism is chosen by
name (and tree encoders: hierarchical accumulation, Tree-LSTM) on a task (classify,
mlm, parse, translate), parse raw text with the label attention parser, translate with a
trained model, look at what models learned (attention maps, latent trees, induced
constituency trees, label attention heads, cross-attention on phrase nodes), read and
score parse trees, and run the built-in ListOps demo.
"""

EPILOG = """\
examples:
  treeattn demo
  treeattn train configs/sst5-vanilla.yaml --set seed=2 --set out_dir=runs/sst5-s2
  treeattn evaluate runs/sst5-s2/best.pt test
  printf 'The cat sat on the mat.\nDogs bark.\n' | treeattn parse
  echo "A dog runs on the beach." | treeattn translate runs/multi30k-vanilla/best.pt
  echo "a gorgeous , witty film" | treeattn predict runs/sst5-s2/best.pt -
  treeattn attention runs/sst5-hierarchical/best.pt test --sentence 3
  treeattn latent-trees runs/sst5-structured/best.pt test
  treeattn induce runs/text-constituent/best.pt --ptb test
  treeattn induce-curve runs/text-constituent --ptb test
  treeattn constituent-prior runs/text-constituent/best.pt "the cat sat on the mat"
  treeattn report runs/sst5-s1 runs/sst5-s2 runs/sst5-s3
  treeattn evalb gold.mrg predicted.txt
  treeattn show data/sst/dev.txt --limit 2

Data is read from $TREEATTN_DATA (default: ../shared/data beside the repository).
"""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _overrides_argument(p: argparse.ArgumentParser, scope: str) -> None:
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a config value{scope}, e.g. --set train.lr=3e-4 (repeatable)",
    )


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a model from a config file",
        description="Train a model from a YAML config file (see configs/): its task (task: "
        "classify, mlm or parse), data, model and training settings. Picks up the run's last "
        "checkpoint when its out_dir already holds one; Ctrl-C stops at a clean point and "
        "saves a checkpoint. Under torchrun it trains data-parallel.",
    )
    p.add_argument("config", nargs="?", help="YAML config file (default: the ListOps set-up)")
    _overrides_argument(p, "")
    p.add_argument(
        "--no-resume", action="store_true", help="start afresh even if a checkpoint exists"
    )
    p.set_defaults(run=_train)


def _train(args: argparse.Namespace) -> int:
    from treeattn.engine.trainer import train
    from treeattn.tasks import load_config, make_task

    cfg = load_config(args.config, args.overrides)
    results = train(make_task(cfg), resume=not args.no_resume)
    if os.environ.get("RANK", "0") == "0":  # once per torchrun job
        print(json.dumps(results, indent=2))
    return 0


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a checkpoint on a split or a file",
        description="Score a saved model with its task's metrics. DATA is a split name of "
        "the model's data set (train, dev, test) or a file in that data set's format.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt written by `treeattn train`")
    p.add_argument("data", help="split name or file")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.set_defaults(run=_evaluate)


def _evaluate(args: argparse.Namespace) -> int:
    from treeattn.tasks.trained import load_trained

    trained = load_trained(args.checkpoint)
    if args.json:
        print(json.dumps(trained.evaluate(args.data), indent=2))
    else:
        print(trained.report(args.data))
    return 0


def _add_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict",
        help="run a checkpoint on new input, one output line per input line",
        description="Run a saved model on unlabeled input, one item per line, and print one "
        "line per input line, in order. classify: a sentence (words separated by spaces, or "
        "a bracketed tree; ListOps: an expression) gives its class; for models that read "
        "trees, words are parsed first (--parser). mlm: a sentence with "
        "<mask> words gives the sentence with them filled in. "
        "parse: a tokenized sentence gives its tree (--format brackets, the default for "
        "constituency models, or conllu).",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt written by `treeattn train`")
    p.add_argument("input", nargs="?", default="-", help="input file, or - for stdin (default)")
    p.add_argument("-o", "--out", metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--format", default="", help="output format, where the task has several")
    p.add_argument(
        "--parser",
        metavar="MODEL",
        help="the parser that gives raw sentences their trees, for models that read trees "
        "(default: the one shipped with treeattn)",
    )
    p.set_defaults(run=_predict)


def _predict(args: argparse.Namespace) -> int:
    from treeattn.tasks.trained import load_trained

    trained = load_trained(args.checkpoint)
    if args.parser is not None:
        if not hasattr(trained.task, "parser_path"):
            raise ValueError(f"--parser: a {trained.cfg.task} model parses nothing")
        trained.task.parser_path = args.parser
    lines, where = read_text_lines(args.input)
    outputs = trained.predict(lines, where, args.format)
    write_output("".join(out if out.endswith("\n") else out + "\n" for out in outputs), args.out)
    return 0


def _add_translate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "translate",
        help="translate raw text with a translation checkpoint, one line a sentence",
        description="Translate sentences, one per line, with a checkpoint of a translate run: "
        "one detokenized line out per line in, in order, an empty line for an empty line. A "
        "model whose encoder reads trees parses the input first with the parser it was "
        "trained with (or reads --trees). Beam search (--beam 1: greedy). A bad line (not "
        "UTF-8, too long for the model) is an error naming file:line, exit status 2, and "
        "with -o nothing is written unless every line was translated.",
    )
    p.add_argument("model", help="a best.pt or last.pt of a translate run")
    p.add_argument("input", nargs="?", default="-", help="text file, or - for stdin (default)")
    p.add_argument("-o", "--out", metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--beam", type=_positive, help="beam size (default: the model's, 4)")
    p.add_argument(
        "--trees",
        metavar="FILE",
        help="the source trees, one bracketed tree per input line (empty where the line is), "
        "leaves as the Penn Treebank tokenizes the line",
    )
    p.set_defaults(run=_translate)


def _translate(args: argparse.Namespace) -> int:
    def translate(lines: list[str], where: str) -> tuple[str, int, float]:
        outputs, seconds = translate_lines(args.model, lines, where, args.beam, args.trees)
        done = sum(1 for line in lines if line.strip())
        return "".join(out + "\n" for out in outputs), done, seconds

    return run_on_lines(args.input, args.out, translate, blank_lines=True)


def run_on_lines(
    source: str,
    out: str | None,
    work: Callable[[list[str], str], tuple[str, int, float]],
    blank_lines: bool = False,
) -> int:
    """Read ``source``'s lines (blank ones kept with ``blank_lines``, else an error), run
    ``work(lines, where)`` -> (text, sentences done, seconds spent on them once the model
    was loaded), write the text to ``out`` only if it all succeeded, and say how fast it
    went. Bad input: exit status 2, nothing written."""
    from treeattn.errors import FormatError

    try:
        lines, where = read_all_lines(source) if blank_lines else read_text_lines(source)
        text, done, seconds = work(lines, where)
    except (FormatError, OSError, ValueError) as error:
        print(f"treeattn: error: {error}", file=sys.stderr)
        return 2
    write_output(text, out)
    rate = done / seconds if seconds > 0 else float("inf")
    print(f"{done} sentences in {seconds:.1f} s ({rate:.1f} sentences/s)", file=sys.stderr)
    return 0


def translate_lines(
    model: str, lines: list[str], where: str, beam: int | None, trees_file: str | None
) -> tuple[list[str], float]:
    """One translation per line of ``lines``, "" for a blank line, and the seconds they
    took once the model was loaded (parsing the input included)."""
    import time

    from treeattn.errors import FormatError
    from treeattn.tasks.trained import load_trained
    from treeattn.tasks.translate import TranslateTask
    from treeattn.trees.treebank import parse_treebank_line

    trained = load_trained(model)
    task = trained.task
    if not isinstance(task, TranslateTask):
        raise ValueError(f"{model}: a {trained.cfg.task} model, not a translation model")
    started = time.perf_counter()
    numbers = [k for k, line in enumerate(lines, start=1) if line.strip()]
    trees = None
    if trees_file is not None:
        tree_lines, _ = read_all_lines(trees_file)
        if len(tree_lines) != len(lines):
            raise FormatError(
                f"{len(tree_lines)} lines of trees for {len(lines)} input lines",
                trees_file,
                min(len(tree_lines), len(lines)) + 1,
            )
        trees = [parse_treebank_line(tree_lines[k - 1], trees_file, k) for k in numbers]
    outputs = [""] * len(lines)
    if not numbers:
        return outputs, time.perf_counter() - started
    pairs = task.sources([lines[k - 1] for k in numbers], where, numbers, trees, trees_file or "")
    data = task.encode(pairs, where)
    found = task.translations(trained.model, data, trained.device, beam, sys.stderr.isatty())
    for k, text in zip(numbers, found, strict=True):
        outputs[k - 1] = text
    return outputs, time.perf_counter() - started


def read_all_lines(source: str) -> tuple[list[str], str]:
    """Every line of a UTF-8 file, or of standard input for ``-``, blank ones included (the
    line break that ends the last line does not start another), and a name for errors."""
    from treeattn.errors import decode_utf8, read_utf8

    if source == "-":
        text, where = decode_utf8(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    else:
        text, where = read_utf8(source), source
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines, where


def _add_parse(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "parse",
        help="parse raw text: one sentence a line, trees out",
        description="Parse sentences, one per line, with the label attention parser (by "
        "default the model shipped with treeattn, trained on the PTB sample). Sentences are "
        "tokenized as the Penn Treebank is (--tokenized: words split on spaces, as given); "
        "output comes in input order, one bracketed tree a line or CoNLL-U. A bad line (empty, "
        "too long, not UTF-8) is an error naming file:line, exit status 2, and with -o nothing "
        "is written unless every line parsed.",
    )
    p.add_argument("input", nargs="?", default="-", help="text file, or - for stdin (default)")
    p.add_argument("--model", help="a parser (.safetensors, or a checkpoint of a parse run)")
    p.add_argument("--format", choices=("brackets", "conllu"), default="brackets")
    p.add_argument("--tokenized", action="store_true", help="words are split on spaces already")
    p.add_argument("-o", "--out", metavar="FILE", help="write here (default: stdout)")
    p.set_defaults(run=_parse)


def _parse(args: argparse.Namespace) -> int:
    import time

    from treeattn.parsing import Parser
    from treeattn.trees.dependency import format_conllu

    def parse(lines: list[str], where: str) -> tuple[str, int, float]:
        parser = Parser.load(args.model)
        if args.format == "brackets" and not parser.task.constituency:
            raise ValueError(f"{args.model}: a dependency-only parser; use --format conllu")
        started = time.perf_counter()
        parsed = parser.parse(lines, args.tokenized, progress=sys.stderr.isatty(), where=where)
        seconds = time.perf_counter() - started
        if args.format == "brackets":
            return "".join(p.tree.to_brackets() + "\n" for p in parsed), len(parsed), seconds
        return format_conllu([p.dependencies for p in parsed]), len(parsed), seconds

    return run_on_lines(args.input, args.out, parse)


def read_text_lines(source: str) -> tuple[list[str], str]:
    """The lines of a UTF-8 file, or of standard input for ``-``, and a name for errors;
    an input with no line is an error."""
    from treeattn.errors import decode_utf8, read_utf8, text_lines

    if source == "-":
        text, where = decode_utf8(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    else:
        text, where = read_utf8(source), source
    lines = text_lines(text)
    if not lines:
        raise ValueError(f"{where}: empty input, no sentence to read")
    return lines, where


def write_output(text: str, out: str | None) -> None:
    """To ``out`` (whole or not at all: written aside, then renamed) or to stdout."""
    if out is None:
        sys.stdout.write(text)
        return
    path = Path(out)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _add_cross_attention(sub: argparse._SubParsersAction) -> None:
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

    shares = cross_attention_shares(args.model, args.data)
    print(f"{shares['data']}: {shares['sentences']} sentences, {shares['words']} target words")
    print(f"{'layer':<6} {'nodes %':>8} {'leaves %':>9} {'nodes among keys %':>19}")
    for row in shares["layers"]:
        print(f"{row['layer']:<6} {row['nodes']:>8.1f} {row['leaves']:>9.1f} {row['keys']:>19.1f}")
    return 0


def _add_label_heads(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--top", type=_positive, default=3, help="heads listed per constituent")
    p.set_defaults(run=_label_heads)


def _label_heads(args: argparse.Namespace) -> int:
    from treeattn.analysis.label_heads import label_head_contributions
    from treeattn.parsing import Parser
    from treeattn.viz.attention import plot_attention

    spans = label_head_contributions(Parser.load(args.model), args.sentence, args.tokenized)
    if not spans:
        raise ValueError("the parser predicts no constituent for this sentence")
    print(f"{'constituent':<40} strongest heads (contribution)")
    for span in spans:
        ranked = sorted(enumerate(span.contributions, 1), key=lambda x: -x[1])[: args.top]
        heads = "  ".join(f"{head}: {share:.3f}" for head, share in ranked)
        print(f"{(span.label + ' ' + ' '.join(span.words))[:40]:<40} {heads}")
    rows = [f"{span.label}: {' '.join(span.words)}"[:40] for span in spans]
    heads = [str(h) for h in range(1, len(spans[0].contributions) + 1)]
    matrix = [span.contributions for span in spans]
    title = f"label attention heads: {args.sentence}"
    title = title if len(title) <= 90 else title[:89] + "…"
    path = plot_attention(
        matrix, rows, heads, args.out, title, axes=("label attention head", "constituent")
    )
    print(f"\nwritten to {path}")
    return 0


def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-parser",
        help="write a parse checkpoint as a safetensors parser file",
        description="Write the weights of a checkpoint of a parse run as safetensors "
        "(float16 unless --float32), with its config and vocabularies in the metadata: the "
        "file `treeattn parse --model` and `Parser.load` read.",
    )
    p.add_argument("checkpoint", help="a best.pt of a parse run")
    p.add_argument("out", help="the .safetensors file to write")
    p.add_argument("--float32", action="store_true", help="keep float32 weights")
    p.set_defaults(run=_export)


def _export(args: argparse.Namespace) -> int:
    from treeattn.parsing import Parser

    if not args.out.endswith(".safetensors"):
        raise ValueError(f"{args.out}: a parser file ends in .safetensors")
    path = Parser.load(args.checkpoint).save(args.out, half=not args.float32)
    print(f"written to {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return 0


def _add_evalb(sub: argparse._SubParsersAction) -> None:
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
    return 0


def _add_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="pretty-print the trees of a treebank file",
        description="Draw the trees of a file of bracketed trees (PTB .mrg, SST, or one tree "
        "per line) as indented outlines.",
    )
    p.add_argument("treefile")
    p.add_argument(
        "--first", type=_positive, default=1, help="number of the first tree shown (1-based)"
    )
    p.add_argument("--limit", type=_positive, default=None, help="show at most this many trees")
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
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="train every registered mechanism on generated ListOps and compare",
        description="Train each registered attention mechanism on generated ListOps "
        "(no data files needed), print a comparison table and write it to "
        "OUT/results.json.",
    )
    p.add_argument("--out", default="runs/demo", help="output folder (default: runs/demo)")
    _overrides_argument(p, " for every model")
    p.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    from treeattn.demo import run_demo

    run_demo(Path(args.out), args.overrides)
    return 0


def _add_attention(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attention",
        help="a hierarchical model's attention: maps and phrase vs token shares",
        description="For a trained hierarchical model: draw one sentence's tree and its "
        "attention map over [nodes; leaves] as PNGs, and print how much attention leaf and "
        "node queries give to phrase nodes and to tokens over all of DATA.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt of a hierarchical model")
    p.add_argument("data", nargs="?", default="test", help="split name or file (default: test)")
    p.add_argument(
        "--sentence", type=_positive, default=1, help="sentence drawn (1-based, default 1)"
    )
    p.add_argument("--layer", type=int, default=-1, help="layer drawn (default: the last)")
    p.add_argument("--out", default="runs/attention", help="folder for the PNGs")
    p.set_defaults(run=_attention)


def _attention(args: argparse.Namespace) -> int:
    from treeattn.analysis.hierarchical import attention_shares, draw_sentence, load_hierarchical

    saved = load_hierarchical(args.checkpoint)
    examples, where = saved.read(args.data)  # read once for both
    drawn = draw_sentence(saved, examples, where, args.sentence, args.out, args.layer)
    for kind, path in drawn.items():
        print(f"{kind:<10} {path}")
    shares = attention_shares(saved, examples, where)
    print(f"\nattention share (%) over {shares['data']}, {shares['sentences']} sentences")
    print(f"{'query':<6} {'to nodes':>9} {'to leaves':>10}")
    for kind in ("node", "leaf"):
        print(f"{kind:<6} {shares[kind + '_to_node']:>9.1f} {shares[kind + '_to_leaf']:>10.1f}")
    return 0


def _add_latent_trees(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "latent-trees",
        help="a structured model's latent dependency trees: depth, non-projective share",
        description="For a trained structured-attention model: decode every sentence's best "
        "latent tree in each layer and head (Chu-Liu-Edmonds, or Eisner for a projective model) "
        "and print their mean depth and "
        "share of non-projective trees. --compare adds the same figures for the trees of a "
        "CoNLL-U file (e.g. a treebank's gold trees); --conllu writes the latent trees.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt of a structured model")
    p.add_argument("data", nargs="?", default="test", help="split name or file (default: test)")
    p.add_argument("--compare", metavar="CONLLU", help="CoNLL-U file whose trees to describe too")
    p.add_argument(
        "--conllu", metavar="OUT", help="write the last layer's first-head trees as CoNLL-U"
    )
    p.set_defaults(run=_latent_trees)


def _latent_trees(args: argparse.Namespace) -> int:
    from treeattn.analysis.latent_trees import latent_trees, load_structured, tree_statistics
    from treeattn.trees.dependency import DependencyTree, read_conllu, write_conllu

    saved = load_structured(args.checkpoint)
    examples, where = saved.read(args.data)
    trees = latent_trees(saved, examples, where)
    rows = [
        (f"layer {layer} head {head}", tree_statistics(heads))
        for layer, per_head in enumerate(trees, start=1)
        for head, heads in enumerate(per_head, start=1)
    ]
    if args.compare:
        gold = read_conllu(args.compare)  # the one CoNLL-U rule: one root a sentence
        rows.append((Path(args.compare).name, tree_statistics([t.heads for t in gold])))
    print(f"latent trees of {where}, {len(examples)} sentences")
    print(f"{'trees':<24} {'count':>6} {'length':>7} {'depth':>6} {'non-proj %':>11}")
    for name, row in rows:
        print(
            f"{name:<24} {row['trees']:>6} {row['mean_length']:>7.1f} "
            f"{row['mean_depth']:>6.2f} {row['non_projective']:>11.1f}"
        )
    if args.conllu:
        last = trees[-1][0]
        written = [DependencyTree(ex.tokens, h) for ex, h in zip(examples, last, strict=True)]
        write_conllu(args.conllu, written)
        print(f"\nwritten to {args.conllu}")
    return 0


# treeattn.analysis.induction.VARIANTS, named here so that --help needs no torch import
VARIANT_NAMES = ("paper", "release", "binary")


def _text_option_flags(p: argparse.ArgumentParser) -> None:
    """--drop-punctuation, --lowercase, --normalize-numbers (and --no-...): default, as the
    model was trained."""
    flags = (
        (
            "--drop-punctuation",
            "remove punctuation: by PTB tag for the PTB sample, by the "
            "character rule of treeattn.data.text for a text file",
        ),
        ("--lowercase", "lowercase the words"),
        ("--normalize-numbers", "show every word with a digit as N"),
    )
    for flag, help_text in flags:
        p.add_argument(
            flag,
            action=argparse.BooleanOptionalAction,
            default=None,
            help=f"{help_text} (default: as the model was trained)",
        )


def _add_induce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "induce",
        help="a Tree Transformer's unsupervised trees for raw text, or scored on the PTB sample",
        description="Read constituency trees off a trained Tree Transformer (constituent "
        "attention): split each span at its weakest link, descending a layer while that "
        "link is above --threshold, by one of three variants: paper (Algorithm 1 as "
        "written: halves start a layer lower, a span strong at --min-layer stays flat), "
        "release (the authors' parse.py: a half starts a layer lower only when its links "
        "are all above 0.7; minimum layer 2) or binary (halves stay on their parent's "
        "layer, every span splits). Words are shown to the model as it was trained "
        "(punctuation removed, lowercased, numbers as N, after a start token, where it was); "
        "the flags below change that, and what was removed is printed. Give TEXTFILE (one "
        "sentence per line, tokenized as the Penn Treebank is, as `treeattn parse` does; "
        "--tokenized: words split on spaces) to write one bracketed tree per line over the "
        "words kept, or --ptb SPLIT to parse the PTB sample's sentences and score the trees "
        "of all three variants against its gold trees over the same words (unlabeled F1 "
        "with random, left- and right-branching baselines, recall by phrase type), on every "
        "sentence and on those of at most --max-words words; -o writes --variant's trees.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt of a constituent-attention model")
    p.add_argument("textfile", nargs="?", help="sentences to parse, one per line")
    p.add_argument("--tokenized", action="store_true", help="words are split on spaces already")
    p.add_argument(
        "--ptb",
        metavar="SPLIT",
        choices=("train", "dev", "test", "all"),
        help="parse and score the PTB sample's train, dev, test or all sentences",
    )
    p.add_argument("-o", "--out", metavar="FILE", help="write the trees here (default: stdout)")
    p.add_argument(
        "--variant", choices=VARIANT_NAMES, default="paper", help="induction rule (default paper)"
    )
    p.add_argument("--threshold", type=float, default=0.8, help="link strength (default 0.8)")
    p.add_argument(
        "--min-layer",
        type=int,
        default=None,
        help="lowest layer used (default: 0 for paper and binary, 2 for release)",
    )
    p.add_argument(
        "--max-words",
        type=_positive,
        default=10,
        help="the short-sentence table's limit, after punctuation removal (10)",
    )
    _text_option_flags(p)
    p.set_defaults(run=_induce)


def _induce_options(args: argparse.Namespace, saved: Trained) -> TextOptions:
    """The model's text options, with the flags given on the command line."""
    from dataclasses import replace

    from treeattn.analysis.induction import model_text_options

    chosen = {
        "drop_punctuation": args.drop_punctuation,
        "lowercase": args.lowercase,
        "normalize_numbers": args.normalize_numbers,
    }
    return replace(model_text_options(saved), **{k: v for k, v in chosen.items() if v is not None})


def _induce(args: argparse.Namespace) -> int:
    from treeattn.analysis.induction import (
        describe_removal,
        drop_punctuation,
        induce_links,
        load_tree_transformer,
        ptb_text,
        trees_from_links,
    )
    from treeattn.data.text import plain_sentence
    from treeattn.tasks.sentences import lines_to_sentences

    if (args.textfile is None) == (args.ptb is None):
        raise ValueError("give either TEXTFILE or --ptb SPLIT")
    saved = load_tree_transformer(args.checkpoint)
    options = _induce_options(args, saved)
    if args.textfile:
        lines, where = read_text_lines(args.textfile)
        if args.tokenized:
            sentences = lines_to_sentences(lines, where)
        else:
            from treeattn.trees.tokenize import tokenize

            sentences = lines_to_sentences([" ".join(tokenize(line)) for line in lines], where)
        tagged = [plain_sentence(words) for words in sentences]
        prepared = drop_punctuation(tagged, options.drop_punctuation, args.textfile)
        print(f"text: {options.describe()}", file=sys.stderr)
        if options.drop_punctuation:
            print(describe_removal(prepared, "character rule"), file=sys.stderr)
        links = induce_links(saved, prepared.sentences, args.textfile, options)
        trees = trees_from_links(
            prepared.sentences, links, args.variant, args.threshold, args.min_layer
        )
    else:
        text = ptb_text(saved, args.ptb, options)
        where, sentences = f"PTB sample {args.ptb}", text.prepared.sentences
        print(f"text: {options.describe()}")
        if options.drop_punctuation:
            print(describe_removal(text.prepared, "by PTB tag"))
            print("gold trees are scored over the same words")
        print()
        links = induce_links(saved, sentences, where, options)
        by_variant = {
            v: trees_from_links(sentences, links, v, args.threshold, args.min_layer)
            for v in VARIANT_NAMES
        }
        _print_induction_scores(text.gold, by_variant, where, args.max_words)
        trees = by_variant[args.variant]
    text_out = "".join(tree.to_brackets() + "\n" for tree in trees)
    if args.out:
        Path(args.out).write_text(text_out, encoding="utf-8")
        print(f"{len(trees)} trees ({args.variant}) written to {args.out}")
    elif args.textfile:
        sys.stdout.write(text_out)
    return 0


def _print_induction_scores(
    gold: list[Tree], by_variant: dict[str, list[Tree]], where: str, max_words: int
) -> None:
    """F1 of each variant's trees and the baselines, with recall by phrase type, on every
    sentence and on the short ones."""
    from treeattn.analysis.induction import score_induction

    for title, limit in (
        (f"all {len(gold)} sentences", None),
        (f"<= {max_words} words", max_words),
    ):
        scores = {v: score_induction(gold, trees, limit) for v, trees in by_variant.items()}
        first = next(iter(scores.values()))
        print(f"{where}, {title} ({first['sentences']} scored): unlabeled F1")
        print(f"{'trees':<16} {'sentence F1':>11} {'corpus F1':>10}")
        rows = [(f"model, {v}", score["f1"]["model"]) for v, score in scores.items()]
        rows += [(m, f1) for m, f1 in first["f1"].items() if m != "model"]
        for name, f1 in rows:
            print(f"{name:<16} {f1.sentence_f1:>11.1f} {f1.corpus_f1:>10.1f}")
        for v, score in scores.items():
            recall = "  ".join(
                f"{label} {value:.1f}"
                for label, value in score["recall"].items()
                if value is not None
            )
            print(f"recall by phrase type, {v}: {recall}")
        print()


def _add_induce_curve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "induce-curve",
        help="a Tree Transformer run's dev perplexity and unsupervised F1 per kept checkpoint",
        description="For every step-K.pt a Tree Transformer run kept (train.keep_every=K): "
        "its dev perplexity and the sentence-level / corpus-level unlabeled F1 of each "
        "induction variant's trees on the PTB sample's --ptb split, one row per checkpoint: "
        "whether F1 follows perplexity over training.",
    )
    p.add_argument("run_dir", metavar="RUN", help="a run folder holding step-K.pt files")
    p.add_argument(
        "--ptb",
        metavar="SPLIT",
        choices=("train", "dev", "test", "all"),
        default="test",
        help="the PTB sample split scored (default test)",
    )
    p.add_argument("--threshold", type=float, default=0.8, help="link strength (default 0.8)")
    p.add_argument(
        "--min-layer",
        type=int,
        default=None,
        help="lowest layer used (default: 0 for paper and binary, 2 for release)",
    )
    p.set_defaults(run=_induce_curve)


def _induce_curve(args: argparse.Namespace) -> int:
    from treeattn.analysis.induction import induction_curve

    points = induction_curve(
        args.run_dir, args.ptb, args.threshold, args.min_layer, progress=sys.stderr.isatty()
    )
    print(f"{args.run_dir}: dev perplexity; unlabeled F1 (sentence / corpus) on PTB {args.ptb}")
    header = "".join(f" {v:>13}" for v in VARIANT_NAMES)
    print(f"{'step':>7} {'perplexity':>10}{header}")
    for point in points:
        cells = "".join(
            f" {point.f1[v].sentence_f1:>6.1f} /{point.f1[v].corpus_f1:>5.1f}"
            for v in VARIANT_NAMES
        )
        print(f"{point.step:>7} {point.perplexity:>10.1f}{cells}")
    return 0


def _add_prior(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "constituent-prior",
        help="heat maps of a Tree Transformer's constituent prior for one sentence",
        description="Draw the constituent prior C of chosen layers of a trained Tree "
        "Transformer for one sentence, side by side in one PNG (or SVG).",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt of a constituent-attention model")
    p.add_argument("sentence", help="the sentence, words separated by spaces")
    p.add_argument("-o", "--out", default="constituent_prior.png", help="image file")
    p.add_argument("--layers", type=int, nargs="+", help="layers, from 0 (default: all)")
    p.set_defaults(run=_prior)


def _prior(args: argparse.Namespace) -> int:
    from treeattn.analysis.induction import load_tree_transformer, sentence_priors
    from treeattn.viz.attention import plot_priors

    saved = load_tree_transformer(args.checkpoint)
    words = args.sentence.split()
    if not words:
        raise ValueError("the sentence is empty")
    priors = sentence_priors(saved, words)
    layers = args.layers if args.layers is not None else list(range(len(priors)))
    for layer in layers:
        if not 0 <= layer < len(priors):
            raise ValueError(f"layer {layer} is not in 0..{len(priors) - 1}")
    titles = [f"layer {layer}" for layer in layers]
    path = plot_priors([priors[layer] for layer in layers], words, titles, args.out)
    print(f"written to {path}")
    return 0


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="summarise finished runs (mean ± std over seeds)",
        description="Print each run's scores (its task's metrics on the splits scored at the "
        "end: dev and test accuracy, perplexity, ...) and their mean ± sample standard "
        "deviation, e.g. over the seeds of one configuration.",
    )
    p.add_argument("runs", nargs="+", help="run folders holding results.json")
    p.set_defaults(run=_report)


def _report(args: argparse.Namespace) -> int:
    from treeattn.engine.report import format_report
    from treeattn.tasks import config_from_dict

    print(format_report(args.runs, lambda raw: config_from_dict(raw).to_dict()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treeattn",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from treeattn import __version__

    parser.add_argument("--version", action="version", version=f"treeattn {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (
        _add_train,
        _add_evaluate,
        _add_predict,
        _add_parse,
        _add_translate,
        _add_cross_attention,
        _add_label_heads,
        _add_export,
        _add_report,
        _add_attention,
        _add_latent_trees,
        _add_induce,
        _add_induce_curve,
        _add_prior,
        _add_evalb,
        _add_show,
        _add_demo,
    ):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    from treeattn.errors import FormatError

    try:
        return args.run(args)
    except BrokenPipeError:
        # The reader went away (``treeattn ... | head``): stop quietly, as Unix tools do.
        # Standard output is pointed at /dev/null so that Python's final flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (FormatError, OSError, ValueError, KeyError, FloatingPointError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"treeattn: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
