"""Training sets drawn from the grammar with McCoy, Frank & Linzen's (2020) filter, and kept
in the cache.

The filter: a pair whose task word transforms (``quest``, ``PRESENT``) is kept only where
the hierarchical and the linear rule give the same output, so the training set cannot tell
them apart; the copying task words (``decl``, ``PAST``) take every kind of sentence.

The mix of sentence types. The shared sets do not follow the grammar files' weights: in
question.test 11% of main verbs are intransitive where the grammar gives 50%, and 50% of
subject relative clauses are object relatives where it gives 33%; tense.test has 22%
intransitive main verbs. The process that made them is not in the release, so by default
(``mix="shared"``) each pair's type, its task word and the modifier (none, a
prepositional phrase, a relative clause) of its subject and of its object (or no object),
is drawn with the mix of the shared dev and test sets (11,000 pairs), and its words from
the grammar given that type (sentences of other types are redrawn). That keeps the shared
sets' 60 / 40 ``decl`` / ``quest`` and 58 / 42 ``PAST`` / ``PRESENT``. ``mix="grammar"``
draws sentences with the grammar's weights and the task word by a fair coin, then filters;
that too gives 60 / 40 (1/2 against 1/2 x 2/3 kept questions) and 58 / 42 (13/31), but
other sentence types than the shared sets'.

Sentences are drawn with repetition; those of the shared dev, test and gen inputs are
redrawn, whatever their task word, so that no evaluation sentence is seen in training.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from treeattn.data.mccoy.files import MCCOY_SPLITS, Example, McCoyData, read_rows, split_file
from treeattn.data.mccoy.grammar import START, VERB_INTRANS, VERB_TRANS, Grammar
from treeattn.data.mccoy.sentences import NO_MODIFIER, PP, RC, past_tense, read_sentence
from treeattn.data.paths import cache_dir
from treeattn.trees import Tree
from treeattn.write_aside import write_aside

TRAIN_SIZE = 100_000
# Part of the cache key: a change to how pairs are drawn must not read old files.
GENERATOR_VERSION = 1


def shared_sentences(data: McCoyData) -> set[str]:
    """The sentences (inputs without their task word) of the shared dev, test and gen."""
    return {
        " ".join(source[:-1])
        for split in MCCOY_SPLITS
        for source, _ in read_rows(data.split_path(split))
    }


def _input_words(data: McCoyData, derivation: Tree) -> list[str]:
    """A derivation's words as an input writes them (tense: its verbs in the past)."""
    words = derivation.leaves()
    if data.task.past_inputs:
        verbs = (VERB_INTRANS, VERB_TRANS)
        lemma = data.lexicon.lemma
        words = [past_tense(lemma[w]) if data.lexicon.kind(w) in verbs else w for w in words]
    return words


def draw_sentence(data: McCoyData, rng: random.Random) -> list[str]:
    """A sentence of the grammar, with its weights, as an input writes it."""
    return _input_words(data, data.grammar.sample(rng))


def _modifier(phrase: Tree | None) -> str | None:
    """The modifier of a derivation's noun phrase (None: there is no noun phrase)."""
    if phrase is None:
        return None
    labels = [c.label for c in phrase.children if isinstance(c, Tree)]
    if any(label.startswith("RC") for label in labels):
        return RC
    return PP if "Prep" in labels else NO_MODIFIER


def _object(verb_phrase: Tree) -> Tree | None:
    found = [c for c in verb_phrase.children if isinstance(c, Tree) and c.label.startswith("NP")]
    return found[0] if found else None


def _redraw(
    grammar: Grammar, rng: random.Random, symbol: str, wanted: Callable[[Tree], bool]
) -> Tree:
    """A derivation of ``symbol`` that is ``wanted``; ``ValueError`` after 10,000 draws
    (the grammar then writes no such phrase, or almost never)."""
    for _ in range(10_000):
        tree = grammar.sample(rng, symbol)
        if wanted(tree):
            return tree
    raise ValueError(f"10,000 draws of {symbol} gave none of the modifier asked for")


def draw_typed_sentence(
    data: McCoyData, rng: random.Random, subject_modifier: str, object_modifier: str | None
) -> list[str]:
    """A sentence of the grammar with these modifiers on its subject and object: the
    clause's rule by its weight, then its subject and its predicate each redrawn from the
    grammar until they have the modifier asked for (both grammars write ``ROOT -> S .``
    and ``S -> subject predicate``)."""
    grammar = data.grammar
    clause_symbol, *after = grammar.choose(rng, START)
    subject_symbol, predicate_symbol = grammar.choose(rng, clause_symbol)
    subject = _redraw(grammar, rng, subject_symbol, lambda t: _modifier(t) == subject_modifier)
    predicate = _redraw(
        grammar, rng, predicate_symbol, lambda t: _modifier(_object(t)) == object_modifier
    )
    clause = Tree(clause_symbol, [subject, predicate])
    return _input_words(data, Tree(START, [clause, *after]))


