"""bench_conformance: ExecuTorch's lowering against the studio's, program by program, in one run.

For each corpus program (tests/conformance/corpus.py), with the default config, from
  --from aten (default)  the program as torch.export.save writes it (programs upstream lowers
                 with to_edge; those it delegates have no ATen input for the studio):
      upstream  a fresh Python process loads it (torch.export.load, or load_pt2 for several
                methods) and runs to_edge + to_executorch + serialization + write, timed inside
                the process after its imports;
      studio    `lowering-cli export ATEN.pt2 -o OUT.pte`: open + to_edge + every pass + emit +
                write;
  --from edge    the edge program (the ETRecord ExecuTorch wrote), every corpus program:
      upstream  to_executorch + serialization + write;
      studio    `lowering-cli export ETRECORD -o OUT.pte`.
The studio's time is the process's wall time; peak RSS is each whole process's (ExecuTorch's
includes torch and executorch themselves). Each is run --runs times (default 3); medians are
printed, with the ratios upstream / studio.

    tools/dev.sh bench-conformance [--from aten|edge] [--only NAME...] [--runs N]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
CLI = os.environ.get("LSTUDIO_CLI", str(ROOT / "build" / "app" / "lowering-cli"))

UPSTREAM = r"""
import sys, time, json
import executorch.kernels.quantized  # the quantized_decomposed out variants to_executorch needs
from executorch.devtools.etrecord import parse_etrecord
from executorch.exir import EdgeProgramManager
t0 = time.perf_counter()
rec = parse_etrecord(sys.argv[1])
programs = rec.edge_dialect_program
if not isinstance(programs, dict):
    programs = {"forward": programs}
edge = EdgeProgramManager(programs)
et = edge.to_executorch()
with open(sys.argv[2], "wb") as f:
    f.write(et.buffer)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


UPSTREAM_ATEN = r"""
import sys, time, json, zipfile
import torch
import executorch.kernels.quantized  # the quantized_decomposed out variants to_executorch needs
from executorch.exir import EdgeCompileConfig, to_edge
t0 = time.perf_counter()
names = zipfile.ZipFile(sys.argv[1]).namelist()
if any("/models/" in n and n.endswith(".json") for n in names) and \
        len({n.split("/models/")[1].split("/")[0] for n in names if "/models/" in n}) > 1:
    from torch.export.pt2_archive._package import load_pt2
    programs = load_pt2(sys.argv[1]).exported_programs
else:
    programs = {"forward": torch.export.load(sys.argv[1])}
edge = to_edge(programs, compile_config=EdgeCompileConfig(**json.loads(sys.argv[3])))
et = edge.to_executorch()
with open(sys.argv[2], "wb") as f:
    f.write(et.buffer)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


_OUT = tempfile.mkdtemp(prefix="bench_conformance_")


def peak_rss_of(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB) and stdout of one command, measured by GNU time: a child
    forked from this (torch-sized) process would report this process's peak as its own."""
    report = os.path.join(_OUT, "time.txt")
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report, *cmd], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        who = "ExecuTorch" if cmd[0] == sys.executable else "the studio"
        last = (r.stderr.strip().splitlines() or [""])[-1][:160]
        raise RuntimeError(f"{who} exited {r.returncode}: {last}")
    return wall, int(Path(report).read_text().split()[-1]), r.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--from", dest="source", choices=("aten", "edge"), default="aten")
    args = ap.parse_args()

    import copy
    import corpus
    from executorch.devtools import generate_etrecord
    from harness import save_aten_program

    work = Path(_OUT)
    print(f"{'program':26} {'upstream s':>10} {'studio s':>9} {'ratio':>6} {'upstream MiB':>12} "
          f"{'studio MiB':>10} {'ratio':>6}   (from {args.source}: lowering+write inside the process | whole process)")
    ratios_t, ratios_m = [], []
    for entry in corpus.CORPUS:
        if args.only and not any(fnmatch.fnmatchcase(entry.name, g) for g in args.only):
            continue
        try:
            if args.source == "aten":
                if entry.lower != "edge":
                    print(f"{entry.name:26} skipped: upstream lowers it with a partitioner, not to_edge")
                    continue
                source = work / f"{entry.name}.pt2"
                save_aten_program(entry.export(), source)
                upstream = [UPSTREAM_ATEN, str(source), str(work / "up.pte"), json.dumps(entry.edge_config)]
            else:
                edge = corpus.to_edge_program(entry)
                source = work / f"{entry.name}.etrecord"
                generate_etrecord(str(source), copy.deepcopy(edge), copy.deepcopy(edge).to_executorch())
                upstream = [UPSTREAM, str(source), str(work / "up.pte")]
        except Exception as e:  # noqa: BLE001
            print(f"{entry.name:26} skipped: no input ({str(e).splitlines()[0][:80]})")
            continue
        up_t, up_m, st_t, st_m = [], [], [], []
        try:
            for _ in range(args.runs):
                _, rss, out = peak_rss_of([sys.executable, "-c", *upstream])
                up_t.append(json.loads(out.strip().splitlines()[-1])["seconds"])
                up_m.append(rss)
                wall, rss, _ = peak_rss_of([CLI, "export", str(source), "-o", str(work / "st.pte")])
                st_t.append(wall)
                st_m.append(rss)
        except Exception as e:  # noqa: BLE001
            print(f"{entry.name:26} failed: {e}")
            continue
        ut, stt = statistics.median(up_t), statistics.median(st_t)
        um, sm = statistics.median(up_m) / 1024, statistics.median(st_m) / 1024
        ratios_t.append((ut / stt, entry.name))
        ratios_m.append((um / sm, entry.name))
        print(f"{entry.name:26} {ut:10.3f} {stt:9.3f} {ut / stt:6.1f} {um:12.0f} {sm:10.1f} {um / sm:6.1f}")
    if ratios_t:
        print(f"median time ratio upstream/studio: {statistics.median(r for r, _ in ratios_t):.1f}x "
              f"(lowest {min(ratios_t)[0]:.1f}x on {min(ratios_t)[1]})")
        print(f"median peak-RSS ratio upstream/studio: {statistics.median(r for r, _ in ratios_m):.1f}x "
              f"(lowest {min(ratios_m)[0]:.1f}x on {min(ratios_m)[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
