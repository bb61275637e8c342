"""The command that scores language models on targeted syntactic evaluation: lm-eval."""

from __future__ import annotations

import argparse
import sys

from treeattn.cli.arguments import positive
from treeattn.cli.io import write_output
from treeattn.cli.status import OK

# Written out so that --help need not import torch; a test holds them to the code's.
PLL_VARIANTS = ("token", "word-l2r")
PACKAGED_LMS = ("smollm2-135m",)


def _option(name: str) -> str:
    """The attribute of the parsed arguments that holds suite ``name``'s ``--name``."""
    return f"suite_{name}"


def add_lm_eval(sub: argparse._SubParsersAction) -> None:
    # The suites' registry needs no torch: each registered suite is a --NAME option.
    from treeattn import plugins

    found = plugins.suites.entries()
    defaults = [suite.name for suite in found if suite.default is not None]
    alone = "".join(
        f"; {s.name} alone: --only {s.name} --{s.name} {s.option.metavar}"
        for s in found
        if s.default is None
    )
    p = sub.add_parser(
        "lm-eval",
        help="score a language model on BLiMP, SyntaxGym and subject-verb agreement",
        description="Score a language model on targeted syntactic evaluation. MODEL is a "
        "checkpoint of an mlm or causal-lm run, a folder holding a transformers causal or "
        "masked LM (config.json, every weight the model needs and a fast tokenizer; read with "
        "nothing fetched), a causal LM's .gguf file, or the name of a model an installed "
        f"package carries ({', '.join(PACKAGED_LMS)}: SmolLM2-135M-Instruct, hash-checked). "
        "A causal model scores a sentence by its log-probability, a masked model by its "
        "pseudo-log-likelihood (each piece masked in turn; --pll word-l2r also masks the "
        "later pieces of the same word). BLiMP: a minimal pair is right when the acceptable "
        "sentence scores higher; accuracy by field, phenomenon and paradigm. SyntaxGym: "
        "region surprisals in bits, an item passes when all its suite's predictions hold; "
        "score by suite, circuit and overall (mean of suites). Agreement: the correct verb "
        "form against the wrong one at the target word, by number of attractors. By "
        "default every benchmark is read from $TREEATTN_DATA (blimp/, syntaxgym/, sva/); "
        "--blimp, --syntaxgym and --agreement choose files or sets instead, --only picks "
        "benchmarks, --perplexity FILE adds perplexity on a text of your own. Prints tables; "
        "-o writes every score (down to each pair and region) as "
        "JSON, --plot a chart by phenomenon and circuit; each file is written whole or not "
        "at all.",
    )
    p.add_argument(
        "model",
        help="a best.pt of an mlm or causal-lm run, a transformers folder, a .gguf file, or "
        f"{' or '.join(PACKAGED_LMS)}",
    )
    p.add_argument(
        "--only",
        nargs="+",
        choices=[suite.name for suite in found],
        default=defaults,
        metavar="BENCHMARK",
        help=f"run only these of {', '.join(defaults)} (default: all){alone}",
    )
    for suite in found:
        p.add_argument(
            f"--{suite.name}",
            nargs="+" if suite.option.many else None,
            choices=suite.option.choices,
            metavar=suite.option.metavar,
            dest=_option(suite.name),
            help=suite.option.help,
        )
    p.add_argument(
        "--limit",
        type=positive,
        help="only the first N pairs of each BLiMP file, items of each suite and items of "
        "each agreement set (a quick look, recorded as a subset in the JSON and by "
        "`treeattn report`; default: all)",
    )
    p.add_argument(
        "--kind",
        choices=("causal", "masked"),
        help="a transformers folder's kind (default: from its config's architectures)",
    )
    p.add_argument(
        "--pll",
        choices=PLL_VARIANTS,
        default="token",
        help="masked models: token (Salazar et al. 2020, default) or word-l2r (Kauf & "
        "Ivanova 2023)",
    )
    p.add_argument(
        "--batch-tokens",
        type=positive,
        default=4096,
        help="padded tokens per forward pass (default 4096)",
    )
    p.add_argument("--device", default="auto", help="auto (default), cpu, cuda or cuda:N")
    p.add_argument(
        "--threads", type=positive, help="CPU threads for torch (default: torch's own choice)"
    )
    p.add_argument("-o", "--out", metavar="FILE", help="write every score as JSON here")
    p.add_argument("--plot", metavar="FILE", help="draw scores by phenomenon and circuit (.png)")
    p.set_defaults(run=_lm_eval)


def _lm_eval(args: argparse.Namespace) -> int:
    import torch

    from treeattn import plugins
    from treeattn.evaluation import evaluate_language_model
    from treeattn.models.weights import WeightsError

    if args.threads:
        torch.set_num_threads(args.threads)
    only = set(args.only)
    sources = {}
    for suite in plugins.suites.entries():
        given = getattr(args, _option(suite.name), None)
        if suite.default is None:  # a suite with no default source runs when given one
            if suite.name in only and given is None:
                raise ValueError(f"--only {suite.name} needs --{suite.name} {suite.option.metavar}")
            sources[suite.name] = given
        else:
            sources[suite.name] = (given or suite.default) if suite.name in only else None
    try:
        result = evaluate_language_model(
            args.model,
            limit=args.limit,
            kind=args.kind,
            pll=args.pll,
            batch_tokens=args.batch_tokens,
            device=args.device,
            progress=True,
            **sources,
        )
    except WeightsError as error:  # a package missing, or a file not the pinned one
        raise ValueError(str(error)) from None
    print(result.format(), end="")
    if args.out:
        write_output(result.to_json(), args.out)
        print(f"\nscores written to {args.out}")
    if args.plot:
        from treeattn.viz.phenomena import plot_phenomena

        plot_phenomena([(result.model, result.to_dict())], args.plot)
        print(f"plot written to {args.plot}")
    timing = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in result.seconds.items())
    print(f"scored in {timing}", file=sys.stderr)
    return OK
