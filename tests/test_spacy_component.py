"""The spaCy pipeline component ``treeattn_parser``, with real spaCy: sentences (cut by the
component, by a sentencizer, or set before), benepar's extensions and their meanings,
tokens that differ from the parser's words, long and empty input, ``nlp.pipe``, saving
and loading, and the entry point that lets spaCy find the component by itself."""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

spacy = pytest.importorskip("spacy", reason="spaCy not installed (the extra treeattn[spacy])")

from spacy.tokens import Doc  # noqa: E402

from treeattn.integrations.spacy import (  # noqa: E402
    NAME,
    NotAConstituent,
    TreeattnParser,
    make_treeattn_parser,
)
from treeattn.parsing import Parse  # noqa: E402
from treeattn.parsing.decoding import tree_dependencies  # noqa: E402
from treeattn.trees import Tree  # noqa: E402
from treeattn.trees.tokenize import ESCAPES  # noqa: E402

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def nlp():
    """Blank English with the fast parser: no sentencizer, so the component cuts sentences."""
    nlp = spacy.blank("en")
    nlp.add_pipe(NAME, config={"model": "fast"})
    return nlp


@pytest.fixture(scope="module")
def parser(nlp):
    return nlp.get_pipe(NAME).parser


class KnownTrees:
    """Stands in for ``Parser.parse``: each sentence gets the tree given for its words, with
    the head-rule dependencies ``treeattn parse`` would give it."""

    def __init__(self, *brackets: str) -> None:
        trees = [Tree.parse(b) for b in brackets]
        self.trees = {tuple(tree.leaves()): tree for tree in trees}

    def __call__(self, sentences, *args, **kwargs):
        out = []
        for words in sentences:
            tree = self.trees[tuple(words)]
            out.append(Parse(list(words), tree, tree_dependencies(tree, tree.tags())))
        return out


def known(nlp, monkeypatch, *brackets: str) -> None:
    monkeypatch.setattr(nlp.get_pipe(NAME).parser, "parse", KnownTrees(*brackets))


def doc_of(nlp, words: list[str], spaces: list[bool] | None = None) -> Doc:
    """A doc of the given tokens (a tokenizer other than spaCy's), through the pipeline."""
    return nlp(Doc(nlp.vocab, words=words, spaces=spaces))


def top_chain(tree: Tree) -> tuple[str, ...]:
    """The labels of the unary chain at the top of ``tree``."""
    labels = []
    node = tree
    while True:
        labels.append(node.label)
        if len(node.children) != 1 or node.children[0].is_preterminal():
            return tuple(labels)
        node = node.children[0]


def check_sentence(sent, parser) -> None:
    """What holds of every parsed sentence, whatever its tokens: its tree is the parser's
    on its text; every token is a leaf with labels; heads stay inside it with one root;
    constituents nest and start and end on words (the sentence aside); the bracket string
    reads back, its leaves the tokens that are not white space; and where tokens and words
    are one to one, the brackets and dependencies are the parser's own."""
    with warnings.catch_warnings():  # a sentence set before may hold several by the rule
        warnings.simplefilter("ignore")
        parse = parser.parse(sent.text)
    assert sent._.tree == parse.tree
    assert sent._.labels == top_chain(parse.tree)
    roots = [t for t in sent if t.head.i == t.i]
    assert len(roots) == 1 and all(sent.start <= t.head.i < sent.end for t in sent)
    for token in sent:
        assert isinstance(token._.labels, tuple)
        if len(sent) > 1:
            assert token._.parent.start <= token.i < token._.parent.end
    for span in sent._.constituents:
        assert sent.start <= span.start < span.end <= sent.end
        if len(span) > 1 and span != sent:
            assert not span[0].is_space and not span[-1].is_space
    leaves = Tree.parse(sent._.parse_string).leaves()
    texts = ["".join(ESCAPES.get(c, c) for c in t.text) for t in sent if not t.is_space]
    assert leaves == texts
    if leaves == parse.words and not any(t.is_space for t in sent):
        assert sent._.parse_string == parse.tree.to_brackets()
        heads = [0 if t.head.i == t.i else t.head.i - sent.start + 1 for t in sent]
        assert heads == parse.dependencies.heads
        assert [t.dep_ for t in sent] == parse.dependencies.relations
        assert [t.tag_ for t in sent] == parse.dependencies.xpos


