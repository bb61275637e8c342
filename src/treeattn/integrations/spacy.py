"""The parser as a spaCy (v3) pipeline component: ``nlp.add_pipe("treeattn_parser")``.

>>> import spacy
>>> nlp = spacy.blank("en")
>>> component = nlp.add_pipe("treeattn_parser")
>>> doc = nlp("The cat sat on the mat.")
>>> list(doc.sents)[0]._.parse_string
'(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))'
>>> [(token.text, token.dep_, token.head.text) for token in doc[:3]]
[('The', 'det', 'cat'), ('cat', 'nsubj', 'sat'), ('sat', 'root', 'sat')]

The component is registered under that name when this module is imported and, through the
``spacy_factories`` entry point, for spaCy itself to find without it. Each sentence of a
doc (the doc's own sentences when a component before set them, else cut by the parser's
sentence rule, ``treeattn.trees.tokenize.sentence_spans``) is read as ``treeattn parse``
reads a line: its tree as for brackets (the Penn Treebank's cut into words), its
dependencies and tags as for ``--format conllu`` (for a parser of Universal Dependencies,
``accurate``, the text cut as UD English EWT cuts it, ``tokenize(text, scheme="ud")``; a
sentence whose two cuts give other words is parsed in each). Both are carried onto the
doc's tokens by characters (``treeattn.integrations.projection`` states the rules for
tokens the parser splits or joins and for white space): where spaCy's tokens are the
command line's words, the heads, relations and tags are the command line's. Its config:

- ``model``: ``accurate`` (default), ``fast``, ``accurate-ptb`` or a parser file;
  ``int8``: linear layers in int8 (CPU), as ``Parser.load(int8=True)``;
- ``batch_size``: sentences parsed together, across the docs of ``nlp.pipe`` (whose own
  ``batch_size`` counts docs handed over);
- ``set_tags``: write each token's ``tag_``; ``set_dependencies``: write ``head`` and
  ``dep_``, the parser's default dependencies as ``treeattn parse --format conllu`` writes
  them: Universal Dependencies from ``accurate``, the tree's head-rule PHRASE/CHILD
  relations from ``fast`` and ``accurate-ptb``;
- ``set_sents``: mark the starts of the sentences the component cut, on a doc that came
  without them (spaCy reads sentences off written dependencies in any case);
- ``long_sentences``: a sentence of more words than the parser reads (``Parser.max_length``)
  is ``"skip"``: left unparsed with a warning naming it (its extensions raise, saying so),
  or ``"error"``: a ``ValueError`` naming it.

The extensions are benepar's, with its meanings, so that code written for benepar runs
unchanged: on a ``Span`` that is a constituent, ``._.labels`` (a unary chain's labels from
the top down, ``()`` for a token alone), ``._.parse_string``, ``._.constituents`` (itself
and every constituent and token inside it, pre-order), ``._.parent`` (None for a
sentence) and ``._.children``; on a ``Token``, ``._.labels``, ``._.parse_string`` and
``._.parent``. ``Span._.tree`` is the constituent's own ``Tree`` over the parser's words
(None for a token the parser split or joined, or white space). A span that is no
constituent raises ``NotAConstituent``. A sentence of white space alone has no tree: it
and its tokens are constituents without labels, its bracket string empty. The
constituents refer to token positions: a component that merges or splits tokens goes
before this one (the extensions raise, saying so, on a doc retokenized after it).
"""

from __future__ import annotations

import bisect
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy
from spacy.attrs import DEP, HEAD, IDX, LENGTH, SENT_START, TAG
from spacy.language import Language
from spacy.tokens import Doc, Span, Token

from treeattn.integrations import projection
from treeattn.integrations.projection import Record
from treeattn.trees import Tree
from treeattn.trees.tokenize import PTB, escape, sentence_spans, tokenize_with_offsets
from treeattn.trees.tokenize import Token as Word

