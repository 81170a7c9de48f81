from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig
from executorch.exir.dynamic_shape import DynamicMemoryPlanningMode
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
from executorch.exir.passes import MemoryPlanningPass, ToOutVarPass
from executorch.exir.passes.sym_shape_eval_pass import ConstraintBasedSymShapeEvalPass

# programs: the torch.export programs; edge = to_edge(programs, compile_config=edge_compile_config)
edge_compile_config = EdgeCompileConfig(
    _check_ir_validity=True,
    _skip_dim_order=False,
    _core_aten_ops_exception_list=[],
    preserve_ops=[],
)

# then edge.to_executorch(config)
config = ExecutorchBackendConfig(
    memory_planning_pass=MemoryPlanningPass(
        # The studio also ran best-fit (no ExecuTorch equivalent) and kept the smallest plan.
        memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[greedy]),
        alloc_graph_input=True,
        alloc_graph_output=True,
        alloc_mutable_buffers=True,
        share_mutable_buffers=False,
        alignment=16,
    ),
    to_out_var_pass=ToOutVarPass(ignore_to_out_var_failure=False),
    dynamic_memory_planning_mode=DynamicMemoryPlanningMode.UPPER_BOUND,
    emit_stacktrace=False,
    extract_delegate_segments=True,
    segment_alignment=128,
    constant_tensor_alignment=None,
    delegate_alignment=None,
    sym_shape_eval_pass=ConstraintBasedSymShapeEvalPass(),
    remove_view_copy=True,
    external_constants=False,
    external_mutable_weights=False,
    emit_mutable_buffer_names=False,
    do_quant_fusion_and_const_prop=False,
    run_reinplace_pass=False,
    reinplace_extra_ops=None,
)
