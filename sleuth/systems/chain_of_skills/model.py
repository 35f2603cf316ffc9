"""The Chain-of-Skills multi-expert encoder (Ma et al., ACL 2023): one BERT-style encoder shared by all skills and sides.

Selected layers (default every second one: 0-based layers 1, 3, 5, ... i.e. the 2nd, 4th, 6th) hold K expert
copies of the self-attention (own Q/K/V; see ``sleuth.systems.chain_of_skills.experts``), picked per batch by the routing table
(``sleuth.systems.chain_of_skills.skills``); all other weights are shared. Variants for the ablation: "ffn" (FFN experts instead)
and "none" (one fully shared encoder, K = 1). The backbone's pooler is not used.

Pooling: the paper represents questions, passages and entity descriptions by the [CLS] vector (§3.1), so
``pooling="cls"`` is the default; ``"mean"`` (mean of the non-padding token states, the pooling MiniLM was
trained with) is an option. Vectors are not normalised: the paper scores with the dot product.

Variant "lora" (a mixture of LoRA experts, see ``experts.py``): the backbone is frozen and shared, each expert is a
low-rank delta in every expert layer (default: all layers), so a saved model is an *adapter*: ``cos_config.json``,
``cos_adapter.safetensors`` (the deltas only) and ``sleuth-adapter.json`` naming the backbone by its sleuth name
("minilm"), written atomically with a model card by ``sleuth.models.adapters.write_adapter``; loading rebuilds the
backbone from the packaged MiniLM and adds the deltas. For inference, ``for_inference`` merges each expert's deltas
into one linear layer (a copy that runs faster and cannot be saved); pipelines and ``sleuth cos eval`` use it.

A saved full model is a directory: ``cos_config.json`` (variant, K, expert layers, routing, pooling, max length),
``cos_model.safetensors`` (all weights, expert copies included), the backbone's HF ``config.json`` and its
tokenizer files. Forward calls are not thread-safe: the chosen expert is module state set per call.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.errors import ConfigError, SleuthError
from sleuth.models.encoder import length_sorted_batches
from sleuth.systems.chain_of_skills.experts import (
    VARIANTS,
    LoraExperts,
    LoraSpec,
    install_experts,
    merge_lora_experts,
    set_expert,
)
from sleuth.systems.chain_of_skills.skills import SkillRouting

CONFIG_FILE = "cos_config.json"
WEIGHTS_FILE = "cos_model.safetensors"
ADAPTER_FILE = "cos_adapter.safetensors"  # the LoRA deltas of a "lora" model (an adapter directory)
FORMAT = "sleuth-cos-encoder/1"
ADAPTER_FORMAT = "sleuth-cos-lora-experts/1"
POOLINGS = ("cls", "mean")
DEFAULT_MAX_LENGTH = 256  # Ma et al., ACL 2023, appendix: max sequence length 256

Text = str | tuple[str, str]  # one text, or a pair encoded as "a [SEP] b" (expanded queries, reranking)


@dataclass(frozen=True)
class MultiExpertConfig:
    """Architecture and routing of a multi-expert encoder; ``expert_layers=None`` means every second layer (every
    layer for the "lora" variant, whose ``lora`` spec defaults to :class:`LoraSpec`)."""

    variant: str = "attention"
    num_experts: int = 6
    expert_layers: tuple[int, ...] | None = None
    routing: SkillRouting = field(default_factory=SkillRouting)
    pooling: str = "cls"
    max_length: int = DEFAULT_MAX_LENGTH
    lora: LoraSpec | None = None

    @classmethod
    def no_expert(cls, **options: Any) -> MultiExpertConfig:
        """The fully shared ablation model: one encoder, every skill and side through the same weights."""
        return cls(variant="none", num_experts=1, expert_layers=(), **options)

    def resolved(self, num_layers: int) -> MultiExpertConfig:
        """This config with the expert layers filled in for a backbone of ``num_layers`` layers, validated."""
        every = range(num_layers) if self.variant == "lora" else range(1, num_layers, 2)
        layers = self.expert_layers if self.expert_layers is not None else tuple(every)
        lora = (self.lora or LoraSpec()) if self.variant == "lora" else self.lora
        config = replace(self, expert_layers=tuple(layers), lora=lora)
        config.check(num_layers)
        return config

    def check(self, num_layers: int) -> None:
        """Raise a one-line ConfigError naming the first problem."""
        if self.variant not in VARIANTS:
            raise ConfigError(f"unknown expert variant '{self.variant}': use one of {', '.join(VARIANTS)}")
        if not isinstance(self.num_experts, int) or isinstance(self.num_experts, bool) or self.num_experts < 1:
            raise ConfigError(f"num_experts must be an integer >= 1, got {self.num_experts!r}")
        if self.pooling not in POOLINGS:
            raise ConfigError(f"unknown pooling '{self.pooling}': use one of {', '.join(POOLINGS)}")
        if not isinstance(self.max_length, int) or isinstance(self.max_length, bool) or self.max_length < 2:
            raise ConfigError(f"max_length must be an integer >= 2, got {self.max_length!r}")
        layers = self.expert_layers or ()
        for index in layers:
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < num_layers:
                raise ConfigError(f"expert layer {index!r} is out of range: the backbone has {num_layers} layers")
        if len(set(layers)) != len(layers):
            raise ConfigError(f"expert layers repeat a layer: {list(layers)}")
        if self.variant == "none":
            if self.num_experts != 1 or layers:
                raise ConfigError("the 'none' (no-expert) variant needs num_experts 1 and no expert layers")
        else:
            self.routing.check(self.num_experts)
        if self.lora is not None:
            if self.variant != "lora":
                raise ConfigError(f"a lora spec needs the 'lora' variant, not '{self.variant}'")
            self.lora.check(self.num_experts)

    def frozen(self, expert: int) -> bool:
        """Whether ``expert`` reads the backbone unchanged (an expert without LoRA deltas in a "lora" model)."""
        return self.variant == "lora" and self.lora is not None and expert in self.lora.frozen_experts

    def shares_context(self, skill: str, other: str) -> bool:
        """Whether ``skill`` and ``other`` read passages through the same weights: one context expert, or two
        experts without LoRA deltas (both the frozen backbone). Their indexes of one corpus are then the same
        (the shipped model's retrieval and linking: experts 1 and 3, both frozen), so one is built for both."""
        first, second = self.routing.expert(skill, "context"), self.routing.expert(other, "context")
        return first == second or (self.frozen(first) and self.frozen(second))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["expert_layers"] = None if self.expert_layers is None else list(self.expert_layers)
        data["routing"] = self.routing.to_dict()
        data["lora"] = self.lora.to_dict() if self.lora is not None else None
        if data["lora"] is None:
            del data["lora"]  # full models keep the original format
        return {"format": FORMAT, **data}

    @classmethod
    def from_dict(cls, data: Any) -> MultiExpertConfig:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise a one-line ConfigError."""
        if not isinstance(data, dict):
            raise ConfigError(f"{CONFIG_FILE}: expected a JSON object")
        if data.get("format") != FORMAT:
            raise ConfigError(f"{CONFIG_FILE}: format is {data.get('format')!r}, expected '{FORMAT}'")
        keys = {"variant", "num_experts", "expert_layers", "routing", "pooling", "max_length"}
        body = {k: v for k, v in data.items() if k != "format"}
        if set(body) - keys - {"lora"}:
            raise ConfigError(f"{CONFIG_FILE}: unknown keys {sorted(set(body) - keys - {'lora'})}")
        if keys - set(body):
            raise ConfigError(f"{CONFIG_FILE}: missing keys {sorted(keys - set(body))}")
        layers = body["expert_layers"]
        if layers is not None and not isinstance(layers, list):
            raise ConfigError(f"{CONFIG_FILE}: expert_layers must be a list of layer indexes or null")
        return cls(variant=body["variant"], num_experts=body["num_experts"],
                   expert_layers=None if layers is None else tuple(layers),
                   routing=SkillRouting.from_dict(body["routing"]), pooling=body["pooling"],
                   max_length=body["max_length"],
                   lora=LoraSpec.from_dict(body["lora"]) if body.get("lora") is not None else None)


@dataclass
class TokenStates:
    """Per-token output of one text: wordpiece tokens, character offsets (n, 2) and hidden states (n, d)."""

    tokens: list[str]
    offsets: np.ndarray
    states: np.ndarray


def _length(text: Text) -> int:
    return len(text[0]) + len(text[1]) if isinstance(text, tuple) else len(text)


#: the trained model shipped in the package (``weights/<name>``): the default of the cos pipelines and commands
SHIPPED_MODEL = "cos-minilm-lora"
#: the untrained model: attention experts copied from the packaged MiniLM, [CLS] pooling (no weights file)
UNTRAINED = "minilm"


def shipped_model_dir() -> Path:
    """Directory of the trained model shipped in the package (an adapter over the packaged MiniLM, its span head and
    model card)."""
    return Path(__file__).parent / "weights" / SHIPPED_MODEL


def model_path(model: str | Path | None) -> str:
    """A model name as the stages and commands take it, resolved: None or :data:`SHIPPED_MODEL` -> the shipped
    model's directory; :data:`UNTRAINED` ("minilm") stays as it is; anything else is a model directory."""
    if model is None or str(model) == SHIPPED_MODEL:
        return str(shipped_model_dir())
    return str(model)


def load_model(model: str | Path | None, device: str = "cpu") -> MultiExpertEncoder:
    """The encoder named by ``model`` (see :func:`model_path`): the shipped model by default, "minilm" for
    untrained experts, or a saved model directory (full or adapter)."""
    path = model_path(model)
    if path == UNTRAINED:
        return MultiExpertEncoder.from_backbone("minilm", device=device)
    if not Path(path).is_dir():
        raise SleuthError(f"model directory not found: {path}")
    return MultiExpertEncoder.load(path, device=device)


def model_config(model: str | Path | None) -> MultiExpertConfig:
    """The architecture and routing of the model :func:`load_model` would load, read without its weights."""
    path = model_path(model)
    return MultiExpertConfig() if path == UNTRAINED else _read_config(Path(path))


def _read_config(directory: Path) -> MultiExpertConfig:
    try:
        data = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"{directory / CONFIG_FILE}: not valid JSON ({error})") from None
    except OSError:
        raise SleuthError(f"{directory} is not a multi-expert model directory: {CONFIG_FILE} is missing") from None
    return MultiExpertConfig.from_dict(data)