NAME = "treeattn_parser"
# The parser's own default (``treeattn.parsing.parser.DEFAULT_MODEL``), named here because
# spaCy imports this module, for its entry point, whenever it makes a pipeline: the parser
# (and what it reads) loads only when a component is made.
DEFAULT_MODEL = "accurate"
DATA = "_treeattn"  # the Doc extension that holds each sentence's ``Record``
LONG_SENTENCES = ("skip", "error")
REFERENCE_FILE = "parser.json"  # what to_disk writes: the parser's name and sha256
DEFAULT_CONFIG = {
    "model": DEFAULT_MODEL,
    "int8": False,
    "batch_size": 512,
    "set_tags": True,
    "set_dependencies": True,
    "set_sents": True,
    "long_sentences": "skip",
}


class Sentence(NamedTuple):
    """A sentence of a doc: its tokens ``start`` .. ``end - 1``, the place of its text in
    the doc's (``offset``), its words for the tree (placed in its text; none for white
    space alone), why it is left unparsed ("" when it is not) and its words for the
    dependencies where they are others (UD's cut; None: ``words``)."""

    start: int
    end: int
    offset: int
    words: list[Word]
    unparsed: str = ""
    dependency_words: list[Word] | None = None


class NotAConstituent(ValueError):
    """A span asked for its constituent's data is not a constituent of the parse."""