# ---------------------------------------------------------------- sentences
def test_blank_english_sentences_cut_by_the_parsers_rule(nlp, parser):
    doc = nlp("The cat sat on the mat. Mr. Smith arrived in the U.S. today. Dogs bark.")
    sents = list(doc.sents)
    assert [s.text for s in sents] == [
        "The cat sat on the mat.",
        "Mr. Smith arrived in the U.S. today.",
        "Dogs bark.",
    ]
    expected = parser.parse([doc.text], split_sentences=True)
    assert [s._.tree for s in sents] == [p.tree for p in expected]
    for sent in sents:
        check_sentence(sent, parser)


def test_a_sentencizer_sets_the_sentences(parser):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(NAME, config={"model": "fast"})
    # The sentencizer cuts before "and", where the parser's rule would not, and keeps a
    # last line break as a sentence of its own.
    doc = nlp("It works! and then it stopped.  It was late!\nWe left.\n")
    sents = list(doc.sents)
    texts = ["It works!", "and then it stopped.", " It was late!", "\nWe left.", "\n"]
    assert [s.text for s in sents] == texts
    for sent in sents[:-1]:
        check_sentence(sent, parser)
    blank = sents[-1]
    assert blank._.labels == () and blank._.parse_string == "" and blank._.tree is None
    assert blank[0].tag_ == "_SP" and not blank[0].has_head()


def test_sentences_set_before_are_kept_even_against_the_parsers_rule(nlp, parser):
    words = ["The", "cat", "sat", ".", "The", "dog", "ran", ".", "It", "rained", "."]
    starts = [True] + [False] * 7 + [True, False, False]
    doc = nlp(Doc(nlp.vocab, words=words, sent_starts=starts))
    sents = list(doc.sents)
    assert [len(s) for s in sents] == [8, 3]
    assert sents[0]._.tree == parser.parse(["The cat sat . The dog ran .".split()])[0].tree
    for sent in sents:
        check_sentence(sent, parser)


def test_sentences_of_an_earlier_parse_are_kept(nlp, parser):
    """A pipeline whose parser set heads (and so sentences) before this one."""
    words = ["Dogs", "bark", ".", "Cats", "sleep", "."]
    doc = Doc(nlp.vocab, words=words, heads=[1, 1, 1, 4, 4, 4], deps=["nsubj", "ROOT", "p"] * 2)
    doc = nlp(doc)
    assert [s.text for s in doc.sents] == ["Dogs bark .", "Cats sleep ."]
    for sent in doc.sents:
        check_sentence(sent, parser)
        assert sent.root.dep_ == "root"  # the head-rule dependencies replaced them


def test_what_the_component_writes_is_configurable(parser):
    nlp = spacy.blank("en")
    nlp.add_pipe(
        NAME,
        config={"model": "fast", "set_tags": False, "set_dependencies": False, "set_sents": False},
    )
    doc = nlp("The cat slept. The dog ran.")
    assert not doc.has_annotation("TAG") and not doc.has_annotation("DEP")
    assert not doc.has_annotation("SENT_START")
    # the constituents are there all the same
    assert doc[0:4]._.parse_string == parser.parse("The cat slept.").tree.to_brackets()
    tags_only = spacy.blank("en")
    tags_only.add_pipe(NAME, config={"model": "fast", "set_dependencies": False})
    doc = tags_only("The cat slept. The dog ran.")
    assert doc.has_annotation("TAG") and not doc.has_annotation("DEP")
    assert [s.text for s in doc.sents] == ["The cat slept.", "The dog ran."]


def test_a_bad_config_is_refused_by_name():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="long_sentences='crash'; one of skip, error"):
        nlp.add_pipe(NAME, config={"model": "fast", "long_sentences": "crash"})
    with pytest.raises(ValueError, match="batch_size=0"):
        nlp.add_pipe(NAME, config={"model": "fast", "batch_size": 0})
    with pytest.raises(FileNotFoundError, match="no parser model at nowhere.safetensors"):
        nlp.add_pipe(NAME, config={"model": "nowhere.safetensors"})


# ---------------------------------------------------------------- benepar's extensions
SAID = "(S (NP (PRP They)) (VP (VBD said) (S (VP (VB stop) (NP (PRP it))))) (. .))"
DOGS = "(S (NP (NNS Dogs)) (VP (VBP bark)) (. .))"


