"""The ``treeattn`` command: ``build_parser`` and ``main``, with one module per group of
commands. Commands import torch only when they run, so that ``--help`` is quick."""

from __future__ import annotations

import argparse

from treeattn.cli import (
    analysis,
    cache,
    data,
    generalization,
    lm_eval,
    parsing,
    training,
    translation,
)
from treeattn.cli.status import BAD_INPUT, STATUS_HELP, run_command

__all__ = ["build_parser", "main"]

DESCRIPTION = """\
treeattn: syntax inside Transformer attention.

Train, evaluate and run Transformer encoders whose attention mechanism is
chosen by name (and tree encoders: hierarchical accumulation, Tree-LSTM;
listed by `treeattn plugins`) on a task (classify, mlm, causal-lm, parse,
translate, hierarchical_generalization), parse raw text with the label
attention parser, translate with a trained model, look at what models
learned (attention maps, latent trees, induced constituency trees, label
attention heads, cross-attention on phrase nodes), score language models on
BLiMP, SyntaxGym and agreement, read and score parse trees, and run the
built-in ListOps demo.
"""

EPILOG = f"""\
examples:
  treeattn demo
  treeattn plugins
  treeattn train configs/sst5-vanilla.yaml --set seed=2 --set out_dir=runs/s2
  treeattn evaluate runs/s2/best.pt test
  printf 'The cat sat on the mat.\\nDogs bark.\\n' | treeattn parse
  echo "A dog runs." | treeattn translate runs/multi30k-vanilla/best.pt
  echo "A gorgeous, witty film." | treeattn predict runs/s2/best.pt -
  treeattn attention runs/sst5-hierarchical/best.pt test --sentence 3
  treeattn latent-trees runs/sst5-structured/best.pt test
  treeattn induce runs/text-constituent/best.pt --ptb test
  treeattn induce-curve runs/text-constituent --ptb test
  treeattn constituent-prior runs/text-constituent/best.pt "the cat sat"
  treeattn view runs/sst5-hierarchical/best.pt sentences.txt -o page.html
  treeattn report runs/sst5-s1 runs/sst5-s2 runs/sst5-s3
  treeattn lm-eval runs/lm-causal/best.pt -o scores.json --plot blimp.png
  treeattn generalize runs/mccoy-question-lm/last.pt -o generalization.json
  treeattn generalize-curve runs/mccoy-question-lm --plot gen-main-aux.png
  treeattn evalb gold.mrg predicted.txt
  treeattn show "$TREEATTN_DATA/sst/dev.txt" --limit 2
  treeattn cache clear
  treeattn data

{STATUS_HELP}
Data is read from $TREEATTN_DATA (default: ../shared/data beside the
repository); `treeattn data` checks that folder.
"""

# The order of `treeattn --help`'s list of commands.
COMMANDS = (
    training.add_train,
    training.add_evaluate,
    training.add_predict,
    parsing.add_parse,
    translation.add_translate,
    translation.add_cross_attention,
    parsing.add_label_heads,
    parsing.add_export,
    training.add_report,
    analysis.add_attention,
    analysis.add_latent_trees,
    analysis.add_induce,
    analysis.add_induce_curve,
    analysis.add_constituent_prior,
    analysis.add_view,
    lm_eval.add_lm_eval,
    generalization.add_generalize,
    generalization.add_generalize_curve,
    parsing.add_evalb,
    parsing.add_show,
    cache.add_cache,
    data.add_data,
    training.add_demo,
    training.add_plugins,
)


def build_parser() -> argparse.ArgumentParser:
    from treeattn import __version__

    parser = argparse.ArgumentParser(
        prog="treeattn",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"treeattn {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv[1:]``); returns its exit status
    (``treeattn.cli.status``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return BAD_INPUT
    return run_command(args.run, args)