class TreeattnParser:
    """The pipeline component (``nlp.add_pipe("treeattn_parser", config=...)``); the
    module's docstring gives its config."""

    def __init__(
        self,
        nlp: Language,
        name: str = NAME,
        *,
        model: str = DEFAULT_MODEL,
        int8: bool = False,
        batch_size: int = 512,
        set_tags: bool = True,
        set_dependencies: bool = True,
        set_sents: bool = True,
        long_sentences: str = "skip",
    ) -> None:
        if long_sentences not in LONG_SENTENCES:
            raise ValueError(
                f"{name}: long_sentences={long_sentences!r}; one of {', '.join(LONG_SENTENCES)}"
            )
        if batch_size < 1:
            raise ValueError(f"{name}: batch_size={batch_size}; at least 1 sentence")
        self.name, self.model, self.int8 = name, str(model), int8
        self.batch_size, self.long_sentences = batch_size, long_sentences
        self.set_tags, self.set_dependencies, self.set_sents = (
            set_tags,
            set_dependencies,
            set_sents,
        )
        from treeattn.parsing.parser import Parser, model_path
        from treeattn.parsing.tree_source import file_sha256

        path = model_path(model)
        self.sha256 = file_sha256(path)
        self.parser = Parser.load(path, int8=int8)
        if not self.parser.constituency:
            raise ValueError(f"{name}: {model} is a dependency-only parser; it gives no trees")
        # How ``treeattn parse --format conllu`` cuts the text for its dependencies.
        self.dependency_scheme = self.parser.token_scheme()
        install_extensions()

    # ------------------------------------------------------------ running
    def __call__(self, doc: Doc) -> Doc:
        self._annotate([(doc, self._sentences(doc))])
        return doc

    def pipe(self, stream: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        """Docs as they come, parsed ``self.batch_size`` sentences at a time across docs
        (``batch_size``, which ``nlp.pipe`` gives in docs, is not this one's unit)."""
        waiting: list[tuple[Doc, list[Sentence]]] = []
        sentences = 0
        for doc in stream:
            plan = self._sentences(doc)
            waiting.append((doc, plan))
            sentences += len(plan)
            if sentences >= self.batch_size:
                self._annotate(waiting)
                yield from (doc for doc, _ in waiting)
                waiting, sentences = [], 0
        if waiting:
            self._annotate(waiting)
            yield from (doc for doc, _ in waiting)

    def _annotate(self, docs: list[tuple[Doc, list[Sentence]]]) -> None:
        """Parse every sentence of ``docs`` in one call and write the results on them."""
        todo = [
            words
            for _, plan in docs
            for s in plan
            if s.words and not s.unparsed
            for words in (s.words, s.dependency_words)
            if words is not None
        ]
        parsed = iter(self.parser.parse([[w.word for w in words] for words in todo]))
        for doc, plan in docs:
            places = doc.to_array([IDX, LENGTH]).tolist()
            records, projections = [], []
            for s in plan:
                if s.unparsed:
                    records.append(projection.unparsed_record(s.start, s.end, s.unparsed))
                    continue
                if not s.words:
                    projected = projection.blank(s.start, s.end)
                    tree = None
                else:
                    parse = next(parsed)
                    spans = [(a - s.offset, a - s.offset + n) for a, n in places[s.start : s.end]]
                    tree = parse.tree
                    projected = projection.project(
                        spans, s.start, s.words, tree, parse.dependencies
                    )
                    if s.dependency_words is not None:
                        other = projection.project(
                            spans, s.start, s.dependency_words, None, next(parsed).dependencies
                        )
                        projected = projected.with_dependencies(other)
                records.append(projected.record(tree))
                projections.append(projected)
            starts = [r["start"] for r in records]
            doc._.set(DATA, {"tokens": len(doc), "starts": starts, "sentences": records})
            self._write(doc, plan, projections)

    def _sentences(self, doc: Doc) -> list[Sentence]:
        """Each sentence of ``doc`` and its words; a sentence too long is an error or left
        unparsed with a warning (``long_sentences``)."""
        out = []
        whole = doc.text  # spaCy joins the tokens' texts anew at each call
        for number, (start, end) in enumerate(sentence_bounds(doc, whole), start=1):
            span = doc[start:end]
            text = whole[span.start_char : span.end_char]
            words = tokenize_with_offsets(text)
            others = None
            if self.dependency_scheme != PTB:
                others = tokenize_with_offsets(text, self.dependency_scheme)
                if escape([w.word for w in others]) == [w.word for w in words]:
                    others = None  # one parse gives both
            if len(words) > self.parser.max_length:
                text = text if len(text) <= 60 else text[:57] + "..."
                problem = (
                    f"{self.name}: sentence {number} of the doc (tokens {start}-{end - 1}, "
                    f"{text!r}) has {len(words)} words, more than the parser's limit of "
                    f"{self.parser.max_length}"
                )
                if self.long_sentences == "error":
                    raise ValueError(problem)
                warnings.warn(f"{problem}: left unparsed", stacklevel=2)
                reason = f"{len(words)} words, over the parser's limit"
                out.append(Sentence(start, end, span.start_char, words, reason))
                continue
            if others is not None and len(others) > self.parser.max_length:
                others = None  # the tree's words fit: the dependencies are theirs
            out.append(Sentence(start, end, span.start_char, words, "", others))
        return out

    def _write(
        self,
        doc: Doc,
        plan: list[Sentence],
        projections: list[projection.Projection],
    ) -> None:
        """spaCy's own attributes: tags, heads and relations of the parsed sentences (the
        rest kept as they were), and the sentence starts."""
        if not len(doc):
            return
        had_sentences = doc.has_annotation("SENT_START") or doc.has_annotation("DEP")
        if self.set_tags or self.set_dependencies:
            # uint64 columns: string ids, and heads as offsets from the token (-1 wraps).
            values = doc.to_array([TAG, HEAD, DEP])
            strings = doc.vocab.strings
            for p in projections:
                rows = slice(p.start, p.end)
                offsets = numpy.array(p.heads, dtype=numpy.int64) - numpy.arange(p.start, p.end)
                values[rows, 0] = numpy.array([strings.add(t) for t in p.tags], numpy.uint64)
                values[rows, 1] = offsets.view(numpy.uint64)
                values[rows, 2] = numpy.array([strings.add(d) for d in p.deps], numpy.uint64)
            attrs = ([TAG] if self.set_tags else []) + (
                [HEAD, DEP] if self.set_dependencies else []
            )
            columns = ([0] if self.set_tags else []) + ([1, 2] if self.set_dependencies else [])
            if projections:
                doc.from_array(attrs, values[:, columns])
        if self.set_dependencies and projections or self.set_sents and not had_sentences:
            # Written heads make spaCy read sentences off the trees: a sentence left
            # unparsed would join the one before; its start is written again here.
            starts = numpy.full(len(doc), -1, dtype=numpy.int64)
            starts[[sentence.start for sentence in plan]] = 1
            doc.from_array([SENT_START], starts.view(numpy.uint64))

    # ------------------------------------------------------------ saving
    def _reference(self) -> dict[str, str]:
        return {"model": self.model, "sha256": self.sha256}

    def _check(self, reference: dict[str, Any], where: str) -> None:
        """Refuse a saved pipeline whose parser is not the one this component loaded, but
        for a shipped parser's name since given to another file (``accurate``, once
        ``accurate-ptb``): the file the pipeline was saved with is loaded instead, with a
        warning, so that the pipeline parses as it did."""
        if reference.get("sha256") == self.sha256:
            return
        from treeattn import plugins
        from treeattn.parsing.parser import Parser
        from treeattn.parsing.tree_source import shipped_with_sha256

        saved_with = shipped_with_sha256(reference.get("sha256"))
        if self.model in plugins.parsers and saved_with is not None:
            warnings.warn(
                f"{where}: the pipeline was saved with the parser {reference.get('model')!r}, "
                f"shipped now as {saved_with!r}, which it keeps; {self.model!r} names another "
                f"now (a new pipeline with model = {self.model!r} uses it)",
                stacklevel=2,
            )
            self.model, self.sha256 = saved_with, reference["sha256"]
            self.parser = Parser.load(plugins.parsers[saved_with].path, int8=self.int8)
        else:
            raise ValueError(
                f"{where}: the pipeline was saved with the parser {reference.get('model')!r} "
                f"of sha256 {reference.get('sha256')}, but {self.model!r} is now a file of "
                f"sha256 {self.sha256}: a different parser, refused"
            )

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        return json.dumps(self._reference()).encode()

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> TreeattnParser:
        self._check(json.loads(data), self.name)
        return self

    def to_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / REFERENCE_FILE).write_text(json.dumps(self._reference(), indent=2) + "\n")

    def from_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> TreeattnParser:
        file = Path(path) / REFERENCE_FILE
        self._check(json.loads(file.read_text()), str(file))
        return self


