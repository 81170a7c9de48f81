"""Delegate payloads: the studio's XNNPACK decoding against ExecuTorch's own reading of the same bytes.

For every .pte given (the upstream files a harness run wrote under --work, and the fixtures), each
XnnpackBackend payload is read two ways:
  upstream  ExecuTorch's deserialize_pte_binary finds the payload, its XNNHeader parses the XH00
            header, and flatc with ExecuTorch's XNNPACK schema turns the XNNGraph into JSON;
  studio    `lowering-cli delegates FILE --json`.
Nodes (operator, debug handle, value ids), values (id, datatype, dims, flags, external id,
constant index, run-time quantization, quantization parameters), the graph's inputs and outputs
and its constants (offset, size, named key) must be equal; floats as far as flatc prints them
(6 decimals). One line per payload; the last line is
  payloads: N agree, M differ of T
and the exit status is non-zero when one differs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI = os.environ.get("LSTUDIO_CLI", str(HERE.parents[1] / "build" / "app" / "lowering-cli"))
FLATC = os.environ.get("FLATC") or shutil.which("flatc") or "flatc"
INVALID = 0xFFFFFFFF


def upstream_payloads(pte: Path) -> list[tuple[str, int, bytes]]:
    """(method, delegate index, payload bytes) of every XNNPACK delegate, as ExecuTorch reads the file."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte.read_bytes()).program
    out = []
    for plan in program.execution_plan:
        for i, d in enumerate(plan.delegates):
            if d.id == "XnnpackBackend":
                out.append((plan.name, i, bytes(program.backend_delegate_data[d.processed.index].data)))
    return out


def upstream_graph(payload: bytes, work: Path) -> dict:
    """The XNNGraph as ExecuTorch's header class and schema read it."""
    import executorch.backends.xnnpack.serialization.xnnpack_graph_serialize as ser
    from executorch.backends.xnnpack.serialization.xnnpack_graph_serialize import XNNHeader

    fb = payload
    if payload[4:8] == b"XH00":
        h = XNNHeader.from_bytes(payload[:XNNHeader.EXPECTED_LENGTH])
        fb = payload[h.flatbuffer_offset:h.flatbuffer_offset + h.flatbuffer_size]
    # runtime_schema.fbs reads XN00 and XN01 alike (the runtime uses it for both).
    schema = Path(ser.__file__).parent / "runtime_schema.fbs"
    src = work / "payload.bin"
    src.write_bytes(fb)
    subprocess.run([FLATC, "--json", "--strict-json", "--raw-binary", "--defaults-json", "-o", str(work),
                    str(schema), "--", str(src)], check=True, capture_output=True)
    text = (work / "payload.json").read_text()
    text = re.sub(r'(?<=[\s\[:,])(-?)inf(?=[\s,\]}])', r'"\1Infinity"', text)
    text = re.sub(r'(?<=[\s\[:,])-?nan(?=[\s,\]}])', '"NaN"', text)
    return json.loads(text)


def ids_of(table: dict) -> tuple[list[int], list[int]]:
    """Inputs and outputs of a node table: its *_id fields, absent ones (INVALID) left out."""
    ins, outs = [], []
    for k, v in table.items():
        if not k.endswith("_id") or not isinstance(v, int) or v == INVALID:
            continue
        (outs if k.startswith("output") else ins).append(v)
    return sorted(ins), sorted(outs)


def canon_upstream(g: dict) -> dict:
    nodes = []
    for n in g.get("xnodes", []):
        table = n.get("xnode_union", {})
        ins, outs = ids_of(table)
        arity = {"XNNConcatenate2": 2, "XNNConcatenate3": 3, "XNNConcatenate4": 4}.get(n.get("xnode_union_type"))
        if arity:  # a concatenation of k inputs leaves the later input slots at their default 0
            ins = sorted(table.get(f"input{i}_id") for i in range(1, arity + 1))
        nodes.append({"type": n.get("xnode_union_type"), "debug_handle": n.get("debug_handle", 0),
                      "inputs": ins, "outputs": outs})
    values = []
    for v in g.get("xvalues", []):
        u, kind = v.get("xvalue_union", {}), v.get("xvalue_union_type")
        t = u.get("tensor_value", {}) if kind == "XNNQuantizedTensorValue" else u
        q = {"kind": "none"}
        qt, qp = u.get("quant_params_type"), u.get("quant_params", {})
        if qt == "PerTensorQuant":
            q = {"kind": "per-tensor", "scale": qp.get("scale"), "zero_point": qp.get("zero_point")}
        elif qt in ("PerChannelQuant", "PerChannelGroupQuant"):
            q = {"kind": "per-channel" if qt == "PerChannelQuant" else "per-channel-group",
                 "channel_dim": qp.get("channel_dim"), "scales": qp.get("scale", []),
                 "scale_buffer_idx": qp.get("scale_buffer_idx"), "num_scales": qp.get("num_scales")}
            if qt == "PerChannelGroupQuant":
                q["group_size"] = qp.get("group_size")
        elif qt == "PerTokenDynamicQuant":
            q = {"kind": "per-token dynamic", "num_nonbatch_dims": qp.get("num_nonbatch_dims")}
        values.append({"id": t.get("id_out"), "datatype": str(t.get("datatype", "")).replace("xnn_datatype_", ""),
                       "dims": t.get("dims", []), "flags": t.get("flags"), "external_id": t.get("external_id"),
                       "constant_buffer_idx": t.get("constant_buffer_idx"),
                       "dq_datatype": str(t.get("dq_datatype", "")).replace("xnn_datatype_", ""), "quant": q})
    consts = [{"offset": c.get("offset"), "size": c.get("size"), "named_key": c.get("named_key", "")}
              for c in g.get("constant_data", [])]
    return {"nodes": nodes, "values": values, "input_ids": g.get("input_ids", []),
            "output_ids": g.get("output_ids", []), "constants": consts}