SHARED_MIX, GRAMMAR_MIX = "shared", "grammar"
MIXES = (SHARED_MIX, GRAMMAR_MIX)
# A pair's type: its task word and its subject's and object's modifiers.
PairType = tuple[str, str, "str | None"]


def pair_type(example: Example) -> PairType:
    sentence = example.sentence
    return (example.task_word, sentence.subject_modifier, sentence.object_modifier)


def shared_mix(data: McCoyData) -> dict[PairType, int]:
    """How many pairs of each type the shared dev and test sets hold."""
    return dict(Counter(pair_type(e) for split in ("dev", "test") for e in data.load_split(split)))


def generate_pairs(
    data: McCoyData,
    count: int,
    seed: int,
    exclude: set[str] = frozenset(),
    mix: dict[PairType, int] | None = None,
) -> list[Example]:
    """``count`` training pairs from ``seed`` (see the module's docstring); sentences in
    ``exclude`` (space-joined, ``.`` included) are redrawn. ``mix``: how often to draw each
    pair type (``shared_mix``); None: the grammar's weights and a fair coin."""
    rng = random.Random(seed)
    task, lexicon = data.task, data.lexicon
    types = sorted(mix, key=str) if mix else []
    out: list[Example] = []
    # Bounded, so that an exclusion of nearly every sentence fails instead of looping.
    max_draws = 100 * count + 10_000
    wanted = None
    for _ in range(max_draws):
        if len(out) >= count:
            break
        if types and wanted is None:
            (wanted,) = rng.choices(types, weights=[mix[t] for t in types])
        if wanted:
            task_word = wanted[0]
            words = draw_typed_sentence(data, rng, *wanted[1:])
        else:
            words = draw_sentence(data, rng)
            task_word = rng.choice(task.task_words)
        if " ".join(words) in exclude:
            continue
        sentence = read_sentence(words, lexicon)
        if task_word == task.transform_word and not task.rules_agree(sentence, lexicon):
            continue
        target = tuple(task.output(sentence, lexicon, task_word))
        out.append(Example((*words, task_word), target, sentence))
        wanted = None
    if len(out) < count:
        raise ValueError(f"{count} {task.name} pairs asked for, {len(out)} drawn in {max_draws}")
    return out


def _sources_key(data: McCoyData) -> str:
    """A digest of what a training set depends on: the grammar and the shared splits."""
    digest = hashlib.sha256(f"v{GENERATOR_VERSION}".encode())
    files = [f"cfgs/{data.task.name}.gr"] + [split_file(data.task.name, s) for s in MCCOY_SPLITS]
    for name in files:
        path = data.split_path("dev").parent / name
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def training_path(data: McCoyData, size: int, seed: int, mix: str = SHARED_MIX) -> Path:
    """Where the training set of ``size`` pairs from ``seed`` is cached:
    ``$TREEATTN_CACHE/mccoy/{task}-train-{size}-seed{seed}-{mix}-{digest}.tsv``."""
    name = f"{data.task.name}-train-{size}-seed{seed}-{mix}-{_sources_key(data)}.tsv"
    return cache_dir() / "mccoy" / name


def training_set(
    data: McCoyData, size: int = TRAIN_SIZE, seed: int = 0, mix: str = SHARED_MIX
) -> list[Example]:
    """The training pairs of ``size``, ``seed`` and ``mix`` (``shared`` or ``grammar``):
    read from the cache, or drawn and written there (whole or not at all) in the shared
    files' ``input<TAB>output`` format."""
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r}; expected one of {', '.join(MIXES)}")
    path = training_path(data, size, seed, mix)
    if path.is_file():
        return data.read(path)
    counts = shared_mix(data) if mix == SHARED_MIX else None
    pairs = generate_pairs(data, size, seed, shared_sentences(data), counts)
    path.parent.mkdir(parents=True, exist_ok=True)
    with write_aside(path) as partial:
        partial.write_text(
            "".join(f"{' '.join(p.source)}\t{' '.join(p.target)}\n" for p in pairs),
            encoding="utf-8",
        )
    return pairs
