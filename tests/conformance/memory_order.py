"""Memory below the fixed-order bound: studio_memory_aware_order against ExecuTorch's own plan.

studio_memory_aware_order is beyond ExecuTorch (it has no such field): before memory planning the
studio reorders independent operators to lower the peak of live bytes and lets elementwise
results take the bytes of arguments that die there. Its files must still run in ExecuTorch's
runtime exactly as the plainly planned ones do.

For every program of the conformance corpus (corpus.py):
  upstream   to_executorch with ExecuTorch's defaults (its greedy planner): the arena;
  studio     `lowering-cli export` of the same edge program (upstream's ETRecord) with the
             studio's defaults: the arena and the fixed-order lower bound;
  extension  the same with studio_memory_aware_order=true: the arena; run in executorch.runtime
             beside upstream's file on the same inputs, outputs bit-identical (or apart only as
             the runtime's kernels round by alignment: harness.alignment_rounding).
For every sample of the studio's zoo the same, with the studio's port of ExecuTorch's greedy
standing in for upstream (the zoo is written by the studio; upstream never sees it), and the
extension's outputs compared with the default file's.

Arenas are summed over a program's methods and mem_ids. Prints a Markdown table
(tests/conformance/README.md quotes it) and
  memory_order: N programs, extension/upstream mean R, best B; K bit-identical of M run
and exits non-zero when an extension file's outputs differ, the runtime refuses it where it runs
the other file, or its arena is larger than the studio's default one.
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402  (the CLI, the runtime runner, bit equality)

EXTENSION = ["--set", "studio_memory_aware_order=true"]


def arenas(pte: Path) -> dict:
    """Summed arena, fixed-order bound and reordered bound over methods and mem_ids."""
    j = json.loads(harness.cli("inspect", str(pte), "--json").stdout)
    total = {"arena": 0, "bound": 0, "reordered": 0}
    for m in j["methods"]:
        for a in m.get("arenas", []):
            total["arena"] += a["size"]
            total["bound"] += a["lower_bound"]
            total["reordered"] += a.get("reordered_bound") or a["lower_bound"]
    return total


def export(source: Path, out: Path, *extra: str) -> tuple[Path, list[Path]]:
    out.mkdir(parents=True)
    harness.cli("export", str(source), *extra, "-o", str(out / "model.pte"), "--ptd-dir", str(out))
    return out / "model.pte", sorted(out.glob("*.ptd"))


ALIGNED = "aligned"  # run_both: apart only by the runtime's alignment-dependent rounding


def run_both(ref: tuple[Path, list[Path]], ext: tuple[Path, list[Path]], inputs: dict) -> str | None:
    """None when both run with bit-identical outputs or are refused alike; ALIGNED when the
    runtime's outputs part only as its kernels round by alignment (harness.alignment_rounding);
    else what differs."""
    try:
        want = ("ok", harness.run_pte(*ref, inputs))
    except Exception as e:  # noqa: BLE001
        want = ("error", harness.runtime_error(e))
    try:
        got = ("ok", harness.run_pte(*ext, inputs))
    except Exception as e:  # noqa: BLE001
        got = ("error", harness.runtime_error(e))
    if want[0] == "ok" and got[0] == "ok":
        if harness.numerics_difference(want[1], got[1]) is None:
            return None
        # Another plan: ExecuTorch's optimized kernels may round by their operands' alignment.
        return harness.alignment_rounding(*ref, *ext, inputs, want[1], got[1], ext[0].parent / "alignment") or ALIGNED
    if want == got:
        return None
    return f"reference {want[0]} ({str(want[1])[:120]}), extension {got[0]} ({str(got[1])[:120]})"


def corpus_rows(work: Path, only: list[str] | None):
    import corpus
    from executorch.devtools import generate_etrecord

    for entry in corpus.CORPUS:
        if only and not any(fnmatch.fnmatchcase(entry.name, g) for g in only):
            continue
        d = work / entry.name
        d.mkdir(parents=True)
        row = {"program": entry.name, "source": "corpus"}
        try:
            edge = corpus.to_edge_program(entry)
            # to_executorch edits its EdgeProgramManager in place: the ETRecord gets the edge
            # program as it was before.
            before = copy.deepcopy(edge)
            et = edge.to_executorch()
            (d / "upstream").mkdir()
            up = d / "upstream" / "model.pte"
            up.write_bytes(et.buffer)
            et.write_tensor_data_to_file(str(d / "upstream"))
            up_ptds = sorted((d / "upstream").glob("*.ptd"))
            etrecord = d / "etrecord.bin"
            generate_etrecord(str(etrecord), before, et)
        except Exception as e:  # noqa: BLE001
            row["error"] = f"upstream: {str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__}"
            yield row
            continue
        try:
            plain = export(etrecord, d / "studio")
            ext = export(etrecord, d / "extension", *EXTENSION)
        except harness.StudioError as e:
            row["error"] = str(e)[:300]
            yield row
            continue
        row.update(reference=arenas(up)["arena"], studio=arenas(plain[0]), extension=arenas(ext[0]))
        row["numerics"] = run_both((up, up_ptds), ext, entry.inputs())
        yield row


def zoo_inputs(pte: Path) -> dict:
    """Seeded inputs from the program's own input metadata: normal floats, zeros otherwise."""
    import torch
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(pte))
    inputs = {}
    g = torch.Generator().manual_seed(0)
    for name in program.method_names:
        meta = program.metadata(name)
        xs = []
        for i in range(meta.num_inputs()):
            tm = meta.input_tensor_meta(i)
            dtype = {6: torch.float32, 4: torch.int64, 3: torch.int32, 11: torch.bool}.get(tm.dtype(), torch.float32)
            sizes = list(tm.sizes())
            xs.append(torch.randn(sizes, generator=g) if dtype == torch.float32 else torch.zeros(sizes, dtype=dtype))
        inputs[name] = tuple(xs)
    return inputs


