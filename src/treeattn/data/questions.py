"""Questions and imperatives made from the Penn Treebank's declaratives, annotated as the
Treebank annotates them (its empty elements left out, as ``clean_ptb`` leaves them out):

* yes/no: subject-auxiliary inversion, with do-support for a lexical verb, under a root SQ
  that holds the question mark: "The committee rejected the plan." ->
  ``(SQ (VBD Did) (NP the committee) (VP (VB reject) (NP the plan)) (. ?))``;
* subject wh: the subject becomes a WHNP and the rest of the clause an SQ over its verb
  phrase, no inversion: ``(SBARQ (WHNP (WDT Which) (NN committee)) (SQ (VP (VBD rejected)
  (NP the plan))) (. ?))``;
* object wh: the lexical verb's one object becomes a WHNP, fronted, and the clause inverts:
  ``(SBARQ (WHNP (WDT Which) (NN plan)) (SQ (VBD did) (NP the committee) (VP (VB
  reject))) (. ?))``;
* imperative: the subject dropped and a lexical verb in its base form, as the Treebank
  writes an imperative: ``(S (VP (VB Reject) (NP the plan)) (. .))``.

A tree is transformed only where the rules are sure of it: a root S of a subject (``-SBJ``),
an optional adverb phrase, one verb phrase and a full stop, the verb phrase's first child a
finite verb. Anything else is refused with a ``NotTransformed`` that says why, and
``make_questions`` counts the reasons: nothing is dropped silently. The input keeps its
function tags (``load_ptb_sample(clean=False)``): they name the subject and tell an object
from a predicate or an adverbial noun phrase. A lexical verb's base form (do-support,
imperatives) is looked up in ``base_forms`` (``base_forms_from_ud``: EWT's lemmas), never
guessed: a verb it lacks is refused.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from treeattn.trees.dependency import DependencyTree
from treeattn.trees.labels import strip_label
from treeattn.trees.transforms import remove_empty_elements, strip_function_tags, unwrap_root
from treeattn.trees.tree import Tree

__all__ = [
    "IMPERATIVE",
    "KINDS",
    "OBJECT_WH",
    "SUBJECT_WH",
    "YES_NO",
    "NotTransformed",
    "QuestionSet",
    "base_forms_from_ud",
    "make_questions",
    "question_tree",
]

YES_NO, SUBJECT_WH, OBJECT_WH, IMPERATIVE = "yes/no", "subject wh", "object wh", "imperative"
KINDS = (YES_NO, SUBJECT_WH, OBJECT_WH, IMPERATIVE)

FINITE_TAGS = frozenset(["VBZ", "VBD", "VBP", "MD"])
# Finite forms of be, have and do as the Treebank spells them, with the contracted forms
# that say which verb they are (a verb's "'s" and "'d" do not: is or has, had or would).
BE = {"is": "is", "are": "are", "was": "was", "were": "were", "am": "am", "'re": "are", "'m": "am"}
HAVE = {"has": "has", "have": "have", "had": "had", "'ve": "have"}
DO = {"does": "does", "do": "do", "did": "did"}
MODAL_SPELLING = {"'ll": "will", "'d": "would"}
DO_SUPPORT = {"VBZ": "does", "VBD": "did", "VBP": "do"}
NOUN_TAGS = frozenset(["NN", "NNS"])
# Pronouns a subject or object wh-word can stand for without changing the verb's agreement.
WHO_PRONOUNS = frozenset(["he", "she", "him", "her"])
WHAT_PRONOUNS = frozenset(["it"])
KEEP_CAPITAL_TAGS = frozenset(["NNP", "NNPS"])


class NotTransformed(ValueError):
    """A tree the rules refuse; ``reason`` is short and fixed, to be counted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class QuestionSet:
    """What ``make_questions`` made: the trees (cleaned as ``clean_ptb`` cleans), the index
    of the declarative each came from, its kind; how many were made of each kind, and
    for each declarative chosen but refused, why (its yes/no reason: the rule every kind
    starts from)."""

    trees: list[Tree] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    made: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)

    @property
    def chosen(self) -> int:
        return len(self.trees) + self.refused.total()

    def summary(self) -> str:
        made = ", ".join(f"{count} {kind}" for kind, count in sorted(self.made.items()))
        refused = "; ".join(f"{count} {why}" for why, count in self.refused.most_common())
        return (
            f"{len(self.trees)} of {self.chosen} declaratives made questions or imperatives "
            f"({made or 'none'}); refused: {refused or 'none'}"
        )


