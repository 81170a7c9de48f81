"""The studio's interpreter (`lowering-cli run`) against ExecuTorch's runtime, output for output.

Every .pte ExecuTorch wrote for the conformance corpus under the default config (the harness's
work folder, --from), those its run_reinplace_pass config changed, the one-operator programs of
decompositions.py (--decompositions; each must run) and every .pte of the fixtures runs twice on the same iota inputs (element i of a floating input (i % 7) * 0.25 - 0.5,
of an integer input i % 5, of a bool input i % 2): in the studio's interpreter, which saves its
outputs as .npy, and in executorch.runtime. Integer and bool outputs must be equal; floating
outputs may differ by at most MAX_ULP units in the last place of the output's largest magnitude
(the runtime's optimized kernels sum in another order; measured against the largest magnitude so
that a value near zero is not held to its own, much finer, spacing). A program the interpreter
cannot run (an operator without a kernel, a delegate call it has no program for, a non-tensor
input) is listed with the reason; the programs in MUST_RUN must run and agree. A corpus program
that calls a delegate runs through the program its backend was given, which the harness's
ETRecord keeps (see compare_delegated). One line per program, then
  interpreter: A agree (B bit-identical), N not runnable of T; worst ULP W (PROGRAM)
and the exit status is non-zero when a program that runs disagrees or a MUST_RUN one cannot run.

Each corpus program's ATen .pt2 is also lowered by the studio itself, under the default config
and with run_reinplace_pass, and run after every pass from to_edge's conversion on
(`--compare-to`): no pass may change a node's values, and the numbers must agree with the
runtime's for upstream's default-config .pte as above.

Each program ExecuTorch's runtime runs is also run with ETDump on, twice, its intermediate outputs
logged into a debug buffer (and once more with nothing logged, whose ETDump must link alike with
no values), and `lowering-cli etdump` reads the ETDump beside the .pte: every
instruction's call time in each execution and every event inside a delegate call must equal what
ExecuTorch's own ETDump parser (executorch.devtools.etdump.serialize) reads, and every value the
runtime logged must agree with the studio's interpreter at that instruction within MAX_ULP (equal
for integers); a program the interpreter cannot run (a delegate call) is checked for its timings.

Each corpus .pt2 the studio lowers also runs on the example inputs torch.export.save kept in it
(`--inputs sample`): its outputs must be eager PyTorch's (the exported module run by torch on
the same inputs) within MAX_ULP.

Then the edge values (EDGE_CASES): small programs exported here and run on chosen inputs given
to the studio as .npy files (`--inputs`): casts of NaN, infinities and out-of-range floats to
every integer type and to half and bfloat16, integer and float division with negative operands,
wrapping integer arithmetic. Their outputs must be bit-identical to the runtime's; where the
runtime refuses the inputs (an integer division by zero), the studio must refuse them too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402
from zoo import TORCH_DTYPES  # noqa: E402

MAX_ULP = 64
# What the interpreter runs today; each must keep running and agreeing.
MUST_RUN = {"batch_matmul", "cat_stack_split", "cond", "constant_buffers", "conv1d_pool", "dynamic_batch",
            "mlp_xnnpack", "conv_xnnpack", "quantized_linear_xnnpack", "quantized_conv_xnnpack", "dynamic_quant_xnnpack",
            "dynamic_quant_pt2e",
            "dynamic_derived", "elementwise_mixed", "embedding", "index_put", "llama_kv", "llama_static", "lstm", "mlp",
            "mobilenet_v2", "prefill_decode", "quantized_linear_pt2e", "resnet18", "resnet_block",
            "softmax_logsoftmax", "training", "transformer_encoder", "views", "vit_tiny"} | {"fixture:" + f for f in (
                "add", "arduino_AddModel_model", "berry_id", "berry_two", "djl_dtypes", "djl_med_output", "dnf",
                "djl_priced", "numpyrt_const_methods", "numpyrt_multi", "optest_maxpool2d_pte__maxpool2d",
                "optest_softmax_pte__softmax", "rs_data_map_model", "rs_hello_world_add_model")}


def iota_inputs(pte: Path, ptds: list[Path]) -> dict:
    import torch
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(pte), data_path=str(ptds[0]) if ptds else None)
    out = {}
    for name in program.method_names:
        meta = program.metadata(name)
        xs = []
        for i in range(meta.num_inputs()):
            tm = meta.input_tensor_meta(i)  # raises for a non-tensor input
            dtype = getattr(torch, TORCH_DTYPES.get(tm.dtype(), "float32"))
            sizes = list(tm.sizes())
            n = 1
            for s in sizes:
                n *= s
            idx = torch.arange(n, dtype=torch.int64)
            if dtype.is_floating_point:
                x = ((idx % 7).to(torch.float64) * 0.25 - 0.5).to(dtype)
            elif dtype == torch.bool:
                x = (idx % 2).to(torch.bool)
            else:
                x = (idx % 5).to(dtype)
            xs.append(x.reshape(sizes))
        out[name] = tuple(xs)
    return out


def ulp_distance(studio, upstream) -> float:
    """Largest difference between two float tensors of equal shape, in units in the last place of
    upstream's largest finite magnitude (in its dtype); NaN against a number is infinitely far."""
    import numpy as np
    import torch

    if upstream.numel() == 0:
        return 0.0
    a, b = studio.double(), upstream.double()
    if (torch.isnan(a) != torch.isnan(b)).any() or (torch.isinf(a) & (a != b)).any():
        return float("inf")
    finite = torch.isfinite(b)
    scale = b[finite].abs().max().item() if finite.any() else 0.0
    np_type = {torch.float64: np.float64, torch.float16: np.float16}.get(upstream.dtype, np.float32)
    ulp = float(np.spacing(np_type(scale)))
    d = (a - b)[finite].abs().max().item() if finite.any() else 0.0
    return d / ulp