def _checked_state(path: Path, expected: dict[str, Any]) -> dict[str, Any]:
    """The tensors of a safetensors file, checked against ``expected`` (names and shapes); any problem is one
    SleuthError line naming the file."""
    from safetensors.torch import load_file

    try:
        state = load_file(str(path))
    except Exception as error:  # safetensors raises its own error types for corrupt files
        raise SleuthError(f"{path}: unreadable weights "
                          f"({str(error).splitlines()[0] if str(error) else type(error).__name__})") from None
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        raise SleuthError(f"{path} does not match {CONFIG_FILE}: {len(missing)} missing tensors (first: "
                          f"{missing[:1]}), {len(unexpected)} unexpected (first: {unexpected[:1]})")
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise SleuthError(f"{path}: tensor {key} has shape {tuple(tensor.shape)}, "
                              f"expected {tuple(expected[key].shape)}")
    return state


def weights_file(directory: str | Path) -> Path:
    """The weights file of a saved model directory: the adapter's deltas, else the full weights."""
    adapter = Path(directory) / ADAPTER_FILE
    return adapter if adapter.is_file() else Path(directory) / WEIGHTS_FILE


class MultiExpertEncoder:
    """A HF BertModel with expert sub-layers, its tokenizer, routing table and encoding API."""

    def __init__(self, bert: Any, tokenizer: Any, config: MultiExpertConfig = MultiExpertConfig(),
                 device: str = "cpu"):
        for attribute in ("encoder", "config"):
            if not hasattr(bert, attribute) or (attribute == "encoder" and not hasattr(bert.encoder, "layer")):
                raise SleuthError(f"the backbone {type(bert).__name__} is not a BERT-style encoder")
        self.config = config.resolved(bert.config.num_hidden_layers)
        self.switches = install_experts(bert, self.config.variant, self.config.num_experts,
                                        list(self.config.expert_layers or ()), self.config.lora)
        self.bert, self.tokenizer, self.device = bert.to(device).eval(), tokenizer, device
        self.dim: int = bert.config.hidden_size
        self.backbone = "minilm"  # the backbone's sleuth name or path (what an adapter records)
        self.inference_only = False  # True for ``for_inference`` copies (merged deltas: nothing left to save)

    def for_inference(self) -> MultiExpertEncoder:
        """A copy for inference only, with LoRA deltas merged into per-expert linear layers
        (``experts.merge_lora_experts``): same outputs up to float rounding, ~25 % faster on the CPU; it cannot be
        trained or saved. A model without LoRA experts is returned as it is."""
        if not any(isinstance(m, LoraExperts) for m in self.bert.modules()):
            return self
        merged = copy.copy(self)
        merged.bert = copy.deepcopy(self.bert)
        merged.switches = merge_lora_experts(merged.bert)
        merged.inference_only = True
        return merged

    @property
    def is_adapter(self) -> bool:
        """Whether the model saves as an adapter (LoRA deltas over a frozen backbone) rather than in full."""
        return self.config.variant == "lora"

    def adapter_state(self) -> dict[str, Any]:
        """The trainable deltas of a "lora" model by state-dict name (what an adapter directory stores)."""
        return {k: v for k, v in self.bert.state_dict().items() if ".lora_a." in k or ".lora_b." in k}

    def frozen_side(self, skill: str, side: str) -> bool:
        """Whether inputs of ``skill`` on ``side`` go through the unchanged backbone (an expert without LoRA deltas
        in a "lora" model): their outputs do not change while training, so they may be cached."""
        return self.config.frozen(self.expert_for(skill, side))

    # construction, persistence

    @classmethod
    def from_backbone(cls, backbone: str | Path = "minilm", config: MultiExpertConfig = MultiExpertConfig(),
                      device: str = "cpu") -> MultiExpertEncoder:
        """Experts initialised from a pretrained encoder ("minilm" = the shipped all-MiniLM-L6-v2, or a path)."""
        from transformers import AutoModel, AutoTokenizer

        from sleuth.models.quiet import quiet_model_load
        from sleuth.models.registry import backbone_dir

        path = backbone_dir(backbone)  # minilm or a model folder, else a ConfigError
        with quiet_model_load():
            bert = AutoModel.from_pretrained(path, add_pooling_layer=False)
            tokenizer = AutoTokenizer.from_pretrained(path)
        model = cls(bert, tokenizer, config, device)
        model.backbone = str(backbone) if str(backbone) == "minilm" else str(Path(path).resolve())
        return model

    def save(self, directory: str | Path, card: str | None = None,
             extras: Callable[[Path], None] | None = None) -> Path:
        """Write the model directory (see the module docstring; a "lora" model writes an adapter, atomically, with
        ``card`` as its README.md); ``extras(directory)`` adds more files (inside the atomic swap for an adapter);
        returns the directory."""
        from safetensors.torch import save_file

        if self.inference_only:
            raise SleuthError("an inference copy of a model (LoRA deltas merged) cannot be saved: save the model it "
                              "was made from")
        directory = Path(directory)
        if self.is_adapter:
            from sleuth.models.adapters import write_adapter

            def write(tmp: Path) -> None:
                (tmp / CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=2) + "\n", encoding="utf-8")
                save_file({k: v.detach().contiguous().cpu() for k, v in self.adapter_state().items()},
                          str(tmp / ADAPTER_FILE))
                if extras is not None:
                    extras(tmp)

            return write_adapter(directory, self.backbone, write, card=card or None,
                                 extra={"format": ADAPTER_FORMAT, "config": CONFIG_FILE, "weights": ADAPTER_FILE})
        from sleuth.io import atomic_directory
        from sleuth.models.adapters import MODEL_MARKERS

        # swapped in whole, as an adapter is (before: written file by file into the folder, so a LoRA model's files
        # stayed beside the new one and the folder no longer loaded, or the files mixed in among a user's)
        with atomic_directory(directory, MODEL_MARKERS) as tmp:
            (tmp / CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=2) + "\n", encoding="utf-8")
            save_file({k: v.detach().contiguous().cpu() for k, v in self.bert.state_dict().items()},
                      str(tmp / WEIGHTS_FILE))
            self.bert.config.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            if card is not None:
                (tmp / "README.md").write_text(card, encoding="utf-8")
            if extras is not None:
                extras(tmp)
        return directory

    @classmethod
    def load(cls, directory: str | Path, device: str = "cpu") -> MultiExpertEncoder:
        """Load a saved model directory; any problem is one SleuthError line naming it."""
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        from sleuth.models.quiet import quiet_model_load

        directory = Path(directory)
        if (directory / ADAPTER_FILE).is_file():
            return cls._load_adapter(directory, device)
        for name in (CONFIG_FILE, WEIGHTS_FILE, "config.json"):
            if not (directory / name).is_file():
                raise SleuthError(f"{directory} is not a multi-expert model directory: {name} is missing")
        config = _read_config(directory)
        try:
            with quiet_model_load():
                bert = AutoModel.from_config(AutoConfig.from_pretrained(directory), add_pooling_layer=False)
                tokenizer = AutoTokenizer.from_pretrained(directory)
        except (OSError, ValueError) as error:
            raise SleuthError(f"{directory}: cannot read the backbone config or tokenizer "
                              f"({str(error).splitlines()[0]})") from None
        model = cls(bert, tokenizer, config, device="cpu")
        model.bert.load_state_dict(_checked_state(directory / WEIGHTS_FILE, model.bert.state_dict()), strict=True)
        model.bert.to(device)
        model.device = device
        return model

    @classmethod
    def _load_adapter(cls, directory: Path, device: str) -> MultiExpertEncoder:
        """A "lora" adapter directory: the backbone it names plus the saved deltas."""

        from sleuth.models.adapters import adapter_info

        config = _read_config(directory)
        if config.variant != "lora":
            raise SleuthError(f"{directory}: {ADAPTER_FILE} needs the 'lora' variant, {CONFIG_FILE} says "
                              f"'{config.variant}'")
        info = adapter_info(directory)
        model = cls.from_backbone(info.get("backbone", "minilm"), config, device="cpu")
        model.bert.load_state_dict(_checked_state(directory / ADAPTER_FILE, model.adapter_state()), strict=False)
        model.bert.to(device)
        model.device = device
        return model

    # routing and forward

    def expert_for(self, skill: str, side: str = "query") -> int:
        """The expert an input of ``skill`` on ``side`` goes through (always 0 for the no-expert variant)."""
        expert = self.config.routing.expert(skill, side)
        return 0 if self.config.variant == "none" else expert

    def forward(self, input_ids: Any, attention_mask: Any, expert: int, token_type_ids: Any = None) -> Any:
        """Last hidden states (batch, length, dim) with every expert layer routed to ``expert``; keeps gradients."""
        set_expert(self.switches, expert)
        output = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return output.last_hidden_state

    def tokenize(self, texts: Sequence[Text], offsets: bool = False) -> Any:
        """Padded, truncated tensors on the model's device; pairs become ``[CLS] a [SEP] b [SEP]``."""
        pairs = [isinstance(t, tuple) for t in texts]
        if any(pairs) and not all(pairs):
            raise SleuthError("a batch must hold either all single texts or all (text, text) pairs")
        first = [t[0] if isinstance(t, tuple) else t for t in texts]
        second = [t[1] for t in texts] if all(pairs) else None
        batch = self.tokenizer(first, second, padding=True, truncation=True, max_length=self.config.max_length,
                               return_tensors="pt", return_offsets_mapping=offsets)
        return batch.to(self.device)

    def _batches(self, texts: Sequence[Text], skill: str, side: str, batch_size: int,
                 offsets: bool) -> Iterator[tuple[list[int], Any, Any]]:
        """(positions in ``texts``, tokenised batch, states) per batch. Texts are batched in order of character
        length so that a batch pads to similar lengths (padding is masked: the states do not depend on it)."""
        import torch

        expert = self.expert_for(skill, side)
        for rows in length_sorted_batches(texts, batch_size, length=_length):
            batch = self.tokenize([texts[i] for i in rows], offsets=offsets)
            with torch.inference_mode():
                states = self.forward(batch["input_ids"], batch["attention_mask"], expert,
                                      batch.get("token_type_ids"))
            yield rows, batch, states

    def encode(self, texts: Sequence[Text], skill: str, side: str = "query", batch_size: int = 32,
               task: Any = None) -> np.ndarray:
        """One float32 vector per text (shape (n, dim)), pooled as configured ([CLS] by default); one string is one
        text (shape (1, dim); before: one vector per character); ``task``: a :class:`sleuth.progress.Task` advanced
        by each batch's texts."""
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, batch, states in self._batches(texts, skill, side, batch_size, offsets=False):
            if task is not None:
                task.advance(len(rows))
            if self.config.pooling == "cls":
                pooled = states[:, 0]
            else:
                mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
                pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1)
            result[rows] = pooled.float().cpu().numpy()
        return result

    def token_states(self, texts: Sequence[Text], skill: str, side: str = "query",
                     batch_size: int = 32) -> list[TokenStates]:
        """Per-token states of each text, special tokens included (offsets (0, 0)), padding removed."""
        result: list[TokenStates | None] = [None] * len(texts)
        for rows, batch, states in self._batches(texts, skill, side, batch_size, offsets=True):
            lengths = batch["attention_mask"].sum(1).tolist()
            for row, (position, length) in enumerate(zip(rows, lengths)):
                ids = batch["input_ids"][row, :length].tolist()
                result[position] = TokenStates(self.tokenizer.convert_ids_to_tokens(ids),
                                               batch["offset_mapping"][row, :length].cpu().numpy(),
                                               states[row, :length].float().cpu().numpy())
        return result  # type: ignore[return-value]