def test_benepars_extensions_and_their_meanings(nlp, monkeypatch):
    known(nlp, monkeypatch, SAID, DOGS)
    doc = nlp("They said stop it. Dogs bark.")
    first, second = doc.sents
    assert first._.parse_string == SAID and second._.parse_string == DOGS
    # labels: a unary chain's from the top down; a token alone in a phrase has it; () else
    assert first._.labels == ("S",)
    assert doc[2:4]._.labels == ("S", "VP")
    assert doc[3]._.labels == ("NP",) and doc[2]._.labels == () and doc[4]._.labels == ()
    # parse_string of a span and of a token
    assert doc[2:4]._.parse_string == "(S (VP (VB stop) (NP (PRP it))))"
    assert doc[3]._.parse_string == "(NP (PRP it))" and doc[1]._.parse_string == "(VBD said)"
    # constituents: the span itself, then every constituent and token inside, pre-order
    assert [s.text for s in first._.constituents] == [
        "They said stop it.",
        "They",
        "said stop it",
        "said",
        "stop it",
        "stop",
        "it",
        ".",
    ]
    assert [s.text for s in doc[2:4]._.constituents] == ["stop it", "stop", "it"]
    # children and parent, spans and tokens; a sentence has no parent, however many
    assert [s.text for s in first._.children] == ["They", "said stop it", "."]
    assert [s.text for s in doc[1:4]._.children] == ["said", "stop it"]
    assert list(doc[3:4]._.children) == []
    assert doc[2:4]._.parent.text == "said stop it" and doc[3]._.parent.text == "stop it"
    assert doc[0]._.parent == first and first._.parent is None and second._.parent is None
    assert doc[5]._.parent.text == "Dogs bark." and doc[5]._.labels == ("NP",)
    # the tree of a constituent, over the parser's words
    assert doc[2:4]._.tree == Tree.parse("(S (VP (VB stop) (NP (PRP it))))")
    assert doc[3:4]._.tree == Tree.parse("(NP (PRP it))")
    assert doc[2:3]._.tree == Tree.parse("(VB stop)")
    # spans that are not constituents
    for span in (doc[1:3], doc[3:6], doc[0:0]):
        with pytest.raises(NotAConstituent):
            _ = span._.labels
    # spaCy's own attributes: tags and the head-rule dependencies
    assert [t.tag_ for t in first] == ["PRP", "VBD", "VB", "PRP", "."]
    assert [t.head.i for t in first] == [1, 1, 1, 2, 1]
    assert [t.dep_ for t in first] == ["S/NP", "root", "VP/S", "VP/NP", "punct"]


def test_a_doc_without_the_component_says_so():
    nlp = spacy.blank("en")
    doc = nlp("Dogs bark.")
    with pytest.raises(ValueError, match="add the 'treeattn_parser' component"):
        _ = doc[0:2]._.labels


def test_a_doc_retokenized_after_parsing_says_so(nlp):
    doc = nlp("New York is big.")
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
    with pytest.raises(ValueError, match="splits or merges tokens goes before"):
        _ = doc[0]._.labels


# ---------------------------------------------------------------- tokens against words
def test_a_token_the_parser_splits_is_one_leaf(nlp, monkeypatch):
    """A whitespace tokenizer keeps "can't" and "stop." whole; the parser reads "ca n't"
    and "stop .": constituents with an edge inside a token are left out."""
    known(nlp, monkeypatch, "(S (NP (PRP We)) (VP (MD ca) (RB n't) (VP (VB stop))) (. .))")
    doc = doc_of(nlp, ["We", "can't", "stop."])
    sent = doc[0:3]
    assert sent._.parse_string == "(S (NP (PRP We)) (MD can't) (VB stop.))"
    assert [s.text for s in sent._.children] == ["We", "can't", "stop."]
    assert doc[1]._.labels == () and doc[1:2]._.tree is None and doc[0:1]._.tree is not None
    # "ca" heads the sentence and is nearest the root of its token's words
    assert [t.tag_ for t in doc] == ["PRP", "MD", "VB"]
    assert [(t.head.i, t.dep_) for t in doc] == [(1, "S/NP"), (1, "root"), (1, "VP/VP")]
    assert sent._.tree.leaves() == ["We", "ca", "n't", "stop", "."]


