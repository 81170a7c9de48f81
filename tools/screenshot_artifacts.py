"""ExecuTorch's artifacts for the two README pictures the studio cannot make alone, written into
OUTDIR for tools/screenshots.sh:
  conv_etrecord.bin  the conformance corpus's quantized_conv_xnnpack lowered by ExecuTorch with
                     XnnpackPartitioner (to_edge_transform_and_lower), its ETRecord
  mv2.etdp, mv2.bin  two runs of MV2.pte in executorch.runtime with ETDump on, intermediate
                     outputs logged into the debug buffer
Run with the oracle's Python (the environment tools/dev.sh makes):
  python tools/screenshot_artifacts.py OUTDIR MV2.pte
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))


def main(argv: list[str]) -> int:
    out, mv2 = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    import torch

    import corpus
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.devtools import generate_etrecord
    from executorch.exir import to_edge_transform_and_lower

    entry = next(e for e in corpus.CORPUS if e.name == "quantized_conv_xnnpack")
    edge = to_edge_transform_and_lower(entry.export(), partitioner=[XnnpackPartitioner()])
    generate_etrecord(str(out / "conv_etrecord.bin"), copy.deepcopy(edge), copy.deepcopy(edge).to_executorch())
    # Two runs on iota inputs, every intermediate output logged (two runs of mobilenet_v2 fill ~100 MiB).
    from executorch.runtime import Runtime

    image = (torch.arange(3 * 224 * 224, dtype=torch.float32).reshape(1, 3, 224, 224) % 7) * 0.25 - 0.5
    program = Runtime.get().load_program(str(mv2), enable_etdump=True, debug_buffer_size=256 << 20)
    method = program.load_method("forward")
    for _ in range(2):
        method.execute([image])
    program.write_etdump_result_to_file(str(out / "mv2.etdp"), str(out / "mv2.bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
