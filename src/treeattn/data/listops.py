"""ListOps (Nangia & Bowman 2018): nested MAX/MIN/MED/SUM_MOD expressions over digits 0-9.

The expression's bracketing is its tree, so ListOps is the project's built-in tree task:
it needs no files, is generated from a seed, and a model must follow the structure to
solve it. Tokens follow the original release: ``[MAX 2 9 [MIN 4 7 ] 0 ]`` has value 9.
The ``Tree`` of an expression has one node per operation whose leaves are all its tokens,
e.g. ``(MAX [MAX 2 9 (MIN [MIN 4 7 ]) 0 ])``.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from treeattn.errors import FormatError
from treeattn.trees import Tree
from treeattn.utf8 import read_utf8, text_lines

OPERATORS = ("MAX", "MIN", "MED", "SUM_MOD")
# The original release's files write SUM_MOD as "[SM".
_ALIASES = {"SM": "SUM_MOD"}
# str.isdigit() also accepts "²", "٣", "９", ...; int() rejects some and reads others.
_DIGITS = frozenset("0123456789")


def apply_operator(op: str, values: list[int]) -> int:
    if op == "MAX":
        return max(values)
    if op == "MIN":
        return min(values)
    if op == "MED":
        # The original generator truncates the median of an even-sized list.
        return int(statistics.median(values))
    if op == "SUM_MOD":
        return sum(values) % 10
    raise ValueError(f"unknown ListOps operator {op!r}")


@dataclass(frozen=True)
class ListOpsExample:
    tokens: list[str]
    label: int
    tree: Tree


def _generate_tree(
    rng: random.Random, depth: int, max_depth: int, max_args: int, operators: Sequence[str]
) -> Tree:
    op = rng.choice(operators)
    children: list[Tree | str] = ["[" + op]
    for _ in range(rng.randint(2, max_args)):
        # Deeper levels branch less often, so lengths stay bounded.
        if depth < max_depth and rng.random() < 0.35:
            children.append(_generate_tree(rng, depth + 1, max_depth, max_args, operators))
        else:
            children.append(str(rng.randint(0, 9)))
    children.append("]")
    return Tree(op, children)


def check_operators(operators: Sequence[str]) -> None:
    """``ValueError`` unless ``operators`` is a non-empty list of distinct names of
    ``OPERATORS``."""
    if isinstance(operators, str) or not operators:
        raise ValueError(
            f"ListOps operators must be a non-empty list of {', '.join(OPERATORS)}, "
            f"got {operators!r}"
        )
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise ValueError(
            f"unknown ListOps operator(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(OPERATORS)}"
        )
    if len(set(operators)) < len(operators):
        raise ValueError(f"ListOps operators repeat a name: {list(operators)}")


def evaluate_tree(tree: Tree) -> int:
    """The value of a ListOps expression tree."""
    values = [evaluate_tree(c) if isinstance(c, Tree) else int(c) for c in tree.children[1:-1]]
    return apply_operator(tree.label, values)


def generate_listops(
    count: int,
    seed: int,
    max_depth: int = 3,
    max_args: int = 5,
    min_length: int = 1,
    max_length: int = 100,
    exclude: Collection[str] = frozenset(),
    operators: Sequence[str] = OPERATORS,
) -> list[ListOpsExample]:
    """``count`` examples from ``seed``; the root operation is at depth 1.

    Each operation is drawn uniformly from ``operators`` (in the order given: the same
    seed draws other expressions from another order), by default all four.

    Expressions longer than ``max_length`` tokens or shorter than ``min_length`` are
    redrawn (never truncated), so every example is a complete expression. So are those
    whose space-joined tokens are in ``exclude``: how dev and test are kept apart from
    training data. ``ValueError`` if ``100 * count + 10_000`` draws do not give ``count``
    examples: the settings then allow few or no expressions (the shortest has 4 tokens;
    ``max_depth=1, max_args=2`` allows only 400).
    """
    if max_depth < 1 or max_args < 2:
        raise ValueError("ListOps needs max_depth >= 1 and max_args >= 2")
    check_operators(operators)
    rng = random.Random(seed)
    out: list[ListOpsExample] = []
    # Bounded so that settings no expression satisfies fail instead of looping forever;
    # ordinary settings keep nearly every draw.
    max_draws = 100 * count + 10_000
    for _ in range(max_draws):
        if len(out) >= count:
            break
        tree = _generate_tree(rng, 1, max_depth, max_args, operators)
        tokens = tree.leaves()
        if min_length <= len(tokens) <= max_length and " ".join(tokens) not in exclude:
            out.append(ListOpsExample(tokens, evaluate_tree(tree), tree))
    if len(out) < count:
        raise ValueError(
            f"ListOps generation produced {len(out)} of {count} examples in {max_draws} draws "
            f"(max_depth={max_depth}, max_args={max_args}, min_length={min_length}, "
            f"max_length={max_length}, {len(exclude)} excluded expressions): relax "
            "min_length/max_length (the shortest expression has 4 tokens), raise max_depth "
            "or max_args, exclude fewer expressions, or ask for fewer examples"
        )
    return out


def parse_expression(
    tokens: list[str],
    source: str = "<string>",
    line: int | None = None,
    *,
    skip_parentheses: bool = False,
) -> Tree:
    """The tree of a token list such as ``[MAX 2 9 ]``; ``FormatError`` if malformed.

    With ``skip_parentheses``, ``(`` and ``)`` tokens are ignored, so the tree's leaves
    are the other tokens; error messages still count tokens in ``tokens``.
    """
    stack: list[list[Tree | str]] = []
    result: Tree | None = None
    for i, token in enumerate(tokens):
        if skip_parentheses and token in ("(", ")"):
            continue
        if result is not None:
            raise FormatError(f"token {i} {token!r} after the end of the expression", source, line)
        if token.startswith("["):
            op = _ALIASES.get(token[1:], token[1:])
            if op not in OPERATORS:
                raise FormatError(f"token {i}: unknown operator {token!r}", source, line)
            stack.append([op, token])
        elif token == "]":
            if not stack:
                raise FormatError(f"token {i}: ']' without an open operation", source, line)
            if len(stack[-1]) < 3:
                raise FormatError(
                    f"token {i}: operation {stack[-1][0]} has no arguments", source, line
                )
            op, *children = stack.pop()
            node = Tree(str(op), [*children, "]"])
            if stack:
                stack[-1].append(node)
            else:
                result = node
        elif token in _DIGITS and stack:
            stack[-1].append(token)
        else:
            raise FormatError(
                f"token {i}: expected a digit, '[OP' or ']', got {token!r}", source, line
            )
    if result is None:
        raise FormatError("unfinished expression: missing ']'", source, line)
    return result


def read_listops(path: str | Path) -> list[ListOpsExample]:
    """Read ``label<TAB>expression`` lines (the format ``write_listops`` writes).

    There is no header line. Files of the original release (Nangia & Bowman 2018, e.g.
    ``train_d20s.tsv``) are read too: their rows are in the same order, and their ``(``
    and ``)`` tokens, which bracket each operation's arguments two by two, are dropped,
    since the ``[OP ... ]`` tokens already give the tree. ``7<TAB>( ( [MAX 2 ) 7 ] )``
    reads as ``[MAX 2 7 ]``. Digits are ASCII ``0``-``9`` only.
    """
    path = Path(path)
    out: list[ListOpsExample] = []
    # Blank lines at the end are forgiven; one between rows is an error.
    for number, line in enumerate(text_lines(read_utf8(path)), start=1):
        if not line.strip():
            raise FormatError("empty line", str(path), number)
        label_text, sep, expression = line.partition("\t")
        label_text = label_text.strip()
        if not sep or not label_text or not set(label_text) <= _DIGITS:
            raise FormatError(_row_error(line, number), str(path), number, 1)
        tokens = expression.split()
        tree = parse_expression(tokens, str(path), number, skip_parentheses=True)
        label = int(label_text)
        if label != evaluate_tree(tree):
            raise FormatError(
                f"label {label} does not match the expression's value {evaluate_tree(tree)}",
                str(path),
                number,
            )
        out.append(ListOpsExample(tree.leaves(), label, tree))
    return out


def _row_error(line: str, number: int) -> str:
    expected = "expected 'label<TAB>expression', e.g. '9<TAB>[MAX 2 9 ]'"
    fields = [f.strip() for f in line.split("\t")]
    if number == 1 and len(fields) > 1 and all(f.isidentifier() for f in fields):
        return f"{line!r} looks like a header line; there is none, {expected} from line 1"
    if len(fields) == 2 and fields[1] and set(fields[1]) <= _DIGITS:
        return f"{expected}: the label comes first, not after the expression"
    return expected


def write_listops(path: str | Path, examples: list[ListOpsExample]) -> None:
    with Path(path).open("w", encoding="utf-8") as f:
        for ex in examples:
            f.write(f"{ex.label}\t{' '.join(ex.tokens)}\n")
