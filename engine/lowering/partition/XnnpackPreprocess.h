// XNNPACK's preprocess (ExecuTorch's XnnpackBackend.preprocess), written here: the program
// to_backend gives a partition (its lowered module) becomes the XNNGraph payload the
// delegate call carries, with the partition's weights as named data.
//
// What is written so far is the float32 path. The passes, in XNNPACKPassManager's order:
// clone removal, the addmm/mm-to-linear transform, batch-norm fusion into the convolution or
// linear before it (and the decomposition of one left standing into a depthwise 1x1
// convolution), activation fusion, the conv1d unsqueeze, the channels-last tagging with its
// layout copies, and the removal of redundant copies. Then the node visitors of the
// elementwise, linear, matmul, convolution, pooling, mean, padding, shape and softmax
// operators. A partition with anything else (quantized or float16 values, a node upstream
// folds as a constant, an operator without a visitor here, a size without an upper bound)
// is refused with the node and the reason: its delegate call has no payload, and export
// says so instead of writing a file.
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
