"""The test run ends with one line per reason for skipping (tests/conftest.py)."""

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


def test_skips_are_counted_by_reason(pytester):
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("k", range(3))
        def test_data(k):
            pytest.skip("evaluation data not found")

        @pytest.mark.skip(reason="no browser")
        def test_browser():
            pass

        def test_runs():
            pass
        """
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1, skipped=4)
    result.stdout.fnmatch_lines(
        ["*skipped, by reason*", "   3  evaluation data not found", "   1  no browser"]
    )
