// XNNPACK's preprocess (ExecuTorch's XnnpackBackend.preprocess), written here: the program
// to_backend gives a partition (its lowered module) becomes the XNNGraph payload the
// delegate call carries, with the partition's weights as named data.
//
// What is written so far is the float32 path without channels-last layouts: the
// activation fusion pass (a relu or hardtanh folded into the linear, convolution, add,
// sub or mul before it), and the node visitors of the elementwise, linear, matmul,
// shape and softmax operators. A partition with anything else (a convolution or pooling,
// which need the channels-last reshapes; quantized values; a node upstream folds as a
// constant; a size without an upper bound) is refused with the node and the reason: its delegate call
// has no payload, and export says so instead of writing a file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio {

struct XnnpackCompiled {
  std::string payload;  ///< XH00 header + XNNGraph flatbuffer, as upstream's bytes
  /// The partition's constants as ExecuTorch's NamedDataStore holds them: key (SHA-256 of
  /// the bytes), bytes; in the order the visitors added them, each key once.
  std::vector<std::pair<std::string, std::string>> namedData;
};

/// Compiles a to_backend lowered module (its method "forward") for XNNPACK.
Result<XnnpackCompiled> compileForXnnpack(const Program& lowered);

}  // namespace lstudio
