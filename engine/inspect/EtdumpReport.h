// An ETDump linked to the program that was run: each instruction's time in every execution,
// the events inside its delegate calls, and the values the runtime logged for it, compared
// with the studio's interpreter on the same inputs (`lowering-cli etdump`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/EtdumpReader.h"
#include "engine/ir/Ir.h"
#include "engine/run/Interpreter.h"

namespace lstudio {

uint64_t medianOf(std::vector<uint64_t> ticks);

/// An instruction the runtime timed.
struct ProfiledInstruction {
  size_t instruction = 0;  ///< index into the method's nodes
  std::string what;        ///< "aten::addmm.out", "XnnpackBackend delegate"
  std::string node;        ///< the graph node's name, when known
  std::vector<uint64_t> ticks;  ///< its call's span, once per execution that reached it
  /// Events inside a delegate call, in the order of the first execution: the backend's
  /// name for each ("Convolution (NHWC, F32) IGEMM #1", or its numeric id) and its spans.
  struct Inner {
    std::string name;
    std::vector<uint64_t> ticks;
  };
  std::vector<Inner> delegateEvents;
};

/// The values the runtime logged for one instruction in the first execution (with
/// intermediate outputs on): a kernel's output, or a delegate call's inputs and outputs.
struct LoggedInstruction {
  size_t instruction = 0;
  std::vector<run::HostValue> tensors;  ///< bytes empty when there is no debug buffer
  /// Largest |logged - interpreter| over the compared tensors (compareWithInterpreter).
  std::optional<double> difference;
  std::string notCompared;  ///< why there is no difference, when there is none
  /// The instructions that wrote the tensors this one reads (earlier, in the same chain).
  std::vector<size_t> producers;
  /// Every producer's logged values equal the interpreter's: the difference is this
  /// instruction's own, not carried in from its inputs (compareWithInterpreter).
  bool inputsExact = false;
};

struct EtdumpReport {
  std::string method;
  size_t executions = 0;               ///< "Execute" blocks
  std::vector<uint64_t> executeTicks;  ///< each Method::execute span
  std::vector<uint64_t> loadTicks;     ///< each Program::load_method span
  std::vector<ProfiledInstruction> instructions;  ///< the timed ones, in instruction order
  std::vector<LoggedInstruction> logged;          ///< in instruction order
  std::vector<run::HostValue> outputs;            ///< the method's outputs as logged
  std::optional<double> outputDifference;         ///< from the interpreter's outputs
  bool valuesRead = false;  ///< the logged tensors' bytes came from a debug buffer
};

/// Links `dump` to a method of `program` (`method` empty: the one method every event fits,
/// "forward" first). An event at an instruction the method does not have, or naming an
/// operator other than the one there, is an error saying the ETDump is of another program.
/// With `debugBuffer` (the buffer the runtime logged into, saved beside the ETDump) the
/// logged tensors' bytes are read, in logical C order; a tensor outside it is an error
/// naming the buffer and the offset.
Result<EtdumpReport> linkEtdump(const Etdump& dump, const Program& program, const std::string& method = {},
                                const MappedFile* debugBuffer = nullptr);

/// Sets each logged instruction's difference from what the interpreter's traced run of the
/// same method wrote there (run::maxDifference, logged tensors matched to written ones from
/// the last), and the logged outputs' difference from the run's outputs.
void compareWithInterpreter(EtdumpReport& report, const run::RunResult& traced);

}  // namespace lstudio
