"""Loading a trained model for an analysis that applies to its mechanism only."""

from __future__ import annotations

from pathlib import Path

from treeattn import plugins
from treeattn.models.registry import encoder_names
from treeattn.tasks.trained import Trained, load_trained


def mechanisms_with(analysis: str) -> list[str]:
    """The registered mechanisms that declare ``analysis`` (``Capabilities.analyses``)."""
    declared = {m.name: m.capabilities.analyses for m in plugins.mechanisms.entries()}
    return [name for name in encoder_names() if analysis in declared[name]]


def load_for(checkpoint: str | Path, analysis: str, device: str = "auto") -> Trained:
    """The model of ``checkpoint``, refused with the reason when its mechanism does not
    declare ``analysis``."""
    saved = load_trained(checkpoint, device)
    name = saved.cfg.model.attention
    if analysis not in plugins.mechanisms[name].capabilities.analyses:
        able = " or ".join(mechanisms_with(analysis)) or "none registered"
        raise ValueError(
            f"{checkpoint}: `treeattn {analysis}` needs a model whose mechanism supports it "
            f"({able}), not {name!r}"
        )
    return saved
