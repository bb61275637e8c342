"""Commands that look inside trained models: attention, latent-trees, induce,
induce-curve, constituent-prior, view. The analyses compute and format; these commands print."""

from __future__ import annotations

import argparse
import sys

from treeattn.cli.arguments import positive
from treeattn.cli.io import read_lines, write_output
from treeattn.cli.status import OK
from treeattn.trees.induction import THRESHOLD, VARIANTS

# What a split argument left out means.
HELD_OUT = "the model's held-out split: test, or CoLA's in_domain"


def add_attention(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attention",
        help="a hierarchical model's attention: maps and phrase vs token shares",
        description="For a trained hierarchical model: draw one sentence's tree and its "
        "attention map over [nodes; leaves] as PNGs, and print how much attention leaf and "
        "node queries give to phrase nodes and to tokens over all of DATA.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt of a hierarchical model")
    p.add_argument("data", nargs="?", help=f"split name or file (default: {HELD_OUT})")
    p.add_argument(
        "--sentence", type=positive, default=1, help="sentence drawn (1-based, default 1)"
    )
    p.add_argument("--layer", type=int, default=-1, help="layer drawn (default: the last)")
    p.add_argument("--out", default="runs/attention", help="folder for the PNGs")
    p.set_defaults(run=_attention)


def _attention(args: argparse.Namespace) -> int:
    from treeattn.analysis.hierarchical import attention_shares, draw_sentence, load_hierarchical

    saved = load_hierarchical(args.checkpoint)
    examples, where = saved.read(args.data or saved.task.held_out_split)  # once for both
    drawn = draw_sentence(saved, examples, where, args.sentence, args.out, args.layer)
    for kind, path in drawn.items():
        print(f"{kind:<10} {path}")
    print()
    print(attention_shares(saved, examples, where).format())
    return OK


def add_latent_trees(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("data", nargs="?", help=f"split name or file (default: {HELD_OUT})")
    p.add_argument("--compare", metavar="CONLLU", help="CoNLL-U file whose trees to describe too")
    p.add_argument(
        "--conllu", metavar="OUT", help="write the last layer's first-head trees as CoNLL-U"
    )
    p.set_defaults(run=_latent_trees)


def _latent_trees(args: argparse.Namespace) -> int:
    from treeattn.analysis.latent_trees import (
        latent_tree_table,
        latent_trees,
        load_structured,
        write_latent_trees,
    )

    saved = load_structured(args.checkpoint)
    examples, where = saved.read(args.data or saved.task.held_out_split)
    trees = latent_trees(saved, examples, where)
    print(latent_tree_table(trees, where, args.compare).format())
    if args.conllu:
        write_latent_trees(args.conllu, examples, trees[-1][0])
        print(f"\nwritten to {args.conllu}")
    return OK


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


def _min_layer_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-layer",
        type=int,
        default=None,
        help="lowest layer used (default: 0 for paper and binary, 2 for release)",
    )


def add_induce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "induce",
        help="unsupervised trees from a Tree Transformer or any pretrained model, for raw "
        "text or scored on the PTB sample",
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
        "sentence and on those of at most --max-words words; -o writes --variant's trees. "
        "MODEL may instead be a pretrained model, read with no training: minilm, "
        "smollm2-135m or a local transformers folder. Its trees split each sentence "
        "top-down at the largest distance between adjacent words (Shen et al. 2018), a "
        "distance read from one layer by each of --methods: hidden (between the words' "
        "hidden states, --hidden-distance), attention (between their attention "
        "distributions, --attention-distance, averaged over heads) and perturbed "
        "(perturbed masking, Wu et al. 2020, for models with a mask token). The model reads "
        "every sentence whole; the trees cover its words without punctuation (by PTB tag, "
        "or the character rule for a text file; --no-drop-punctuation: every word). With "
        "--ptb SPLIT every layer's trees are scored, the layer with the best sentence F1 on "
        "the dev split is chosen (--layer: a given one) and reported on SPLIT beside the "
        "baselines; --plot draws F1 by layer, --json writes the scores, -o the first "
        "method's trees at its layer. With TEXTFILE, -o (or stdout) gets the first method's "
        "trees at --layer, else at the layer chosen on the dev split.",
    )
    p.add_argument(
        "checkpoint",
        metavar="MODEL",
        help="a best.pt or last.pt of a constituent-attention model, or a pretrained model: "
        "minilm, smollm2-135m or a local transformers folder",
    )
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
        "--variant", choices=VARIANTS, default="paper", help="induction rule (default paper)"
    )
    p.add_argument("--threshold", type=float, default=THRESHOLD, help="link strength (default 0.8)")
    _min_layer_argument(p)
    p.add_argument(
        "--max-words",
        type=positive,
        default=10,
        help="the short-sentence table's limit, after punctuation removal (10)",
    )
    _text_option_flags(p)
    _pretrained_flags(p)
    p.set_defaults(run=_induce)


