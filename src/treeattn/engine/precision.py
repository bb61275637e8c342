"""Which precision a training run computes in: ``train.precision`` float32, bfloat16, or
auto, decided from the hardware.

bfloat16 autocast pays only where the hardware multiplies bfloat16 natively: a GPU that
supports it, or a CPU with AVX-512 BF16 or AMX instructions (1.58 times as fast as
float32 for MiniLM fine-tuning: docs/results/classification.md, the section on a
pretrained encoder). Elsewhere
the CPU emulates it and a bfloat16 update takes about twelve times as long as a float32
one, so ``auto`` picks float32 there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a device is asked about, not with the config
    import torch

AUTO = "auto"
PRECISIONS = (AUTO, "float32", "bfloat16")
# /proc/cpuinfo flags of the x86 instructions that multiply bfloat16 natively.
BFLOAT16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty where there is no such file)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")) and ":" in line:
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def native_bfloat16(device: torch.device, flags: frozenset[str] | None = None) -> bool:
    """Whether ``device`` multiplies bfloat16 natively (``flags``: the CPU's, read from
    the system when None)."""
    if device.type == "cuda":
        import torch

        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    return bool((cpu_flags() if flags is None else flags) & BFLOAT16_CPU_FLAGS)


def resolve_precision(setting: str, device: torch.device) -> tuple[str, str]:
    """The precision a run computes in for ``train.precision`` = ``setting`` on
    ``device``, and why (a phrase for the run's log)."""
    if setting != AUTO:
        return setting, "as train.precision says"
    if native_bfloat16(device):
        return "bfloat16", f"auto: {device.type} computes bfloat16 natively"
    return "float32", f"auto: {device.type} has no native bfloat16"