DELEGATED = {"runs": 0, "pte": [], "etrecord": [], "dynamic": 0.0}  # delegate calls run through their original programs
DYNAMIC_QUANT_TOLERANCE = 0.01


def delegate_output_steps(etrecord: Path) -> list:
    """Per output of the ETRecord's forward edge program, when a delegate's original program
    ends it with a dequantize: that quantization step (the output's scale); when it quantizes
    its activations at run time (choose_qparams): "dynamic"; else None."""
    import zipfile

    z = zipfile.ZipFile(etrecord)
    name = "edge_dialect_exported_program/forward"
    program = json.loads(z.read(name if name in z.namelist() else "edge_dialect_exported_program"))
    graph = program["graph_module"]["graph"]
    steps_of = {}  # getitem name -> step
    for n in graph["nodes"]:
        if not n["target"].endswith("executorch_call_delegate"):
            continue
        original = json.loads(n["inputs"][0]["arg"]["as_string"])["original_module"]["graph_module"]["graph"]
        producer = {o["as_tensor"]["name"]: m for m in original["nodes"] for o in m["outputs"] if "as_tensor" in o}
        dynamic = any("choose_qparams" in m["target"] for m in original["nodes"])
        results = [o for out in n["outputs"] for o in (out.get("as_tensors") or [out.get("as_tensor")]) if o]
        for r, out in zip(results, original["outputs"]):
            m = producer.get(out.get("as_tensor", {}).get("name"))
            scale = None
            if m is not None and "dequantize_per_tensor" in m["target"]:
                scale = next((a["arg"].get("as_float") for a in m["inputs"] if a["name"] == "scale"), None)
            steps_of[r["name"]] = scale or ("dynamic" if dynamic else None)
    return [steps_of.get(o.get("as_tensor", {}).get("name")) for o in graph["outputs"]]


def compare(pte: Path, ptds: list[Path], work: Path, cli: Path, etrecord: Path | None = None) -> tuple[str, str, int]:
    """(result, detail, worst ulp): result 'bit-identical', 'agree', 'differ' or 'not runnable'.
    A program that calls a delegate, with the ETRecord written with it, runs once more linked to
    it (`--etrecord`: each call through the program its backend was given) and once from the
    ETRecord itself (the studio lowers its edge program): both against the runtime's outputs,
    which XNNPACK computed."""
    out_dir = work / "outputs"
    cmd = [str(cli), "run", str(pte), "--save-outputs", str(out_dir), "--json"] + \
        [a for p in ptds for a in ("--ptd", str(p))]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 5 and "delegate" in p.stderr and etrecord and etrecord.exists():
        return compare_delegated(pte, ptds, work, cli, etrecord, cmd)
    if "open its .ptd" in p.stderr and not ptds:  # the fixtures keep data files in ../ptd
        for cand in sorted((pte.parent.parent / "ptd").glob("*.ptd")):
            q = subprocess.run(cmd + ["--ptd", str(cand)], capture_output=True, text=True)
            if "open its .ptd" not in q.stderr and "missing" not in q.stderr.lower() and q.returncode != 3:
                p, ptds = q, [cand]
                break
    if p.returncode == 5 and ("no kernel for" in p.stderr or "delegate" in p.stderr):
        reason = p.stderr.strip().splitlines()[-1].split("found ")[-1][:200]
        if "delegate" in p.stderr and "no kernel for" not in p.stderr:  # the runtime's timings still link
            try:
                inputs = iota_inputs(pte, ptds)
            except Exception:  # noqa: BLE001
                return "not runnable", reason, 0
            if "forward" in inputs:
                bad = check_etdump(work.name, pte, ptds, "forward", inputs["forward"], work / "etdump", cli, False)
                if bad:
                    return "differ", "ETDump: " + bad, 0
        return "not runnable", reason, 0
    if p.returncode != 0:
        return "differ", f"lowering-cli run failed (exit {p.returncode}): {p.stderr.strip()[:300]}", 0
    method = json.loads(p.stdout)["method"]
    try:
        inputs = iota_inputs(pte, ptds)
    except Exception as e:  # noqa: BLE001
        return "not runnable", f"a non-tensor input ({harness.runtime_error(e)[:120]})", 0
    try:
        # The studio's method first, from a fresh program (methods may share state).
        up = harness.run_pte(pte, ptds, {method: inputs[method], **inputs})[method]
    except Exception as e:  # noqa: BLE001
        return "not runnable", f"ExecuTorch's runtime refuses it: {harness.runtime_error(e)[:200]}", 0
    result = compare_outputs(out_dir, up)
    if result[0] in ("bit-identical", "agree"):
        bad = check_etdump(work.name, pte, ptds, method, inputs[method], work / "etdump", cli, True)
        if bad:
            return "differ", "ETDump: " + bad, result[2]
        snap = compare_snapshots(pte, method, up, work / "snapshots", cli)
        if snap:
            return "differ", snap, result[2]
    return result


