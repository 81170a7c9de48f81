"""The studio's own samples, lowered by ExecuTorch itself: the zoo's archives are real torch.export files.

For every sample of `lowering-cli sample --list`, its variants and the bfloat16 Llama preset (at
a size CI can afford), as a user would use them:
  archive    `lowering-cli sample NAME -o sample.pt2`;
  upstream   torch.export.load(sample.pt2), to_edge, to_executorch (ExecuTorch's defaults), the
             .pte run by executorch.runtime;
  studio     `lowering-cli export sample.pt2` with the conformance configs `default` (the studio's
             planners) and `et_greedy` (ExecuTorch's greedy: the plan must match offset for offset),
             compared with upstream's file field by field and run on the same inputs
             (harness.compare_files: outputs bit-identical).
One line per sample and config; the last line is
  zoo: N identical, S same-shape, D differ, F failed of T
and the exit status is non-zero when one differs or fails, unless known_differences.txt gives
the reason (program names "zoo:<sample spec>").
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402  (the CLI, the runtime runner, the field-by-field comparison)

# Sample specs beyond the plain names: the variants users pick, and bfloat16 weights and
# activations (the llama3.2-1b preset's shapes, shrunk: its vocabulary and width would write
# gigabytes; bench_scale runs the full presets).
EXTRA_SPECS = [
    "llama --attention static",
    "llama --preset llama3.2-1b --layers 2 --dim 256 --heads 8 --kv-heads 2 --ffn 512 --vocab 512",
]
CONFIGS = ["default", "et_greedy"]

TORCH_DTYPES = {  # ExecuTorch's ScalarType codes
    0: "uint8", 1: "int8", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 11: "bool", 15: "bfloat16",
}


def inputs_for(pte: Path) -> dict:
    """Seeded inputs for every method, from the program's own input metadata."""
    import torch
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(pte))
    g = torch.Generator().manual_seed(0)
    out = {}
    for name in program.method_names:
        meta = program.metadata(name)
        xs = []
        for i in range(meta.num_inputs()):
            tm = meta.input_tensor_meta(i)
            dtype = getattr(torch, TORCH_DTYPES.get(tm.dtype(), "float32"))
            sizes = list(tm.sizes())
            if dtype.is_floating_point:
                xs.append(torch.randn(sizes, generator=g).to(dtype))
            else:  # token ids, positions: zeros are in range for every sample
                xs.append(torch.zeros(sizes, dtype=dtype))
        out[name] = tuple(xs)
    return out


def upstream(pt2: Path, out: Path) -> tuple[Path, list[Path]]:
    import executorch.kernels.quantized  # noqa: F401  (the quantized_decomposed out variants)
    import torch
    from executorch.exir import to_edge

    et = to_edge(torch.export.load(str(pt2))).to_executorch()
    out.mkdir(parents=True)
    (out / "model.pte").write_bytes(et.buffer)
    et.write_tensor_data_to_file(str(out))
    return out / "model.pte", sorted(out.glob("*.ptd"))


def first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:240]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(HERE.parents[1] / "build" / "zoo"))
    ap.add_argument("--only", nargs="*", help="sample specs (globs)")
    args = ap.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    known = harness.Known(HERE / "known_differences.txt")
    names = [line.split()[0] for line in harness.cli("sample", "--list").stdout.splitlines() if line.strip()]
    counts = {"identical": 0, "same-shape": 0, "differ": 0, "failed": 0}
    bad = []
    t0 = time.time()
    for spec in names + EXTRA_SPECS:
        if args.only and not any(fnmatch.fnmatchcase(spec, g) for g in args.only):
            continue
        d = work / spec.replace(" ", "_").replace("-", "")
        d.mkdir(parents=True)
        program = "zoo:" + spec
        results = []
        try:
            pt2 = d / "sample.pt2"
            harness.cli("sample", *spec.split(), "-o", str(pt2))
            up_pte, up_ptds = upstream(pt2, d / "upstream")
            inputs = inputs_for(up_pte)
            try:
                up_run = ("ok", harness.run_pte(up_pte, up_ptds, inputs))
            except Exception as e:  # noqa: BLE001
                up_run = ("error", harness.runtime_error(e))
            for cfg in CONFIGS:
                cfg_path = HERE / "configs" / f"{cfg}.json"
                sdir = d / cfg
                sdir.mkdir()
                try:
                    harness.cli("export", str(pt2), "--config", str(cfg_path), "-o", str(sdir / "model.pte"),
                                "--ptd-dir", str(sdir))
                    algorithms = json.loads(cfg_path.read_text()).get("memory_planning_pass", {}).get("algorithms")
                    results.append((cfg, *harness.compare_files(up_pte, up_ptds, sdir / "model.pte",
                                                                sorted(sdir.glob("*.ptd")), inputs, sdir, up_run,
                                                                algorithms == ["et-greedy"])))
                except harness.StudioError as e:
                    results.append((cfg, "failed", str(e)[:300]))
        except harness.StudioError as e:
            results = [(cfg, "failed", str(e)[:300]) for cfg in CONFIGS]
        except Exception as e:  # noqa: BLE001  (upstream refuses the studio's archive)
            results = [(cfg, "failed", f"upstream: {first_line(e)}") for cfg in CONFIGS]
        for cfg, result, detail in results:
            counts[result] += 1
            why = known.reason(program, cfg, "zoo") if result in ("differ", "failed") else None
            if result in ("differ", "failed") and not why:
                bad.append(f"{spec} [{cfg}]: {detail}")
            note = f"  known: {why}" if why else ""
            print(f"{spec:<40} {cfg:<10} {result:<10} {detail[:300]}{note}", flush=True)
    total = sum(counts.values())
    print(f"zoo: {counts['identical']} identical, {counts['same-shape']} same-shape, "
          f"{counts['differ']} differ, {counts['failed']} failed of {total} ({time.time() - t0:.0f} s)")
    for b in bad:
        print("  not documented: " + b, file=sys.stderr)
    return 1 if bad or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
