"""Running `sleuth` in the test's own process and reading the one-line error it must give."""

from __future__ import annotations

import pytest

from sleuth.cli.main import main


def one_line_error(args: list[str], capsys) -> str:
    """Run ``sleuth ARGS`` in this process: it must exit 2 with exactly one line on stderr, which is returned."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err