@Language.factory(
    NAME,
    default_config=DEFAULT_CONFIG,
    assigns=["token.tag", "token.dep", "token.head", "token.is_sent_start", f"doc._.{DATA}"],
)
def make_treeattn_parser(
    nlp: Language,
    name: str,
    model: str,
    int8: bool,
    batch_size: int,
    set_tags: bool,
    set_dependencies: bool,
    set_sents: bool,
    long_sentences: str,
) -> TreeattnParser:
    """The factory spaCy calls for ``nlp.add_pipe("treeattn_parser", config=...)``."""
    return TreeattnParser(
        nlp,
        name,
        model=model,
        int8=int8,
        batch_size=batch_size,
        set_tags=set_tags,
        set_dependencies=set_dependencies,
        set_sents=set_sents,
        long_sentences=long_sentences,
    )


def sentence_bounds(doc: Doc, text: str | None = None) -> list[tuple[int, int]]:
    """Each sentence's first and past-the-last token: the doc's own sentences when it has
    them, else those of ``sentence_spans`` (one starts at the first token that begins at or
    after its first character; white space before the first belongs to the first).
    ``text``: the doc's, when the caller has it already."""
    if not len(doc):
        return []
    if doc.has_annotation("SENT_START") or doc.has_annotation("DEP"):
        return [(s.start, s.end) for s in doc.sents]
    token_starts = doc.to_array(IDX).tolist()
    firsts = sorted(
        {0}
        | {
            bisect.bisect_left(token_starts, a)
            for a, _ in sentence_spans(doc.text if text is None else text)
        }
    )
    firsts = [k for k in firsts if k < len(doc)]
    return list(zip(firsts, [*firsts[1:], len(doc)], strict=True))


