"""`sleuth cos eval` as a long run in a log: a progress line per chain (questions done, questions/s, time left) and
none of the third-party noise (transformers' load report and weight-loading bars, torch's quantisation deprecation
warning)."""

from __future__ import annotations

import re

NOISE = ("UNEXPECTED", "LOAD REPORT", "Loading weights", "Warning", "deprecated")


def test_cos_eval_reports_progress_per_chain_without_third_party_noise(sleuth_process, data_dir):
    result = sleuth_process("cos", "eval", "--questions", data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json",
                    "--limit", "3", "--chain", "retrieval", "--chain", "hotpotqa", "--int8",
                    env={"SLEUTH_PROGRESS_SECONDS": "0.02", "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    for chain in ("retrieval", "hotpotqa"):
        assert re.search(rf"^chain {chain}: \d/3 questions \(\d+%\)", result.stderr, re.M), result.stderr
    assert not [noise for noise in NOISE if noise in result.stderr], result.stderr
