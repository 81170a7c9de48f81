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
  options.writeDataFiles = unresolvedExternalKeys(out).empty();
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
  out << "  " << r.segments << " segments, " << r.constants - (r.constants ? 1 : 0) << " constants in the .pte, "
      << r.externalTensors << " external tensors";
  if (r.mutableValues) out << ", " << r.mutableValues - 1 << " mutable initial values";
  out << "\n";
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
