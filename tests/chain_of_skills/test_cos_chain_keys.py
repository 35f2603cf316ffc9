"""cos_chain keys that change nothing in the chain asked for are refused before anything loads, as `cos eval`
refuses the matching options (before: `--set cos_chain.k_hop2_rerank=5` on cos-retrieval, `beta` on hotpotqa,
`fusion_k` with fusion off and a negative `alpha` were accepted; the ranking did not change, or was reordered)."""

from __future__ import annotations

import pytest

from sleuth.errors import ConfigError
from sleuth.pipelines.config import builtin_pipelines, validate_pipeline
from tests.cli_support import one_line_error


@pytest.mark.parametrize("keys, message", [
    ({"chain": "retrieval", "k_hop2_rerank": 5}, "k_hop2_rerank changes nothing in the 'retrieval' chain"),
    ({"chain": "hotpotqa", "beta": 3.0}, r"beta changes nothing in the 'hotpotqa' chain \(used by: beta nq\)"),
    ({"chain": "nq", "k_hop1": 10, "fusion": False}, "k_hop1, fusion change nothing in the 'nq' chain"),
    ({"chain": "retrieval-2hop", "alpha": 1.2}, "alpha changes nothing in the 'retrieval-2hop' chain"),
    ({"chain": "hotpotqa", "fusion": False, "fusion_k": 5}, "fusion_k and fusion_chain_weight weigh the fusion"),
    ({"chain": "retrieval", "alpha": -5}, "alpha promotes linked passages by a factor: it must be 0 or more"),
])
def test_a_key_that_changes_nothing_in_the_chain_is_refused(keys, message):
    with pytest.raises(ConfigError, match=message):
        validate_pipeline("cos_chain", {"cos_chain": keys})


def test_the_built_in_chains_and_their_own_keys_pass(sleuth, data_dir):
    for name in ("cos-hotpotqa", "cos-nq", "cos-retrieval"):
        assert name in builtin_pipelines()
        validate_pipeline(name)
    validate_pipeline("cos_chain", {"cos_chain": {"chain": "hotpotqa", "k_hop2_rerank": 10}})
    questions = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    one_line_error(sleuth("search", "who", "--corpus", questions, "--pipeline", "cos-retrieval", "--set",
                          "cos_chain.k_hop2_rerank=5"), "k_hop2_rerank changes nothing in the 'retrieval' chain")
