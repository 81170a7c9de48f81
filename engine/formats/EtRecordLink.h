// A .pte and the ETRecord written with it (executorch.devtools.generate_etrecord):
// the ETRecord's debug_handle_map gives, per method, the debug handle(s) of
// each instruction of the ExecuTorch program, and its edge programs carry the
// same handles on their nodes with the module hierarchy and source lines. A
// .pte keeps neither, so linking gives each instruction the module it came
// from and its stack trace: the flat program groups and reads like its .pt2.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio {

struct EtRecordLink {
  size_t instructions = 0;  ///< instructions of the linked methods
  size_t linked = 0;        ///< of those, given a module and a source line
  size_t namedConstants = 0;  ///< constants named after the parameter or buffer they were made from
  std::vector<std::string> notes;  ///< methods the ETRecord does not cover, and the like
};

/// Links the instructions of `pte` (a program read from a .pte) to the nodes
/// of the ETRecord at `etrecordPath`: each linked node gets the debug handle,
/// module stack and (where the .pte has none) stack trace of its edge node,
/// and each delegate the origins of its operators (Delegate::origins); a constant an
/// instruction reads, unnamed in the .pte, takes the name of the parameter, buffer or lifted
/// constant its edge node reads in the same place ("p_fc1_weight").
/// An ETRecord that does not belong to the program (instructions it names
/// that the method lacks) is an error naming the file, and `pte` is unchanged.
Result<EtRecordLink> linkEtRecord(Program& pte, const std::string& etrecordPath);

}  // namespace lstudio
