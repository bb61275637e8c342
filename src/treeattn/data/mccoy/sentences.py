"""A sentence of either grammar read back into its tree, with the words the
transformations and the metrics need: the main auxiliary, the main verb, each verb's
subject.

Both grammars are unambiguous (a noun phrase takes at most one prepositional phrase or
relative clause, and the nouns inside those take none), so one left-to-right pass over the
words' classes finds the grammar's tree. The tree has the shape of the data's bracket files
(``[ [ [ my raven ] [ that [ doesn't sleep ] ] ] [ does change ] ] .``), with labels added:

- ``ROOT``: the clause and its final ``.``; ``S``: subject and predicate, also inside a
  relative clause whose subject is a noun phrase;
- ``NP``: ``[ det noun ]``, or one with a ``PP`` (``[ prep NP ]``) or an ``RC``
  (``[ rel ... ]``) after it;
- ``VP``: ``[ aux verb ]`` or ``[ aux [ verb NP ] ]`` (question formation), ``[ verb NP ]``
  (tense reinflection); an intransitive verb without an auxiliary is a bare word.

Words sit directly under phrases (no pre-terminals).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from treeattn.data.mccoy.grammar import (
    AUX,
    DET,
    NOUN,
    PLURAL,
    PREP,
    REL,
    SINGULAR,
    VERB_INTRANS,
    VERB_TRANS,
    Grammar,
    WordClass,
)
from treeattn.errors import FormatError
from treeattn.trees import Tree

PERIOD, QUESTION_MARK = ".", "?"
# Modifiers of a noun phrase, as the sentence-type counts name them.
NO_MODIFIER, PP, RC = "none", "PP", "RC"
# The past of the tense grammar's verbs that do not add -d or -ed.
_IRREGULAR_PAST = {"sleep": "slept", "swim": "swam", "read": "read", "eat": "ate"}


def past_tense(lemma: str) -> str:
    """``giggle`` -> ``giggled``, ``comfort`` -> ``comforted``, ``eat`` -> ``ate``."""
    if lemma in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[lemma]
    return lemma + ("d" if lemma.endswith("e") else "ed")


@dataclass(frozen=True)
class Lexicon:
    """The words of a grammar by class, and for the tense grammar each verb's forms.

    ``classes``: word -> ``WordClass``; a past form has no number. ``lemma``: a verb's
    form -> its plural present (``giggles``, ``giggled`` -> ``giggle``); ``forms``: lemma ->
    number (``SINGULAR``, ``PLURAL``) -> form, for verbs that agree in number.
    """

    classes: dict[str, WordClass]
    lemma: dict[str, str] = field(default_factory=dict)
    forms: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, grammar: Grammar) -> Lexicon:
        classes = grammar.word_classes()
        lemma: dict[str, str] = {}
        forms: dict[str, dict[str, str]] = {}
        verbs = {VERB_INTRANS, VERB_TRANS}
        for word, wc in list(classes.items()):
            if wc.kind not in verbs or wc.number != PLURAL:
                continue
            singular = word + "s"
            if classes.get(singular) != WordClass(wc.kind, SINGULAR):
                raise ValueError(f"the plural verb {word!r} has no singular {singular!r}")
            forms[word] = {SINGULAR: singular, PLURAL: word}
            past = past_tense(word)
            if past not in classes:
                classes[past] = WordClass(wc.kind)
            for form in (word, singular, past):
                lemma[form] = word
        return cls(classes, lemma, forms)

    def kind(self, word: str) -> str | None:
        found = self.classes.get(word)
        return None if found is None else found.kind

    def number(self, word: str) -> str | None:
        found = self.classes.get(word)
        return None if found is None else found.number

    def inflect(self, verb: str, number: str) -> str:
        """The present form of ``verb`` (any of its forms) that agrees with ``number``."""
        return self.forms[self.lemma[verb]][number]


@dataclass(frozen=True)
class Sentence:
    """A declarative sentence of the grammar (its final ``.`` included) and what is read
    off its tree. Indices are word positions in ``words``.

    ``main_aux`` and ``first_aux``: the main clause's auxiliary and the first auxiliary
    of the sentence (None in the tense grammar, which has none).
    ``verb_subjects``: each verb -> the head noun of its subject (for a relative clause
    without a subject of its own, the noun it modifies). ``subject_modifier`` and
    ``object_modifier``: ``NO_MODIFIER``, ``PP`` or ``RC`` on the main subject and object
    (None: the main verb has no object).
    """

    words: tuple[str, ...]
    tree: Tree
    main_verb: int
    main_aux: int | None
    first_aux: int | None
    subject: int
    verb_subjects: dict[int, int]
    subject_modifier: str
    object_modifier: str | None


class _Reader:
    """One left-to-right pass over a sentence's words (``read``)."""

    def __init__(self, words: list[str], lexicon: Lexicon, where: str) -> None:
        self.words, self.lexicon, self.where = words, lexicon, where
        self.at = 0
        self.verb_subjects: dict[int, int] = {}

    def fail(self, expected: str) -> FormatError:
        found = self.words[self.at] if self.at < len(self.words) else "the end"
        return FormatError(f"word {self.at + 1}: expected {expected}, found {found!r}", self.where)

    def kind(self) -> str | None:
        return self.lexicon.kind(self.words[self.at]) if self.at < len(self.words) else None

    def take(self, *kinds: str) -> str:
        if self.kind() not in kinds:
            raise self.fail(" or ".join(kinds))
        self.at += 1
        return self.words[self.at - 1]

    def plain_noun_phrase(self) -> tuple[Tree, int]:
        """``[ det noun ]`` and the noun's position."""
        det = self.take(DET)
        noun = self.take(NOUN)
        return Tree("NP", [det, noun]), self.at - 1

    def noun_phrase(self) -> tuple[Tree, int, str]:
        """A noun phrase that may take a modifier: its tree, head noun and modifier."""
        phrase, head = self.plain_noun_phrase()
        if self.kind() == PREP:
            prep = self.take(PREP)
            inner, _ = self.plain_noun_phrase()
            return Tree("NP", [phrase, Tree("PP", [prep, inner])]), head, PP
        if self.kind() == REL:
            return Tree("NP", [phrase, self.relative_clause(head)]), head, RC
        return phrase, head, NO_MODIFIER

    def relative_clause(self, antecedent: int) -> Tree:
        rel = self.take(REL)
        if self.kind() == DET:  # an object relative: its own subject, then the verb
            subject, head = self.plain_noun_phrase()
            predicate, _, _, _ = self.predicate(head, object_allowed=False)
            return Tree("RC", [rel, Tree("S", [subject, predicate])])
        predicate, _, _, _ = self.predicate(antecedent, object_allowed=True, plain_object=True)
        return Tree("RC", [rel, predicate])

    def predicate(
        self, subject: int, object_allowed: bool, plain_object: bool = False
    ) -> tuple[Tree | str, int, int | None, str | None]:
        """An optional auxiliary, a verb and, for a transitive verb where one is allowed,
        its object: the tree, the verb, the auxiliary and the object's modifier."""
        if self.kind() not in (AUX, VERB_INTRANS, VERB_TRANS):
            raise self.fail("an auxiliary or a verb")
        aux = None
        if self.kind() == AUX:
            self.take(AUX)
            aux = self.at - 1
        verb_word = self.take(VERB_INTRANS, VERB_TRANS)
        verb = self.at - 1
        self.verb_subjects[verb] = subject
        core: Tree | str = verb_word
        modifier = None
        transitive = self.lexicon.classes[verb_word].kind == VERB_TRANS
        if transitive and object_allowed:
            if plain_object:
                obj, _ = self.plain_noun_phrase()
                modifier = NO_MODIFIER
            else:
                obj, _, modifier = self.noun_phrase()
            core = Tree("VP", [verb_word, obj])
        if aux is not None:
            core = Tree("VP", [self.words[aux], core])
        return core, verb, aux, modifier


def read_sentence(
    words: list[str] | tuple[str, ...], lexicon: Lexicon, where: str = "<string>"
) -> Sentence:
    """The grammar's tree of a declarative sentence (ending in ``.``) and what it says;
    ``FormatError`` naming ``where`` if the grammar cannot write it."""
    reader = _Reader(list(words), lexicon, where)
    subject_tree, subject, subject_modifier = reader.noun_phrase()
    predicate, main_verb, main_aux, object_modifier = reader.predicate(subject, object_allowed=True)
    if reader.at != len(words) - 1 or words[-1] != PERIOD:
        raise reader.fail(f"{PERIOD!r} at the end")
    tree = Tree("ROOT", [Tree("S", [subject_tree, predicate]), PERIOD])
    auxiliaries = [i for i, word in enumerate(words) if lexicon.kind(word) == AUX]
    return Sentence(
        tuple(words),
        tree,
        main_verb,
        main_aux,
        auxiliaries[0] if auxiliaries else None,
        subject,
        reader.verb_subjects,
        subject_modifier,
        object_modifier,
    )