def _pretrained_flags(p: argparse.ArgumentParser) -> None:
    """The options of ``induce`` for a pretrained model."""
    from treeattn.analysis.zero_shot_names import (
        ATTENTION_DISTANCE_NAMES,
        HIDDEN_DISTANCE_NAMES,
        METHODS,
    )

    group = p.add_argument_group("a pretrained model (no training)")
    group.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        help="distances read (default: all the model allows; perturbed needs a mask token)",
    )
    group.add_argument(
        "--hidden-distance",
        choices=HIDDEN_DISTANCE_NAMES,
        default="l2",
        help="between hidden states (default l2)",
    )
    group.add_argument(
        "--attention-distance",
        choices=ATTENTION_DISTANCE_NAMES,
        default="js",
        help="between attention rows: Jensen-Shannon or Hellinger (default js)",
    )
    group.add_argument(
        "--layer",
        type=int,
        help="read this layer (0: embeddings) instead of the best on the PTB sample dev split",
    )
    group.add_argument(
        "--right-bias",
        type=float,
        default=0.0,
        metavar="LAMBDA",
        help="Kim et al. (2020)'s right-skewness bias: gap k of m-1 gains LAMBDA x the mean "
        "distance x (1 - k/(m-1)), so trees lean right as English does (default 0: none; "
        "they used 1.5)",
    )
    group.add_argument("--plot", metavar="IMAGE", help="with --ptb: draw F1 by layer here")
    group.add_argument("--json", metavar="FILE", help="with --ptb: write the scores as JSON")


def _induce(args: argparse.Namespace) -> int:
    from treeattn.analysis.induction import chosen_text_options, induce_text, load_link_model
    from treeattn.analysis.induction_scores import induce_ptb
    from treeattn.analysis.zero_shot_trees import is_pretrained_source

    if (args.textfile is None) == (args.ptb is None):
        raise ValueError("give either TEXTFILE or --ptb SPLIT")
    if is_pretrained_source(args.checkpoint):
        return _induce_pretrained(args)
    for flag, given in (
        ("--methods", args.methods),
        ("--layer", args.layer is not None),
        ("--right-bias", args.right_bias),
        ("--plot", args.plot),
        ("--json", args.json),
    ):
        if given:
            raise ValueError(f"{flag} is for a pretrained model, not a trained checkpoint")
    saved = load_link_model(args.checkpoint)
    options = chosen_text_options(
        saved, args.drop_punctuation, args.lowercase, args.normalize_numbers
    )
    rule = (args.variant, args.threshold, args.min_layer)
    if args.textfile:
        lines, where = read_lines(args.textfile)
        induced = induce_text(saved, lines, where, options, args.tokenized, *rule)
        print(induced.format(), file=sys.stderr)  # stdout is for the trees
    else:
        induced = induce_ptb(saved, args.ptb, options, *rule, args.max_words)
        print(induced.format())
    _write_trees(induced, args, f" ({args.variant})")
    return OK


def _write_trees(induced, args: argparse.Namespace, which: str = "") -> None:
    """The trees to -o, or for a text file to stdout."""
    if args.out:
        write_output(induced.brackets(), args.out)
        print(f"{len(induced.trees)} trees{which} written to {args.out}")
    elif args.textfile:
        sys.stdout.write(induced.brackets())


def _induce_pretrained(args: argparse.Namespace) -> int:
    import json

    from treeattn.analysis.induction_pretrained import (
        induce_pretrained_ptb,
        induce_pretrained_text,
        methods_for,
        plot_layers,
    )
    from treeattn.analysis.zero_shot_trees import ZeroShotModel

    tree_transformer_only = (
        ("--variant", args.variant != "paper"),
        ("--threshold", args.threshold != THRESHOLD),
        ("--min-layer", args.min_layer is not None),
        ("--lowercase", args.lowercase is not None),
        ("--normalize-numbers", args.normalize_numbers is not None),
    )
    for flag, given in tree_transformer_only:
        if given:
            raise ValueError(f"{flag} is for a Tree Transformer; a pretrained model reads raw text")
    if args.textfile and (args.plot or args.json):
        raise ValueError("--plot and --json go with --ptb SPLIT")
    drop = args.drop_punctuation is not False
    model = ZeroShotModel.load(args.checkpoint)
    methods = methods_for(model, args.methods, args.hidden_distance, args.attention_distance)
    if args.textfile:
        lines, where = read_lines(args.textfile)
        induced = induce_pretrained_text(
            model, lines, where, methods[0], args.layer, drop, args.tokenized, args.right_bias
        )
        print(induced.format(), file=sys.stderr)  # stdout is for the trees
    else:
        induced = induce_pretrained_ptb(
            model, args.ptb, methods, drop, args.layer, args.max_words, args.right_bias
        )
        print(induced.format())
        if args.json:
            write_output(json.dumps(induced.to_json(), indent=1) + "\n", args.json)
            print(f"scores written to {args.json}")
        if args.plot:
            print(f"F1 by layer drawn in {plot_layers(induced, args.plot)}")
    _write_trees(induced, args)
    return OK


