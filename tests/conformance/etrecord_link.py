"""ETRecord links: the studio's reading of an ETRecord against ExecuTorch's own maps.

For each corpus program lowered without a partitioner, ExecuTorch's to_edge and to_executorch
write the .pte and, from the same ExecutorchProgramManager, the ETRecord (generate_etrecord).
`lowering-cli inspect model.pte --etrecord etrecord.bin --json` must then give every instruction
that upstream's debug_handle_map ties to edge-program nodes:
  - a debug handle that the map lists for that instruction id, and
  - the innermost nn_module_stack entry of one of the edge nodes carrying that handle,
  - for each constant it names among the instruction's arguments, a parameter, buffer or
    lifted constant that an edge node carrying that handle reads,
and link no instruction the map leaves without such nodes. For programs lowered to XNNPACK,
`lowering-cli delegates model.pte --etrecord etrecord.bin --json` must name, for every payload
operator whose debug handle upstream's lowered module carries, the module of that node (the
innermost nn_module_stack entry of the original program's node). One line per program; the last line is
  etrecord: N agree, M differ of T
and the exit status is non-zero when one differs.
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
CLI = os.environ.get("LSTUDIO_CLI", str(HERE.parents[1] / "build" / "app" / "lowering-cli"))

# Programs with module structure and no partitioner: layers, attention, convolutions, buffers.
DEFAULT = ["mlp", "mobilenet_v2", "resnet_block", "transformer_encoder", "llama_kv", "conv1d_pool", "views",
           "conv_xnnpack", "mlp_xnnpack"]


def innermost(meta) -> str:
    stack = meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    # torch.export spells a path "L['self'].layers[0].attn" in some versions, "layers.0.attn" in others.
    return path


def expected(edge, et) -> dict:
    """{method: {instruction id: (set of handles, set of candidate modules)}} from upstream's maps."""
    out = {}
    for method, per_instruction in et.debug_handle_map.items():
        by_handle = {}
        for n in edge.exported_program(method).graph.nodes:
            h = n.meta.get("debug_handle")
            if h is not None:
                by_handle.setdefault(int(h), []).append(innermost(n.meta))
        out[method] = {}
        for iid, handles in per_instruction.items():
            hs = handles if isinstance(handles, (list, tuple)) else [handles]
            hs = [int(h) for h in hs if h is not None]
            modules = {m for h in hs for m in by_handle.get(h, [])}
            linkable = [h for h in hs if h in by_handle]
            out[method][int(iid)] = (set(linkable), modules)
    return out


def placeholders_by_handle(edge) -> dict:
    """{method: {debug handle: names of the parameter, buffer and constant placeholders the edge
    nodes with that handle read directly}}: the names a .pte's constants may take."""
    out = {}
    for method in edge.methods:
        ep = edge.exported_program(method)
        sig = ep.graph_signature
        named = set(sig.inputs_to_parameters) | set(sig.inputs_to_buffers) | set(sig.inputs_to_lifted_tensor_constants)
        per = out.setdefault(method, {})
        for n in ep.graph.nodes:
            h = n.meta.get("debug_handle")
            if h is not None:
                per.setdefault(int(h), set()).update(a.name for a in n.all_input_nodes if a.name in named)
    return out


def delegate_modules(edge, method: str) -> list:
    """Per delegate call, in order: {debug handle: innermost module} of its original program."""
    out = []
    gm = edge.exported_program(method).graph_module
    for n in gm.graph.nodes:
        if n.op == "call_function" and "executorch_call_delegate" in str(n.target):
            lowered = getattr(gm, n.args[0].target)
            handles = {}
            for m in lowered.original_module.graph.nodes:
                if m.meta.get("debug_handle") is not None:
                    handles[int(m.meta["debug_handle"])] = innermost(m.meta)
            out.append(handles)
    return out