def test_words_the_parser_joins_are_subtokens_of_the_last(nlp, monkeypatch):
    known(nlp, monkeypatch, "(S (NP (DT An) (NN e-mail)) (VP (VBD came)) (. .))")
    doc = nlp("An e-mail came.")
    assert [t.text for t in doc] == ["An", "e", "-", "mail", "came", "."]
    assert doc[0:4]._.labels == ("NP",)
    assert doc[0:4]._.parse_string == "(NP (DT An) (NN e) (NN -) (NN mail))"
    assert [s.text for s in doc[0:4]._.children] == ["An", "e", "-", "mail"]
    assert [t.tag_ for t in doc[1:4]] == ["NN", "NN", "NN"]
    assert [(t.head.i, t.dep_) for t in doc[1:4]] == [(3, "subtok"), (3, "subtok"), (4, "S/NP")]
    with pytest.raises(NotAConstituent):
        _ = doc[1:4]._.labels  # the word's tokens, not a phrase of the tree
    merged = spacy.blank("en")
    merged.add_pipe("merge_subtokens")
    doc = merged.get_pipe("merge_subtokens")(doc)
    assert [t.text for t in doc] == ["An", "e-mail", "came", "."]


def test_white_space_tokens_are_leaves_of_the_phrase_around_them(nlp, monkeypatch):
    known(
        nlp,
        monkeypatch,
        "(S (NP (DT The) (NN cat)) (VP (VBD ran)) (. .))",
        "(S (NP (PRP It)) (VP (VBD slept)) (. .))",
    )
    doc = nlp("The  cat\n\nran.  It slept.\n")
    texts = ["The", " ", "cat", "\n\n", "ran", ".", " ", "It", "slept", ".", "\n"]
    assert [t.text for t in doc] == texts
    first, second = doc.sents
    assert first.text == "The  cat\n\nran.  " and second.text == "It slept.\n"
    assert first._.parse_string == "(S (NP (DT The) (NN cat)) (VP (VBD ran)) (. .))"
    assert doc[0:3]._.labels == ("NP",)  # the space inside the phrase is in it
    assert [s.text for s in doc[0:3]._.children] == ["The", " ", "cat"]
    assert doc[3]._.parent == first and doc[3]._.labels == () and doc[3]._.parse_string == ""
    for k in (1, 3, 6, 10):
        assert doc[k].tag_ == "_SP" and doc[k].dep_ == "dep" and doc[k].head.i == k - 1
    with pytest.raises(NotAConstituent):
        _ = doc[1:3]._.labels  # a phrase starts at a word, never at white space


def test_white_space_at_the_start_of_a_sentence_hangs_on_the_token_after(parser):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(NAME, config={"model": "fast"})
    doc = nlp("Dogs bark.  Cats sleep.")
    second = list(doc.sents)[1]
    assert second[0].is_space and second[0].head.i == second.start + 1
    assert second[0].dep_ == "dep"
    check_sentence(second, parser)


TRICKY = [
    "I can't believe it's an e-mail (really)!",
    "See https://example.com/a-b?q=1 or write to jo.doe@example.org now.",
    "Café au lait costs €4.50 in Zürich; naïve tourists pay ¥300.",
    'He said "no" -- twice --  and left...\tThen   nothing.',
    "The well-known 3-year-old sang [loudly] {twice}.",
    "日本 is written 日本 and 😀 is a face.",
]


@pytest.mark.parametrize("text", TRICKY)
def test_spacys_tokens_meet_the_parsers_words(nlp, parser, text):
    doc = nlp(text)
    for sent in doc.sents:
        check_sentence(sent, parser)


@pytest.mark.parametrize("text", TRICKY)
def test_a_whitespace_tokenizer_meets_the_parsers_words(nlp, parser, text):
    tokens = text.split()
    doc = doc_of(nlp, tokens)
    for sent in doc.sents:
        check_sentence(sent, parser)


# ---------------------------------------------------------------- long and empty input
def test_a_long_sentence_is_left_unparsed_with_a_warning(parser):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(NAME, config={"model": "fast"})
    long = " ".join(["word"] * (parser.max_length + 5)) + "."
    with pytest.warns(UserWarning, match=r"sentence 2 of the doc \(tokens 3-30\d.*more than the"):
        doc = nlp(f"Dogs bark. {long} Cats sleep.")
    first, middle, last = doc.sents
    check_sentence(first, parser)
    check_sentence(last, parser)
    words = parser.max_length + 6  # the full stop is a word
    with pytest.raises(ValueError, match=f"left unparsed: {words} words, over the parser's limit"):
        _ = middle._.labels
    assert not any(t.has_head() for t in middle)  # nothing is made up for it
    assert len(list(doc.sents)) == 3  # its sentence is still one, beside the others


