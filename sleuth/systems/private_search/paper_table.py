"""Published numbers of Faggioli & Ferro (IRCDL 2024 / ECIR 2024), typed in from the paper text.

Table 1: "Average MiniLM sentence similarity between the original query and 20 obfuscation queries generated with
different approaches", DL '19 and Robust '04 columns, read from the paper's text
(GloVe 300-d Common Crawl embeddings). Rows: mechanism -> similarity at epsilon 1, 5, 10, 12.5, 15, 17.5, 20, 50;
AED and FSH have one value ("No DP").
"""

from __future__ import annotations

PAPER_EPSILONS = (1.0, 5.0, 10.0, 12.5, 15.0, 17.5, 20.0, 50.0)

TABLE1_TSV = """\
collection	system	1	5	10	12.5	15	17.5	20	50	no_dp
robust04	cmp	0.074	0.100	0.396	0.672	0.871	0.961	0.987	0.996
robust04	mahalanobis	0.077	0.095	0.244	0.427	0.627	0.794	0.907	0.996
robust04	vickrey-cmp	0.077	0.100	0.278	0.412	0.511	0.578	0.622	0.760
robust04	vickrey-mahalanobis	0.076	0.096	0.188	0.282	0.382	0.472	0.533	0.746
robust04	aed									0.487
robust04	fsh									0.203
dl19	cmp	0.024	0.032	0.214	0.458	0.681	0.824	0.903	0.952
dl19	mahalanobis	0.020	0.034	0.119	0.241	0.427	0.610	0.750	0.951
dl19	vickrey-cmp	0.028	0.032	0.137	0.211	0.308	0.372	0.413	0.565
dl19	vickrey-mahalanobis	0.023	0.026	0.084	0.149	0.215	0.284	0.333	0.553
dl19	aed									0.509
dl19	fsh									0.077
"""


def paper_table1(collection: str = "dl19") -> dict[str, dict[float | None, float]]:
    """``{system: {epsilon: similarity}}`` of the paper's Table 1 (key None: the non-DP baselines' value)."""
    lines = TABLE1_TSV.strip("\n").split("\n")
    header = lines[0].split("\t")
    table: dict[str, dict[float | None, float]] = {}
    for line in lines[1:]:
        cells = line.split("\t")
        if cells[0] != collection:
            continue
        values = {}
        for column, cell in zip(header[2:], cells[2:]):
            if cell:
                values[None if column == "no_dp" else float(column)] = float(cell)
        table[cells[1]] = values
    return table
