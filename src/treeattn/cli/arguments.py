"""Argument types and options that several commands share."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def add_overrides(p: argparse.ArgumentParser, scope: str = "") -> None:
    """``--set KEY=VALUE``, repeatable: config values over the file's."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a config value{scope}, e.g. --set train.lr=3e-4 (repeatable)",
    )
