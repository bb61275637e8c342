"""Commands that train and run models: train, evaluate, predict, report, demo."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from treeattn.cli.arguments import add_overrides, add_tree_options, use_tree_options
from treeattn.cli.io import read_lines, write_output
from treeattn.cli.status import INTERRUPTED, OK
from treeattn.cli.text import several_sentences, warn_several_sentences

# Written out so that --help need not load the task registry (and torch); a test holds
# them to the registry (``treeattn mechanisms`` prints it).
TASKS = "classify, mlm, causal-lm, parse, translate or hierarchical_generalization"
SPLITS = (
    "classify, mlm, causal-lm and parse: train, dev, test (classify on cola: train, dev, "
    "in_domain, out_of_domain); "
    "translate: train, val, test_2016_flickr, test_2017_flickr; "
    "hierarchical_generalization: train, dev, test, gen"
)


def add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a model from a config file",
        description="Train a model from a YAML config file (see configs/): its task (task: "
        f"{TASKS}), data, model (model.attention: a mechanism or tree encoder, listed by "
        "`treeattn mechanisms`) and training settings. Picks up the run's last checkpoint "
        "when its out_dir already holds one; Ctrl-C stops at a clean point and saves a "
        "checkpoint. Under torchrun it trains data-parallel.",
    )
    p.add_argument("config", nargs="?", help="YAML config file (default: the ListOps set-up)")
    add_overrides(p)
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
    # Ctrl-C (or SIGTERM) makes the trainer save a checkpoint and return unfinished.
    return OK if results["finished"] else INTERRUPTED


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a checkpoint on a split or a file",
        description="Score a saved model with its task's metrics. DATA is a split name of "
        f"the model's data set ({SPLITS}) or a file in that data set's format.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt written by `treeattn train`")
    p.add_argument("data", help="split name or file")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    add_tree_options(p, "one bracketed tree a line, a line for each example of DATA")
    p.set_defaults(run=_evaluate)


def _evaluate(args: argparse.Namespace) -> int:
    from treeattn.tasks.trained import load_trained

    trained = load_trained(args.checkpoint)
    use_tree_options(trained.task, args.trees, args.parser)
    if args.json:
        print(json.dumps(trained.evaluate(args.data), indent=2))
    else:
        print(trained.report(args.data))
    return OK


def add_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict",
        help="run a checkpoint on new input, one output line per input line",
        description="Run a saved model on unlabeled input, one item per line, and print one "
        "line per input line, in order. classify: a sentence (raw text, split into words "
        "as `treeattn parse` splits it, or a bracketed tree; ListOps: an expression) gives "
        "its class, by name where the data set names them (SST-5: very negative ... very "
        "positive; SST-2: negative, positive); for models that read trees, words are parsed "
        "first (--parser, --trees). translate: a sentence gives its translation (parsed "
        "first where the encoder reads trees). mlm: a sentence with <mask> words (split on "
        "spaces) gives the sentence with them filled in. causal-lm: a sentence (split on "
        "spaces) gives its log-probability, tokens and perplexity as JSON. parse: a "
        "sentence gives its tree (--format brackets, the default for constituency models, "
        "or conllu). A line is one item: a line that seems to hold several sentences gets "
        "a warning naming file:line.",
    )
    p.add_argument("checkpoint", help="a best.pt or last.pt written by `treeattn train`")
    p.add_argument("input", nargs="?", default="-", help="input file, or - for stdin (default)")
    p.add_argument("-o", "--out", metavar="FILE", help="write here (default: stdout)")
    p.add_argument(
        "--format",
        default="",
        help="output format. classify: label (the default), probabilities (every class's "
        "probability, NAME=P fields separated by tabs) or jsonl (a JSON object a line: "
        "input, label, probabilities); parse: brackets or conllu; mlm: lines; causal-lm: jsonl",
    )
    add_tree_options(p)
    p.set_defaults(run=_predict)


def _predict(args: argparse.Namespace) -> int:
    from treeattn.tasks.trained import load_trained

    trained = load_trained(args.checkpoint)
    use_tree_options(trained.task, args.trees, args.parser)
    lines, where = read_lines(args.input)
    # Bracketed trees (a line starting with "(") hold no run-on sentence to warn about.
    sentences = ["" if line.lstrip().startswith("(") else line for line in lines]
    warn_several_sentences(several_sentences(sentences), where, hint=False)
    outputs = trained.predict(lines, where, args.format)
    write_output("".join(out if out.endswith("\n") else out + "\n" for out in outputs), args.out)
    return OK


def add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="summarise finished runs (mean ± std over seeds), configurations side by side",
        description="Print each run's scores (its task's metrics on the splits scored at the "
        "end: dev and test accuracy, perplexity, ...; a language model's BLiMP, SyntaxGym "
        "and agreement scores where `treeattn lm-eval -o RUN/lm-eval.json` wrote them) "
        "and their mean ± sample standard "
        "deviation, e.g. over the seeds of one configuration. Runs of several "
        "configurations (differing in more than seed and out_dir) give one line per "
        "configuration, named by its first run's folder without a trailing seed number, "
        "and the settings in which each differs from the first.",
    )
    p.add_argument("runs", nargs="+", help="run folders holding results.json")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw each configuration's runs and mean ± sd into an image (.png, .svg, .pdf)",
    )
    p.add_argument(
        "--score",
        help="the score to plot, as results.json names it (default: the first score of a "
        "split other than dev: test's, or CoLA's in-domain)",
    )
    p.set_defaults(run=_report)


def _report(args: argparse.Namespace) -> int:
    from treeattn.engine.report import format_report, group_runs, held_out_score, score_names
    from treeattn.tasks import config_from_dict

    groups = group_runs(args.runs, lambda raw: config_from_dict(raw).to_dict())
    print(format_report(groups))
    if args.plot:
        from treeattn.viz.scores import plot_scores

        names = score_names(groups[0].runs[0])
        score = args.score or held_out_score(names)
        if score not in names:
            raise ValueError(f"--score {score}: the runs report {', '.join(names)}")
        scores = [(g.name, g.values(score)) for g in groups]
        print(f"written to {plot_scores(scores, score.replace('_', ' '), args.plot)}")
    return OK


DEMOS = ("listops", "question-formation")


def add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="train every registered mechanism on generated ListOps and compare",
        description="Train each registered attention mechanism on generated ListOps "
        "(no data files needed), print a comparison table and write it to "
        "OUT/results.json. With --task question-formation: a plain Transformer language "
        "model and one with tree regularization on McCoy et al.'s question formation "
        "(the mccoy2020 data), and which rule each generalizes by.",
    )
    p.add_argument(
        "--task",
        choices=DEMOS,
        default="listops",
        help="listops (default: every mechanism) or question-formation (where syntax "
        "decides how a model generalizes)",
    )
    p.add_argument(
        "--out", help="output folder (default: runs/demo, or runs/demo-TASK for another task)"
    )
    add_overrides(p, " for every model")
    p.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    if args.task == "listops":
        from treeattn.demo import run_demo

        run_demo(Path(args.out or "runs/demo"), args.overrides)
    else:
        from treeattn.demo_generalization import run_generalization_demo

        run_generalization_demo(Path(args.out or f"runs/demo-{args.task}"), args.overrides)
    return OK


def add_plugins(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plugins",
        aliases=["mechanisms"],
        help="list every plug-in by kind: mechanisms, tree losses, tasks, data sets, "
        "evaluation suites, analyses, parsers",
        description="Each kind of plug-in in turn, as registered here or by another "
        "package's entry points (group treeattn.KIND): model.attention with what each reads, "
        "gives and its attention_options; model.tree_loss; tasks with their data sets and "
        "splits; data.name; lm-eval's suites; the analyses; the parsers by name.",
    )
    p.set_defaults(run=_plugins)


def _plugins(args: argparse.Namespace) -> int:
    from dataclasses import MISSING, fields

    from treeattn import plugins
    from treeattn.attention.registry import loss_names
    from treeattn.models.registry import encoder_entry, encoder_names
    from treeattn.tasks import load_config, make_task

    def options(entry) -> str:
        return defaults(entry.options)

    def defaults(options_class: type) -> str:
        shown = [
            f.name if f.default is MISSING else f"{f.name}={f.default}"
            for f in fields(options_class)
        ]
        return ", ".join(shown) or "none"

    print("model.attention: what it is")
    print("  reads besides tokens; gives; attention_options")
    print(
        "  inside a pretrained encoder (model.backbone): its attention_options there, and "
        "whether it has a causal form for decoders"
    )
    print("  analyses: the commands that apply to its models")
    for name in encoder_names():
        entry = encoder_entry(name)
        capabilities = entry.capabilities
        reads = ", ".join(sorted(str(r) for r in entry.reads)) or "nothing"
        print(f"  {name:<14} {capabilities.description}")
        print(f"  {'':<14} reads {reads}; gives {entry.output}; options {options(entry)}")
        if capabilities.injection is not None:
            inside = options(encoder_entry(name, backbone=True))
            causal = "; in decoders too (causal)" if capabilities.injection.causal_form else ""
            print(f"  {'':<14} inside a pretrained encoder: options {inside}{causal}")
        if capabilities.analyses:
            print(f"  {'':<14} analyses: {', '.join(sorted(capabilities.analyses))}")
    print(
        "\nmodel.tree_loss: a loss on hidden states from each sentence's tree "
        "(classify, mlm, causal-lm)"
    )
    print("  tree_loss_options")
    for name in loss_names():
        capabilities = plugins.mechanisms[name].capabilities
        print(f"  {name:<20} {capabilities.description}")
        print(f"  {'':<20} options {defaults(capabilities.loss.Options)}")
    print("\ntask (data.name; splits):")
    for task_class in plugins.tasks.entries():
        name = task_class.name
        task = make_task(load_config(None, [f"task={name}"]))
        # A task registered from outside may name no data set.
        datasets = ", ".join(getattr(task_class, "datasets", ())) or getattr(
            task.cfg.data, "name", "-"
        )
        print(f"  {name:<14} {datasets}; {', '.join(task.splits)}")
    print("\nlm-eval suite (--only NAME, --NAME SOURCE): its default source; what it measures")
    for suite in plugins.suites.entries():
        default = (
            f"$TREEATTN_DATA/{suite.shared}/"
            if suite.shared
            else f"none (--{suite.name} {suite.option.metavar})"
        )
        print(f"  {suite.name:<14} {default}; {suite.description}")
    print("\ndata.name (a data set with settings of its own): the tasks that read it")
    for found in plugins.datasets.entries():
        tasks = plugins.tasks.entries()
        readers = [t.name for t in tasks if found.name in getattr(t, "datasets", ())]
        print(f"  {found.name:<14} {', '.join(readers) or 'none'}")
    print("\nanalysis (treeattn NAME CHECKPOINT): what it shows; the mechanisms it applies to")
    mechanisms = plugins.mechanisms.entries()
    width = max(14, *(len(name) for name in plugins.analyses.names()))
    for analysis in plugins.analyses.entries():
        able = [m.name for m in mechanisms if analysis.name in m.capabilities.analyses]
        print(f"  {analysis.name:<{width}} {analysis.description}; {', '.join(able) or 'none'}")
    print("\nparser (Parser.load(NAME), data.parser, --model): what it is")
    for parser in plugins.parsers.entries():
        print(f"  {parser.name:<14} {parser.description}")
    return OK
