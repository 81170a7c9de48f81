"""Exported files: real torch.export archives lowered by the studio, run by ExecuTorch's runtime.

For every .pt2 given (files or directories of them), as a user would use it:
  reference  torch.export.load(file).module() on the archive's own example inputs;
  studio     `lowering-cli export FILE` (the studio's to_edge, then to_executorch), the .pte loaded
             and run by executorch.runtime on the same inputs.
Outputs must be close (float32 arithmetic in a different order: rtol 1e-5, atol 1e-6). A file
that is not an exported program (an AOTInductor package) must be refused by the studio with a
message that says so, exit 3. One line per file; the last line is
  exported: N agree, M differ of T
and the exit status is non-zero when one differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI = os.environ.get("LSTUDIO_CLI", str(HERE.parents[1] / "build" / "app" / "lowering-cli"))


def flat_tensors(x) -> list:
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in flat_tensors(item)]
    if isinstance(x, dict):
        return [t for k in sorted(x) for t in flat_tensors(x[k])]
    return []


def check(pt2: Path, work: Path) -> tuple[str, str | None]:
    """(what the file is, difference or None)."""
    import torch

    pte = work / (pt2.stem + ".pte")
    r = subprocess.run([CLI, "export", str(pt2), "-o", str(pte)], capture_output=True, text=True)
    try:
        ep = torch.export.load(str(pt2))
    except Exception as e:  # noqa: BLE001 (not an ExportedProgram: the studio must say so)
        if r.returncode == 3 and "AOTInductor package" in r.stderr:
            return "AOTInductor package, refused with its reason", None
        return "not an exported program", (f"torch cannot load it ({str(e).splitlines()[0][:120]}) and the studio "
                                           f"did not refuse it clearly (exit {r.returncode}: {r.stderr.strip()[:200]})")
    if r.returncode != 0:
        return "exported program", f"lowering-cli export exit {r.returncode}: {r.stderr.strip()[-400:]}"
    args, kwargs = ep.example_inputs or ((), {})
    if not args and not kwargs:
        return "exported program", "the archive has no example inputs to run it on"
    want = flat_tensors(ep.module()(*args, **kwargs))
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(str(pte)).load_method("forward")
    got = flat_tensors(method.execute(flat_tensors((args, kwargs))))
    if len(got) != len(want):
        return "exported program", f"{len(got)} outputs from the runtime, {len(want)} from eager"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return "exported program", f"output {i}: {g.dtype}{list(g.shape)} vs eager {w.dtype}{list(w.shape)}"
        if not torch.allclose(g, w, rtol=1e-5, atol=1e-6):
            return "exported program", f"output {i}: max difference {(g - w).abs().max().item():.3g}"
    ops = subprocess.run([CLI, "inspect", str(pte)], capture_output=True, text=True).stdout
    kernels = [line.strip() for line in ops.splitlines() if "x aten::" in line or "x dim_order_ops::" in line]
    return f"exported program, {len(want)} outputs equal to eager ({', '.join(kernels)})", None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help=".pt2 files or directories of them")
    args = ap.parse_args()
    files: list[Path] = []
    for f in map(Path, args.files):
        files += sorted(f.glob("*.pt2")) if f.is_dir() else [f]
    agree = differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for pt2 in files:
            what, diff = check(pt2, Path(tmp))
            if diff is None:
                agree += 1
                print(f"agree   {pt2.name}: {what}")
            else:
                differ += 1
                print(f"DIFFER  {pt2.name}: {what}: {diff}")
    print(f"exported: {agree} agree, {differ} differ of {agree + differ}")
    return 1 if differ or agree + differ == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
