"""Delegates on another device: the studio's PropagateDevicePass and per-device planning against
ExecuTorch's.

A delegate whose compile specs carry "target_device" (e.g. b"cuda:0") makes ExecuTorch's
to_executorch mark the tensors it reads and writes as on that device, put host/device copies
(et_copy::_h2d_copy / _d2h_copy) around it and plan those tensors in arenas of their own
(non_const_buffer_device), unless enable_non_cpu_memory_planning is off. The programs here are
partitioned with ExecuTorch's demo backend (BackendWithCompilerDemo, from the wheel's tests: the
payload does not matter, the device does), by a partitioner written here that gives each
aten.add its own delegate and device. For every program x config, as harness.py does:
  edge     the studio's export of upstream's ETRecord (the delegated edge program) with the config
  relower  the studio's export of upstream's .pte with no config
against upstream's .pte: byte-identical, or equal field by field (device fields included) with
arenas no larger (the studio's own planners), and refused by ExecuTorch's runtime alike (it has
no device allocator for CUDA, nor the demo backend). The last line is
  devices: I identical, S same-shape, R refused alike, D differ, F failed of N
and the exit status is non-zero unless every row is identical, same-shape, or refused by both
(a config ExecuTorch refuses for a program, e.g. skip_h2d_for_method_inputs on an input that two
nodes read, must make the studio's export fail with exit 4 too).
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import StudioError, cli, compare_files, run_pte, runtime_error, upstream_config  # noqa: E402


def per_add_partitioner(devices: list[str]):
    """Each aten.add.Tensor its own delegate of the demo backend, the i-th on devices[i] (the last
    device for the rest)."""
    from executorch.exir.backend.compile_spec_schema import CompileSpec
    from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
    from executorch.exir.backend.test.backend_with_compiler_demo import BackendWithCompilerDemo
    from executorch.exir.dialects._ops import ops as exir_ops

    class PerAdd(Partitioner):
        def partition(self, exported_program) -> PartitionResult:
            tags = {}
            adds = [n for n in exported_program.graph_module.graph.nodes
                    if n.op == "call_function" and n.target == exir_ops.edge.aten.add.Tensor]
            for i, node in enumerate(adds):
                tag = f"tag{i}"
                node.meta["delegation_tag"] = tag
                device = devices[min(i, len(devices) - 1)]
                tags[tag] = DelegationSpec(BackendWithCompilerDemo.__name__, [
                    CompileSpec("max_value", bytes([4])), CompileSpec("target_device", device.encode())])
            return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)

    return PerAdd()


class CpuBetween(torch.nn.Module):
    """Delegates with a CPU op between them; a delegate's result also returned."""

    def forward(self, x, y):
        a = x + y
        b = a * x
        return b + y, a


class Chained(torch.nn.Module):
    """Three delegates in a row: same-device round trips to drop, and a change of device."""

    def forward(self, x, y):
        a = x + y
        b = a + x
        c = b + y
        return c.relu()


class InputsOnly(torch.nn.Module):
    """Inputs read by a delegate only, its result only returned (the skip_h2d / skip_d2h case)."""

    def forward(self, x, y):
        return x + y


PROGRAMS = {
    "cpu_between": (CpuBetween, ["cuda:0"]),
    "chained_same_device": (Chained, ["cuda:0"]),
    "chained_two_devices": (Chained, ["cuda:0", "cuda:0", "cuda:1"]),
    "cpu_target": (CpuBetween, ["cpu"]),
    "inputs_only": (InputsOnly, ["cuda:0"]),
}

CONFIGS = {
    "default": {},
    "device_off": {"enable_non_cpu_memory_planning": False},
    "et_greedy": {"memory_planning_pass": {"algorithms": ["et-greedy"]}},
    "skip_copies": {"propagate_device_config": {"skip_h2d_for_method_inputs": True,
                                                "skip_d2h_for_method_outputs": True}},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    from executorch.devtools import generate_etrecord
    from executorch.exir import to_edge_transform_and_lower

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    counts = {"identical": 0, "same-shape": 0, "refused": 0, "differ": 0, "failed": 0}
    t_all = time.time()
    for name, (model, devices) in PROGRAMS.items():
        torch.manual_seed(0)
        inputs = (torch.randn(2, 3), torch.randn(2, 3))
        ep = torch.export.export(model(), inputs)
        edge = to_edge_transform_and_lower(ep, partitioner=[per_add_partitioner(devices)])
        pdir = work / name
        pdir.mkdir()
        etrecord = pdir / "etrecord.bin"
        generate_etrecord(str(etrecord), copy.deepcopy(edge), copy.deepcopy(edge).to_executorch())
        for cname, cjson in CONFIGS.items():
            cdir = pdir / cname
            (cdir / "upstream").mkdir(parents=True)
            cfg = cdir / "config.json"
            cfg.write_text(json.dumps(cjson))
            exact = cjson.get("memory_planning_pass", {}).get("algorithms") == ["et-greedy"]
            try:
                et = copy.deepcopy(edge).to_executorch(upstream_config(cfg, edge))
            except Exception as e:
                # ExecuTorch refuses the config for this program: so must the studio.
                why = str(e).strip().splitlines()[0][:160]
                r = cli("export", str(etrecord), "--config", str(cfg), "-o", str(cdir / "studio.pte"), check=False)
                result = "refused" if r.returncode == 4 else "differ"
                detail = (f"both refuse; upstream: {why}; studio: {r.stderr.strip().splitlines()[-1][:160]}"
                          if result == "refused" else f"upstream refuses ({why}), the studio exits {r.returncode}")
                counts[result] += 1
                print(f"{name:22s} {cname:12s} edge     {result:10s} {detail}", flush=True)
                continue
            up = cdir / "upstream" / "model.pte"
            up.write_bytes(et.buffer)
            try:
                up_run = ("ok", run_pte(up, [], {"forward": inputs}))
            except Exception as e:
                up_run = ("error", runtime_error(e))
            for inp, source, extra, exact_plan in (("edge", etrecord, ["--config", str(cfg)], exact),
                                                   ("relower", up, [], False)):
                sdir = cdir / inp
                sdir.mkdir()
                try:
                    cli("export", str(source), *extra, "-o", str(sdir / "model.pte"), "--ptd-dir", str(sdir))
                    result, detail = compare_files(up, [], sdir / "model.pte", [], {"forward": inputs}, sdir,
                                                   up_run, exact_plan)
                except StudioError as e:
                    result, detail = "failed", str(e)
                except Exception as e:
                    result, detail = "failed", f"harness: {type(e).__name__}: {e}"[:400]
                    traceback.print_exc()
                counts[result] += 1
                print(f"{name:22s} {cname:12s} {inp:8s} {result:10s} {detail}", flush=True)
    total = sum(counts.values())
    print(f"time: {time.time() - t_all:.0f} s")
    print(f"devices: {counts['identical']} identical, {counts['same-shape']} same-shape, "
          f"{counts['refused']} refused alike, {counts['differ']} differ, {counts['failed']} failed of {total}")
    return 0 if counts["differ"] == 0 and counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
