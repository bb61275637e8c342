"""A ``transformers`` model of any family whose attention goes through ``AttentionInterface``
(RoBERTa, ELECTRA, DistilBERT, GPT-2, Llama, Qwen2, Mistral, ...), read from a local folder,
as a backbone's encoder beside this package's own ``BertEncoder``.

Its weights are the folder's ``model.safetensors`` as ``models.weights`` read and hashed
them; the model is built from ``config.json`` with ``transformers`` (imported here only),
with the offline switches on: nothing is fetched. A checkpoint saved from a model with a
head (``LlamaForCausalLM``, ``RobertaForMaskedLM``) loads into the bare model, its head
left out.
"""

from __future__ import annotations

import os
from typing import Any

from torch import Tensor, nn

from treeattn.attention.head_edit import LayerEdits
from treeattn.models.weights import PretrainedFiles, WeightsError


class TransformersEncoder(nn.Module):
    """The bare ``transformers`` model (``model``) of a local folder's files, called on
    pieces: ``hidden_states`` gives the embeddings and every layer's output. ``layers``
    is its list of layers (bottom first); ``config`` has ``num_hidden_layers``,
    ``num_attention_heads`` and ``hidden_size`` whatever the family calls them."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        config = model.config
        self.config = config.get_text_config() if hasattr(config, "get_text_config") else config
        # The model's own list, not registered again: its weights keep one name each.
        self._layer_list = (_layer_list(model, self.config.num_hidden_layers),)

    @property
    def layers(self) -> nn.ModuleList:
        return self._layer_list[0]

    @classmethod
    def from_files(cls, files: PretrainedFiles) -> TransformersEncoder:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        import transformers

        fields = dict(files.config)
        family = fields.pop("model_type", None)
        if family is None:
            raise WeightsError(f"{files.source}: config.json names no model_type")
        try:
            config = transformers.AutoConfig.for_model(family, **fields)
        except ValueError as error:
            raise WeightsError(f"{files.source}: model_type {family!r}: {error}") from None
        model = transformers.AutoModel.from_config(config, attn_implementation="sdpa")
        model.load_state_dict(_bare_state(model, files), strict=True)
        return cls(model.eval())

    def source_state(self, files: PretrainedFiles) -> dict[str, Tensor]:
        """The weights of ``files`` under this encoder's state-dict names."""
        return {f"model.{k}": v for k, v in _bare_state(self.model, files).items()}

    def outside_layers(self) -> list[nn.Parameter]:
        """The pretrained weights outside the layers: embeddings, and a final norm where
        there is one (not an injection's link modules, which the model holds too)."""
        added = getattr(self.model, "syntax_injection", None)
        inside = {id(p) for p in self.layers.parameters()}
        inside |= {id(p) for p in added.parameters()} if added is not None else set()
        return [p for p in self.model.parameters() if id(p) not in inside]

    def outside_modules(self) -> list[nn.Module]:
        """The modules outside the layers with nothing inside them (an embeddings'
        dropout and norm), not an injection's."""
        added = getattr(self.model, "syntax_injection", None)
        inside = {id(m) for m in self.layers.modules()}
        inside |= {id(m) for m in added.modules()} if added is not None else set()
        return [m for m in self.model.modules() if id(m) not in inside and not any(m.children())]

    def hidden_states(
        self, piece_ids: Tensor, pad_mask: Tensor, syntax: LayerEdits | None = None
    ) -> list[Tensor]:
        """The embeddings and each layer's output (B, p, d), as the model gives them with
        ``output_hidden_states``; ``syntax``: an injection's inputs (``inject_syntax``
        on ``model``)."""
        extra = {} if syntax is None else {"syntax": syntax}
        out = self.model(
            input_ids=piece_ids,
            attention_mask=(~pad_mask).long(),
            output_hidden_states=True,
            use_cache=False,
            **extra,
        )
        return list(out.hidden_states)


def _layer_list(model: nn.Module, n_layers: int) -> nn.ModuleList:
    """The model's list of its ``n_layers`` layers: the one module list that long."""
    found = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) == n_layers]
    if len(found) != 1:
        raise TypeError(
            f"{type(model).__name__}: cannot tell its list of {n_layers} layers "
            f"({len(found)} module lists that long)"
        )
    return found[0]


def _bare_state(model: nn.Module, files: PretrainedFiles) -> dict[str, Tensor]:
    """The folder's weights under the bare model's names: a saved model with a head
    prefixes them (``model.``, ``roberta.``, ``transformer.``) and adds the head's, which
    are left out. A weight the backbone reads and the folder lacks is an error."""
    wanted = model.state_dict()
    prefix = getattr(model, "base_model_prefix", "") + "."
    state = {}
    for key, value in files.state.items():
        name = key[len(prefix) :] if key.startswith(prefix) and key not in wanted else key
        if name in wanted:
            state[name] = value
    # The pooler (a [CLS] layer some encoders add) is never read by a backbone.
    missing = [
        k
        for k in wanted
        if k not in state and not _derived(model, k) and not k.startswith("pooler.")
    ]
    if missing:
        shown = ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else "")
        raise WeightsError(
            f"{files.source}: model.safetensors lacks {len(missing)} weights of "
            f"{type(model).__name__} ({shown})"
        )
    for key in wanted:
        state.setdefault(key, wanted[key])  # a buffer the model computes itself
    return state


def _derived(model: nn.Module, key: str) -> bool:
    """Whether state entry ``key`` is a buffer the model computes itself (position ids,
    rotary frequencies), not a weight a checkpoint must hold."""
    owner, _, name = key.rpartition(".")
    module = model.get_submodule(owner) if owner else model
    return name in dict(module.named_buffers(recurse=False))


def is_bert(config: dict[str, Any]) -> bool:
    """Whether a ``config.json`` is a BERT's, which this package's ``BertEncoder`` reads."""
    return config.get("model_type", "bert") == "bert"
