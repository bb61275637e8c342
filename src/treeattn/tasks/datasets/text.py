"""Raw text for masked language modelling: the corpora's sentences, every one labeled 0."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treeattn import plugins
from treeattn.data.text import check_corpora, text_corpora
from treeattn.parsing.tree_source import PARSER, RIGHT_BRANCHING
from treeattn.tasks.datasets.base import DataSet, SentenceSettings
from treeattn.tasks.sentences import (
    TEXT,
    LabeledSentence,
    read_sentences,
    read_text,
    text_options,
)


@dataclass
class TextSettings(SentenceSettings):
    """The words of the ``corpora``'s splits (``treeattn.data.text``), shown as the text
    options say."""

    name: str = TEXT
    root: str | None = None  # data folder; default from TREEATTN_DATA
    corpora: list = field(default_factory=lambda: ["ewt", "sst", "ptb"])
    # The text options, with ``lowercase`` (the Tree Transformer's release turns all four on)
    drop_punctuation: bool = False
    normalize_numbers: bool = False  # a word with a digit becomes N
    start_token: bool = False  # <s> before every sentence


@plugins.datasets.register
class Text(DataSet):
    """The corpora's splits, or a file of one tokenized sentence per line."""

    name = TEXT
    Settings = TextSettings
    tree_kinds = (PARSER, RIGHT_BRANCHING)  # raw text has no trees of its own

    @classmethod
    def check(cls, settings: Any, where: str) -> None:
        check_corpora(settings.corpora, where)
        super().check(settings, where)

    def shown(self, rows: list[LabeledSentence]) -> list[LabeledSentence]:
        return rows  # the text options, lowercasing among them, were applied in reading

    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        settings = self.settings
        found = text_corpora(split, settings.root, settings.corpora, text_options(settings))
        return [LabeledSentence(words, 0) for words in found]

    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        found = read_text(read_sentences(path), self.settings, path)
        return [LabeledSentence(words, 0) for words in found]