def test_a_long_sentence_is_an_error_when_asked(parser):
    nlp = spacy.blank("en")
    nlp.add_pipe(NAME, config={"model": "fast", "long_sentences": "error"})
    long = " ".join(["word"] * (parser.max_length + 1))
    with pytest.raises(ValueError, match=r"sentence 1 of the doc \(tokens 0-300, 'word word"):
        nlp(long)


def test_empty_and_blank_docs_pass_through(nlp):
    assert len(nlp("")) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = nlp("  \n ")
    assert all(t.is_space for t in doc)
    sent = doc[0 : len(doc)]
    assert sent._.labels == () and sent._.parse_string == "" and sent._.tree is None
    docs = list(nlp.pipe(["", "Dogs bark.", "   "]))
    assert docs[1][0:3]._.labels


# ---------------------------------------------------------------- nlp.pipe, saving
def test_pipe_batches_across_docs_and_agrees_with_one_at_a_time(monkeypatch):
    nlp = spacy.blank("en")
    nlp.add_pipe(NAME, config={"model": "fast", "batch_size": 3})
    texts = [
        "The cat slept. The dog ran. A bird sang.",
        "",
        "Dogs bark.",
        "It rained all day in the old town. Nobody came.",
        "  ",
        "She read the book that he wrote last year.",
    ]
    calls = []
    original = nlp.get_pipe(NAME).parser.parse

    def counting(sentences, *args, **kwargs):
        calls.append(len(sentences))
        return original(sentences, *args, **kwargs)

    monkeypatch.setattr(nlp.get_pipe(NAME).parser, "parse", counting)
    piped = list(nlp.pipe(texts, batch_size=2))
    monkeypatch.undo()
    assert calls == [3, 3, 1]  # sentences, across docs: a doc is never cut
    alone = [nlp(text) for text in texts]
    for a, b in zip(piped, alone, strict=True):
        assert [t.text for t in a] == [t.text for t in b]
        assert [(t.tag_, t.head.i, t.dep_, t.is_sent_start) for t in a] == [
            (t.tag_, t.head.i, t.dep_, t.is_sent_start) for t in b
        ]
        if len(a) and not all(t.is_space for t in a):
            assert [s._.parse_string for s in a.sents] == [s._.parse_string for s in b.sents]


def test_to_disk_and_spacy_load_round_trip(nlp, tmp_path):
    nlp.to_disk(tmp_path / "pipeline")
    reference = json.loads((tmp_path / "pipeline" / NAME / "parser.json").read_text())
    component = nlp.get_pipe(NAME)
    assert reference == {"model": "fast", "sha256": component.sha256}
    loaded = spacy.load(tmp_path / "pipeline")
    text = "The cat sat on the mat. Dogs bark."
    assert [s._.parse_string for s in loaded(text).sents] == [
        s._.parse_string for s in nlp(text).sents
    ]
    assert loaded.get_pipe(NAME).parser.max_length == component.parser.max_length
    # bytes too
    again = spacy.blank("en")
    again.add_pipe(NAME, config={"model": "fast"})
    again.from_bytes(nlp.to_bytes())


def test_a_saved_pipeline_whose_parser_changed_is_refused(nlp, tmp_path):
    nlp.to_disk(tmp_path / "pipeline")
    file = tmp_path / "pipeline" / NAME / "parser.json"
    file.write_text(json.dumps({"model": "fast", "sha256": "0" * 64}))
    with pytest.raises(ValueError, match="saved with the parser 'fast' of sha256 0000.*refused"):
        spacy.load(tmp_path / "pipeline")
    component = nlp.get_pipe(NAME)
    with pytest.raises(ValueError, match="refused"):
        component.from_bytes(json.dumps({"model": "fast", "sha256": "1" * 64}).encode())


