"""The package's top level: the names programs start from, loaded on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import treeattn


def test_every_exported_name_is_its_module_s_object():
    for name, module in treeattn._EXPORTS.items():
        assert getattr(treeattn, name) is getattr(importlib.import_module(module), name), name
    assert set(treeattn.__all__) == {"__version__", *treeattn._EXPORTS}
    assert set(treeattn._EXPORTS) <= set(dir(treeattn))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Parsers'"):
        treeattn.Parsers  # noqa: B018
    with pytest.raises(ImportError):
        exec("from treeattn import Parsers", {})


def test_importing_the_package_leaves_torch_unloaded():
    code = "import sys, treeattn; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