def base_forms_from_ud(trees: Iterable[DependencyTree]) -> dict[tuple[str, str], str]:
    """``(form, tag) -> base form`` of the finite verbs (VBZ, VBD) in a UD treebank with
    Penn Treebank XPOS (EWT): each form's commonest lemma, forms lowercased."""
    seen: dict[tuple[str, str], Counter[str]] = {}
    for tree in trees:
        for word, tag, lemma in zip(tree.words, tree.xpos, tree.lemmas, strict=True):
            if tag in ("VBZ", "VBD") and lemma not in ("_", ""):
                seen.setdefault((word.lower(), tag), Counter())[lemma.lower()] += 1
    return {key: lemmas.most_common(1)[0][0] for key, lemmas in seen.items()}


def make_questions(
    trees: Sequence[Tree],
    share: float,
    base_forms: Mapping[tuple[str, str], str],
    seed: int = 0,
    kinds: Sequence[str] = KINDS,
) -> QuestionSet:
    """Questions or imperatives made from ``share`` of ``trees`` (drawn with ``seed``):
    each chosen declarative becomes one tree of a kind drawn from ``kinds``, or of the
    next kind that applies when that one is refused; a declarative no kind applies to is
    counted under its reason."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be within [0, 1], not {share}")
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be some of {', '.join(KINDS)}, not {list(kinds)}")
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(trees)), round(share * len(trees))))
    result = QuestionSet()
    for index in chosen:
        order = rng.sample(list(kinds), len(kinds))
        for kind in order:
            try:
                made = question_tree(trees[index], kind, base_forms)
            except NotTransformed:
                continue
            result.trees.append(made)
            result.sources.append(index)
            result.kinds.append(kind)
            result.made[kind] += 1
            break
        else:
            try:
                question_tree(trees[index], YES_NO, base_forms)
                reason = "no kind asked for applies"
            except NotTransformed as refused:
                reason = refused.reason
            result.refused[reason] += 1
    return result


# ---------------------------------------------------------------- one tree
@dataclass
class _Clause:
    subject: Tree
    adverb: list[Tree]  # an adverb phrase between the subject and the verb phrase
    verb_phrase: Tree
    stop: Tree


def _is_word(node: Tree | str, tag: str, word: str | None = None) -> bool:
    return (
        isinstance(node, Tree)
        and node.label == tag
        and len(node.children) == 1
        and isinstance(node.children[0], str)
        and (word is None or node.children[0] == word)
    )


def _clause(tree: Tree) -> _Clause:
    """The parts of a declarative the rules read, or why it is refused."""
    root = remove_empty_elements(unwrap_root(tree))
    if strip_label(root.label) != "S":
        raise NotTransformed(f"root is {strip_label(root.label) or 'unlabeled'}, not S")
    kids = root.children
    if not kids or not _is_word(kids[-1], ".", "."):
        raise NotTransformed("does not end in a full stop")
    body = kids[:-1]
    labels = [k.label if isinstance(k, Tree) else "" for k in body]
    if len(body) == 3 and strip_label(labels[1]) == "ADVP":
        adverb = [body[1]]
        body = [body[0], body[2]]
        labels = [labels[0], labels[2]]
    else:
        adverb = []
    shape_ok = (
        len(body) == 2
        and strip_label(labels[0]) == "NP"
        and "-SBJ" in labels[0]
        and strip_label(labels[1]) == "VP"
    )
    if not shape_ok:
        raise NotTransformed("not subject, verb phrase and full stop")
    subject, verb_phrase = body
    assert isinstance(subject, Tree) and isinstance(verb_phrase, Tree)
    return _Clause(subject, adverb, verb_phrase, kids[-1])  # type: ignore[arg-type]


def _head(verb_phrase: Tree) -> Tree:
    """The verb phrase's first child: a finite verb, or why it is refused."""
    first = verb_phrase.children[0]
    if isinstance(first, Tree) and strip_label(first.label) == "VP":
        raise NotTransformed("coordinated verb phrases")
    if not (isinstance(first, Tree) and first.label in FINITE_TAGS and len(first.children) == 1):
        raise NotTransformed("verb phrase does not begin with a finite verb")
    return first


