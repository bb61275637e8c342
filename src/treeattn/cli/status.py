"""Exit statuses, one per kind of outcome, and the error handling that gives them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

OK = 0
FAILED = 1  # the work itself failed (training diverged), or an unexpected error
BAD_INPUT = 2  # argparse's own status for a bad argument, so every bad input gets it
INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C

STATUS_HELP = """\
exit status:
  0    success
  1    the work failed: training diverged (a loss that is not finite); or an
       unexpected error, with its traceback
  2    bad input: a missing or unreadable file, a bad line, a bad argument or
       config value, a file that is not a checkpoint; one line on stderr,
       "treeattn: error: ...", naming file:line where known
  130  interrupted (Ctrl-C); `treeattn train` saves a checkpoint first, and the
       same command resumes from it
"""


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``command(args)``'s status, or the status of the error it raised, reported in one
    line rather than a traceback."""
    try:
        return command(args)
    except BrokenPipeError:
        # The reader went away (``treeattn ... | head``): stop quietly, as Unix tools do.
        # Standard output is pointed at /dev/null so that Python's final flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OK
    except KeyboardInterrupt:
        print("treeattn: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (OSError, ValueError, KeyError) as error:  # FormatError is a ValueError
        # A KeyError's str() quotes its message; its argument reads better.
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"treeattn: error: {message}", file=sys.stderr)
        return BAD_INPUT
    except FloatingPointError as error:
        print(f"treeattn: error: {error}", file=sys.stderr)
        return FAILED