def check_delegates(entry, edge, pte: Path, etr: Path) -> tuple[str, str | None]:
    r = subprocess.run([CLI, "delegates", str(pte), "--etrecord", str(etr), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return "", f"lowering-cli delegates --etrecord exit {r.returncode}: {r.stderr.strip()[-300:]}"
    studio = json.loads(r.stdout)
    checked = 0
    for sm in studio["methods"]:
        want = delegate_modules(edge, sm["name"])
        if len(want) != len(sm["delegates"]):
            return "", f"{sm['name']}: {len(sm['delegates'])} delegates, upstream {len(want)}"
        for i, (d, handles) in enumerate(zip(sm["delegates"], want)):
            for n in d.get("xnnpack", {}).get("nodes", []):
                h = n["debug_handle"]
                if h not in handles:
                    continue
                checked += 1
                made = n.get("made_from", "")
                module = handles[h]
                if not made or (module and not made.endswith(f", in {module})")):
                    return "", f"{sm['name']} delegate {i} {n['type']} handle {h}: '{made}', upstream module '{module}'"
    if checked == 0:
        return "", "no delegated operator with a debug handle to check"
    return f"{checked} delegated operators named with their modules", None


def check(entry, work: Path) -> tuple[str, str | None]:
    import corpus
    from executorch.devtools import generate_etrecord

    edge = corpus.to_edge_program(entry)
    et = copy.deepcopy(edge).to_executorch()
    pte, etr = work / f"{entry.name}.pte", work / f"{entry.name}.etrecord"
    pte.write_bytes(et.buffer)
    generate_etrecord(str(etr), copy.deepcopy(edge), et)
    if entry.lower == "xnnpack":
        return check_delegates(entry, edge, pte, etr)
    r = subprocess.run([CLI, "inspect", str(pte), "--etrecord", str(etr), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return "", f"lowering-cli inspect --etrecord exit {r.returncode}: {r.stderr.strip()[-300:]}"
    studio = json.loads(r.stdout)["etrecord"]
    got = {(x["method"], x["instruction"]): x for x in studio["by_instruction"]}
    want = expected(edge, et)
    readable = placeholders_by_handle(edge)
    n_want = n_named = 0
    for method, per in want.items():
        for iid, (handles, modules) in per.items():
            x = got.pop((method, iid), None)
            if not handles:
                if x is not None:
                    return "", f"{method} instruction {iid}: linked to handle {x['debug_handle']}, upstream has no node for it"
                continue
            n_want += 1
            if x is None:
                return "", f"{method} instruction {iid}: not linked (upstream: handles {sorted(handles)})"
            if x["debug_handle"] not in handles:
                return "", f"{method} instruction {iid}: handle {x['debug_handle']}, upstream {sorted(handles)}"
            if x["module"] not in modules:
                return "", f"{method} instruction {iid}: module '{x['module']}', upstream one of {sorted(modules)}"
            # Each constant the studio names is a placeholder an edge node of the instruction reads.
            names = set().union(*(readable.get(method, {}).get(h, set()) for h in handles))
            for c in x.get("constants", []):
                if c not in names:
                    return "", f"{method} instruction {iid}: a constant named '{c}', upstream's nodes read {sorted(names)}"
                n_named += 1
    if got:
        (method, iid), x = next(iter(got.items()))
        return "", f"{method} instruction {iid}: linked, but upstream's map does not list it"
    modules = {x for per in want.values() for _, ms in per.values() for x in ms if x}
    return f"{n_want} of {studio['instructions']} instructions linked, {len(modules)} modules, {n_named} constants named", None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=DEFAULT, help="corpus program names (globs)")
    args = ap.parse_args()
    import corpus

    entries = [e for e in corpus.CORPUS if any(fnmatch.fnmatchcase(e.name, g) for g in args.only)]
    agree = differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for entry in entries:
            try:
                what, diff = check(entry, Path(tmp))
            except Exception as e:  # noqa: BLE001 (reported as a difference, never skipped)
                what, diff = "", f"harness: {type(e).__name__}: {str(e)[:300]}"
            if diff is None:
                agree += 1
                print(f"agree   {entry.name}: {what}")
            else:
                differ += 1
                print(f"DIFFER  {entry.name}: {diff}")
    print(f"etrecord: {agree} agree, {differ} differ of {agree + differ}")
    return 1 if differ or agree + differ == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
