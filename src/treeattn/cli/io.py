"""Reading input lines from a file or standard input, and writing output whole."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from treeattn.cli.status import OK
from treeattn.utf8 import decode_utf8, read_utf8, text_lines
from treeattn.write_aside import write_aside


def read_lines(source: str, blank_lines: bool = False) -> tuple[list[str], str]:
    """The lines of a UTF-8 file, or of standard input for ``-``, and a name for errors.

    With ``blank_lines`` every line is kept, blank ones included (the line break that ends
    the last line does not start another). Otherwise blank lines at the end are left out.
    Either way an input with no sentence (no line, or blank lines only) is an error, so
    that every command refuses it alike.
    """
    if source == "-":
        if sys.stdin is None:  # started with standard input closed (``<&-``)
            raise ValueError("<stdin>: standard input is closed; name an input file")
        text, where = decode_utf8(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    else:
        text, where = read_utf8(source), source
    if blank_lines:
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
    else:
        lines = text_lines(text)
    if not any(line.strip() for line in lines):
        raise ValueError(f"{where}: empty input, no sentence to read")
    return lines, where


def write_output(text: str, out: str | None) -> None:
    """To ``out`` (whole or not at all: written aside, then renamed) or to stdout."""
    if out is None:
        sys.stdout.write(text)
        return
    path = Path(out)
    if path.is_dir():
        raise ValueError(f"{out}: is a directory; -o names the file to write")
    if not path.parent.is_dir():
        raise ValueError(f"{out}: the directory {path.parent} does not exist")
    with write_aside(path) as partial:
        partial.write_text(text, encoding="utf-8")


def run_on_lines(
    source: str,
    out: str | None,
    work: Callable[[list[str], str], tuple[str, int, float]],
    blank_lines: bool = False,
) -> int:
    """Read ``source``'s lines (``read_lines``), run ``work(lines, where)`` -> (text,
    sentences done, seconds spent on them once the model was loaded), write the text to
    ``out`` and say how fast it went. An error in any line leaves nothing written."""
    lines, where = read_lines(source, blank_lines)
    text, done, seconds = work(lines, where)
    write_output(text, out)
    rate = done / seconds if seconds > 0 else float("inf")
    print(f"{done} sentences in {seconds:.1f} s ({rate:.1f} sentences/s)", file=sys.stderr)
    return OK
