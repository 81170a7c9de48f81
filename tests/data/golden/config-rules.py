import fnmatch

import torch
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig
from executorch.exir.dynamic_shape import DynamicMemoryPlanningMode
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
from executorch.exir.passes import MemoryPlanningPass, ToOutVarPass
from executorch.exir.passes.sym_shape_eval_pass import HintBasedSymShapeEvalPass

# The studio's external_constants rules; the first that matches decides.
# (name glob, module prefix, first op reading it, min bytes, .ptd tag or None = keep in the .pte)
CONSTANT_RULES = [
    ("tok_embeddings.weight", "", "", 0, None),
    ("*.weight", "", "", 1048576, "weights"),
    ("", "layers.0", "aten::mm", 0, "first \"layer\""),
]


def constant_tag_fn(edge):
    """external_constants callable for `edge`, the EdgeProgramManager to_executorch lowers."""
    # ExecuTorch calls it with each constant placeholder of every method; its fully
    # qualified name is in the method's graph signature, not on the node.
    fqns = {}
    for method in edge.methods:
        sig = edge.exported_program(method).graph_signature
        fqns.update({**sig.inputs_to_parameters, **sig.inputs_to_buffers, **sig.inputs_to_lifted_tensor_constants})

    def tag(node):
        name = fqns.get(node.name, node.name)
        module = name.rpartition(".")[0]
        readers = [u for u in node.users if u.op == "call_function" and hasattr(u.target, "name")]
        op = readers[0].target.name() if readers else ""
        nbytes = node.meta["spec"].nbytes()
        for pattern, prefix, rule_op, min_bytes, file in CONSTANT_RULES:
            prefix = prefix.rstrip(".")
            if pattern and not fnmatch.fnmatchcase(name, pattern):
                continue
            if prefix and not (module == prefix or module.startswith(prefix + ".")):
                continue
            if rule_op and not (op == rule_op or op.startswith(rule_op + ".") or op == "aten::" + rule_op):
                continue
            if nbytes >= min_bytes:
                return file
        return None

    return tag


# programs: the torch.export programs; edge = to_edge(programs, compile_config=edge_compile_config)
edge_compile_config = EdgeCompileConfig(
    _check_ir_validity=True,
    _skip_dim_order=True,
    _core_aten_ops_exception_list=[],
    preserve_ops=[torch.ops.aten.linear.default, torch.ops.aten.upsample_bilinear2d.vec],
)

# then edge.to_executorch(config)
config = ExecutorchBackendConfig(
    memory_planning_pass=MemoryPlanningPass(
        # The studio also ran best-fit (no ExecuTorch equivalent) and kept the smallest plan.
        memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[greedy]),
        alloc_graph_input=False,
        alloc_graph_output=True,
        alloc_mutable_buffers=True,
        share_mutable_buffers=False,
        alignment=64,
    ),
    to_out_var_pass=ToOutVarPass(ignore_to_out_var_failure=True),
    dynamic_memory_planning_mode=DynamicMemoryPlanningMode.UPPER_BOUND,
    emit_stacktrace=False,
    extract_delegate_segments=True,
    segment_alignment=4096,
    constant_tensor_alignment=None,
    delegate_alignment=256,
    sym_shape_eval_pass=HintBasedSymShapeEvalPass(),
    remove_view_copy=True,
    external_constants=constant_tag_fn(edge),
    external_mutable_weights=False,
    emit_mutable_buffer_names=False,
    do_quant_fusion_and_const_prop=False,
    run_reinplace_pass=False,
    reinplace_extra_ops=frozenset({torch.ops.aten.index_put.default, torch.ops.aten.scatter.src}),
)