def add_induce_curve(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--threshold", type=float, default=THRESHOLD, help="link strength (default 0.8)")
    _min_layer_argument(p)
    p.set_defaults(run=_induce_curve)


def _induce_curve(args: argparse.Namespace) -> int:
    from treeattn.analysis.induction_curve import induction_curve

    curve = induction_curve(
        args.run_dir, args.ptb, args.threshold, args.min_layer, progress=sys.stderr.isatty()
    )
    print(curve.format())
    return OK


def add_constituent_prior(sub: argparse._SubParsersAction) -> None:
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
    p.set_defaults(run=_constituent_prior)


def _constituent_prior(args: argparse.Namespace) -> int:
    from treeattn.analysis.constituent_prior import draw_priors, load_prior_model

    saved = load_prior_model(args.checkpoint)
    print(f"written to {draw_priors(saved, args.sentence, args.out, args.layers)}")
    return OK


def add_view(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "view",
        help="an interactive HTML page of a model's trees and attention, layer by layer",
        description="Write one self-contained HTML page (inline SVG, style and script; it "
        "fetches nothing and opens from disk) for a few sentences: each sentence's "
        "constituency tree, the page saying which tree it is (gold, given in the input, the "
        "parser's, or for a model that induces trees, such as the Tree Transformer, the one "
        "read off its own links), with dependency arcs under it, each labelled with its "
        "relation and their scheme named on the page (for a model: the head-rule conversion "
        "of the tree drawn, where it has Penn Treebank labels; for a parser: the arcs it "
        "gives, by default its UD dependencies for a parser trained on them, which may "
        "attach a phrase elsewhere than its tree does, the page counting the words that "
        "differ; see --dependencies); the attention of every layer and head as a heat map "
        "(click a word, or a phrase node of a hierarchical model, to see where it attends; "
        "a slider picks the layer, a menu the head, where there is more than one); and what "
        "the mechanism's paper looks at: link probabilities and the constituent prior per "
        "layer (constituent), each word's local range (distance), the latent trees and "
        "their marginals (structured), attention on phrase nodes against words "
        "(hierarchical), and for a translation model its own translation and the decoder's "
        "cross-attention over the source, per decoder layer; for a parser, its predicted "
        "trees, each label attention head's attention over the sentence and, where the heads "
        "stay apart, their contributions to each predicted constituent. FILE holds "
        "one input a line, as `treeattn predict` reads them (a sentence, or a bracketed "
        "tree); without FILE the sentences of --split are shown. The page says what it "
        "leaves out beyond --max-sentences and --max-heads, and where it shows fewer heads "
        "(then fewer sentences) to stay under --max-mb.",
    )
    p.add_argument(
        "checkpoint",
        metavar="MODEL",
        help="a run's best.pt, a parser file, or a shipped parser: accurate, fast, accurate-ptb",
    )
    p.add_argument("input", nargs="?", metavar="FILE", help="input lines (- : stdin)")
    p.add_argument("--split", help=f"split shown without FILE (default: {HELD_OUT})")
    p.add_argument("-o", "--out", metavar="PAGE", help="the HTML file (default: stdout)")
    p.add_argument(
        "--max-sentences", type=positive, default=20, help="sentences shown (default 20)"
    )
    p.add_argument("--max-heads", type=positive, default=8, help="heads shown per layer (8)")
    p.add_argument(
        "--max-mb",
        type=float,
        default=4.5,
        help="fewer heads, then fewer sentences, above this page size in MB (default 4.5)",
    )
    p.add_argument(
        "--dependencies",
        choices=("ud", "tree", "from-tree", "independent"),
        help="a parser's page only: the arcs drawn under its trees, as `treeattn parse "
        "--dependencies` gives them: ud, its Universal Dependencies (the default for a parser "
        "trained on them: accurate); tree (or from-tree), the head-rule conversion of its "
        "tree, which always agrees with it (the default for any other constituency parser: "
        "fast); independent, its own arcs, decoded apart from the tree",
    )
    p.set_defaults(run=_view)


def _view(args: argparse.Namespace) -> int:
    from treeattn.analysis.view import view_page

    lines, where = (None, "<input>") if args.input is None else read_lines(args.input)
    if not args.max_mb > 0:
        raise ValueError(f"--max-mb must be positive, got {args.max_mb}")
    page = view_page(
        args.checkpoint,
        lines,
        where,
        args.split,
        args.max_sentences,
        args.max_heads,
        max_bytes=int(args.max_mb * 1e6),
        dependencies=args.dependencies,
    )
    write_output(page, args.out)
    if args.out:
        print(f"written to {args.out}", file=sys.stderr)
    return OK