def _word(node: Tree) -> str:
    word = node.children[0]
    assert isinstance(word, str)
    return word


def _has_verb_phrase(verb_phrase: Tree) -> bool:
    return any(isinstance(k, Tree) and strip_label(k.label) == "VP" for k in verb_phrase.children)


def _auxiliary(verb_phrase: Tree) -> str | None:
    """The spelled-out auxiliary that inverts (a modal, be, or have or do before a verb
    phrase), None for a lexical verb (do-support), or why it is refused."""
    head = _head(verb_phrase)
    word = _word(head).lower()
    if head.label == "MD":
        return MODAL_SPELLING.get(word, word)
    if word in ("'s", "'d"):
        raise NotTransformed("contracted 's or 'd")
    if word in BE:
        return BE[word]
    if word in HAVE and _has_verb_phrase(verb_phrase):
        return HAVE[word]
    if word in DO and _has_verb_phrase(verb_phrase):
        return DO[word]
    return None


def _base_form(head: Tree, base_forms: Mapping[tuple[str, str], str]) -> str:
    word = _word(head).lower()
    if head.label == "VBP":
        return word  # the present tense but for the third person singular is the base form
    base = base_forms.get((word, head.label))
    if base is None:
        raise NotTransformed("base form of the verb unknown")
    return base


def _inverted(
    clause: _Clause, base_forms: Mapping[tuple[str, str], str], verb_phrase: Tree
) -> list[Tree]:
    """The children of an SQ: the auxiliary (and a following "n't"), the subject, the
    adverb phrase, and the rest of ``verb_phrase`` (do-support for a lexical verb)."""
    auxiliary = _auxiliary(clause.verb_phrase)
    head = _head(verb_phrase)
    rest = verb_phrase.children[1:]
    if auxiliary is not None:
        front = [Tree(head.label, [auxiliary])]
        if rest and _is_word(rest[0], "RB", "n't"):
            front.append(rest[0])  # type: ignore[arg-type]
            rest = rest[1:]
        return [*front, clause.subject, *clause.adverb, *rest]  # type: ignore[list-item]
    do = Tree(head.label, [DO_SUPPORT[head.label]])  # a lexical verb: VBZ, VBD or VBP
    lexical = Tree(verb_phrase.label, [Tree("VB", [_base_form(head, base_forms)]), *rest])
    return [do, clause.subject, *clause.adverb, lexical]


def _wh_phrase(noun_phrase: Tree, subject: bool) -> Tree:
    """A WHNP for a noun phrase: "which" and its head noun, "who" or "what" for a pronoun
    (the verb's agreement unchanged), or why it is refused."""
    base = noun_phrase
    first = base.children[0]
    if isinstance(first, Tree) and strip_label(first.label) == "NP":
        base = first  # (NP (NP the plan) (PP of ...)): the head is the first NP's
    tags = [k for k in base.children if isinstance(k, Tree) and len(k.children) == 1]
    if len(tags) != len(base.children) or not all(isinstance(k.children[0], str) for k in tags):
        raise NotTransformed("noun phrase has no simple head")
    head = tags[-1]
    word = _word(head)
    if head.label in NOUN_TAGS:
        return Tree("WHNP", [Tree("WDT", ["which"]), Tree(head.label, [word.lower()])])
    if head.label == "PRP" and len(tags) == 1:
        if word.lower() in WHO_PRONOUNS:
            return Tree("WHNP", [Tree("WP", ["who"])])
        if word.lower() in WHAT_PRONOUNS:
            return Tree("WHNP", [Tree("WP", ["what"])])
        raise NotTransformed(
            "pronoun subject would change the verb's agreement"
            if subject
            else "object pronoun other than him, her, it"
        )
    raise NotTransformed("noun phrase's head is not a common noun or pronoun")