def compare_delegated(pte: Path, ptds: list[Path], work: Path, cli: Path, etrecord: Path, cmd: list) -> tuple:
    """A delegate-calling program run by the studio through its delegates' original programs:
    the .pte linked to its ETRecord, and the ETRecord's edge program lowered by the studio.
    Floating outputs within MAX_ULP of the runtime's; an output a delegate dequantizes within
    one quantization step (XNNPACK requantizes in its own arithmetic, the original program in
    float: a value on a rounding boundary lands one step apart); an output of a delegate that
    quantizes its activations at run time within DYNAMIC_QUANT_TOLERANCE of the output's
    largest magnitude (XNNPACK's dynamic kernels choose parameters per row, the original
    program one per tensor: the two quantize the same activations differently)."""
    import numpy as np
    import torch

    try:
        inputs = iota_inputs(pte, ptds)
        iota = inputs["forward"]
        # Seeded normal inputs rather than iota: a delegate's inputs then differ from the
        # method's own iota inputs, so a call fed the wrong values cannot pass.
        g = torch.Generator().manual_seed(7)
        inputs["forward"] = tuple(torch.randn(x.shape, generator=g).to(x.dtype) if x.dtype.is_floating_point else x
                                  for x in inputs["forward"])
        up = harness.run_pte(pte, ptds, inputs)["forward"]
    except Exception as e:  # noqa: BLE001
        return "not runnable", f"ExecuTorch's runtime refuses it: {harness.runtime_error(e)[:200]}", 0
    npys = []
    for k, x in enumerate(inputs["forward"]):
        npys.append(str(work / f"input_{k}.npy"))
        np.save(npys[-1], x.numpy())
    cmd = cmd + ["--inputs", *npys]
    steps = delegate_output_steps(etrecord)
    worst, identical, stepped = 0.0, True, 0
    for how, run in (("pte", cmd + ["--etrecord", str(etrecord)]),
                     ("etrecord", [str(cli), "run", str(etrecord), "--save-outputs", str(work / "from_etrecord"),
                                   "--inputs", *npys])):
        out_dir = Path(run[run.index("--save-outputs") + 1])
        p = subprocess.run(run, capture_output=True, text=True)
        if p.returncode != 0:
            return "differ", f"through its delegates' original programs ({how}): exit {p.returncode}: " \
                             f"{p.stderr.strip()[-300:]}", 0
        for i, u in enumerate(up):
            f = out_dir / f"output_{i}.npy"
            if not f.exists():
                return "differ", f"{how}: the studio wrote {i} outputs, ExecuTorch {len(up)}", 0
            s = torch.from_numpy(np.load(f))
            if tuple(s.shape) != tuple(u.shape) or s.dtype != u.dtype:
                return "differ", f"{how} output {i}: {s.dtype}{list(s.shape)} studio, {u.dtype}{list(u.shape)}", 0
            if harness.bit_equal(s, u.contiguous()):
                continue
            identical = False
            step = steps[i] if i < len(steps) else None
            err = (s.double() - u.double()).abs().max().item()
            if step == "dynamic":
                bound = DYNAMIC_QUANT_TOLERANCE * u.double().abs().max().item()
                if err > bound:
                    return "differ", f"{how} output {i}: {err:.3g} apart, more than {bound:.3g}", 0
                DELEGATED["dynamic"] = max(DELEGATED["dynamic"], err / (u.double().abs().max().item() or 1))
                stepped += 1
                continue
            if step:
                if err > step * (1 + 1e-6):
                    return "differ", f"{how} output {i}: {err:.3g} apart, more than its quantization step {step:.3g}", 0
                stepped += 1
                continue
            d = ulp_distance(s, u.contiguous())
            worst = max(worst, d)
            if d > MAX_ULP:
                return "differ", f"{how} output {i}: {d:.1f} ULP apart (max abs {err:.3g})", d
        DELEGATED[how].append(work.name)
    DELEGATED["runs"] += 1
    # The runtime's ETDump links as for any program; the values it logged for a float delegate's
    # call are compared with its original program's (a quantized one's are a step apart at times).
    bad = check_etdump(work.name, pte, ptds, "forward", iota, work / "etdump", cli,
                       all(s is None for s in steps), etrecord)
    if bad:
        return "differ", "ETDump: " + bad, worst
    detail = (f"worst {worst:.1f} ULP, " if worst else "") + "through its delegates' original programs" + \
        (f"; {stepped} quantized outputs (of both runs) within their bound" if stepped else "")
    return ("bit-identical" if identical else "agree"), detail, worst