def test_a_pipeline_saved_with_a_shipped_parser_since_renamed_keeps_it(nlp, tmp_path):
    # A pipeline saved when `accurate` was the file now shipped as `accurate-ptb`: here
    # `fast` stands for the renamed file, `accurate` for the name that moved on.
    nlp.to_disk(tmp_path / "pipeline")
    file = tmp_path / "pipeline" / NAME / "parser.json"
    saved = json.loads(file.read_text())
    file.write_text(json.dumps({"model": "accurate", "sha256": saved["sha256"]}))
    config = tmp_path / "pipeline" / "config.cfg"
    config.write_text(config.read_text().replace('model = "fast"', 'model = "accurate"'))
    with pytest.warns(UserWarning, match="saved with the parser 'accurate', shipped now as 'fast'"):
        again = spacy.load(tmp_path / "pipeline")
    component = again.get_pipe(NAME)
    assert component.model == "fast" and component.sha256 == saved["sha256"]
    text = "They said stop it. It stopped."
    trees = [[s._.parse_string for s in pipeline(text).sents] for pipeline in (again, nlp)]
    assert trees[0] == trees[1] and len(trees[0]) == 2
    again.to_disk(tmp_path / "again")  # saved again, it loads again with the same file
    with pytest.warns(UserWarning, match="saved with the parser 'fast'"):
        assert spacy.load(tmp_path / "again").get_pipe(NAME).model == "fast"


def test_the_parse_travels_with_a_serialized_doc(nlp):
    doc = nlp("They said stop it.")
    again = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    assert again[0:5]._.parse_string == doc[0:5]._.parse_string
    assert [t.dep_ for t in again] == [t.dep_ for t in doc]


# ---------------------------------------------------------------- packaging
def test_only_the_spacy_module_imports_spacy():
    package = ROOT / "src" / "treeattn"
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(n == "spacy" or n.startswith("spacy.") for n in names):
                found.append(path.relative_to(package).as_posix())
    assert set(found) == {"integrations/spacy.py"}


def test_pyproject_declares_the_extra_and_the_entry_point():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(r.startswith("spacy") for r in project["optional-dependencies"]["spacy"])
    target = project["entry-points"]["spacy_factories"][NAME]
    module, _, attribute = target.partition(":")
    assert getattr(importlib.import_module(module), attribute) is make_treeattn_parser


def installed_entry_point() -> importlib.metadata.EntryPoint | None:
    found = importlib.metadata.entry_points(group="spacy_factories")
    return next((ep for ep in found if ep.name == NAME), None)