def zoo_rows(work: Path, only: list[str] | None):
    names = [line.split()[0] for line in harness.cli("sample", "--list").stdout.splitlines() if line.strip()]
    for name in names:
        if only and not any(fnmatch.fnmatchcase(name, g) for g in only):
            continue
        d = work / ("zoo_" + name)
        d.mkdir(parents=True)
        row = {"program": f"{name} (zoo)", "source": "zoo"}
        try:
            pt2 = d / "sample.pt2"
            harness.cli("sample", name, "-o", str(pt2))
            greedy = export(pt2, d / "greedy", "--set", "memory_planning_pass.algorithms=et-greedy")
            plain = export(pt2, d / "studio")
            ext = export(pt2, d / "extension", *EXTENSION)
        except harness.StudioError as e:
            row["error"] = str(e)[:300]
            yield row
            continue
        row.update(reference=arenas(greedy[0])["arena"], studio=arenas(plain[0]), extension=arenas(ext[0]))
        row["numerics"] = run_both(plain, ext, zoo_inputs(plain[0]))
        yield row


def kib(n: int) -> str:
    return f"{n / 1024:,.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(HERE.parents[1] / "build" / "memory_order"))
    ap.add_argument("--only", nargs="*", help="program or sample names (globs)")
    args = ap.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.time()

    print("| program | ExecuTorch arena (KiB) | studio arena | fixed-order bound | reordered bound "
          "| arena with the extension | extension / ExecuTorch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios, bad, run_ok, run_aligned, run_n, errors = [], [], 0, 0, 0, 0
    known = harness.Known(HERE / "known_differences.txt")
    for rows in (corpus_rows(work, args.only), zoo_rows(work, args.only)):
        for r in rows:
            if "error" in r:
                # Only where the conformance harness documents why this program does not lower.
                why = known.reason(r["program"], "default", "edge")
                errors += 1
                if not why:
                    bad.append(f"{r['program']}: not measured and not documented: {r['error']}")
                print(f"| {r['program']} | not measured: {r['error'][:160]} | | | | | |", flush=True)
                continue
            s, e = r["studio"], r["extension"]
            ratio = e["arena"] / r["reference"] if r["reference"] else 1.0
            ratios.append(ratio)
            run_n += 1
            problems = []
            if r["numerics"] is None:
                run_ok += 1
            elif r["numerics"] == ALIGNED:
                run_aligned += 1
            else:
                problems.append(f"outputs: {r['numerics']}")
            if e["arena"] > s["arena"]:
                problems.append(f"extension arena {e['arena']} > studio arena {s['arena']}")
            if problems:
                bad.append(f"{r['program']}: " + "; ".join(problems))
            print(f"| {r['program']} | {kib(r['reference'])} | {kib(s['arena'])} | {kib(s['bound'])} "
                  f"| {kib(s['reordered'])} | {kib(e['arena'])} | {ratio:.3f} |"
                  + ("  **" + "; ".join(problems) + "**" if problems else ""), flush=True)
    for b in bad:
        print(f"error: {b}")
    mean = sum(ratios) / len(ratios) if ratios else 0.0
    best = min(ratios) if ratios else 0.0
    print(f"time: {time.time() - t0:.0f} s")
    print(f"memory_order: {len(ratios)} programs, extension/upstream mean {mean:.3f}, best {best:.3f}; "
          f"{run_ok} bit-identical of {run_n} run" +
          (f" ({run_aligned} more apart only as the runtime rounds by alignment, the interpreter alike)"
           if run_aligned else "") + (f"; {errors} not measured" if errors else ""))
    return 1 if bad or not ratios else 0


if __name__ == "__main__":
    sys.exit(main())
