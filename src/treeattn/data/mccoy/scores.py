"""McCoy, Frank & Linzen's (2020) metrics, on predicted token lists.

- Full-sequence accuracy: the prediction is the reference, token for token.
- Question formation, first word (on gen): the share of predictions that begin with the
  main clause's auxiliary (the hierarchical rule), with the sentence's first auxiliary
  (the linear rule), or with neither. On gen the two auxiliaries differ.
- Tense reinflection, main verb (on gen): as in the paper, a prediction is read where its
  word classes (determiner, noun, verb, ...) line up with the reference's, and its main
  verb is the word at the reference's main verb; the share whose main verb agrees in
  number with the subject, with the most recent noun before it, or other (classes that do
  not line up, a past form, a word of no number). Where subject and recent noun have the
  same number (in distribution) an agreeing verb counts as agreeing with the subject.

Shares are percentages of the examples given. ``by_subject`` breaks them down by what
modifies the main subject (``subject_type``): on gen a relative clause always does, one
whose verb's subject is the noun it modifies ("who does laugh") or one with a subject of
its own ("who the yak does see"), so a model that learned the rule for one kind and not
the other shows it.
"""

from __future__ import annotations

from collections.abc import Sequence

from treeattn.data.mccoy.files import Example, McCoyData
from treeattn.data.mccoy.sentences import RC, Lexicon, Sentence
from treeattn.data.mccoy.transforms import QUESTION, recent_noun

MAIN, FIRST, NEITHER = "main_aux", "first_aux", "neither_aux"
SUBJECT_GAP, OBJECT_GAP = "RC without its own subject", "RC with its own subject"
AGREE_SUBJECT, AGREE_RECENT, OTHER = "agree_subject", "agree_recent", "other_verb"


def _percent(count: int, total: int) -> float:
    return 100.0 * count / total if total else 0.0


def sequence_accuracy(predictions: Sequence[Sequence[str]], examples: Sequence[Example]) -> float:
    """The percentage of predictions equal to their example's target."""
    right = sum(tuple(p) == e.target for p, e in zip(predictions, examples, strict=True))
    return _percent(right, len(examples))


def first_word_shares(
    predictions: Sequence[Sequence[str]], examples: Sequence[Example]
) -> dict[str, float]:
    """``MAIN``, ``FIRST`` and ``NEITHER``: percentages of predictions whose first word is
    the input's main auxiliary, its first auxiliary (where that is another word), or
    neither. Question formation only."""
    counts = {MAIN: 0, FIRST: 0, NEITHER: 0}
    for prediction, example in zip(predictions, examples, strict=True):
        words, sentence = example.sentence.words, example.sentence
        first = prediction[0] if prediction else None
        if sentence.main_aux is not None and first == words[sentence.main_aux]:
            counts[MAIN] += 1
        elif sentence.first_aux is not None and first == words[sentence.first_aux]:
            counts[FIRST] += 1
        else:
            counts[NEITHER] += 1
    return {key: _percent(count, len(examples)) for key, count in counts.items()}


def _classes(tokens: Sequence[str], lexicon: Lexicon) -> list[str]:
    return [lexicon.kind(t) or t for t in tokens]


def main_verb_shares(
    predictions: Sequence[Sequence[str]], examples: Sequence[Example], lexicon: Lexicon
) -> dict[str, float]:
    """``AGREE_SUBJECT``, ``AGREE_RECENT`` and ``OTHER``: percentages of predictions whose
    main verb agrees in number with the subject, with the most recent noun, or neither
    (see the module's docstring). Tense reinflection only."""
    counts = {AGREE_SUBJECT: 0, AGREE_RECENT: 0, OTHER: 0}
    for prediction, example in zip(predictions, examples, strict=True):
        sentence = example.sentence
        verb = sentence.main_verb
        number = None
        if _classes(prediction, lexicon) == _classes(example.target, lexicon):
            number = lexicon.number(prediction[verb])
        subject = lexicon.number(sentence.words[sentence.subject])
        recent = lexicon.number(sentence.words[recent_noun(sentence, lexicon, verb)])
        if number is not None and number == subject:
            counts[AGREE_SUBJECT] += 1
        elif number is not None and number == recent:
            counts[AGREE_RECENT] += 1
        else:
            counts[OTHER] += 1
    return {key: _percent(count, len(examples)) for key, count in counts.items()}


def generalization_scores(
    data: McCoyData, predictions: Sequence[Sequence[str]], examples: Sequence[Example]
) -> dict[str, float]:
    """Full-sequence accuracy and the task's shares (first word or main verb)."""
    scores = {"sequence_accuracy": sequence_accuracy(predictions, examples)}
    if data.task is QUESTION:
        scores.update(first_word_shares(predictions, examples))
    else:
        scores.update(main_verb_shares(predictions, examples, data.lexicon))
    return scores


def subject_type(sentence: Sentence) -> str:
    """What modifies the main subject: ``none``, ``PP``, ``SUBJECT_GAP`` (a relative
    clause whose verb's subject is the noun it modifies: "my walrus who does laugh") or
    ``OBJECT_GAP`` (one whose verb has a subject of its own: "my walrus who the yak does
    see")."""
    if sentence.subject_modifier != RC:
        return sentence.subject_modifier
    inside = [v for v in sentence.verb_subjects if sentence.subject < v < sentence.main_verb]
    own = any(sentence.verb_subjects[v] != sentence.subject for v in inside)
    return OBJECT_GAP if own else SUBJECT_GAP


def by_subject(
    data: McCoyData, predictions: Sequence[Sequence[str]], examples: Sequence[Example]
) -> dict[str, dict[str, float]]:
    """``generalization_scores`` of the examples of each ``subject_type`` (with their
    count, ``pairs``), the types in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for k, example in enumerate(examples):
        groups.setdefault(subject_type(example.sentence), []).append(k)
    return {
        kind: {
            "pairs": len(chosen),
            **generalization_scores(
                data, [predictions[k] for k in chosen], [examples[k] for k in chosen]
            ),
        }
        for kind, chosen in groups.items()
    }
