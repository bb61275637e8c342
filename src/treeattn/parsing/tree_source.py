"""Trees for sentences, found in one place: the data's own, a parser (its trees cached by
the parser's hash), the right-branching control, or trees given in files. Every task and
command that needs the trees of sentences asks its ``TreeSource``; none parses on its own.

One vocabulary names a source wherever it is chosen, for every task that reads trees:

- ``data.trees``: ``gold`` (the trees the data set comes with: SST's bracketing, ListOps'
  expressions, a labeled file's trees), ``parser`` (the parser's trees of each sentence's
  words), ``right-branching`` (the control: every sentence the same shape), or ``files``
  (``data.tree_files``: split -> file, one bracketed tree a line of the split). Each data
  set takes the kinds that fit it (classify on SST: gold, parser, right-branching; on
  ListOps and labeled files: gold; translate: parser, right-branching, files).
- ``data.parser``: the parser of ``parser`` trees, and the one that parses raw text to
  predict on for a model trained on gold trees: ``accurate`` (the default) or ``fast``,
  shipped with treeattn, or a parser file or parse checkpoint.
- On the command line (``evaluate``, ``predict``, ``translate``), ``--trees KIND`` reads
  other trees than the model trained on, said outright, or ``--trees FILE`` one's own
  (``evaluate``: one bracketed tree a line, a line for each example of the data;
  ``translate``: one a line of the input), and ``--parser MODEL`` says where the model's
  parser lies now.

A trained model records where its trees came from (``TreeSource.record``, in its
checkpoint); a source made from that record (``TreeSource.trained``) refuses a parser
other than the one the model was trained with, since its trees would not be the trees the
model learned from, unless a command asks for that parser's trees (``--trees parser``).

>>> source = TreeSource(RIGHT_BRANCHING)
>>> source.trees([["Dogs", "bark", "."]], "input")[0].to_brackets()
'(X Dogs (X bark .))'
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from treeattn import plugins
from treeattn.data.paths import cache_dir
from treeattn.errors import FormatError
from treeattn.parsing.parser import DEFAULT_MODEL, Parser, model_path
from treeattn.trees import Tree
from treeattn.trees.tokenize import escape
from treeattn.trees.treebank import parse_treebank_line
from treeattn.utf8 import read_utf8
from treeattn.write_aside import write_aside

GOLD, PARSER, RIGHT_BRANCHING, FILES = "gold", "parser", "right-branching", "files"
KINDS = (GOLD, PARSER, RIGHT_BRANCHING, FILES)


def right_branching(words: Sequence[str], label: str = "X") -> Tree:
    """The right-branching binary tree over ``words``, every node labeled ``label``."""
    tree: Tree | str = words[-1]
    for word in reversed(words[:-1]):
        tree = Tree(label, [word, tree])
    return tree if isinstance(tree, Tree) else Tree(label, [tree])


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def shipped_with_sha256(sha256: str | None) -> str | None:
    """The name of the shipped parser whose file has ``sha256``, if one does: where a
    record naming a parser by a name since given to another file (``accurate``) finds
    the file it was made with."""
    same = [found.name for found in plugins.parsers.entries() if file_sha256(found.path) == sha256]
    return same[0] if same else None


def parser_identity(path: str | None) -> dict[str, str]:
    """The parser a model's trees come from: its name or path as configured (the default's
    name when None) and its SHA-256."""
    return {"path": str(path or DEFAULT_MODEL), "sha256": file_sha256(model_path(path))}


# Records written before two parsers were shipped name the one shipped then so.
_OLD_SHIPPED_NAME = {"shipped": "fast"}


def _tree_lines(path: str, expected: int, lines_are: str, expected_are: str) -> list[str]:
    """The lines of a file of trees, one per line of the input (``expected`` lines); the
    two names say what its lines and the input's are, for the error."""
    lines = read_utf8(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != expected:
        raise FormatError(
            f"{len(lines)} {lines_are} for {expected} {expected_are}",
            path,
            min(len(lines), expected) + 1,
        )
    return lines


def read_tree_file(path: str, sentences: Sequence[Sequence[str]], split_lines: int) -> list[Tree]:
    """One bracketed tree a line, one line per line of the split (``split_lines``), whose
    leaves are the words of the matching sentence; the first ``len(sentences)`` trees
    (fewer than the split's lines when only the first part of a split is read)."""
    lines = _tree_lines(path, split_lines, "trees", "sentences")[: len(sentences)]
    trees = []
    for number, (line, words) in enumerate(zip(lines, sentences, strict=True), start=1):
        tree = parse_treebank_line(line, path, number)
        tree.check_leaves(words, path, number)
        trees.append(tree)
    return trees


def read_aligned_trees(path: str, n_lines: int, numbers: Sequence[int]) -> list[Tree]:
    """The trees at line ``numbers`` of a file that has one line per input line (``n_lines``
    of them; blank where the input line is blank)."""
    lines = _tree_lines(path, n_lines, "lines of trees", "input lines")
    return [parse_treebank_line(lines[k - 1], path, k) for k in numbers]


class TreeSource:
    """Where the trees of sentences come from, one of ``KINDS``: ``gold`` (the trees the
    data comes with, e.g. SST's; sentences that come without, raw text to predict on, get
    the parser's), ``parser`` (the parser ``parser``, default the one shipped with
    treeattn; sentences read with ``cache`` are parsed once and kept under
    ``$TREEATTN_CACHE``), ``right-branching``, or ``files`` (the trees come with the
    sentences from files: ``file``, one tree a line for the sentences asked for, or the
    task's ``data.tree_files``; asked for others, it is an error).

    ``trained_on`` is the record of the model the trees are for: a parser with another
    hash is refused.
    """

    def __init__(
        self,
        kind: str = PARSER,
        parser: str | None = None,
        trained_on: dict[str, str] | None = None,
        file: str | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown tree source {kind!r}; choose {', '.join(KINDS)}")
        self.kind, self.parser, self.trained_on, self.file = kind, parser, trained_on, file
        # The parser that gave trees so far (its identity), for the checks of a resumed run.
        self.parsed_with: dict[str, str] | None = None

    @classmethod
    def trained(cls, record: dict[str, str], parser: str | None = None) -> TreeSource:
        """The source of a trained model's trees, from its ``record``; ``parser`` names
        the file where the model's parser lies now (default: the shipped parser the
        record names, if it names one)."""
        if parser is None:
            named = _OLD_SHIPPED_NAME.get(record.get("path", ""), record.get("path"))
            parser = named if named in plugins.parsers else None
            if parser is not None and record.get("sha256") != file_sha256(model_path(parser)):
                # A name given to another file since (``accurate``).
                parser = shipped_with_sha256(record.get("sha256")) or parser
        return cls(record["source"], parser, trained_on=record)

    def record(self) -> dict[str, str]:
        """What a checkpoint keeps of this source: its kind and, for a parser, its path as
        configured and its SHA-256."""
        identity = parser_identity(self.parser) if self.kind == PARSER else {}
        return {"source": self.kind, **identity}

    def restored(self, record: dict[str, str] | None) -> TreeSource:
        """The source of a model read back with its ``record`` (this source's ``parser``
        is where the model's parser lies now); None, from a model that reads no trees or
        one saved before models kept their record: this source as it is. A resumed run
        whose splits this source parsed with another parser than the record's is an
        error: it would go on training on other trees."""
        if record is None:
            return self
        read_by = self.parsed_with
        if read_by is not None and record["source"] == PARSER:
            if read_by["sha256"] != record["sha256"]:
                raise ValueError(
                    f"the run was trained on trees of the parser {record['path']} (sha256 "
                    f"{record['sha256'][:12]}), but its splits were parsed by "
                    f"{read_by['path']} (sha256 {read_by['sha256'][:12]})"
                )
        return TreeSource.trained(record, self.parser)

    def overridden(self, trees: str | None, parser: str | None, kinds: Sequence[str]) -> TreeSource:
        """This source as a command changes it (``--trees``, ``--parser``). ``trees``, one
        of ``kinds`` (those the model's data can have) or a file of trees (one a line of
        the sentences read next), chooses the trees outright, whatever the model trained
        on; ``parser`` alone says where the model's parser lies, and a parser other than
        the one the model was trained with stays refused."""
        parser = parser or self.parser
        if trees is None:
            return TreeSource(self.kind, parser, self.trained_on)
        if trees in kinds:
            return TreeSource(trees, parser)
        if trees not in KINDS and Path(trees).is_file():
            return TreeSource(FILES, parser, file=trees)
        raise ValueError(
            f"--trees {trees}: this model reads {', '.join(kinds)} trees, or trees from a file"
        )

    def trees(
        self,
        sentences: Sequence[Sequence[str]],
        where: str,
        progress: bool = True,
        cache: bool = True,
    ) -> list[Tree]:
        """The tree of every sentence (its words as the leaves, a bracket word as the
        Treebank writes it: ``-LRB-`` for ``(``, as ``escape`` gives); ``where`` names the
        sentences in errors. ``cache``: a parser's trees are kept (input files are many
        and seldom read twice; data splits are few)."""
        if self.kind == RIGHT_BRANCHING:
            return [right_branching(escape(words)) for words in sentences]
        if self.kind == FILES and self.file is not None:
            return read_tree_file(self.file, sentences, len(sentences))
        if self.kind == FILES:
            raise ValueError(
                f"{where}: this model reads its trees from files (data.tree_files) and none "
                "is given for these sentences (data.tree_files.SPLIT, or translate --trees FILE)"
            )
        identity = parser_identity(self.parser)
        trained = self.trained_on
        if self.kind == PARSER and trained is not None and identity["sha256"] != trained["sha256"]:
            raise ValueError(
                f"the model was trained on trees of the parser {trained['path']} "
                f"(sha256 {trained['sha256'][:12]}), but {identity['path']} is another "
                f"(sha256 {identity['sha256'][:12]}): pass that parser, or say that this "
                "one's trees are meant (--trees parser)"
            )
        self.parsed_with = identity
        return self._parsed(sentences, identity, where, progress, cache)

    def _parsed(
        self,
        sentences: Sequence[Sequence[str]],
        identity: dict[str, str],
        where: str,
        progress: bool,
        cache: bool,
    ) -> list[Tree]:
        """The parser's trees, from the cache when these words were parsed by this parser
        before, else parsed (and with ``cache``, kept)."""
        text = "\n".join(" ".join(words) for words in sentences)
        key = hashlib.sha256(f"{identity['sha256']}\n{text}".encode()).hexdigest()[:24]
        path = cache_dir() / "trees" / f"{key}.txt"
        if cache and path.is_file():
            lines = read_utf8(path).split("\n")[: len(sentences)]
            trees = [parse_treebank_line(line, str(path), k + 1) for k, line in enumerate(lines)]
            if len(trees) == len(sentences):
                for k, (tree, words) in enumerate(zip(trees, sentences, strict=True)):
                    # The parser writes a bracket word as the Treebank does (-LRB-).
                    tree.check_leaves(escape(words), str(path), k + 1)
                return trees
        parser = Parser.load(self.parser)
        scheme = "tree" if parser.constituency else None  # trees are what is asked for
        parsed = parser.parse(sentences, progress=progress, where=where, dependencies=scheme)
        trees = [p.tree for p in parsed]
        if any(tree is None for tree in trees):
            raise ValueError(
                f"{identity['path']}: a dependency-only parser gives no constituency trees"
            )
        if cache:
            path.parent.mkdir(parents=True, exist_ok=True)
            with write_aside(path) as partial:  # two runs may parse the same split at once
                partial.write_text("".join(t.to_brackets() + "\n" for t in trees), encoding="utf-8")
        return trees
