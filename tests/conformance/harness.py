"""Conformance: the studio against ExecuTorch itself, program by program and config by config.

For every program of the corpus (corpus.py) and every config in configs/ (the studio's JSON):
  upstream  ExecuTorch's to_edge (or to_edge_transform_and_lower) and to_executorch under the
            config, built from the studio's own Copy as Python of that JSON (`lowering-cli config
            --python`), so both sides run one config by construction;
  aten      the studio's export of the program as torch.export.save writes it (package_pt2 for
            several methods): the studio runs to_edge itself, then to_executorch, under the
            config (programs upstream lowers with a partitioner have no such row);
  edge      the studio's export of the same edge program (the ETRecord upstream writes) under the
            same config;
  relower   the studio's export of upstream's .pte (+ .ptd) with no config: the file re-made
            under the config it was made with.
Each studio file is compared with upstream's: byte for byte (identical), then as flatc reads
both with upstream's own schema, then on a canonical form of that (values resolved by content:
same-shape), then both are run in executorch.runtime on the same inputs (outputs must be
bit-identical). A file whose content flatc reads as upstream's field for field must also be
upstream's byte for byte: the studio lays the flatbuffer out as upstream's packer does, so a
layout that differs is a difference.

One row per program x config x input; the last line is
  conformance: I identical, S same-shape, D differ, F failed of N
and the exit status is non-zero when a row differs or fails and known_differences.txt does not
list it with its reason.
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CLI = os.environ.get("LSTUDIO_CLI", str(HERE.parents[1] / "build" / "app" / "lowering-cli"))
FLATC = os.environ.get("FLATC") or shutil.which("flatc") or "flatc"


# ---------------------------------------------------------------------------------------------
# Reading a .pte / .ptd into a canonical form (neutral: upstream's schema, flatc, Python).

def executorch_schema_dir() -> Path:
    import executorch.exir._serialize as s

    return Path(s.__file__).parent


def flatc_json(path: Path, schema: Path, workdir: Path) -> dict:
    out = workdir / "flatc"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([FLATC, "--json", "--strict-json", "--raw-binary", "--defaults-json", "-o", str(out),
                    str(schema), "--", str(path)], check=True, capture_output=True)
    # flatc writes non-finite doubles as inf / -inf / nan; kept as strings so they compare equal.
    text = re.sub(r'(?<=[\s\[:,])(-?)inf(?=[\s,\]}])', r'"\1Infinity"', (out / (path.stem + ".json")).read_text())
    text = re.sub(r'(?<=[\s\[:,])-?nan(?=[\s,\]}])', '"NaN"', text)
    j = json.loads(text)
    (out / (path.stem + ".json")).unlink()
    return j


def pte_segment_base(raw: bytes) -> int:
    if len(raw) >= 32 and raw[8:12] == b"eh00":
        return struct.unpack_from("<Q", raw, 24)[0]
    return 0


SCALAR_BYTES = {"Byte": 1, "Char": 1, "Short": 2, "Int": 4, "Long": 8, "Half": 2, "Float": 4, "Double": 8,
                "Bool": 1, "QInt8": 1, "QUInt8": 1, "QInt32": 4, "BFloat16": 2, "UInt16": 2, "UInt32": 4,
                "UInt64": 8, "Bits16": 2, "Float8_e5m2": 1, "Float8_e4m3fn": 1}


def digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:16]


class PteView:
    """A .pte as flatc reads it with ExecuTorch's schema, values resolved by content."""

    def __init__(self, path: Path, workdir: Path, offsets: bool = True):
        self.path = path
        self.offsets = offsets  # False: planned tensors compare by mem_id only (another planner's plan)
        self.raw = path.read_bytes()
        self.j = flatc_json(path, executorch_schema_dir() / "program.fbs", workdir)
        self.base = pte_segment_base(self.raw)

    def segment(self, index: int) -> bytes:
        seg = self.j["segments"][index]
        start = self.base + int(seg["offset"])
        return self.raw[start:start + int(seg["size"])]

    def mutable(self, idx: int, nbytes: int) -> bytes:
        m = self.j["mutable_data_segments"][0]
        data = self.segment(int(m["segment_index"]))
        off = int(m["offsets"][idx])
        return data[off:off + nbytes]

    def constant(self, idx: int, nbytes: int) -> bytes:
        cs = self.j.get("constant_segment")
        if cs and cs.get("offsets"):
            data = self.segment(int(cs["segment_index"]))
            off = int(cs["offsets"][idx])
            return data[off:off + nbytes]
        return bytes(self.j["constant_buffer"][idx].get("storage", []))[:nbytes]

    def canon_value(self, plan: dict, i: int, depth: int = 0):
        if i < 0:
            return None
        v = plan["values"][i]
        kind, val = v.get("val_type", "NONE"), v.get("val", {})
        if kind == "Tensor":
            numel = 1
            for s in val.get("sizes", []):
                numel *= max(int(s), 0)
            t = {"dtype": val.get("scalar_type"), "sizes": val.get("sizes", []),
                 "dim_order": val.get("dim_order", []), "dyn": val.get("shape_dynamism"),
                 "requires_grad": val.get("requires_grad", False)}
            a = val.get("allocation_info")
            if a:
                t["alloc"] = (a.get("memory_id"), int(a.get("memory_offset_low", 0)) +
                              (int(a.get("memory_offset_high", 0)) << 32)) if self.offsets else (a.get("memory_id"),)
            idx = int(val.get("data_buffer_idx", 0))
            e = val.get("extra_tensor_info")
            nbytes = numel * SCALAR_BYTES.get(val.get("scalar_type"), 1)
            if idx and not (e and e.get("location") == "EXTERNAL"):
                # A planned tensor with data: an initial value in mutable_data_segments.
                t["data"] = digest(self.mutable(idx, nbytes) if a else self.constant(idx, nbytes))
            if e:
                t["extra"] = (e.get("location"), e.get("fully_qualified_name"), e.get("mutable_data_segments_idx"),
                              e.get("device_type"), e.get("device_index"))
            return ("T", json.dumps(t, sort_keys=True))
        if kind in ("Int", "Bool", "Double", "String"):
            return (kind, list(val.values())[0] if val else None)
        if kind in ("IntList",):
            # Boxed int lists hold value indices (ExecuTorch's emitter), resolve them.
            return (kind, tuple(self.canon_value(plan, int(x), depth + 1) for x in val.get("items", [])))
        if kind in ("TensorList", "OptionalTensorList"):
            return (kind, tuple(self.canon_value(plan, int(x), depth + 1) for x in val.get("items", [])))
        if kind in ("DoubleList", "BoolList"):
            return (kind, tuple(val.get("items", [])))
        return (kind,)

    def canon(self) -> dict:
        plans = {}
        for plan in self.j.get("execution_plan", []):
            ops = plan.get("operators", [])
            instrs = []
            for chain in plan.get("chains", []):
                for ins in chain.get("instructions", []):
                    kind, a = ins.get("instr_args_type"), ins.get("instr_args", {})
                    args = tuple(self.canon_value(plan, int(x)) for x in a.get("args", []))
                    if kind == "KernelCall":
                        op = ops[int(a["op_index"])]
                        instrs.append(("kernel", op["name"] + "." + op.get("overload", ""), args))
                    elif kind == "DelegateCall":
                        d = plan["delegates"][int(a["delegate_index"])]
                        specs = tuple((c["key"], digest(bytes(c.get("value", [])))) for c in d.get("compile_specs", []))
                        instrs.append(("delegate", d["id"], specs, self.delegate_blob(d), args))
                    elif kind == "JumpFalseCall":  # control flow: the values by content too
                        instrs.append(("jump_false", self.canon_value(plan, int(a.get("cond_value_index", 0))),
                                       int(a.get("destination_instruction", 0))))
                    elif kind == "MoveCall":
                        instrs.append(("move", self.canon_value(plan, int(a.get("move_from", 0))),
                                       self.canon_value(plan, int(a.get("move_to", 0)))))
                    else:
                        instrs.append((kind, json.dumps(a, sort_keys=True)))
            plans[plan["name"]] = {
                "inputs": [self.canon_value(plan, int(i)) for i in plan.get("inputs", [])],
                "outputs": [self.canon_value(plan, int(i)) for i in plan.get("outputs", [])],
                "instructions": instrs,
                "arenas": [int(x) for x in plan.get("non_const_buffer_sizes", [])],
                "arena_devices": plan.get("non_const_buffer_device", []),
                "container": plan.get("container_meta_type", {}),
            }
        named = {}
        for nd in self.j.get("named_data", []):
            named[nd["key"]] = digest(self.segment(int(nd["segment_index"])))
        return {"methods": plans, "method_order": [p["name"] for p in self.j.get("execution_plan", [])],
                "named_data": named}

    def delegate_blob(self, d: dict) -> str:
        p = d.get("processed", {})
        if p.get("location") == "SEGMENT":
            return digest(self.segment(int(p.get("index", 0))))
        return digest(bytes(self.j["backend_delegate_data"][int(p.get("index", 0))].get("data", [])))