def canon_studio(x: dict) -> dict:
    nodes = [{"type": n["type"], "debug_handle": n["debug_handle"], "inputs": sorted(n["inputs"]),
              "outputs": sorted(n["outputs"])} for n in x["nodes"]]
    values = []
    for v in x["values"]:
        q = dict(v["quant"])
        if q["kind"] == "per-channel":
            q.pop("group_size", None)
        values.append({k: v[k] for k in ("id", "datatype", "dims", "flags", "external_id", "constant_buffer_idx",
                                          "dq_datatype")} | {"quant": q})
    consts = [{"offset": c["offset"], "size": c["size"], "named_key": c["named_key"]}
              for c in x["constants"] if c["source"] != "flatbuffer"]
    return {"nodes": nodes, "values": values, "input_ids": x["input_ids"], "output_ids": x["output_ids"],
            "constants": consts}


def first_difference(a, b, path="") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if (d := first_difference(a.get(k), b.get(k), f"{path}.{k}")) is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := first_difference(x, y, f"{path}[{i}]")) is not None:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        try:  # flatc prints floats rounded to 6 decimals: equal means equal once rounded so
            if abs(float(a) - float(b)) <= 5e-7 + 1e-6 * max(abs(float(a)), abs(float(b))):
                return None
        except (TypeError, ValueError):
            pass
    return None if a == b else f"{path}: upstream {a!r}, studio {b!r}"


def check_file(pte: Path, work: Path) -> list[tuple[str, str | None]]:
    """One (label, difference or None) per XNNPACK payload of `pte`."""
    try:
        ups = upstream_payloads(pte)
    except Exception as e:  # noqa: BLE001 (ExecuTorch cannot read the file: no payload to compare)
        print(f"skip {pte}: ExecuTorch cannot read it: {str(e).splitlines()[0][:200] if str(e) else repr(e)}")
        return []
    if not ups:
        return []
    st = json.loads(subprocess.run([CLI, "delegates", str(pte), "--json"], check=True, capture_output=True,
                                   text=True).stdout)
    by_method = {m["name"]: m["delegates"] for m in st["methods"]}
    rows = []
    for method, index, payload in ups:
        label = f"{pte} {method}#{index}"
        d = by_method.get(method, [])[index] if index < len(by_method.get(method, [])) else None
        if d is None or "xnnpack" not in d:
            rows.append((label, "the studio did not decode it: " + (d or {}).get("error", "no such delegate")))
            continue
        g = canon_upstream(upstream_graph(payload, work))
        s = canon_studio(d["xnnpack"])
        diff = first_difference(g, s)
        summary = f"{len(g['nodes'])} nodes, {len(g['values'])} values, {max(len(g['constants']) - 1, 0)} constants"
        rows.append((f"{label} ({summary})", diff))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", help="a harness work directory: its upstream .pte files are checked")
    ap.add_argument("files", nargs="*", help="more .pte files or directories of them")
    args = ap.parse_args()
    ptes: list[Path] = []
    if args.work:
        ptes += sorted(Path(args.work).glob("*/*/upstream/*.pte"))
    for f in map(Path, args.files):
        ptes += sorted(f.glob("*.pte")) if f.is_dir() else [f]
    agree = differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for pte in ptes:
            for label, diff in check_file(pte, Path(tmp)):
                if diff is None:
                    agree += 1
                    print(f"agree   {label}")
                else:
                    differ += 1
                    print(f"DIFFER  {label}: {diff}")
    print(f"payloads: {agree} agree, {differ} differ of {agree + differ}")
    return 1 if differ or agree + differ == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
