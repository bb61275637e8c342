"""What a data folder holds (``treeattn data``): each data set the configs read, its files
per split, and how many sentences treeattn's own readers find in them, so that a file
they would refuse is named before a run needs it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from treeattn.data.cola import COLA_FILES, COLA_FOLDER, read_cola_file
from treeattn.data.mccoy.files import MCCOY_FOLDER, MCCOY_SPLITS, read_bracket_rows, read_rows
from treeattn.data.multi30k import (
    MULTI30K_FOLDER,
    MULTI30K_LANGUAGES,
    MULTI30K_SPLITS,
    multi30k_path,
    read_lines,
)
from treeattn.data.ptb import PTB_SAMPLE_SPLITS, load_ptb_sample
from treeattn.data.sst import SST_SPLITS, load_sst
from treeattn.data.ud import UD_FOLDER, UD_SPLITS, load_ud


@dataclass(frozen=True)
class DataFolder:
    """A data set's folder as the layout has it: its files per split, the count of its
    public release, and how to count what a folder holds (the readers training uses). Not
    ``tasks.datasets.DataSet``, a data set as a config's ``data.name`` reads it."""

    folder: str
    release: str  # where it comes from, in a few words
    used_by: str  # the configs that read it
    unit: str  # what ``count`` counts
    files: dict[str, list[str]]  # split -> file names in ``folder``
    released: dict[str, int]  # split -> count in the public release
    count: Callable[[Path, str], int]  # (data root, split) -> count


@dataclass(frozen=True)
class SplitCheck:
    """One split of a data set in a folder: the count its reader found, or the files it
    lacks (``absent``) or the reader's error."""

    split: str
    files: int
    count: int | None = None
    absent: tuple[str, ...] = ()
    error: str = ""

    @property
    def problem(self) -> str:
        if self.absent:
            shown = ", ".join(self.absent[:3])
            more = f" and {len(self.absent) - 3} more" if len(self.absent) > 3 else ""
            return f"missing {len(self.absent)} of {self.files} files: {shown}{more}"
        return self.error


@dataclass(frozen=True)
class SetCheck:
    data_set: DataFolder
    splits: list[SplitCheck]

    @property
    def status(self) -> str:
        """``ok``; ``missing`` (none of its files); ``broken`` (some missing, or unreadable)."""
        if all(len(s.absent) == s.files for s in self.splits):
            return "missing"
        return "broken" if any(s.problem for s in self.splits) else "ok"


def _multi30k_lines(root: Path, split: str) -> int:
    counts = {
        lang: len(read_lines(multi30k_path(split, lang, root))) for lang in MULTI30K_LANGUAGES
    }
    if len(set(counts.values())) > 1:
        found = ", ".join(f"{split}.{lang} {n:,}" for lang, n in counts.items())
        raise ValueError(f"the languages are not line-aligned: {found} lines")
    return counts[MULTI30K_LANGUAGES[0]]


_MCCOY_SIZES = (("dev", 1000), ("test", 10000), ("gen", 10000))


def _mccoy_pairs(root: Path, split: str) -> int:
    """The pairs of a split, read plain and with brackets: the two must agree."""
    task, name = split.split(".")
    plain = len(read_rows(root / MCCOY_FOLDER / f"{task}.{name}"))
    bracketed = len(read_bracket_rows(root / MCCOY_FOLDER / f"{task}_bracket.{name}"))
    if plain != bracketed:
        raise ValueError(f"{split}: {plain:,} pairs, but {bracketed:,} with brackets")
    return plain


DATA_SETS = (
    DataFolder(
        "sst",
        "Stanford Sentiment Treebank (Socher et al. 2013), its PTB-bracketed trees/",
        "configs/sst*.yaml, text corpora sst",
        "trees",
        {split: [f"{split}.txt"] for split in SST_SPLITS},
        {"train": 8544, "dev": 1101, "test": 2210},
        lambda root, split: len(load_sst(split, root)),
    ),
    DataFolder(
        COLA_FOLDER,
        "CoLA (Warstadt et al. 2019), nyu-mll/CoLA-baselines' cola_public/raw",
        "configs/cola-*.yaml (train less a carved dev; both dev files held out)",
        "sentences",
        {Path(name).stem: [name] for name in COLA_FILES.values()},
        {"in_domain_train": 8551, "in_domain_dev": 527, "out_of_domain_dev": 516},
        lambda root, split: len(read_cola_file(root / COLA_FOLDER / f"{split}.tsv")),
    ),
    DataFolder(
        "ptb-sample",
        "NLTK's 10% sample of the Penn Treebank WSJ (treebank/combined)",
        "configs/ptb-parser*.yaml, configs/text-*.yaml, induce --ptb",
        "trees",
        {
            split: [f"wsj_{n:04d}.mrg" for n in range(first, last + 1)]
            for split, (first, last) in PTB_SAMPLE_SPLITS.items()
        },
        {"train": 3068, "dev": 433, "test": 413},
        lambda root, split: len(load_ptb_sample(split, root)),
    ),
    DataFolder(
        UD_FOLDER,
        "Universal Dependencies English Web Treebank, UD 2.16",
        "configs/ud-parser*.yaml, text corpora ewt",
        "sentences",
        {split: [f"en_ewt-ud-{split}.conllu"] for split in UD_SPLITS},
        {"train": 12544, "dev": 2001, "test": 2077},
        lambda root, split: len(load_ud(split, root)),
    ),
    DataFolder(
        MULTI30K_FOLDER,
        "Multi30k task 1 (Elliott et al. 2016, 2017), raw en/de/fr",
        "configs/multi30k-*.yaml, text corpora multi30k",
        "lines each",
        {split: [f"{split}.{lang}" for lang in MULTI30K_LANGUAGES] for split in MULTI30K_SPLITS},
        {"train": 29000, "val": 1014, "test_2016_flickr": 1000, "test_2017_flickr": 1000},
        _multi30k_lines,
    ),
    DataFolder(
        MCCOY_FOLDER,
        "McCoy, Frank & Linzen (2020), question formation and tense reinflection",
        "configs/mccoy-*.yaml (the training sets are drawn from its cfgs/)",
        "pairs",
        {
            f"{task}.{split}": [f"{task}.{split}", f"{task}_bracket.{split}"]
            for task in ("question", "tense")
            for split in MCCOY_SPLITS
        },
        {f"{task}.{split}": n for task in ("question", "tense") for split, n in _MCCOY_SIZES},
        _mccoy_pairs,
    ),
)


def check_split(data_set: DataFolder, root: Path, split: str) -> SplitCheck:
    """A split's count as treeattn reads it, or what is missing or unreadable."""
    names = data_set.files[split]
    absent = tuple(name for name in names if not (root / data_set.folder / name).is_file())
    if absent:
        return SplitCheck(split, len(names), absent=absent)
    try:
        return SplitCheck(split, len(names), count=data_set.count(root, split))
    except (OSError, ValueError) as error:  # a FormatError names file:line
        return SplitCheck(split, len(names), error=f"unreadable: {error}")


def check_data_set(data_set: DataFolder, root: Path) -> SetCheck:
    return SetCheck(data_set, [check_split(data_set, root, split) for split in data_set.files])
