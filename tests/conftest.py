import os
from collections import Counter

import pytest
from hypothesis import settings

from treeattn.data.paths import data_dir

# Nothing is fetched in the tests: transformers and its hub stay offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# `make test` runs the tests in one worker process a core (pytest-xdist): each worker keeps
# to its share of the cores, so the workers' matrix products do not fight over them.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    import torch

    workers = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    torch.set_num_threads(max(1, torch.get_num_threads() // workers))

# No per-example deadline: a property holds or fails whatever the machine's load; the
# tests measure no time.
settings.register_profile("treeattn", deadline=None)
settings.load_profile("treeattn")


@pytest.fixture
def shared_data():
    """The evaluation data folder; tests that need it skip when it is absent."""
    root = data_dir()
    if root is None or not root.is_dir():
        pytest.skip("evaluation data not found: set TREEATTN_DATA")
    return root


def pytest_terminal_summary(terminalreporter):
    """One line per reason tests were skipped, with how many (``-q`` shows none, ``-rs``
    one line per test): most skips are one missing data set or package."""
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    if reasons:
        terminalreporter.section("skipped, by reason", sep="-")
        for reason, count in reasons.most_common():
            terminalreporter.line(f"{count:4d}  {reason}")
