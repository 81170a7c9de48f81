// The checks ExecuTorch's to_edge makes on an exported graph: every operator
// resolved against its schema (keyword arguments placed, defaults filled in)
// and checked against the core ATen operator set.
#pragma once

#include <optional>

#include "engine/ir/Ir.h"
#include "engine/ir/OpRegistry.h"

namespace lstudio {

/// Puts each kernel node's arguments in schema order, adding the defaults the
/// exporter left out as values, and records a Warning diagnostic (node name,
/// target, first stack frame) for every operator that is unknown, outside the
/// core ATen set, or called with arguments its schema does not have.
/// Returns the number of problems found.
size_t resolveEdgeDialect(Method& m, const OpRegistry& registry = OpRegistry::builtin());

/// "node 'linear' (torch.ops.aten.linear.default) at model.py:12: return self.fc(x)":
/// the node, its operator and the innermost source line, for messages.
std::string nodeLocation(const Node& n);

/// The default of schema argument `a` as a new value of `m`, or none when it
/// has no default (or one the studio cannot spell).
std::optional<ValueId> schemaDefault(Method& m, const SchemaArgument& a);

}  // namespace lstudio