ETDUMPS = {"programs": 0, "instructions": 0, "logged": 0, "worst": (0.0, ""), "refused": [], "runtime failed": [],
           "plain": 0}
MIN_ETDUMPS = 40
PER_OP = {}  # operator -> (values compared, of them on exact inputs, worst ULP on exact inputs, worst at all)
FLOAT_SPACING = {"float32": "float32", "float16": "float16", "float64": "float64"}


def upstream_timings(etdp: Path) -> tuple[dict, dict]:
    """ExecuTorch's own parse of an ETDump: {instruction: [call ticks...]} and
    {instruction: {delegate event name: [ticks...]}} over every execution."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    calls, inner = {}, {}
    for block in deserialize_from_etdump_flatcc(etdp.read_bytes()).run_data:
        for event in block.events or []:
            p = event.profile_event
            if p is None or p.chain_index == -1:
                continue
            ticks = p.end_time - p.start_time
            if p.name in ("OPERATOR_CALL", "DELEGATE_CALL"):
                calls.setdefault(p.instruction_id, []).append(ticks)
            elif p.name is None and (p.delegate_debug_id_str or p.delegate_debug_id_int >= 0):
                key = p.delegate_debug_id_str or f"#{p.delegate_debug_id_int}"
                inner.setdefault(p.instruction_id, {}).setdefault(key, []).append(ticks)
    return calls, inner


def check_etdump(name: str, pte: Path, ptds: list[Path], method: str, inputs: tuple, work: Path, cli: Path,
                 values: bool, etrecord: Path | None = None) -> str:
    """The runtime's ETDump of two executions read by `lowering-cli etdump` as ExecuTorch reads it,
    and (with `values`) each logged value against the interpreter's; '' when all agree. With
    `etrecord`, the .pte is linked to it (a delegate call runs its original program)."""
    import numpy as np

    work.mkdir(parents=True, exist_ok=True)
    etdp, debug, plain = work / "run.etdp", work / "run.debug", work / "plain.etdp"
    try:
        harness.etdump_pte(pte, ptds, method, inputs, etdp, debug, plain)
    except Exception as e:  # noqa: BLE001
        reason = harness.runtime_error(e)
        if not values and "Failed to load method" in reason:  # a backend this runtime does not have
            return ""
        ETDUMPS["runtime failed"].append(f"{name} ({reason[:60]})")
        return ""
    linked = ["--etrecord", str(etrecord)] if etrecord else []
    cmd = [str(cli), "etdump", str(etdp), "--program", str(pte), "--method", method, "--json", "--debug-buffer",
           str(debug)] + [a for p in ptds for a in ("--ptd", str(p))] + linked
    p = subprocess.run(cmd, capture_output=True, text=True)
    debug.unlink(missing_ok=True)
    try:
        calls, inner = upstream_timings(etdp)
    except Exception as e:  # noqa: BLE001
        if p.returncode == 3:  # a file ExecuTorch's own parser cannot read either
            ETDUMPS["refused"].append(name)
            return ""
        return f"ExecuTorch's parser refuses the ETDump ({str(e)[:100]}); the studio reads it"
    if p.returncode != 0:
        return f"lowering-cli etdump failed (exit {p.returncode}): {p.stderr.strip()[:300]}"
    ours = json.loads(p.stdout)
    mine = {t["instruction"]: t["ticks"] for t in ours["instructions"] if t["ticks"]}
    if mine != calls:
        return f"call times differ from ExecuTorch's parse: studio {sorted(mine.items())[:4]}, upstream {sorted(calls.items())[:4]}"
    mine_inner = {t["instruction"]: {e["name"]: e["ticks"] for e in t.get("delegate_events", [])}
                  for t in ours["instructions"] if t.get("delegate_events")}
    if mine_inner != inner:
        return "delegate events differ from ExecuTorch's parse"
    if ours["executions"] != 2:
        return f"{ours['executions']} executions read; the runtime ran 2"
    # The ETDump of a run without intermediate outputs: the same link, nothing logged.
    q = subprocess.run([str(cli), "etdump", str(plain), "--program", str(pte), "--method", method, "--json"] +
                       [a for p in ptds for a in ("--ptd", str(p))] + linked, capture_output=True, text=True)
    if q.returncode != 0:
        return f"lowering-cli etdump failed on the plain ETDump (exit {q.returncode}): {q.stderr.strip()[:300]}"
    plain_calls, _ = upstream_timings(plain)
    plain_ours = json.loads(q.stdout)
    if {t["instruction"]: t["ticks"] for t in plain_ours["instructions"] if t["ticks"]} != plain_calls:
        return "call times of the plain ETDump differ from ExecuTorch's parse"
    if plain_ours["logged"] or plain_ours["executions"] != 1:
        return "the plain ETDump read with logged values or another execution count"
    ETDUMPS["plain"] += 1
    ETDUMPS["programs"] += 1
    ETDUMPS["instructions"] += len(mine)
    if not values:
        return ""
    what = {t["instruction"]: t["what"] for t in ours["instructions"]}
    if not ours["logged"] and ours["instructions"]:
        return "no intermediate outputs read"
    for logged in ours["logged"]:
        if logged.get("not_compared"):
            return f"instruction {logged['instruction']}: not compared ({logged['not_compared']})"
        diff = logged["max_abs_diff"]
        floats = [t for t in logged["tensors"] if t["dtype"] in FLOAT_SPACING or t["dtype"] == "bfloat16"]
        if floats:
            scale = max(t["max_abs"] for t in floats)
            dtype = floats[0]["dtype"]
            ulp = float(np.spacing(np.dtype(FLOAT_SPACING.get(dtype, "float32")).type(scale)))
            if dtype == "bfloat16":
                ulp *= 65536
            ulps = float("inf") if diff == "inf" else (diff / ulp if ulp else 0.0)
        else:
            ulps = 0.0 if diff == 0 else float("inf")
        if ulps > MAX_ULP:
            return f"instruction {logged['instruction']}: logged value {ulps:.1f} ULP from the interpreter's"
        if ulps > ETDUMPS["worst"][0]:
            ETDUMPS["worst"] = (ulps, name)
        ETDUMPS["logged"] += 1
        op = what.get(logged["instruction"], "?")
        count, exact, own, carried = PER_OP.get(op, (0, 0, 0.0, 0.0))
        if logged["inputs_exact"]:  # its inputs equal the runtime's: the gap is the kernel's own
            exact, own = exact + 1, max(own, ulps)
        PER_OP[op] = (count + 1, exact, own, max(carried, ulps))
    if ours["outputs_max_abs_diff"] is None:
        return "the method's logged outputs were not compared"
    return ""


def compare_outputs(out_dir: Path, up: list) -> tuple[str, str, float]:
    """The studio's saved outputs against the runtime's: (result, detail, worst ulp)."""
    import numpy as np
    import torch

    worst, identical = 0.0, True
    for i, u in enumerate(up):
        f = out_dir / f"output_{i}.npy"
        if not f.exists():
            return "differ", f"the studio wrote {i} outputs, ExecuTorch {len(up)}", 0
        s = torch.from_numpy(np.load(f))
        if not isinstance(u, torch.Tensor):
            if float(s) != float(u):
                return "differ", f"output {i}: {float(s)} studio, {u} ExecuTorch", 0
            continue
        if u.dtype == torch.bfloat16:
            u = u.to(torch.float32)
        if tuple(s.shape) != tuple(u.shape) or s.dtype != u.dtype:
            return "differ", f"output {i}: {s.dtype}{list(s.shape)} studio, {u.dtype}{list(u.shape)} ExecuTorch", 0
        if harness.bit_equal(s, u.contiguous()):
            continue
        identical = False
        if not u.dtype.is_floating_point:
            return "differ", f"output {i}: integer values differ", 0
        d = ulp_distance(s, u.contiguous())
        worst = max(worst, d)
        if d > MAX_ULP:
            err = (s.double() - u.double()).abs().max().item()
            return "differ", f"output {i}: {d:.1f} ULP apart (max abs {err:.3g})", d
    return ("bit-identical" if identical else "agree"), "", worst


SNAPSHOTS = {"checked": 0, "not lowered": set(), "sample inputs": 0}


def compare_snapshots(pte: Path, method: str, up: list, work: Path, cli: Path) -> str:
    """For a corpus program: its ATen .pt2 lowered by the studio and run after every pass
    from to_edge's conversion (ReplaceViewOpsWithViewCopyOpsPass) on must give the numbers
    the runtime gives for upstream's .pte, and no pass may change a node's values. Returns
    what went wrong, or ''."""
    aten = pte.parents[2] / "aten.pt2"
    if not aten.exists() or pte.parts[-3] != "default":
        return ""
    work.mkdir(parents=True, exist_ok=True)
    # Under the default config, and with run_reinplace_pass (in-place index_put_ and friends must
    # leave the numbers as they were; the runtime itself cannot run those programs).
    for config in ({}, {"run_reinplace_pass": True}):
        cfg = work / "config.json"
        cfg.write_text(json.dumps(config))
        p = subprocess.run([str(cli), "run", str(aten), "--inputs", "iota", "--method", method, "--config", str(cfg), "--compare-to",
                            "ReplaceViewOpsWithViewCopyOpsPass", "--save-outputs", str(work / "outputs"), "--json"],
                           capture_output=True, text=True)
        if p.returncode == 4:  # the studio cannot lower it yet (issue 18); the .pte comparison stands
            SNAPSHOTS["not lowered"].add(pte.parts[-4])
            return ""
        where = f"the studio's own lowering ({json.dumps(config) if config else 'default config'})"
        if p.returncode != 0:
            return f"{where} does not run (exit {p.returncode}): {p.stderr.strip()[:200]}"
        first = json.loads(p.stdout)["compared_to"]["first_differing_node"]
        if first:
            return f"{where}: a pass after to_edge's conversion changes node {first['node']} ({first['op']})"
        result, detail, _ = compare_outputs(work / "outputs", up)
        if result not in ("bit-identical", "agree"):
            return f"{where}: {detail}"
    SNAPSHOTS["checked"] += 1
    return check_sample_inputs(aten, method, work, cli)


def check_sample_inputs(aten: Path, method: str, work: Path, cli: Path) -> str:
    """`run --inputs sample`: the studio runs the .pt2 on the example inputs torch.export.save
    kept in it, and its outputs must be eager PyTorch's on those inputs (the exported module run
    by torch) within MAX_ULP. '' when they are."""
    import torch

    try:
        ep = torch.export.load(str(aten))
    except KeyError:  # no program named "model" (several methods saved under their names)
        return ""
    except Exception as e:  # noqa: BLE001
        return f"torch.export.load refuses {aten.name}: {str(e)[:120]}"
    if method != "forward" or not ep.example_inputs:
        return ""
    args, kwargs = ep.example_inputs
    if kwargs or not all(isinstance(a, torch.Tensor) for a in args):
        return ""
    try:
        eager = ep.module()(*args)
    except Exception:  # noqa: BLE001  (a joint training graph: not a module torch can call)
        return ""
    eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    out = work / "sample_outputs"
    p = subprocess.run([str(cli), "run", str(aten), "--inputs", "sample", "--save-outputs", str(out), "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return f"run --inputs sample failed (exit {p.returncode}): {p.stderr.strip()[:200]}"
    result, detail, _ = compare_outputs(out, [e.detach() for e in eager])
    if result not in ("bit-identical", "agree"):
        return f"run --inputs sample against eager PyTorch on the same inputs: {detail}"
    SNAPSHOTS["sample inputs"] += 1
    return ""


def edge_cases():
    """(name, module, inputs, refused): programs whose values the iota rule never reaches."""
    import torch

    class Casts(torch.nn.Module):
        def forward(self, x):
            return (x.to(torch.int64), x.to(torch.int32), x.to(torch.int16), x.to(torch.int8), x.to(torch.uint8),
                    x.to(torch.bool), x.to(torch.float16), x.to(torch.bfloat16), x.to(torch.float64))

    class IntegerArithmetic(torch.nn.Module):
        def forward(self, a, b):
            return (torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
                    torch.remainder(a, b), a * b, a + b, a - b, -a, torch.abs(a), a / b)

    class FloatArithmetic(torch.nn.Module):
        def forward(self, x, y):
            return (torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc"),
                    torch.remainder(x, y), x / y, torch.maximum(x, y), torch.minimum(x, y), torch.clamp(x, -2.0, 2.0))

    class IntegerDivision(torch.nn.Module):
        def forward(self, a, b):
            return torch.div(a, b, rounding_mode="floor")

    big = 2 ** 63 - 1
    floats = torch.tensor([1e30, -1e30, float("nan"), float("inf"), float("-inf"), 300.7, -129.5, 70000.2, 3e9,
                           1e19, -0.0, 0.99, -0.99, 65520.0, 65504.0, 6e-8, 1e-40, 3.3895e38], dtype=torch.float32)
    a = torch.tensor([-7, 7, -7, 7, big, -big, 0, 1, -1, big, 6, -6, 3 ** 39], dtype=torch.int64)
    b = torch.tensor([2, -2, -2, 2, 2, -1, 5, -1, 3, big, 3, -4, 3 ** 2], dtype=torch.int64)
    x = torch.tensor([-7.5, 7.5, -7.5, 7.5, 1e30, 0.3, 5.0, -5.0, 0.0, -0.0, float("nan"), float("inf"), 1.0, -3.0],
                     dtype=torch.float32)
    y = torch.tensor([2.0, -2.0, -2.0, 2.0, 3e-10, 0.1, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, float("inf"), float("nan")],
                     dtype=torch.float32)
    return [("casts", Casts(), (floats,), False),
            ("integer_arithmetic", IntegerArithmetic(), (a, b), False),
            ("float_arithmetic", FloatArithmetic(), (x, y), False),
            ("integer_division_by_zero", IntegerDivision(), (a[:3], torch.tensor([2, 0, 1])), True)]


def run_edge_cases(work: Path, cli: Path) -> list[str]:
    """Each edge case through the studio and the runtime; the names of those that disagree."""
    import numpy as np
    import torch
    from executorch.exir import to_edge

    bad = []
    for name, module, inputs, refused in edge_cases():
        d = work / "edge" / name
        d.mkdir(parents=True, exist_ok=True)
        pte = d / "model.pte"
        pte.write_bytes(to_edge(torch.export.export(module, inputs)).to_executorch().buffer)
        files = []
        for i, t in enumerate(inputs):
            files.append(d / f"input_{i}.npy")
            np.save(files[-1], t.numpy())
        out_dir = d / "outputs"
        p = subprocess.run([str(cli), "run", str(pte), "--inputs", *map(str, files), "--save-outputs", str(out_dir)],
                           capture_output=True, text=True)
        try:
            up = harness.run_pte(pte, [], {"forward": inputs})["forward"]
            up_error = ""
        except Exception as e:  # noqa: BLE001
            up, up_error = None, harness.runtime_error(e)
        if refused or up is None:
            ok = up is None and refused and p.returncode == 5
            detail = (f"both refuse ({p.stderr.strip().splitlines()[-1][-60:]})" if ok else
                      f"runtime: {up_error or 'ran'}; studio: exit {p.returncode} {p.stderr.strip()[-120:]}")
        elif p.returncode != 0:
            ok, detail = False, f"lowering-cli run failed (exit {p.returncode}): {p.stderr.strip()[:300]}"
        else:
            ok, detail = True, f"{len(up)} outputs bit-identical"
            for i, u in enumerate(up):
                s = torch.from_numpy(np.load(out_dir / f"output_{i}.npy"))
                u = u.to(torch.float32) if u.dtype == torch.bfloat16 else u
                if not harness.bit_equal(s, u.contiguous()):
                    diff = [(j, a_, b_) for j, (a_, b_) in enumerate(zip(s.reshape(-1).tolist(), u.reshape(-1).tolist()))
                            if not (a_ == b_ or (a_ != a_ and b_ != b_))]
                    ok, detail = False, f"output {i} ({u.dtype}) differs at {diff[:3]} (index, studio, ExecuTorch)"
                    break
        print(f"{'edge:' + name:48} {'agree' if ok else 'differ':14} {detail}", flush=True)
        if not ok:
            bad.append("edge:" + name)
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="source", default=str(HERE.parents[1] / "build" / "conformance"),
                    help="the conformance harness's work folder (its default-config upstream files)")
    ap.add_argument("--fixtures", default=str(HERE.parents[2] / "shared" / "fixtures" / "pte"))
    ap.add_argument("--decompositions", default=str(HERE.parents[1] / "build" / "decompositions"),
                    help="decompositions.py's work folder: its upstream files, one operator each, must all run")
    ap.add_argument("--work", default=str(HERE.parents[1] / "build" / "interpreter"))
    args = ap.parse_args()
    cli = Path(harness.CLI)
    work = Path(args.work)
    cases = []
    for pte in sorted(Path(args.source).glob("*/default/upstream/model.pte")):
        cases.append((pte.parts[-4], pte, sorted(pte.parent.glob("*.ptd"))))
    # run_reinplace_pass=True leaves in-place operators (index_put_ on KV caches) in the program.
    for pte in sorted(Path(args.source).glob("*/reinplace/upstream/model.pte")):
        if (pte.parents[2] / "default" / "upstream" / "model.pte").read_bytes() != pte.read_bytes():
            cases.append((pte.parts[-4] + ":reinplace", pte, sorted(pte.parent.glob("*.ptd"))))
    if not cases:
        print(f"error: no upstream files under {args.source}: run tests/conformance/harness.py first")
        return 1
    # decompositions.py's programs: an operator or two each, all of which the interpreter must run.
    for pte in sorted(Path(args.decompositions).glob("*/upstream/model.pte")):
        cases.append(("decomposition:" + pte.parts[-3], pte, []))
    for pte in sorted(Path(args.fixtures).glob("*.pte")):
        ptds = sorted(pte.parent.glob(pte.stem + "*.ptd"))
        cases.append(("fixture:" + pte.stem, pte, ptds))
    counts = {"bit-identical": 0, "agree": 0, "differ": 0, "not runnable": 0}
    bad, worst = [], (0.0, "")
    for name in sorted(n for n in MUST_RUN - {c[0] for c in cases} if not n.startswith("fixture:")):
        print(f"{name:48} missing        the harness wrote no default-config file for it", flush=True)
        bad.append(name)
    for name, pte, ptds in cases:
        d = work / name.replace(":", "_")
        d.mkdir(parents=True, exist_ok=True)
        etrecord = pte.parents[2] / "etrecord.bin" if ":" not in name else None  # the harness's, default config
        result, detail, ulp = compare(pte, ptds, d, cli, etrecord)
        counts[result] += 1
        if ulp > worst[0]:
            worst = (ulp, name)
        if result == "differ" or (result == "not runnable" and (name in MUST_RUN or name.startswith("decomposition:"))):
            bad.append(name)
        print(f"{name:48} {result:14} {f'worst {ulp:.1f} ULP' if result == 'agree' and not detail else detail}", flush=True)
    bad += run_edge_cases(work, cli)
    print(f"delegates: {DELEGATED['runs']} programs that call a delegate run through the programs their backends"
          f" were given and agree with the runtime's XNNPACK outputs (linked to their ETRecord:"
          f" {', '.join(DELEGATED['pte']) or 'none'}; lowered from it: {', '.join(DELEGATED['etrecord']) or 'none'});"
          f" dynamically quantized outputs at most {100 * DELEGATED['dynamic']:.2f}% of their largest magnitude apart")
    agree = counts["bit-identical"] + counts["agree"]
    print(f"interpreter: {agree} agree ({counts['bit-identical']} bit-identical), {counts['not runnable']} not runnable"
          f" of {len(cases)}; worst {worst[0]:.1f} ULP ({worst[1] or '-'}); {counts['differ']} differ")
    print(f"snapshots: {SNAPSHOTS['checked']} corpus programs lowered by the studio run alike after every pass from"
          f" to_edge's conversion on and agree with the runtime; not lowered yet: "
          f"{', '.join(sorted(SNAPSHOTS['not lowered'])) or 'none'}; on their .pt2's own sample inputs"
          f" (--inputs sample), {SNAPSHOTS['sample inputs']} agree with eager PyTorch")
    print(f"etdump: {ETDUMPS['programs']} programs' ETDumps read as ExecuTorch reads them ({ETDUMPS['instructions']}"
          f" timed instructions; {ETDUMPS['plain']} also without intermediate outputs); {ETDUMPS['logged']} logged intermediate values agree with the interpreter, worst"
          f" {ETDUMPS['worst'][0]:.1f} ULP ({ETDUMPS['worst'][1] or '-'}); refused by both, as ExecuTorch's parser"
          f" refuses them: {', '.join(ETDUMPS['refused']) or 'none'}; the runtime could not write one for:"
          f" {', '.join(ETDUMPS['runtime failed']) or 'none'}")
    print("per operator, the interpreter's values against those the runtime logged, in ULP of the value's largest"
          " magnitude (0: bit-identical): worst on inputs equal to the runtime's (the kernel's own), worst at all")
    for op, (count, exact, own, carried) in sorted(PER_OP.items(), key=lambda kv: (-kv[1][2], -kv[1][3], kv[0])):
        print(f"  {op:48} {count:5} values ({exact:4} on exact inputs)  own {own:4.1f}  at all {carried:4.1f}")
    if ETDUMPS["programs"] < MIN_ETDUMPS:  # the runtime wrote fewer than it does today
        bad.append(f"etdump: only {ETDUMPS['programs']} ETDumps checked (at least {MIN_ETDUMPS} expected)")
    for b in bad:
        print(f"  FAILED: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
