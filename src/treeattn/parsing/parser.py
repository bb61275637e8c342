"""Parse raw text: the label attention parser as a three-line API.

>>> from treeattn.parsing import Parser
>>> parser = Parser.load()                       # the model shipped with treeattn
>>> parsed = parser.parse(["The cat sat on the mat."])
>>> parsed[0].tree.leaves()
['The', 'cat', 'sat', 'on', 'the', 'mat', '.']

Sentences are tokenized as the Penn Treebank is (nltk's ``TreebankWordTokenizer``, which
needs no data download, with brackets written ``-LRB-``/``-RRB-`` and double quotes as
``\\`\\``` / ``''``); ``tokenized=True`` takes words split on spaces as they are. A parser file
is safetensors (weights, never pickle) whose metadata holds the config and vocabularies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from treeattn.engine.distributed import pick_device
from treeattn.tasks.parse import ParseExample, ParseTask
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.tokenize import escape, tokenize

FORMAT, VERSION = "treeattn-parser", "1"
DEFAULT_MODEL = Path(__file__).parent.parent / "resources" / "parser-ptb-sample.safetensors"


@dataclass
class Parse:
    """One sentence's words, constituency tree (None for a dependency-only model) and
    dependency tree (predicted tags as XPOS)."""

    words: list[str]
    tree: Tree | None
    dependencies: DependencyTree


class Parser:
    """A trained parser: ``Parser.load(path)``, then ``parse(sentences)``."""

    def __init__(self, task: ParseTask, model: nn.Module, device: torch.device) -> None:
        self.task, self.model, self.device = task, model.eval(), device

    @property
    def max_length(self) -> int:
        return self.task.cfg.model.max_length

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "auto") -> Parser:
        """A parser file written by ``save`` (default: the model shipped with treeattn), or
        a checkpoint of ``treeattn train`` with ``task: parse``."""
        path = Path(path) if path is not None else DEFAULT_MODEL
        if not path.is_file():
            raise FileNotFoundError(f"no parser model at {path}")
        if path.suffix != ".safetensors":
            return cls._from_checkpoint(path, device)
        from safetensors import SafetensorError
        from safetensors.torch import load_file, safe_open

        try:
            with safe_open(str(path), "pt") as f:
                meta = f.metadata() or {}
            weights = load_file(str(path))
        except (SafetensorError, OSError, ValueError) as error:
            raise ValueError(f"{path}: not a safetensors parser file ({error})") from None
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a treeattn parser file (no '{FORMAT}' format tag)")
        if meta.get("version") != VERSION:
            raise ValueError(
                f"{path}: parser file version {meta.get('version')!r}; this treeattn reads "
                f"version {VERSION}"
            )
        from treeattn.tasks import config_from_dict, make_task

        cfg = config_from_dict(json.loads(meta["config"]), where=f"{path} config")
        task = make_task(cfg)
        task.load_state_dict(json.loads(meta["task_state"]))
        target = pick_device(device)
        model = task.build_model()
        try:
            model.load_state_dict({k: v.float() for k, v in weights.items()})
        except RuntimeError as error:
            raise ValueError(f"{path}: the weights do not fit the model: {error}") from None
        return cls(task, model.to(target), target)

    @classmethod
    def _from_checkpoint(cls, path: Path, device: str) -> Parser:
        from treeattn.tasks.trained import load_trained

        trained = load_trained(path, device)
        if not isinstance(trained.task, ParseTask):
            raise ValueError(f"{path}: a {trained.cfg.task} model, not a parser")
        return cls(trained.task, trained.model, trained.device)

    def save(self, path: str | Path, half: bool = True) -> Path:
        """Write the parser as safetensors (float16 weights with ``half``); returns the path."""
        from safetensors.torch import save_file

        dtype = torch.float16 if half else torch.float32
        weights = {
            k: v.detach().to("cpu", dtype).contiguous() for k, v in self.model.state_dict().items()
        }
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "config": self.task.cfg.to_json(),
            "task_state": json.dumps(self.task.state_dict()),
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(weights, str(path), metadata=meta)
        return path

    def words(
        self, sentences: Sequence[str], tokenized: bool = False, where: str = "input"
    ) -> list[list[str]]:
        """Each sentence's words; an empty sentence or one over ``max_length`` words is an
        error naming ``where`` and the sentence's number."""
        out = []
        for number, sentence in enumerate(sentences, start=1):
            words = escape(sentence.split()) if tokenized else tokenize(sentence)
            if not words:
                raise ValueError(f"{where}:{number}: empty sentence")
            if len(words) > self.max_length:
                raise ValueError(
                    f"{where}:{number}: {len(words)} words, more than the parser's limit of "
                    f"{self.max_length}"
                )
            out.append(words)
        return out

    def parse(
        self,
        sentences: Sequence[str],
        tokenized: bool = False,
        progress: bool = False,
        where: str = "input",
    ) -> list[Parse]:
        """Parse raw sentences (or space-separated words with ``tokenized``), in batches of
        similar length; results come in input order."""
        words = self.words(sentences, tokenized, where)
        examples = [ParseExample(w, ["_"] * len(w)) for w in words]
        data = self.task.encode(examples, where)
        parsed = self.task.parse(self.model, data, self.device, progress=progress)
        return [Parse(w, tree, deps) for w, (tree, deps) in zip(words, parsed, strict=True)]
