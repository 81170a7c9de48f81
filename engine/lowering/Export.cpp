#include "engine/lowering/Export.h"

#include <filesystem>
#include <sstream>

#include "engine/formats/PtdReader.h"
#include "engine/lowering/Emitter.h"

namespace lstudio {

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
  EmitReport emitted;
  auto pte = emitProgram(program, config, &emitted);
  if (!pte) return pte.error();
  outcome.notes = std::move(emitted.notes);
  Program out = std::move(pte.value());
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