@pytest.mark.slow
def test_the_entry_point_resolves_in_a_fresh_process():
    """spaCy finds the factory through the installed package's metadata: the program
    imports no treeattn. The metadata is written when the package is installed (``make
    install``); an install older than the entry point skips, saying so."""
    if installed_entry_point() is None:
        pytest.skip(
            "the installed treeattn metadata has no spacy_factories entry point yet: "
            "reinstall the package (make install)"
        )
    code = (
        "import sys, spacy\n"
        "nlp = spacy.blank('en')\n"
        f"nlp.add_pipe({NAME!r}, config={{'model': 'fast'}})\n"
        "doc = nlp('Dogs bark.')\n"
        "print(doc[0:3]._.parse_string)\n"
    )
    paths = [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert Tree.parse(done.stdout).leaves() == ["Dogs", "bark", "."]


@pytest.mark.slow
def test_the_module_spacy_imports_for_its_entry_point_loads_no_parser():
    """spaCy imports every entry point's module when it makes a pipeline; the parser and
    what it reads load only when the component is made."""
    code = (
        "import sys, treeattn.integrations.spacy as m\n"
        "from treeattn.parsing.parser import DEFAULT_MODEL\n"
        "assert m.DEFAULT_MODEL == DEFAULT_MODEL\n"
        "import treeattn.integrations.spacy\n"
    )
    probe = "import sys, treeattn.integrations.spacy; print('treeattn.parsing' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for program, expected in ((probe, "False"), (code, "")):
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected


def test_the_modules_example_runs():
    import treeattn.integrations.spacy as module

    assert doctest.testmod(module).failed == 0


def test_the_component_class_is_the_factorys(nlp):
    assert isinstance(nlp.get_pipe(NAME), TreeattnParser)


# ---------------------------------------------------------------- the command line's dependencies
COMMAND_LINE = [
    "I don't know, it's gonna rain and we can't stop.",
    '"Stop," she said, "you won\'t go."',
    "The well-known Coca-Cola ad ran from 1969-1970 at 5pm.",
    "See https://example.com/a-b or write to bob@example.com :) now!",
    "Dont worry, im sure it's fine... really.",
]


@pytest.fixture(scope="module")
def accurate_nlp():
    """Blank English with the shipped accurate parser (Universal Dependencies)."""
    nlp = spacy.blank("en")
    nlp.add_pipe(NAME)
    return nlp


def command_line_conllu(lines: list[str], tmp_path: Path) -> list:
    """What ``treeattn parse --format conllu`` writes for ``lines``, read back."""
    from treeattn.cli import main
    from treeattn.trees.dependency import read_conllu

    source, out = tmp_path / "in.txt", tmp_path / "out.conllu"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert main(["parse", str(source), "--format", "conllu", "-o", str(out)]) == 0
    return read_conllu(out)


def test_dependencies_are_the_command_lines(accurate_nlp, tmp_path):
    """Where spaCy's tokens are the words ``treeattn parse --format conllu`` writes (UD
    English EWT's cut), their heads, relations and tags are the command line's."""
    trees = command_line_conllu(COMMAND_LINE, tmp_path)
    for line, tree in zip(COMMAND_LINE, trees, strict=True):
        doc = accurate_nlp(line)
        assert [t.text for t in doc] == tree.words, line
        assert [0 if t.head.i == t.i else t.head.i + 1 for t in doc] == tree.heads, line
        assert [t.dep_ for t in doc] == tree.relations, line
        assert [t.tag_ for t in doc] == tree.xpos, line


def test_brackets_stay_the_command_lines_own(accurate_nlp, tmp_path, capsys):
    """The tree is read from the Penn Treebank's cut, as ``treeattn parse`` writes brackets,
    even where the dependencies come from UD's."""
    from treeattn.cli import main

    line = COMMAND_LINE[2]
    source = tmp_path / "in.txt"
    source.write_text(line + "\n", encoding="utf-8")
    assert main(["parse", str(source)]) == 0
    brackets = capsys.readouterr().out.strip()
    sent = next(accurate_nlp(line).sents)
    assert sent._.tree == Tree.parse(brackets)
    assert "1969-1970" in sent._.tree.leaves()


def test_tokens_and_the_command_lines_words_meet_by_the_stated_rules(accurate_nlp, tmp_path):
    """One token holding two UD words (a whitespace tokenizer's "1969-1970", UD's "1969 -
    1970") takes the head, relation and tag of the word nearest the root; a UD word over
    several tokens (spaCy's "e - mail", UD's "e-mail") hangs its tokens on its last, with
    ``subtok``, and the last takes the word's head and relation."""
    line = "It ran 1969-1970 by e-mail."
    (tree,) = command_line_conllu([line], tmp_path)
    assert tree.words == ["It", "ran", "1969", "-", "1970", "by", "e-mail", "."]
    words = ["It", "ran", "1969-1970", "by", "e-mail."]
    doc = accurate_nlp(Doc(accurate_nlp.vocab, words=words))
    span = [2, 3, 4]  # the token's words, 0-based
    depth = {k: 0 for k in range(tree.n)}
    for k in range(tree.n):
        head = tree.heads[k]
        while head:
            depth[k] += 1
            head = tree.heads[head - 1]
    top = min(span, key=lambda k: (depth[k], k))
    token = doc[2]
    assert token.tag_ == tree.xpos[top] and token.dep_ == tree.relations[top]
    ours = {0: 0, 1: 1, 2: 2, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4}  # word -> token
    head = tree.heads[top]
    assert token.head.i == (token.i if head == 0 else ours[head - 1])
    # spaCy cuts "e-mail" in three: the first two hang on "mail", which is the word.
    spacy_doc = accurate_nlp(line)
    assert [t.text for t in spacy_doc][6:9] == ["e", "-", "mail"]
    assert [(t.head.i, t.dep_) for t in spacy_doc[6:8]] == [(8, "subtok"), (8, "subtok")]
    mail, head = spacy_doc[8], tree.heads[6]
    assert mail.dep_ == tree.relations[6] and mail.tag_ == tree.xpos[6]
    token_of_word = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 8, 7: 9}
    assert mail.head.i == (mail.i if head == 0 else token_of_word[head - 1])
