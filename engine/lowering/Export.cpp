#include "engine/lowering/Export.h"

#include <filesystem>
#include <sstream>

#include "engine/formats/PtdReader.h"
#include "engine/lowering/Emitter.h"
#include "engine/run/KernelRules.h"

namespace lstudio {
namespace {

/// What ExecuTorch's runtime would refuse in the emitted program, found before a byte is
/// written: an operator no kernel library registers, a kernel's dim-order check, a planned
/// tensor past the end of its arena.
std::optional<Error> runtimeRefusal(const Program& p, const std::string& output) {
  for (const Method& m : p.methods) {
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const Node& n = m.nodes[i];
      if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size()) continue;
      const OperatorRef& op = m.operators[static_cast<size_t>(n.op)];
      const std::string where = "method " + m.name + ", instruction " + std::to_string(i) + " (" + op.fullName() + ")";
      if (!runtimeHasKernel(op))
        return Error{ErrorCode::RuntimeRule, output, std::nullopt, where, "an operator ExecuTorch's kernel libraries register",
                     "none registers it: the runtime would fail loading the method (OperatorMissing, 0x14)"};
      if (auto broken = kernelRuleViolation(m, n)) return Error{ErrorCode::RuntimeRule, output, std::nullopt, where, "", *broken};
    }
    for (size_t v = 0; v < m.values.size(); ++v) {
      const TensorSpec* t = m.values[v].tensorIf();
      if (!t || !t->slot || t->storage() != TensorStorage::Planned) continue;
      const auto bytes = t->nbytes();
      const uint32_t id = t->slot->memId;
      if (bytes && id < m.nonConstBufferSizes.size() &&
          t->slot->offset + *bytes <= static_cast<uint64_t>(m.nonConstBufferSizes[id]))
        continue;
      return Error{ErrorCode::RuntimeRule, output, std::nullopt,
                   "method " + m.name + ", value " + std::to_string(v) + " (" + m.values[v].name + ")",
                   "a planned tensor inside its arena",
                   "mem_id " + std::to_string(id) + " offset " + std::to_string(t->slot->offset) +
                       (bytes ? " + " + std::to_string(*bytes) + " bytes" : std::string(" (size unknown)")) +
                       (id < m.nonConstBufferSizes.size() ? " past an arena of " + std::to_string(m.nonConstBufferSizes[id]) + " bytes"
                                                          : std::string(", an arena the method does not have"))};
    }
  }
  return std::nullopt;
}

}  // namespace

Result<ExportOutcome> exportToFiles(const Program& program, const ExecutorchBackendConfig& config,
                                    const std::string& output, const std::string& ptdDir,
                                    std::function<bool(uint64_t, uint64_t)> progress) {
  ExportOutcome outcome;
  if (!ptdDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(ptdDir, ec);
    if (ec) return Error{ErrorCode::Io, ptdDir, std::nullopt, "the .ptd folder", "a folder that can be created", ec.message()};
  }
  PteWriteOptions options = writeOptionsFor(config);
  options.ptdDir = ptdDir;
  options.progress = std::move(progress);
  if (program.format == SourceFormat::Pte)
    return Error{ErrorCode::Unsupported, program.path, std::nullopt, "export", "a lowered program (run the pipeline: it de-lowers a .pte first)",
                 "a .pte as read"};
  // An ETRecord recorded before partitioning: exported as it is, it would not be delegated.
  if (const auto& to = program.exportFacts.delegatedTo; !to.empty() && config.partitioners.empty()) {
    std::string backends;
    for (const std::string& b : to) backends += (backends.empty() ? "" : ", ") + b;
    return Error{ErrorCode::Unsupported, program.path, std::nullopt, "export of an ETRecord's edge program",
                 "a program that was not delegated, or a config with the partitioner that delegated it "
                 "(XnnpackBackend: --set partitioner=xnnpack)",
                 "a program its delegate_map says was delegated to " + backends +
                     ", recorded before partitioning: without a partitioner it would be written undelegated"};
  }
  // Never a delegate call without its payload: a partition the studio's XNNPACK preprocess
  // cannot compile yet is named with the reason.
  for (const Method& m : program.methods)
    for (size_t d = 0; d < m.delegates.size(); ++d)
      if (m.delegates[d].blob.size == 0 && !m.delegates[d].payloadError.empty())
        return Error{ErrorCode::Unsupported, output, std::nullopt,
                     "export of " + m.name + "'s delegate call " + std::to_string(d) + " (" + m.delegates[d].backendId + ")",
                     "a partition the studio can compile (or a config without `partitioner`)",
                     m.delegates[d].payloadError};
  EmitReport emitted;
  auto pte = emitProgram(program, config, &emitted);
  if (!pte) return pte.error();
  outcome.notes = std::move(emitted.notes);
  Program out = std::move(pte.value());
  if (auto refused = runtimeRefusal(out, output)) return *refused;
  // External tensors of a .pte given without its .ptd: the .pte names them, no .ptd is written.
  outcome.unresolvedExternal = unresolvedExternalKeys(out);
  options.writeDataFiles = outcome.unresolvedExternal.empty();
  for (const Method& m : out.methods)
    for (const Value& v : m.values)
      if (const TensorSpec* t = v.tensorIf(); t && t->storage() == TensorStorage::Constant) ++outcome.constantTensors;
  auto written = writePte(out, output, options);
  if (!written) return written.error();
  outcome.written = std::move(written.value());
  for (const Method& m : out.methods)
    outcome.methods.push_back({m.name, m.inputs.size(), m.outputs.size(), m.nodes.size(), m.operators.size(), m.nonConstBufferSizes});
  return outcome;
}

std::string exportSummary(const ExportOutcome& o) {
  std::ostringstream out;
  const PteWriteReport& r = o.written;
  for (const auto& f : r.files) out << "wrote " << f.path << " (" << f.bytes << " bytes)\n";
  // Tensors, as inspect and the Constants table count them; the segment
  // stores each distinct byte string once.
  out << "  " << r.segments << " segments, " << o.constantTensors << " constant tensors in the .pte ("
      << r.constants - (r.constants ? 1 : 0) << " distinct buffers), " << r.externalTensors << " entries in .ptd files";
  if (r.mutableValues) out << ", " << r.mutableValues - 1 << " mutable initial values";
  out << "\n";
  if (!o.unresolvedExternal.empty()) {
    out << "  warning: " << o.unresolvedExternal.size() << " external tensors (";
    for (size_t i = 0; i < o.unresolvedExternal.size() && i < 3; ++i) out << (i ? ", " : "") << o.unresolvedExternal[i];
    if (o.unresolvedExternal.size() > 3) out << ", ...";
    out << ") were not given: the .pte still needs the .ptd that holds them (export with --ptd to write it)\n";
  }
  for (const ExportedMethod& m : o.methods) {
    out << "  method " << m.name << ": " << m.inputs << " inputs, " << m.outputs << " outputs, " << m.instructions
        << " instructions, " << m.operators << " operators\n";
    for (size_t id = 1; id < m.arenas.size(); ++id)
      out << "  " << m.name << " mem_id " << id << ": arena " << m.arenas[id] << " bytes\n";
  }
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
  return out.str();
}

}  // namespace lstudio
