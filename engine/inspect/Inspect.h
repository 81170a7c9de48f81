// What `lowering-cli inspect` and the studio's summary show about a program:
// gathered once into plain structs, then rendered as text or JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/inspect/DelegateReport.h"
#include "engine/ir/Ir.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/formats/PtdReader.h"

namespace lstudio {

struct OperatorCount {
  std::string name, overload;
  size_t count = 0;  ///< kernel instructions calling it
};

struct DelegateSummary {
  std::string id;
  uint64_t bytes = 0;
  std::string location;  ///< "inline" or "segment N"
  size_t compileSpecs = 0;
  std::string payload;  ///< "XNNPACK XN01 with XH00 header: 11 nodes, 31 values, 2.0 MiB of constants"
  DelegateReport report;  ///< everything known about it (JSON: its decoded payload)
};

struct ConstantSummary {
  size_t count = 0;
  uint64_t bytes = 0;
  size_t inlineBuffer = 0, segment = 0, external = 0, mutableInit = 0;
  uint64_t inlineBytes = 0, segmentBytes = 0, externalBytes = 0, mutableBytes = 0;
};

struct IoSummary {
  ValueId value = kNoValue;
  std::string description;  ///< "float32[1, 3]" or "Int 5"
};

/// One entry of a torch.export graph signature, for reports.
struct SignatureEntry {
  std::string kind;    ///< "user_input", "parameter", "buffer", "constant", "user_output", "buffer_mutation", ...
  std::string name;    ///< graph value name
  std::string target;  ///< fqn of the parameter/buffer, or mutated buffer
  std::string type;    ///< "float32[3, 3]"
  uint64_t bytes = 0;
};

struct MethodSummary {
  std::string name;
  // Graph programs (.pt2, ETRecord):
  size_t nodes = 0;
  std::vector<SignatureEntry> signatureInputs, signatureOutputs;
  size_t moduleDepth = 0;
  uint64_t weightBytes = 0;
  std::vector<SymbolRange> symbols;
  std::vector<std::string> diagnostics;  ///< edge dialect problems and other reader notes
  /// Control-flow branches (torch.cond's), depth first: "true_graph_0: 2 nodes (aten::linear.default, ...)".
  std::vector<std::string> branches;
  std::vector<IoSummary> inputs, outputs;
  size_t instructions = 0, values = 0, chains = 0, kernelCalls = 0, delegateCalls = 0;
  std::vector<OperatorCount> operators;
  std::vector<DelegateSummary> delegates;
  ConstantSummary constants;
  MemoryPlanReport plan;
};

struct ProgramSummary {
  std::string file;
  SourceFormat format = SourceFormat::Pte;
  ExportFacts exportFacts;
  ContainerFacts facts;
  size_t segments = 0;
  size_t namedData = 0;
  uint64_t namedDataBytes = 0;
  std::vector<std::string> dataFiles;
  std::vector<std::string> unresolvedExternal;
  std::vector<MethodSummary> methods;
};

ProgramSummary summarize(const Program& program, const std::vector<DataFile>& dataFiles = {});

/// Human-readable report (stable: used for golden files).
std::string toText(const ProgramSummary& s);
/// The same as one JSON document.
nlohmann::json toJson(const ProgramSummary& s);

/// What `inspect` shows for a .ptd opened on its own: header facts and every entry.
std::string dataFileText(const DataFile& d);
nlohmann::json dataFileJson(const DataFile& d);

/// Short description of a value for listings: "float32[2, 3]", "Int 4", "None".
std::string describeValue(const Method& m, ValueId id);

}  // namespace lstudio
