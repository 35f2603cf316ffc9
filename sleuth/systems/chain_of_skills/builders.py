"""Config builders of the Chain-of-Skills stages: cos_retrieve, cos_rerank and cos_chain.

``model`` is left out for the trained model shipped in the package (``weights/cos-minilm-lora``: LoRA experts over
the packaged MiniLM and a trained span head, see its README.md), "minilm" for an untrained multi-expert encoder
initialised from the packaged MiniLM (with an untrained span head), or a saved multi-expert model directory (full
or adapter, ``sleuth cos train``). Skill indexes are built over the workspace corpus once and saved in the workspace's
index cache (``sleuth.systems.chain_of_skills.skill_index``), so a later process (``sleuth serve``, another search) loads them.
The span head is the one saved in the model directory (``sleuth cos train``), else untrained (seeded with
``span_seed``). With ``int8: true`` the chain's questions, pairs and triples go through an int8 copy of the encoder
(``quantise``); the skill indexes are always encoded in float32.
"""

from __future__ import annotations

from typing import Annotated

from sleuth.constraints import Count, OneOf
from sleuth.errors import ConfigError
from sleuth.index.dense import VectorSearch
from sleuth.pipelines.extras import register_extra
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.chain_of_skills.chain import CHAINS, EXPANDING, NO_RERANK, ChainLimits, CosChain
from sleuth.systems.chain_of_skills.chain_scores import (
    FUSION_CHAIN_WEIGHT,
    FUSION_RRF_K,
    HOP1_RERANK_WEIGHT,
    NQ_RERANK_BETA,
    PROMOTION_ALPHA,
)
from sleuth.systems.chain_of_skills.hop2_budget import DEFAULT_HOP2_SELECTION, HOP2_SELECTIONS
from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve

# what the skills and chains write in Hit.extras
register_extra("path", list, "evidence_path", "a chain's evidence path: the hop hits, first hop first")
for _skill, _what in (("merged", "retrieval and linking merged (eq. 6)"), ("retrieval", "single retrieval"),
                      ("expanded", "expanded-query retrieval"), ("link", "entity linking, aligned"),
                      ("rerank", "reranking")):
    register_extra(_skill, float, "hop_score", f"a hop's {_what} score")
register_extra("mention", str, "hop_label", "the entity mention that linked a hop")


def cos_model(ws: Workspace, model: str | None):
    """The workspace's multi-expert encoder for inference (loaded once per name or path, LoRA deltas merged;
    None: the shipped model)."""
    from sleuth.systems.chain_of_skills.model import load_model, model_path

    path = model_path(model)
    return ws.memo(f"cos-model:{path}", lambda: load_model(path, device=ws.device).for_inference())


def chain_model(ws: Workspace, model: str | None, int8: bool):
    """The encoder a chain runs its skills on: the model, or its int8 copy (made once per workspace)."""
    if not int8:
        return cos_model(ws, model)
    from sleuth.systems.chain_of_skills.model import model_path
    from sleuth.systems.chain_of_skills.quantise import quantise

    return ws.memo(f"cos-model-int8:{model_path(model)}", lambda: quantise(cos_model(ws, model)))


def skill_index(ws: Workspace, model: str | None, skill: str, search: VectorSearch = VectorSearch()):
    """The corpus passages encoded for ``skill`` (context side): built once and saved in the workspace's index
    cache (keyed by the model, its weights' size and time, the skill and the factory), loaded from there after; a
    skill whose passages read the same weights as retrieval's (``MultiExpertConfig.shares_context``) gets that
    index."""
    from sleuth.pipelines.workspace import params_key
    from sleuth.systems.chain_of_skills.model import model_config, model_path
    from sleuth.systems.chain_of_skills.skill_index import KIND, SkillIndex, model_info

    if skill != "retrieval" and model_config(model).shares_context(skill, "retrieval"):
        return skill_index(ws, model, "retrieval", search)
    if ws.corpus is None:
        raise ConfigError("cos: this pipeline needs a corpus to index")
    corpus, encoder = ws.corpus, model_info(model_path(model))
    key = params_key(KIND, {"encoder": encoder, "skill": skill, "factory": search.factory})
    loaded = ws.cached_index(key, SkillIndex.load, lambda path: SkillIndex.build(
        corpus.passages(), cos_model(ws, model), skill, search.factory, path=path, encoder=encoder,
        corpus_info=corpus.info(), show_progress=ws.show_progress))
    search.apply(loaded.index)
    return loaded


def span_head(ws: Workspace, model: str | None, seed: int):
    """The span head saved with the model directory, else an untrained one seeded with ``seed``."""
    from sleuth.systems.chain_of_skills.model import model_path
    from sleuth.systems.chain_of_skills.span_head import model_span_head

    path = model_path(model)
    return ws.memo(f"cos-span:{path}:{seed}", lambda: model_span_head(path, cos_model(ws, path).dim, ws.device, seed))


@register_stage("cos_retrieve")
def cos_retrieve_stage(ws: Workspace, *, model: str | None = None, k: Count = 1000,
                       search: VectorSearch = VectorSearch(), name: str = "cos_retrieve") -> SingleRetrieve:
    """Single retrieval (skill "retrieval") over the workspace corpus."""
    return SingleRetrieve(cos_model(ws, model), skill_index(ws, model, "retrieval", search), k=k, name=name)


