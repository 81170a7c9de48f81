"""XNNPACK partitions: the studio's XnnpackPartitioner against ExecuTorch's, node for node.

For every corpus program (tests/conformance/corpus.py; training and multi-method programs
included) saved as a user saves it (torch.export.save), and every model.pt2 under --models
(the models' corpus, tests/conformance/models.py, as its run left them; with --quantize also
each of them PT2E-quantized by XNNPACKQuantizer, static and/or dynamic int8):
  upstream  to_edge_transform_and_lower(programs, partitioner=[XnnpackPartitioner()]); per method,
            the graph its XnnpackPartitioner tagged (node.meta["delegation_tag"]), as to_backend
            then lowers it;
  studio    `lowering-cli partition FILE --config {"partitioner": ["xnnpack"]} --json`.
The dynamically quantized programs also get a row with two partitioners, as ExecuTorch's LLM
export lowers them: XnnpackPartitioner(config_precisions=[DYNAMIC_QUANT]) and then
XnnpackPartitioner(), one to_backend round each, the second on the graph the first lowered;
every round is compared.
Then the graph to_backend made of it, in order: each operator left, and each
executorch_call_delegate as the values it reads and writes, the weights its lowered module took
and that module's operators in order. Then the file: upstream's to_executorch() under the default
config against `lowering-cli export FILE --config ...` with the same partitioners and ExecuTorch's
greedy planner (et-greedy; the studio's default suite may pick a smaller plan), byte for byte
(XNNPACK's payloads and the named data their weights became included). Where the studio's XNNPACK preprocess cannot compile a
partition yet, its export refuses, naming the node: the row says so (`.pte not written`), which
is not a difference. A file written unlike upstream's is run, as upstream's is, in
executorch.runtime on the programs' example inputs: `runs equal` when the outputs are
bit-identical and no arena is larger than upstream's (upstream's own partitioning is not
deterministic on some models: hf_albert_encoder's lowered modules take their nodes in one of
two orders from run to run), a difference otherwise.
Upstream's edge program renames the nodes ("aten_linear_default"), so nodes are compared by
position: both graphs must hold the same operators in the same order (getitem nodes aside: the
studio's graph has none), then every partition must take the same positions and the nodes left
out are the rest. One line per program; the last line is
  partition: N agree, M differ, D known differences, K upstream fails of T; .pte: I identical,
  R runs equal, W not written by the studio (its XNNPACK preprocess refuses a node), U upstream
  cannot write
and the exit status is non-zero when one differs that partition_expected.txt does not list (or
one it lists agrees).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import operator
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI = os.environ.get("LSTUDIO_CLI", str(HERE.parents[1] / "build" / "app" / "lowering-cli"))
sys.path.insert(0, str(HERE))


def op_name(target) -> str:
    """"aten::linear.default" for aten.linear.default (an edge op or an OpOverload), as the studio names it."""
    import torch

    from executorch.exir.delegate import executorch_call_delegate

    if getattr(target, "__module__", None) == "_operator":  # a size computation: operator.ge
        return f"_operator::{target.__name__}.default"
    if target is executorch_call_delegate:  # an earlier partitioner's call, as the studio names its kind
        return "delegate"
    if not isinstance(target, torch._ops.OpOverload):
        target = getattr(target, "_op", target)  # an edge op: the ATen overload it wraps
    name = str(target)
    if "." in name and "::" not in name:
        ns, rest = name.split(".", 1)
        name = f"{ns}::{rest}"
    return name


def lowered_entry(gm, node) -> tuple:
    """An executorch_call_delegate as compared: ("delegate", reads, writes, weights, its module's operators)."""
    from torch.export.graph_signature import InputKind

    module = getattr(gm, node.args[0].target).original_module
    ops = tuple(op_name(n.target) for n in module.graph.nodes
                if n.op == "call_function" and n.target is not operator.getitem)
    weights = sum(1 for s in module.graph_signature.input_specs if s.kind != InputKind.USER_INPUT)
    return ("delegate", len(node.args) - 1, len(node.meta["val"]), weights, ops)


# The partitioner lists compared: the studio's config JSON for each, and upstream's constructors.
PARTITIONERS = {
    "xnnpack": ["xnnpack"],
    "dynamic+xnnpack": [{"name": "XnnpackPartitioner", "config_precisions": ["DYNAMIC_QUANT"]}, "xnnpack"],
}


def upstream_partitioners(which: str) -> list:
    from executorch.backends.xnnpack.partition.config.xnnpack_config import ConfigPrecisionType
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    return [XnnpackPartitioner() if e == "xnnpack" else
            XnnpackPartitioner(config_precisions=[getattr(ConfigPrecisionType, x) for x in e["config_precisions"]])
            for e in PARTITIONERS[which]]


def round_key(method: str, k: int) -> str:
    """A method's k-th partitioner round as compared: "forward", then "forward #2"."""
    return method if k == 0 else f"{method} #{k + 1}"


def upstream_partitions(programs: dict, which: str = "xnnpack") -> tuple[dict, dict]:
    """{method: [(node name, operator, tag or None)]} in graph order: the graph XnnpackPartitioner
    tagged inside to_edge_transform_and_lower (getitem nodes aside), as to_backend lowers it, per
    partitioner round (round_key); and {method: [entry]}: the graph the last to_backend made,
    operators as (name,), calls as lowered_entry."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.delegate import executorch_call_delegate

    tagged = []
    partition = XnnpackPartitioner.partition

    def recording(self, exported_program):
        result = partition(self, exported_program)
        tagged.append([(n.name, op_name(n.target), n.meta.get("delegation_tag"))
                       for n in result.tagged_exported_program.graph_module.graph.nodes
                       if n.op == "call_function" and n.target is not operator.getitem])
        return result

    XnnpackPartitioner.partition = recording
    try:
        edge = to_edge_transform_and_lower(programs, partitioner=upstream_partitioners(which))
    finally:
        XnnpackPartitioner.partition = partition
    upstream_partitions.last_edge = edge
    # Round by round (one to_backend per partitioner), the methods in the order of the edge programs.
    methods = list(edge._edge_programs)
    rounds = len(PARTITIONERS[which])
    assert len(tagged) == rounds * len(methods), f"{len(tagged)} partitioner calls for {len(methods)} methods"
    lowered = {}
    for method in methods:
        gm = edge.exported_program(method).graph_module
        lowered[method] = [lowered_entry(gm, n) if n.target is executorch_call_delegate else (op_name(n.target),)
                           for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    keys = [round_key(m, k) for k in range(rounds) for m in methods]
    return dict(zip(keys, tagged)), lowered


def studio_partitions(pt2: Path, which: str, work: Path) -> tuple[dict | None, dict | None, str]:
    config = work / f"partitioner-{which}.json"
    config.write_text(json.dumps({"partitioner": PARTITIONERS[which]}))
    r = subprocess.run([CLI, "partition", str(pt2), "--config", str(config), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, f"lowering-cli partition exit {r.returncode}: {r.stderr.strip()[-300:]}"
    doc = json.loads(r.stdout)
    out, lowered = {}, {}
    for m in doc["methods"]:
        for k, rnd in enumerate(m["rounds"]):
            nodes = [(n["index"], n["name"], n["op"], p["tag"]) for p in rnd["partitions"] for n in p["nodes"]]
            nodes += [(n["index"], n["name"], n["op"], None) for n in rnd["not_delegated"]]
            out[round_key(m["name"], k)] = [(name, op, tag) for _, name, op, tag in sorted(nodes)]
        lowered[m["name"]] = [("delegate", e["reads"], e["writes"], e["weights"], tuple(e["ops"])) if "delegate" in e
                              else (e["op"],) for e in m["lowered"] or []]
    return out, lowered, ""


def difference(want: dict, got: dict) -> str | None:
    """Node for node: the same operators in the same order (names differ: upstream's edge program
    renames them), then the same partitions (as sets of node positions) and the same nodes left out."""
    problems = []
    for method in sorted(set(want) | set(got)):
        w, g = want.get(method), got.get(method)
        if w is None or g is None:
            problems.append(f"{method}: only in {'studio' if w is None else 'upstream'}")
            continue
        ops_w, ops_g = [op for _, op, _ in w], [op for _, op, _ in g]
        if ops_w != ops_g:
            k = next((i for i, (a, b) in enumerate(zip(ops_w, ops_g)) if a != b), min(len(ops_w), len(ops_g)))
            problems.append(f"{method}: the graphs the partitioner sees differ ({len(ops_w)} operators upstream, "
                            f"{len(ops_g)} in the studio); first at #{k}: upstream "
                            f"{w[k][:2] if k < len(w) else None}, studio {g[k][:2] if k < len(g) else None}")
            continue

        def parts(nodes):
            by_tag = {}
            for i, (_, _, tag) in enumerate(nodes):
                if tag is not None:
                    by_tag.setdefault(tag, set()).add(i)
            return {frozenset(v) for v in by_tag.values()}

        pw, pg = parts(w), parts(g)
        if pw != pg:
            only_up = sorted({i for p in pw - pg for i in p} - {i for p in pg - pw for i in p})
            only_st = sorted({i for p in pg - pw for i in p} - {i for p in pw - pg for i in p})
            show = lambda idx: [f"{w[i][0]}/{g[i][0]} {w[i][1]}" for i in idx[:5]]  # noqa: E731
            problems.append(f"{method}: {len(pw)} partitions upstream, {len(pg)} in the studio"
                            + (f"; taken only upstream: {show(only_up)}" if only_up else "")
                            + (f"; taken only by the studio: {show(only_st)}" if only_st else "")
                            + ("; the same nodes, grouped otherwise" if not only_up and not only_st else ""))
    return "; ".join(problems) or None


def lowering_difference(want: dict, got: dict) -> str | None:
    """The graphs to_backend made: the same operators and delegate calls in the same order."""
    problems = []
    for method in sorted(set(want) & set(got)):
        w, g = want[method], got[method]
        if w == g:
            continue
        k = next((i for i, (a, b) in enumerate(zip(w, g)) if a != b), min(len(w), len(g)))
        brief = lambda e: e[:4] + (f"{len(e[4])} ops",) if e and e[0] == "delegate" else e  # noqa: E731
        problems.append(f"{method}: after to_backend {len(w)} nodes upstream, {len(g)} in the studio; first at #{k}: "
                        f"upstream {brief(w[k]) if k < len(w) else None}, studio {brief(g[k]) if k < len(g) else None}")
    return "; ".join(problems) or None


def pte_difference(edge, programs: dict, name: str, pt2: Path, which: str, work: Path) -> tuple[str, str]:
    """('identical' | 'not written' | 'upstream' | 'differ', detail): upstream's to_executorch()
    file against the studio's export of the same .pt2 with the same partitioners."""
    try:
        want = edge.to_executorch().buffer
    except Exception as e:  # noqa: BLE001 (upstream cannot write it: nothing to compare)
        return "upstream", str(e).strip().splitlines()[0][:150] if str(e).strip() else type(e).__name__
    config = work / f"partitioner-{which}-et-greedy.json"  # upstream's default planner
    config.write_text(json.dumps({"partitioner": PARTITIONERS[which],
                                  "memory_planning_pass": {"algorithms": ["et-greedy"]}}))
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)  # every model's file is model.pt2
    out = work / f"{stem}-{which}-studio.pte"
    r = subprocess.run([CLI, "export", str(pt2), "--config", str(config), "-o", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        if "XNNPACK's preprocess" in r.stderr:
            return "not written", r.stderr[r.stderr.index("XNNPACK's preprocess"):].strip().splitlines()[0][:160]
        return "differ", f"lowering-cli export exit {r.returncode}: {r.stderr.strip()[-300:]}"
    got = out.read_bytes()
    if got == want:
        return "identical", ""
    first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    up = work / f"{stem}-{which}-upstream.pte"
    up.write_bytes(want)
    where = f".pte differs from upstream's at byte {first} ({len(got)} bytes, upstream {len(want)})"
    unlike = runs_unlike(up, out, programs) or arenas_larger(want, got)
    return ("differ", f"{where}; {unlike}") if unlike else ("runs equal", where)


def runs_unlike(up: Path, studio: Path, programs: dict) -> str | None:
    """Both files run in executorch.runtime (XNNPACK's delegate included) on the programs'
    example inputs: None when their outputs are bit-identical, else how they differ."""
    from harness import numerics_difference, run_pte

    inputs = {}
    for method, program in programs.items():
        example = program.example_inputs
        if example is None:
            return "no example inputs to run both files on"
        inputs[method] = tuple(example[0])
    try:
        diff = numerics_difference(run_pte(up, [], inputs), run_pte(studio, [], inputs))
    except Exception as e:  # noqa: BLE001 (a file the runtime refuses: say so)
        return f"executorch.runtime: {str(e).strip().splitlines()[0][:150] if str(e).strip() else type(e).__name__}"
    return None if diff is None else f"runs differently in executorch.runtime: {diff}"


def arenas_larger(want: bytes, got: bytes) -> str | None:
    """None when no arena of the studio's file is larger than upstream's (non_const_buffer_sizes)."""
    from executorch.exir._serialize._flatbuffer import _program_flatbuffer_to_json

    def arenas(pte: bytes) -> list:
        return [p.get("non_const_buffer_sizes", []) for p in json.loads(_program_flatbuffer_to_json(pte))["execution_plan"]]
    w, g = arenas(want), arenas(got)
    larger = [f"{a} > {b}" for ws, gs in zip(w, g) for a, b in zip(gs, ws) if a > b]
    return f"arenas larger than upstream's: {', '.join(larger)}" if larger or len(w) != len(g) else None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--only", nargs="*", help="corpus entry names")
    ap.add_argument("--no-corpus", action="store_true", help="the models under --models only")
    ap.add_argument("--models", type=Path, help="a models.py work directory: every model.pt2 below it too")
    ap.add_argument("--model-names", nargs="*",
                    help="with --models: only these model directories (fnmatch patterns; CI takes a few, as "
                         "upstream's partitioning of a large model takes minutes)")
    ap.add_argument("--quantize", nargs="*", choices=["static", "dynamic"], default=[],
                    help="with --models: each model also PT2E-quantized for XNNPACK as users do before "
                         "delegating (XNNPACKQuantizer, int8 weights per channel; static: activations "
                         "calibrated on the .pt2's example inputs, dynamic: quantized per token at run time)")
    ap.add_argument("--quantized-only", action="store_true",
                    help="with --models and --quantize: only the quantized rows, not the float models themselves")
    ap.add_argument("--quantize-names", nargs="*",
                    help="with --quantize: only these model directories (fnmatch patterns; default: every one selected)")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    import corpus
    from harness import save_aten_program

    import torch

    def corpus_program(entry):
        def make():
            pt2 = args.work / f"{entry.name}.pt2"
            programs = entry.export()  # once: torch.export is much of a small program's time
            save_aten_program(programs, pt2)
            return pt2, programs
        return entry.name, make

    def model_program(pt2: Path):
        return pt2.parent.name, lambda: (pt2, {"forward": torch.export.load(str(pt2))})

    class NotQuantizable(Exception):
        pass

    def quantized_program(pt2: Path, mode: str):
        def make():
            from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
                XNNPACKQuantizer, get_symmetric_quantization_config)
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

            ep = torch.export.load(str(pt2))
            example = ep.example_inputs[0] if ep.example_inputs else None
            if not example:
                raise NotQuantizable("the .pt2 keeps no example inputs to calibrate on")
            try:
                quantizer = XNNPACKQuantizer()
                quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=mode == "dynamic"))
                prepared = prepare_pt2e(torch.export.export(ep.module(), example).module(), quantizer)
                prepared(*example)
                quantized = torch.export.export(convert_pt2e(prepared), example)
            except Exception as e:  # noqa: BLE001 (PT2E cannot quantize this model: not a row)
                raise NotQuantizable(str(e).strip().splitlines()[0][:150] if str(e).strip() else type(e).__name__)
            out = args.work / f"{pt2.parent.name}-int8-{mode}.pt2"
            torch.export.save(quantized, str(out))
            return out, {"forward": quantized}
        return f"{pt2.parent.name}[int8 {mode}]", make

    todo = [] if args.no_corpus else [corpus_program(e) for e in corpus.CORPUS if not args.only or e.name in args.only]
    if args.models:
        models = [p for p in sorted(args.models.glob("*/model.pt2"))
                  if not args.model_names or any(fnmatch.fnmatchcase(p.parent.name, n) for n in args.model_names)]
        if not args.quantized_only:
            todo += [model_program(p) for p in models]
        quantized = [p for p in models
                     if not args.quantize_names or any(fnmatch.fnmatchcase(p.parent.name, n) for n in args.quantize_names)]
        todo += [quantized_program(p, mode) for mode in args.quantize for p in quantized]
    # Rows known to differ, with why (partition_expected.txt: `name  reason`); a listed row that
    # agrees fails too, so the list never outlives the difference.
    expected = {}
    for line in (HERE / "partition_expected.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            row, reason = line.split(None, 1)
            expected[row] = reason
    agree = differ = upstream_fails = unquantizable = known = stale = 0
    files = {"identical": 0, "runs equal": 0, "not written": 0, "upstream": 0, "differ": 0}
    def rows():
        """(row name, pt2, programs, partitioners) per program: every one with XnnpackPartitioner,
        the dynamically quantized ones also with the dynamic-int8 partitioner first."""
        nonlocal unquantizable
        for name, make in todo:
            try:
                pt2, programs = make()
            except NotQuantizable as e:
                unquantizable += 1
                print(f"{name:32} not quantized: {e}")
                continue
            yield name, pt2, programs, "xnnpack"
            if "int8 dynamic" in name or name.startswith("dynamic_quant"):
                yield f"{name}[dynamic+xnnpack]", pt2, programs, "dynamic+xnnpack"

    for name, pt2, programs, which in rows():
        t0 = time.time()
        try:
            want, want_lowered = upstream_partitions(programs, which)
        except Exception as e:  # noqa: BLE001 (upstream cannot partition it: listed, not compared)
            upstream_fails += 1
            print(f"{name:32} upstream fails: {str(e).strip().splitlines()[0][:150] if str(e).strip() else type(e).__name__}")
            continue
        got, got_lowered, err = studio_partitions(pt2, which, args.work)
        diff = err if got is None else difference(want, got) or lowering_difference(want_lowered, got_lowered)
        file_result, file_detail = pte_difference(upstream_partitions.last_edge, programs, name, pt2, which, args.work)
        files[file_result] += 1
        if file_result == "differ" and not diff:
            # A file known to differ where the partition agrees: `row[pte]` in the list.
            if f"{name}[pte]" in expected:
                known += 1
                print(f"{name:32} known .pte difference ({expected[f'{name}[pte]']}): {file_detail}")
                continue
            diff = file_detail
        elif f"{name}[pte]" in expected:
            stale += 1
            print(f"{name:32} .pte no longer differs -- listed in partition_expected.txt as {name}[pte]: remove it")
        file_note = {"identical": "; .pte identical", "runs equal": f"; .pte runs equal ({file_detail}: outputs "
                     f"bit-identical in executorch.runtime, no arena larger)",
                     "not written": f"; .pte not written ({file_detail})",
                     "upstream": f"; upstream's to_executorch fails ({file_detail})", "differ": ""}[file_result]
        total = sum(len({tag for _, _, tag in nodes if tag is not None}) for nodes in want.values())
        if diff and name in expected:
            known += 1
            print(f"{name:32} known difference ({expected[name]}): {diff}")
        elif diff:
            differ += 1
            print(f"{name:32} DIFFER ({time.time() - t0:.1f} s): {diff}")
        else:
            agree += 1
            stale += name in expected
            print(f"{name:32} agree: {total} partition(s){file_note} ({time.time() - t0:.1f} s)"
                  + (" -- listed in partition_expected.txt: remove it" if name in expected else ""))
    print(f"partition: {agree} agree, {differ} differ, {known} known differences, {upstream_fails} upstream fails of "
          f"{agree + differ + known + upstream_fails}"
          + (f" ({unquantizable} models PT2E could not quantize)" if unquantizable else "")
          + f"; .pte: {files['identical']} identical, {files['runs equal']} runs equal, "
            f"{files['not written']} not written by the studio, "
            f"{files['upstream']} upstream cannot write")
    return 1 if differ or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