def ptd_canon(path: Path, workdir: Path) -> dict:
    import executorch.extension.flat_tensor.serialize as fts

    raw = path.read_bytes()
    j = flatc_json(path, Path(fts.__file__).parent / "flat_tensor.fbs", workdir)
    base = struct.unpack_from("<Q", raw, 8 + 24)[0] if raw[8:12] == b"FH01" else 0
    out = {}
    for nd in j.get("named_data", []):
        seg = j["segments"][int(nd["segment_index"])]
        start = base + int(seg["offset"])
        out[nd["key"]] = (json.dumps(nd.get("tensor_layout", {}), sort_keys=True),
                          digest(raw[start:start + int(seg["size"])]))
    return out


def first_difference(a, b, path="") -> str:
    if type(a) != type(b):
        return f"{path}: {str(a)[:160]} vs {str(b)[:160]}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'upstream' if k in a else 'studio'}"
            if a[k] != b[k]:
                return first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    return first_difference(x, y, f"{path}[{i}]") + f" (length {len(a)} vs {len(b)})"
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {str(a)[:160]} vs {str(b)[:160]}"


# ---------------------------------------------------------------------------------------------
# Running in ExecuTorch's runtime.

class Runner:
    """executorch.runtime in a child process of its own: a file that makes the runtime abort (its
    asserts end the process) is reported as a crash and the next file gets a new child."""

    def __init__(self):
        self.proc = None

    def run(self, pte: Path, ptds: list[Path], inputs: dict, etdump: tuple | None = None) -> dict:
        """Each method's outputs; with `etdump` = (ETDUMP, DEBUG_BUFFER), the one method in
        `inputs` runs twice with ETDump on, intermediate outputs logged, and both are written."""
        import torch

        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, __file__, "--runner"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)
        request = pte.parent / (pte.stem + ".request.pt")
        torch.save((str(pte), [str(p) for p in ptds], inputs, etdump), request)
        self.proc.stdin.write(str(request) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.wait()
                self.proc = None
                raise RuntimeError(f"executorch.runtime crashed (exit {code})")
            if line.startswith("RESULT "):
                break
        kind, value = torch.load(line[len("RESULT "):].strip(), weights_only=False)
        if kind == "error":
            raise RuntimeError(value)
        return value


def runner_main() -> int:
    """--runner: run the requests named on stdin, one per line; answer `RESULT <file>`."""
    import torch

    for line in sys.stdin:
        request = Path(line.strip())
        pte, ptds, inputs, etdump = torch.load(request, weights_only=False)
        result = request.with_suffix(".result.pt")
        try:
            torch.save(("ok", _run_pte_here(Path(pte), [Path(p) for p in ptds], inputs, etdump)), result)
        except Exception as e:  # noqa: BLE001 (reported to the harness)
            torch.save(("error", f"{type(e).__name__}: {str(e).strip()}"), result)
        print("RESULT " + str(result), flush=True)
    return 0


RUNNER = Runner()


def run_pte(pte: Path, ptds: list[Path], inputs: dict) -> dict:
    return RUNNER.run(pte, ptds, inputs)


ETDUMP_DEBUG_BUFFER = 32 << 20  # bytes the runtime may log intermediate outputs into


def etdump_pte(pte: Path, ptds: list[Path], method: str, inputs: tuple, etdp: Path, debug: Path, plain: Path) -> list:
    """Runs `method` twice in executorch.runtime with ETDump on and its intermediate outputs
    logged, writing the ETDump to `etdp` and the debug buffer to `debug`; then once more with
    ETDump on and nothing logged, writing that ETDump to `plain`. The outputs."""
    return RUNNER.run(pte, ptds, {method: inputs}, (str(etdp), str(debug), str(plain)))[method]


def _run_pte_here(pte: Path, ptds: list[Path], inputs: dict, etdump: tuple | None = None) -> dict:
    import executorch.kernels.quantized  # noqa: F401  (registers the quantized_decomposed kernels)
    from executorch.runtime import Runtime

    rt = Runtime.get()
    if len(ptds) > 1:
        raise RuntimeError("executorch.runtime loads one .ptd per program; this one has %d" % len(ptds))
    if etdump:
        (name, xs), = inputs.items()
        etdp, debug, plain = etdump
        # Two executions with intermediate outputs logged, then one without (no debug buffer).
        for path, debug_size, runs in ((etdp, ETDUMP_DEBUG_BUFFER, 2), (plain, 0, 1)):
            prog = rt.load_program(str(pte), data_path=str(ptds[0]) if ptds else None, enable_etdump=True,
                                   debug_buffer_size=debug_size)
            m = prog.load_method(name)
            outs = {name: [list(m.execute(list(xs))) for _ in range(runs)][-1]}
            prog.write_etdump_result_to_file(path, debug if debug_size else str(path) + ".unused")
        return outs
    prog = rt.load_program(str(pte), data_path=str(ptds[0]) if ptds else None)
    outs = {}
    # The entry's methods in its order (prefill before decode: they share state), then the getters.
    names = [n for n in inputs if n in prog.method_names] + sorted(n for n in prog.method_names if n not in inputs)
    for name in names:
        m = prog.load_method(name)
        outs[name] = list(m.execute(list(inputs.get(name, ()))))
    return outs


def refused_alike(studio_error: str, up_run) -> bool:
    """Whether the studio's export refused the program for the reason ExecuTorch's runtime refuses
    upstream's own file: an operator no kernel library registers (0x14 at load), a kernel's check
    (0x12). The studio names the rule before writing; the runtime fails the file."""
    if up_run[0] != "error" or "ExecuTorch's runtime would refuse" not in studio_error:
        return False
    code = "14" if "OperatorMissing, 0x14" in studio_error else "12" if "0x12" in studio_error else None
    # The runtime writes its error as "0x14" or, loading a method, "0x:14".
    return code is not None and (f"0x{code}" in up_run[1] or f"0x:{code}" in up_run[1])


def runtime_error(e: Exception) -> str:
    """The runtime's refusal as one comparable line (its last)."""
    return (str(e).strip().splitlines() or [type(e).__name__])[-1][:300]


def bit_equal(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and \
            a.reshape(-1).contiguous().view(torch.uint8).equal(b.reshape(-1).contiguous().view(torch.uint8))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(bit_equal(x, y) for x, y in zip(a, b))
    return a == b


def numerics_difference(up: dict, st: dict) -> str | None:
    if sorted(up) != sorted(st):
        return f"methods {sorted(up)} vs {sorted(st)}"
    for name in up:
        if len(up[name]) != len(st[name]):
            return f"{name}: {len(up[name])} outputs vs {len(st[name])}"
        for i, (a, b) in enumerate(zip(up[name], st[name])):
            if not bit_equal(a, b):
                return f"{name} output {i} differs"
    return None


# ---------------------------------------------------------------------------------------------
# The studio's side.

# How far apart two plans of one program may run in ExecuTorch's runtime, in units in the last
# place of the outputs' largest magnitude, when the studio's interpreter shows they compute the
# same values (alignment_rounding): interpreter.py's bound between the interpreter and the
# runtime's optimized kernels. An ULP at one bmm grows through the layers after it (the zoo
# llama with studio_memory_aware_order: 1.07e-06, 18 ULP).
ALIGNMENT_ULP = 64


def alignment_rounding(a: Path, a_ptds: list[Path], b: Path, b_ptds: list[Path], inputs: dict,
                       a_out: dict, b_out: dict, work: Path) -> str | None:
    """None when two files of one program that ExecuTorch's runtime ran apart differ only as its
    optimized kernels round by where their operands lie: on an AVX-512 machine its bmm gives
    other last bits for operands at 16 mod 64 bytes than at multiples of 64, so two valid plans
    can part by an ULP. The studio's interpreter computes each value one way wherever it lies
    (and a plan that overlaps live tensors gives it wrong numbers): it must give both files
    bit-identical outputs on the same inputs, and the runtime's outputs must be within
    ALIGNMENT_ULP. Else what differs."""
    import numpy as np
    import torch

    work.mkdir(parents=True, exist_ok=True)
    for method, xs in inputs.items():
        npys = []
        for k, x in enumerate(xs):
            if not isinstance(x, torch.Tensor):
                return f"{method}: a non-tensor input; the interpreter cannot confirm the two files alike"
            npys.append(str(work / f"{method}_input_{k}.npy"))
            np.save(npys[-1], x.numpy())
        sums = []
        for pte, ptds in ((a, a_ptds), (b, b_ptds)):
            r = cli("run", str(pte), "--method", method, "--json", "--inputs", *npys,
                    *[x for p in ptds for x in ("--ptd", str(p))], check=False)
            if r.returncode != 0:
                return f"{method}: the interpreter cannot run {pte.name}: {r.stderr.strip()[-200:]}"
            sums.append([o.get("fnv1a64") for o in json.loads(r.stdout)["outputs"]])
        if sums[0] != sums[1]:
            return f"{method}: the interpreter gives the two files different outputs"
        for i, (x, y) in enumerate(zip(a_out[method], b_out[method])):
            if bit_equal(x, y):
                continue
            if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point or x.shape != y.shape:
                return f"{method} output {i} differs"
            scale = x.double().abs().max().item()
            ulp = float(np.spacing(np.float32(scale))) if x.dtype == torch.float32 else float(np.spacing(np.float64(scale)))
            d = (x.double() - y.double()).abs().max().item()
            if not ulp or d > ALIGNMENT_ULP * ulp:
                return f"{method} output {i} differs ({d:.3g}, more than {ALIGNMENT_ULP} ULP)"
    return None


def cli(*args: str, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([CLI, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise StudioError(f"lowering-cli {args[0]} exit {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}")
    return r


class StudioError(Exception):
    pass


def plan_alignment_lost(cfg: Path, relowered: Path, work: Path) -> str | None:
    """Re-lowering a file planned with MemoryPlanningPass(alignment=N) must keep N: the studio
    reads it off the stored plan (its offsets and arenas), as the file does not store it. Its
    arenas may be smaller than upstream's, so compare_files alone does not see a plan redone
    at 16; a planned offset that is not a multiple of N does."""
    wanted = json.loads(cfg.read_text()).get("memory_planning_pass", {}).get("alignment", 16)
    if wanted <= 16:
        return None
    for plan in PteView(relowered, work).j.get("execution_plan", []):
        for i, v in enumerate(plan.get("values", [])):
            info = (v.get("val") or {}).get("allocation_info") if v.get("val_type") == "Tensor" else None
            if info is not None:
                offset = int(info.get("memory_offset_low", 0)) + (int(info.get("memory_offset_high", 0)) << 32)
                if offset % wanted:
                    return (f"re-lowered {plan['name']} value {i} at offset {offset}, not a multiple of the "
                            f"alignment {wanted} upstream's file was planned with")
    return None


def upstream_config(config_json: Path, edge, name: str = "config"):
    """ExecuTorch's config from the studio's Copy as Python of the JSON: `config` (the
    ExecutorchBackendConfig for edge.to_executorch) or `edge_compile_config` (to_edge's)."""
    text = cli("config", "--config", str(config_json), "--python").stdout
    scope = {"edge": edge}
    exec(compile(text, f"<lowering-cli config --python {config_json.name}>", "exec"), scope)
    return scope[name]


# ---------------------------------------------------------------------------------------------

class Known:
    """known_differences.txt: `program config input  reason`, globs allowed."""

    def __init__(self, path: Path):
        self.rules = []
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            prog, cfg, inp, reason = line.split(None, 3)
            self.rules.append((prog, cfg, inp, reason))
        self.used = set()

    def reason(self, prog: str, cfg: str, inp: str) -> str | None:
        for i, (p, c, n, reason) in enumerate(self.rules):
            if fnmatch.fnmatchcase(prog, p) and fnmatch.fnmatchcase(cfg, c) and fnmatch.fnmatchcase(inp, n):
                self.used.add(i)
                return reason
        return None


def compare_files(up_pte: Path, up_ptds: list[Path], st_pte: Path, st_ptds: list[Path], inputs, work: Path,
                  up_run, exact_plan: bool) -> tuple[str, str]:
    """('identical'|'same-shape'|'differ', detail).

    identical: the .pte and .ptd files are upstream's byte for byte. Where the content as flatc
    reads it with ExecuTorch's schema is equal field for field (value numbering and offsets
    included, and the .ptd files') but the bytes are not, the row differs: upstream packs the
    flatbuffer with flatbuffers' Python object API and the studio must lay it out the same way.

    Normalizations (the documented list): with exact_plan False the studio planned with its own
    planners (its default suite), so planned tensors compare by mem_id, not offset, and each arena
    must be no larger than upstream's; and the outputs may part by ALIGNMENT_ULP where the
    studio's interpreter runs both files alike (alignment_rounding: the runtime's optimized
    kernels round by where their operands lie). Nothing else is normalized: values compare by content
    (dtype, sizes, dim order, allocation, constant bytes), so value numbering may differ.

    up_run is ("ok", outputs) or ("error", message) from running upstream's own file: where
    ExecuTorch's runtime refuses its own file, the studio's must be refused with the same error."""
    same_bytes = up_pte.read_bytes() == st_pte.read_bytes() and \
        sorted(p.name for p in up_ptds) == sorted(p.name for p in st_ptds) and \
        all(a.read_bytes() == (st_pte.parent / a.name).read_bytes() for a in up_ptds if (st_pte.parent / a.name).exists())
    if same_bytes:  # upstream's own files: its run (outputs or refusal) is theirs too
        return "identical", ""
    structure = None
    va, vb = PteView(up_pte, work, exact_plan), PteView(st_pte, work, exact_plan)
    a, b = va.canon(), vb.canon()
    same_content = va.j == vb.j and [va.segment(i) for i in range(len(va.j.get("segments", [])))] == \
        [vb.segment(i) for i in range(len(vb.j.get("segments", [])))]
    if not exact_plan:
        for name in set(a["methods"]) & set(b["methods"]):
            ua, sa = a["methods"][name].pop("arenas"), b["methods"][name].pop("arenas")
            if len(ua) != len(sa) or any(x < y for x, y in zip(ua, sa)):
                structure = f".methods.{name}.arenas: {ua} upstream, {sa} studio (the studio's may not be larger)"
    if structure is None and a != b:
        structure = first_difference(a, b)
    elif structure is None:
        pa = {p.name: ptd_canon(p, work) for p in up_ptds}
        pb = {p.name: ptd_canon(p, work) for p in st_ptds}
        if pa != pb:
            structure = "ptd" + first_difference(pa, pb)
        else:  # the same entries: the bytes must be upstream's too (flatc's layout of its JSON)
            for p in up_ptds:
                mine = st_pte.parent / p.name
                if mine.exists() and mine.read_bytes() != p.read_bytes():
                    structure = f"{p.name}: the same entries laid out differently from upstream's"
        same_content = same_content and sorted(p.name for p in up_ptds) == sorted(p.name for p in st_ptds) and \
            all(a.read_bytes() == (st_pte.parent / a.name).read_bytes() for a in up_ptds)
    up_kind, up_value = up_run
    aligned = False
    try:
        st_outputs = run_pte(st_pte, st_ptds, inputs)
        if up_kind == "ok":
            numerics = numerics_difference(up_value, st_outputs)
            if numerics and not exact_plan:  # another plan: the runtime may round by alignment
                numerics = alignment_rounding(up_pte, up_ptds, st_pte, st_ptds, inputs, up_value, st_outputs,
                                              work / "alignment")
                aligned = numerics is None
        else:
            numerics = f"the studio's file runs where ExecuTorch's own is refused ({up_value})"
    except Exception as e:  # the runtime refused the studio's file
        st_error = runtime_error(e)
        if up_kind == "error" and st_error == up_value:
            numerics = None  # refused alike: the same program, the same runtime limit
        else:
            numerics = f"runtime refused the studio's file: {st_error}"
    if structure is None and numerics is None:
        if not same_content:
            return "same-shape", "outputs apart only as the runtime rounds by alignment, the interpreter alike" \
                if aligned else ""
        ua, sb = up_pte.read_bytes(), st_pte.read_bytes()
        at = next((i for i in range(min(len(ua), len(sb))) if ua[i] != sb[i]), min(len(ua), len(sb)))
        return "differ", (f"the same program laid out differently: {len(ua)} bytes upstream, {len(sb)} studio, "
                          f"first difference at byte {at}")
    return "differ", "; ".join(x for x in (structure, numerics) if x)


def save_aten_program(programs: dict, path: Path) -> None:
    """The exported programs as a user saves them: torch.export.save for one method; a PT2
    archive with one model per method for several (torch.export's package_pt2)."""
    import torch
    if list(programs) == ["forward"]:
        torch.export.save(programs["forward"], str(path))
        return
    from torch.export.pt2_archive._package import package_pt2
    package_pt2(str(path), exported_programs=programs)


def run_program(entry, configs: list[Path], work: Path, emit) -> None:
    """Every row of one corpus program; emit(config, input, result, detail, seconds) reports each."""
    import corpus
    from executorch.devtools import generate_etrecord

    pdir = work / entry.name
    pdir.mkdir()
    try:
        inputs = entry.inputs()
        base_edge = corpus.to_edge_program(entry)
    except Exception as e:
        for cfg in configs:
            emit(cfg.stem, "-", "failed", f"upstream export failed: {str(e).strip()[:300]}", 0.0)
        return
    # The studio's inputs: the program as torch.export.save writes it (the studio runs to_edge
    # itself), and the edge program as upstream's ETRecord holds it.
    aten, aten_error = pdir / "aten.pt2", None
    if entry.lower != "edge":
        aten_error = "not compared: upstream lowers this program with a partitioner (to_edge_transform_and_lower)"
    else:
        try:
            save_aten_program(entry.export(), aten)
        except Exception as e:
            aten_error = f"torch.export.save cannot write this program: {str(e).strip().splitlines()[0][:200]}"
    def write_etrecord(edge, path: Path):
        """The studio's input: the edge program as upstream's ETRecord holds it (None, or why not)."""
        try:
            generate_etrecord(str(path), copy.deepcopy(edge), copy.deepcopy(edge).to_executorch())
            return None
        except Exception as e:
            return f"ExecuTorch cannot write this edge program as an ETRecord: {str(e).strip().splitlines()[0][:200]}"

    base_etrecord = pdir / "etrecord.bin"
    base_etrecord_error = write_etrecord(base_edge, base_etrecord)
    from executorch.exir import EdgeCompileConfig
    for cfg in configs:
        cdir = pdir / cfg.stem
        (cdir / "upstream").mkdir(parents=True)
        t0 = time.time()
        # Upstream. to_executorch edits its EdgeProgramManager in place: each config gets a copy.
        try:
            # A config with its own EdgeCompileConfig gets its own to_edge (and ETRecord).
            # (The script builds both configs; a tagging rule reads the edge program's signatures.)
            edge_compile_config = upstream_config(cfg, base_edge, "edge_compile_config")
            etrecord, etrecord_error = base_etrecord, base_etrecord_error
            if edge_compile_config != EdgeCompileConfig():
                edge = corpus.to_edge_program(entry, edge_compile_config)
                etrecord = cdir / "etrecord.bin"
                etrecord_error = write_etrecord(edge, etrecord)
            else:
                edge = copy.deepcopy(base_edge)
            config = upstream_config(cfg, edge)
            et = edge.to_executorch(config)
            up_pte = cdir / "upstream" / "model.pte"
            up_pte.write_bytes(et.buffer)
            et.write_tensor_data_to_file(str(cdir / "upstream"))
            up_ptds = sorted((cdir / "upstream").glob("*.ptd"))
        except StudioError as e:
            emit(cfg.stem, "-", "failed", str(e), time.time() - t0)
            continue
        except Exception as e:
            msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            emit(cfg.stem, "-", "failed", f"upstream refuses: {msg}", time.time() - t0)
            continue
        try:
            up_run = ("ok", run_pte(up_pte, up_ptds, inputs))
        except Exception as e:
            up_run = ("error", runtime_error(e))
            print(f"  note: {entry.name} {cfg.stem}: upstream's own file does not run: {up_run[1]}",
                  file=sys.stderr)
        t_up = time.time() - t0
        # The studio, from the same edge program, and re-lowering upstream's file.
        algorithms = json.loads(cfg.read_text()).get("memory_planning_pass", {}).get("algorithms")
        for inp, source, extra, exact_plan in (
                ("aten", aten, ["--config", str(cfg)], algorithms == ["et-greedy"]),
                ("edge", etrecord, ["--config", str(cfg)], algorithms == ["et-greedy"]),
                ("relower", up_pte, [a for p in up_ptds for a in ("--ptd", str(p))], False)):
            t1 = time.time()
            sdir = cdir / inp
            sdir.mkdir()
            if inp == "edge" and etrecord_error:
                emit(cfg.stem, inp, "failed", etrecord_error, 0.0)
                continue
            if inp == "aten" and aten_error:
                if entry.lower == "edge":
                    emit(cfg.stem, inp, "failed", aten_error, 0.0)
                continue
            try:
                cli("export", str(source), *extra, "-o", str(sdir / "model.pte"), "--ptd-dir", str(sdir))
                st_ptds = sorted(sdir.glob("*.ptd"))
                result, detail = compare_files(up_pte, up_ptds, sdir / "model.pte", st_ptds, inputs, sdir,
                                               up_run, exact_plan)
                if inp == "relower" and result != "differ" and (lost := plan_alignment_lost(cfg, sdir / "model.pte", sdir)):
                    result, detail = "differ", lost
                emit(cfg.stem, inp, result, detail, time.time() - t1 + t_up)
            except StudioError as e:
                if refused_alike(str(e), up_run):
                    emit(cfg.stem, inp, "same-shape", "refused alike: ExecuTorch's runtime refuses upstream's own file "
                         f"({up_run[1]}), the studio's export refuses the program for that reason", time.time() - t1)
                else:
                    emit(cfg.stem, inp, "failed", str(e), time.time() - t1)
            except Exception as e:
                emit(cfg.stem, inp, "failed", f"harness: {type(e).__name__}: {e}"[:400], time.time() - t1)
                traceback.print_exc()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(HERE.parents[1] / "build" / "conformance"))
    ap.add_argument("--only", nargs="*", help="program names (globs)")
    ap.add_argument("--configs", nargs="*", help="config names (globs)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: run the listed programs, rows as JSON lines
    ap.add_argument("--runner", action="store_true", help=argparse.SUPPRESS)  # internal: see Runner
    args = ap.parse_args()
    if args.runner:
        return runner_main()

    import corpus

    work = Path(args.work)
    configs = sorted((HERE / "configs").glob("*.json"))
    if args.configs:
        configs = [c for c in configs if any(fnmatch.fnmatchcase(c.stem, g) for g in args.configs)]
    if args.worker is not None:
        names = args.worker.split(",")
        for entry in (e for e in corpus.CORPUS if e.name in names):
            def emit(cfg, inp, result, detail, seconds, name=entry.name):
                print("ROW " + json.dumps({"program": name, "config": cfg, "input": inp, "result": result,
                                           "detail": detail, "seconds": round(seconds, 3)}), flush=True)
            run_program(entry, configs, work, emit)
        return 0

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    entries = [e for e in corpus.CORPUS if not args.only or any(fnmatch.fnmatchcase(e.name, g) for g in args.only)]
    known = Known(HERE / "known_differences.txt")
    counts = {"identical": 0, "same-shape": 0, "differ": 0, "failed": 0}
    rows, undocumented = [], 0
    t_start = time.time()

    # Programs dealt round-robin to worker processes (the oracle's Python is single-threaded).
    jobs = max(1, min(args.jobs, len(entries)))
    shards = [[e.name for e in entries[i::jobs]] for i in range(jobs)]
    cmd = [sys.executable, __file__, "--work", str(work)] + (["--configs", *args.configs] if args.configs else [])
    procs = [subprocess.Popen(cmd + ["--worker", ",".join(s)], stdout=subprocess.PIPE, text=True) for s in shards if s]
    import selectors
    sel = selectors.DefaultSelector()
    for p in procs:
        sel.register(p.stdout, selectors.EVENT_READ)
    print(f"{'program':28} {'config':24} {'input':8} result", flush=True)
    open_streams = len(procs)
    while open_streams:
        for key, _ in sel.select():
            line = key.fileobj.readline()
            if not line:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if not line.startswith("ROW "):
                continue
            r = json.loads(line[4:])
            bad = r["result"] in ("differ", "failed")
            r["documented"] = known.reason(r["program"], r["config"], r["input"]) if bad else None
            undocumented += bad and r["documented"] is None
            counts[r["result"]] += 1
            rows.append(r)
            mark = "" if not bad else ("  [documented: %s]" % r["documented"] if r["documented"] else "  [NEW]")
            print(f"{r['program']:28} {r['config']:24} {r['input']:8} {r['result']:10} {r['detail'][:300]}{mark}",
                  flush=True)
    failed_workers = [p.args[-1] for p in procs if p.wait() != 0]
    for w in failed_workers:
        print(f"error: the worker for {w} stopped with an error")
    n = sum(counts.values())
    for i, r in enumerate(known.rules):  # only a whole run can tell a line is no longer needed
        if i not in known.used and not args.only and not args.configs:
            print(f"note: known_differences.txt line no longer needed: {' '.join(r[:3])}")
    print(f"time: {time.time() - t_start:.0f} s for {len(entries)} programs x {len(configs)} configs")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"conformance: {counts['identical']} identical, "
          f"{counts['same-shape']} same-shape, {counts['differ']} differ, {counts['failed']} failed of {n}"
          + (f" ({undocumented} not documented)" if undocumented else ""))
    return 1 if undocumented or failed_workers or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