@register_stage("cos_rerank", needs_candidates=True)
def cos_rerank_stage(ws: Workspace, *, model: str | None = None, name: str = "cos_rerank") -> Rerank:
    """Reranking (skill "reranking") of the candidates: dot(h_CLS, h_first_SEP)."""
    return Rerank(cos_model(ws, model), name=name)


_HOP2 = ("hotpotqa",)
#: the cos_chain keys that change what only some chains do, and those chains (any other: the key changes nothing)
CHAIN_KEYS: dict[str, tuple[str, ...]] = {
    "k_retrieval": ("hotpotqa", "nq", "retrieval"), "k_link": ("hotpotqa", "nq", "retrieval"),
    "alpha": ("hotpotqa", "nq", "retrieval"), "beta": ("nq",), "rerank_weight": _HOP2,
    "k_hop1": ("hotpotqa", "retrieval-2hop"), "k_expanded": ("hotpotqa", "retrieval-2hop"), "k_hop2_link": _HOP2,
    "k_hop2_rerank": _HOP2, "hop2_selection": _HOP2, "selection_weights": _HOP2, "fusion": _HOP2, "fusion_k": _HOP2,
    "fusion_chain_weight": _HOP2, "hop2_ensemble": _HOP2}


def cos_chain_problem(params: dict) -> str | None:
    """Keys given for a chain they change nothing in (before: accepted without a word, as `cos eval` refuses its
    options), fusion settings with ``fusion: false``, a negative ``alpha``; or None."""
    chain = params.get("chain")
    idle = [key for key, chains in CHAIN_KEYS.items() if key in params and chain not in chains]
    if chain in CHAINS and idle:
        return (f"{', '.join(idle)} change{'s' if len(idle) == 1 else ''} nothing in the '{chain}' chain (used by: "
                + "; ".join(f"{key} {'/'.join(CHAIN_KEYS[key])}" for key in idle)
                + f"): leave {'it' if len(idle) == 1 else 'them'} out")
    if params.get("fusion") is False and ("fusion_k" in params or "fusion_chain_weight" in params):
        return "fusion_k and fusion_chain_weight weigh the fusion that fusion: false turns off: leave them out"
    if isinstance(params.get("alpha"), (int, float)) and params["alpha"] < 0:
        return f"alpha promotes linked passages by a factor: it must be 0 or more, got {params['alpha']}"
    return None


@register_stage("cos_chain", check=cos_chain_problem)
def cos_chain_stage(ws: Workspace, *, chain: Annotated[str, OneOf(CHAINS)], model: str | None = None,
                    k_retrieval: Count = 200, k_link: Count = 5, k_hop1: Count = 30, k_expanded: Count = 50,
                    k_hop2_link: Count = 2, k: Count = 100,
                    alpha: float = PROMOTION_ALPHA, rerank_weight: float = HOP1_RERANK_WEIGHT,
                    beta: float = NQ_RERANK_BETA, search: VectorSearch = VectorSearch(), span_seed: int = 0,
                    k_hop2_rerank: Count | None = None,
                    hop2_selection: Annotated[str, OneOf(HOP2_SELECTIONS)] = DEFAULT_HOP2_SELECTION,
                    selection_weights: list[float] | None = None,
                    int8: bool = False, fusion: bool = True,
                    fusion_k: Count = FUSION_RRF_K, fusion_chain_weight: float = FUSION_CHAIN_WEIGHT,
                    hop2_ensemble: list[str] | None = None, name: str | None = None) -> CosChain:
    """A Chain-of-Skills chain (``chain``: hotpotqa | nq | retrieval | retrieval-2hop); see
    ``sleuth.systems.chain_of_skills.chain``. ``fusion`` (hotpotqa): its paths fused by reciprocal rank (``fusion_k``)
    with two rounds of retrieval's, its own list weighted ``fusion_chain_weight``; false = the paper's order.
    ``k_hop2_rerank``: rerank only that many hop-2 candidates, picked by ``hop2_selection`` (:mod:`hop2_budget`)
    over hop1 + a * hop1_rerank + b * hop2, ``selection_weights`` = [a, b] (default the path score's own).
    ``hop2_ensemble`` (hotpotqa): other models (names or directories) whose rerankers hop 2 averages with ``model``'s."""
    if selection_weights is not None and len(selection_weights) != 2:
        raise ConfigError(f"cos_chain: selection_weights takes two numbers [a, b], got {selection_weights}")
    limits = ChainLimits(k_retrieval=k_retrieval, k_link=k_link, k_hop1=k_hop1, k_expanded=k_expanded,
                         k_hop2_link=k_hop2_link, k=k, k_hop2_rerank=k_hop2_rerank, hop2_selection=hop2_selection,
                         selection_weights=(selection_weights[0], selection_weights[1]) if selection_weights else None)
    encoder = chain_model(ws, model, int8)
    passages = skill_index(ws, model, "retrieval", search)
    link = EntityLink(encoder, span_head(ws, model, span_seed), skill_index(ws, model, "linking", search))
    return CosChain(chain, SingleRetrieve(encoder, passages), link,
                    rerank=None if chain in NO_RERANK else Rerank(encoder),
                    expanded=ExpandedRetrieve(encoder, passages) if chain in EXPANDING else None,
                    limits=limits, alpha=alpha, rerank_weight=rerank_weight, beta=beta, name=name,
                    fusion=(fusion_k, fusion_chain_weight) if fusion else None,
                    hop2_ensemble=[Rerank(chain_model(ws, other, int8)) for other in hop2_ensemble or ()])
