"""bench_run: the studio's interpreter against ExecuTorch's runtime on the same .pte, one forward.

The program is the zoo's llama sample (32 layers by default), written by `lowering-cli sample`
and exported by `lowering-cli export`; both sides run its forward on the same iota inputs
(element i of a floating input (i % 7) * 0.25 - 0.5, of an integer input i % 5):
  runtime   a fresh Python process imports executorch.runtime, loads the program and the
            method, then runs one forward; the forward is timed inside the process, and its
            memory is the process's peak RSS less the RSS after the imports (torch and
            executorch loaded, nothing of the program yet), and the whole peak too;
  studio    `lowering-cli run FILE.pte --json`: the forward's time as the interpreter reports
            it (run_seconds: the instructions, after the arenas and inputs are set up), the
            process's wall time and peak RSS (GNU time).
Each side runs --runs times (default 5); medians are printed, with the ratios studio / runtime,
and the largest difference between the two outputs.

    tools/dev.sh bench-run [--layers N] [--runs N] [--pte FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = os.environ.get("LSTUDIO_CLI", str(ROOT / "build" / "app" / "lowering-cli"))

RUNTIME = r"""
import json, resource, sys, time
import numpy as np
import torch
from executorch.runtime import Runtime

def rss_kib():  # this process's peak so far
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

base = rss_kib()
program = Runtime.get().load_program(sys.argv[1])
method = program.load_method("forward")
meta = method.metadata
inputs = []
for i in range(meta.num_inputs()):
    tm = meta.input_tensor_meta(i)
    n = 1
    for s in tm.sizes():
        n *= s
    idx = torch.arange(n, dtype=torch.int64)
    dtype = {6: torch.float32, 4: torch.int64, 3: torch.int32, 11: torch.bool}[int(tm.dtype())]
    x = ((idx % 7).double() * 0.25 - 0.5).to(dtype) if dtype.is_floating_point else (idx % 5).to(dtype)
    inputs.append(x.reshape(list(tm.sizes())))
t0 = time.perf_counter()
out = method.execute(inputs)
seconds = time.perf_counter() - t0
np.save(sys.argv[2], out[0].detach().numpy())
print(json.dumps({"seconds": seconds, "base_kib": base, "peak_kib": rss_kib()}))
"""


def timed(cmd: list[str], report: Path) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB, GNU time) and stdout of one command."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(report), *cmd], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return wall, int(report.read_text().split()[-1]), r.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pte", help="run this .pte instead of the llama sample")
    args = ap.parse_args()
    import numpy as np

    work = Path(tempfile.mkdtemp(prefix="bench_run_"))
    pte = Path(args.pte) if args.pte else work / "llama.pte"
    if not args.pte:
        pt2 = work / "llama.pt2"
        for cmd in ([CLI, "sample", "llama", "--layers", str(args.layers), "-o", str(pt2)],
                    [CLI, "export", str(pt2), "-o", str(pte)]):
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = work / "time.txt"
    rt_fwd, rt_delta, rt_peak, st_fwd, st_wall, st_peak = [], [], [], [], [], []
    for _ in range(args.runs):
        _, _, out = timed([sys.executable, "-c", RUNTIME, str(pte), str(work / "runtime.npy")], report)
        r = json.loads(out.strip().splitlines()[-1])
        rt_fwd.append(r["seconds"])
        rt_delta.append(r["peak_kib"] - r["base_kib"])
        rt_peak.append(r["peak_kib"])
        wall, peak, out = timed([CLI, "run", str(pte), "--json", "--save-outputs", str(work / "studio")], report)
        st_fwd.append(json.loads(out)["run_seconds"])
        st_wall.append(wall)
        st_peak.append(peak)
    a = np.load(work / "runtime.npy").astype(np.float64)
    b = np.load(work / "studio" / "output_0.npy").astype(np.float64)
    diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
    med = statistics.median
    mib = lambda kib: kib / 1024  # noqa: E731
    print(f"bench_run: {pte.name} ({pte.stat().st_size / 2**20:.1f} MiB), one forward on iota inputs, "
          f"median of {args.runs} runs each")
    print(f"  forward       runtime {med(rt_fwd) * 1000:9.1f} ms   studio {med(st_fwd) * 1000:9.1f} ms   "
          f"studio/runtime {med(st_fwd) / med(rt_fwd):5.2f}x")
    print(f"  memory        runtime {mib(med(rt_delta)):7.1f} MiB past its imports   studio {mib(med(st_peak)):7.1f} MiB "
          f"peak RSS   studio/runtime {med(st_peak) / max(med(rt_delta), 1):5.2f}x")
    print(f"  whole process runtime peak {mib(med(rt_peak)):7.1f} MiB (torch + executorch loaded);  studio wall "
          f"{med(st_wall) * 1000:.0f} ms (open + run + write the output)")
    print(f"  outputs: largest |difference| {diff:.3g}")
    return 0 if diff < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