def _lexical_verb_phrase(verb_phrase: Tree) -> list[Tree]:
    """The path of verb phrases from ``verb_phrase`` down through its auxiliaries to the
    one whose head is the lexical verb."""
    path = [verb_phrase]
    while True:
        node = path[-1]
        head = node.children[0]
        inner = [k for k in node.children if isinstance(k, Tree) and strip_label(k.label) == "VP"]
        auxiliary = (
            isinstance(head, Tree)
            and head.is_preterminal()
            and (head.label == "MD" or _word(head).lower() in (*BE, *HAVE, *DO, "'s", "'d"))
        )
        if not (auxiliary and len(inner) == 1):
            return path
        path.append(inner[0])


def _without_object(verb_phrase: Tree) -> tuple[Tree, Tree]:
    """``verb_phrase`` with its lexical verb's one object taken out, and the object."""
    path = _lexical_verb_phrase(verb_phrase)
    lexical = path[-1]
    objects = [k for k in lexical.children if isinstance(k, Tree) and strip_label(k.label) == "NP"]
    if len(objects) != 1 or objects[0].label != "NP" or lexical.children[1:2] != objects:
        raise NotTransformed("no single object right after the verb")
    rebuilt = Tree(lexical.label, [k for k in lexical.children if k is not objects[0]])
    for outer, inner in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
        rebuilt = Tree(outer.label, [rebuilt if k is inner else k for k in outer.children])
    return rebuilt, objects[0]


def question_tree(tree: Tree, kind: str, base_forms: Mapping[tuple[str, str], str]) -> Tree:
    """The question or imperative of ``kind`` made from a declarative PTB tree (function
    tags kept, empty elements allowed), cleaned as ``clean_ptb`` cleans; ``NotTransformed``
    saying why when the rules refuse it."""
    clause = _clause(tree.copy())
    first_leaf = _preterminals(clause.subject)[0]
    question_mark = Tree(".", ["?"])
    if kind == YES_NO:
        made = Tree("SQ", [*_inverted(clause, base_forms, clause.verb_phrase), question_mark])
    elif kind == SUBJECT_WH:
        if clause.subject.children and _is_word(clause.subject.children[0], "EX"):
            raise NotTransformed("expletive subject")
        _head(clause.verb_phrase)
        wh = _wh_phrase(clause.subject, subject=True)
        made = Tree("SBARQ", [wh, Tree("SQ", [*clause.adverb, clause.verb_phrase]), question_mark])
    elif kind == OBJECT_WH:
        _auxiliary(clause.verb_phrase)  # refusals of the main verb first
        without, obj = _without_object(clause.verb_phrase)
        wh = _wh_phrase(obj, subject=False)
        made = Tree(
            "SBARQ", [wh, Tree("SQ", _inverted(clause, base_forms, without)), question_mark]
        )
    elif kind == IMPERATIVE:
        if _auxiliary(clause.verb_phrase) is not None:
            raise NotTransformed("auxiliary verb")
        head = _head(clause.verb_phrase)
        verb = Tree("VB", [_base_form(head, base_forms)])
        made = Tree("S", [Tree("VP", [verb, *clause.verb_phrase.children[1:]]), clause.stop])
    else:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    _recase(made, first_leaf)
    return strip_function_tags(made)


def _preterminals(tree: Tree) -> list[Tree]:
    return [node for node in tree.subtrees() if node.is_preterminal()]


def _recase(tree: Tree, old_first: Tree) -> None:
    """Lower the declarative's first word where it no longer begins the sentence (not a
    proper noun, nor "I") and raise the new first word's initial, in place."""
    leaves = _preterminals(tree)
    if leaves[0] is not old_first and old_first.label not in KEEP_CAPITAL_TAGS:
        word = _word(old_first)
        if word != "I":
            old_first.children[0] = word.lower()
    word = _word(leaves[0])
    leaves[0].children[0] = word[:1].upper() + word[1:]
