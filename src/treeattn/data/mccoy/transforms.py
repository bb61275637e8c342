"""The two tasks' transformations, each with the hierarchical rule and the linear rule that
the training data cannot tell apart.

- Question formation (``quest``): move the main clause's auxiliary to the front
  (``move_main``), or the first auxiliary of the sentence (``move_first``); the final
  ``.`` becomes ``?``. ``decl`` copies the sentence.
- Tense reinflection (``PRESENT``): put each past verb in the present, agreeing with its
  subject (``agree_subject``) or with the most recent noun before it (``agree_recent``).
  ``PAST`` copies the sentence.

Each function takes a ``Sentence`` and the grammar's ``Lexicon`` and gives the output's
words. The shared files' outputs are the hierarchical rule's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from treeattn.data.mccoy.grammar import NOUN
from treeattn.data.mccoy.sentences import QUESTION_MARK, Lexicon, Sentence
from treeattn.trees import Tree

Rule = Callable[[Sentence, Lexicon], list[str]]


def identity(sentence: Sentence, lexicon: Lexicon) -> list[str]:
    return list(sentence.words)


def _front(sentence: Sentence, aux: int | None) -> list[str]:
    if aux is None:
        raise ValueError(f"{' '.join(sentence.words)!r} has no auxiliary to move")
    rest = [w for i, w in enumerate(sentence.words[:-1]) if i != aux]
    return [sentence.words[aux], *rest, QUESTION_MARK]


def move_main(sentence: Sentence, lexicon: Lexicon) -> list[str]:
    """The question: the main clause's auxiliary in front."""
    return _front(sentence, sentence.main_aux)


def move_first(sentence: Sentence, lexicon: Lexicon) -> list[str]:
    """The linear rule's question: the sentence's first auxiliary in front."""
    return _front(sentence, sentence.first_aux)


def agree_subject(sentence: Sentence, lexicon: Lexicon) -> list[str]:
    """The present tense, each verb agreeing with its subject."""
    words = list(sentence.words)
    for verb, subject in sentence.verb_subjects.items():
        words[verb] = lexicon.inflect(words[verb], lexicon.number(words[subject]))
    return words


def recent_noun(sentence: Sentence, lexicon: Lexicon, position: int) -> int:
    """The last noun before ``position``."""
    return max(i for i in range(position) if lexicon.kind(sentence.words[i]) == NOUN)


def agree_recent(sentence: Sentence, lexicon: Lexicon) -> list[str]:
    """The linear rule's present tense: each verb agreeing with the noun just before it."""
    words = list(sentence.words)
    for verb in sentence.verb_subjects:
        noun = recent_noun(sentence, lexicon, verb)
        words[verb] = lexicon.inflect(words[verb], lexicon.number(words[noun]))
    return words


def _with_leaves(tree: Tree, words: list[str]) -> Tree:
    """``tree`` with its words replaced, left to right, by ``words``."""
    remaining = iter(words)

    def rebuild(node: Tree) -> Tree:
        return Tree(
            node.label,
            [rebuild(c) if isinstance(c, Tree) else next(remaining) for c in node.children],
        )

    return rebuild(tree)


def declarative_tree(sentence: Sentence, words: list[str]) -> Tree:
    """The output tree of a declarative output (a copy, or the present tense): the clause
    and its ``.`` under ``TOP``, as the bracket files write outputs."""
    clause, period = sentence.tree.children
    return Tree("TOP", [_with_leaves(clause, words[:-1]), period])


def question_tree(sentence: Sentence, words: list[str]) -> Tree:
    """The question's tree: ``[ aux [ subject predicate ] ] ?``, the predicate without the
    main auxiliary (a bare verb when it is intransitive); ``words`` are the question's."""
    clause = sentence.tree.children[0]
    subject, predicate = clause.children
    aux, rest = predicate.children
    tree = Tree("TOP", [Tree("SQ", [aux, Tree("S", [subject, rest])]), QUESTION_MARK])
    if tree.leaves() != words:
        raise ValueError(f"{' '.join(words)!r} is not the question of its sentence")
    return tree


@dataclass(frozen=True)
class Task:
    """One of the two data sets (``name``, as its files are named): its two task words,
    the rules for the transforming one, the tree of the hierarchical rule's output
    (from the sentence and the output's words), and whether inputs are in the past tense
    (tense reinflection)."""

    name: str
    identity_word: str
    transform_word: str
    hierarchical: Rule
    linear: Rule
    transform_tree: Callable[[Sentence, list[str]], Tree]
    past_inputs: bool

    @property
    def task_words(self) -> tuple[str, str]:
        return (self.identity_word, self.transform_word)

    def output(self, sentence: Sentence, lexicon: Lexicon, task_word: str) -> list[str]:
        """The correct output (the hierarchical rule's) for ``task_word``."""
        if task_word == self.identity_word:
            return identity(sentence, lexicon)
        if task_word == self.transform_word:
            return self.hierarchical(sentence, lexicon)
        raise ValueError(f"{self.name}: unknown task word {task_word!r}")

    def output_tree(self, sentence: Sentence, lexicon: Lexicon, task_word: str) -> Tree:
        """The correct output's tree, as the bracket files write it."""
        words = self.output(sentence, lexicon, task_word)
        if task_word == self.transform_word:
            return self.transform_tree(sentence, words)
        return declarative_tree(sentence, words)

    def rules_agree(self, sentence: Sentence, lexicon: Lexicon) -> bool:
        """Whether the hierarchical and the linear rule give the same output."""
        return self.hierarchical(sentence, lexicon) == self.linear(sentence, lexicon)


QUESTION = Task("question", "decl", "quest", move_main, move_first, question_tree, False)
TENSE = Task("tense", "PAST", "PRESENT", agree_subject, agree_recent, declarative_tree, True)
TASKS = {task.name: task for task in (QUESTION, TENSE)}