# ---------------------------------------------------------------- extensions
def _record(span: Span) -> tuple[Record, int]:
    """The record of the sentence that holds ``span``, and the entry that is ``span``."""
    data = span.doc._.get(DATA)
    if data is None:
        raise ValueError(
            f"no treeattn parse on this Doc: add the {NAME!r} component to the pipeline"
        )
    if data["tokens"] != len(span.doc):
        raise ValueError(
            f"the Doc has {len(span.doc)} tokens but was parsed with {data['tokens']}: a "
            f"component that splits or merges tokens goes before {NAME!r}"
        )
    index = bisect.bisect_right(data["starts"], span.start) - 1
    record = data["sentences"][index] if index >= 0 else None
    if record is None or span.end > record["end"] or span.start == span.end:
        raise NotAConstituent(
            f"{span.text!r} (tokens {span.start}-{span.end - 1}) is in no sentence"
        )
    if "starts" not in record:
        raise ValueError(
            f"the sentence of tokens {record['start']}-{record['end'] - 1} was left unparsed: "
            f"{record['reason']}"
        )
    found = projection.position(record, span.start, span.end)
    if found is None:
        raise NotAConstituent(
            f"{span.text!r} (tokens {span.start}-{span.end - 1}) is not a constituent"
        )
    return record, found


def _span(doc: Doc, record: Record, p: int) -> Span:
    return doc[record["starts"][p] : record["ends"][p]]


def span_labels(span: Span) -> tuple[str, ...]:
    record, p = _record(span)
    return tuple(record["labels"][p])


def span_parse_string(span: Span) -> str:
    record, p = _record(span)
    doc = span.doc
    return projection.brackets(record, p, [t.text for t in doc], [t.is_space for t in doc])


def span_constituents(span: Span) -> Iterator[Span]:
    record, p = _record(span)
    return (_span(span.doc, record, q) for q in projection.inside(record, p))


def span_parent(span: Span) -> Span | None:
    record, p = _record(span)
    q = projection.parent(record, p)
    return None if q is None else _span(span.doc, record, q)


def span_children(span: Span) -> Iterator[Span]:
    record, p = _record(span)
    return (_span(span.doc, record, q) for q in projection.children(record, p))


def span_tree(span: Span) -> Tree | None:
    record, p = _record(span)
    node = record["nodes"][p]
    if node < 0 or record["tree"] is None:
        return None
    for index, subtree in enumerate(Tree.parse(record["tree"]).subtrees()):
        if index == node:
            return subtree
    raise ValueError(f"tree node {node} is past the tree of {record['tree']!r}")


def _of_token(getter: Callable[[Span], Any]) -> Callable[[Token], Any]:
    def token_getter(token: Token) -> Any:
        return getter(token.doc[token.i : token.i + 1])

    token_getter.__doc__ = f"{getter.__name__} of the token's own span"
    return token_getter


SPAN_EXTENSIONS = {
    "labels": span_labels,
    "parse_string": span_parse_string,
    "constituents": span_constituents,
    "parent": span_parent,
    "children": span_children,
    "tree": span_tree,
}
TOKEN_EXTENSIONS = {
    "labels": _of_token(span_labels),
    "parse_string": _of_token(span_parse_string),
    "parent": _of_token(span_parent),
}


def install_extensions() -> None:
    """Register the Doc, Span and Token extensions (again harmlessly). One of the same name
    that another package registered (benepar's) is replaced, with a warning."""
    if not Doc.has_extension(DATA):
        Doc.set_extension(DATA, default=None)
    for owner, getters in ((Span, SPAN_EXTENSIONS), (Token, TOKEN_EXTENSIONS)):
        for name, getter in getters.items():
            if owner.has_extension(name):
                if owner.get_extension(name)[2] is getter:
                    continue
                warnings.warn(
                    f"{owner.__name__}._.{name} was registered by another package; treeattn's "
                    "replaces it",
                    stacklevel=2,
                )
            owner.set_extension(name, getter=getter, force=True)


install_extensions()
