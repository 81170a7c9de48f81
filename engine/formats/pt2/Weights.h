// The weights of a .pt2 program: the state dict, constants and tensor data, found through a
// PT2 archive's weights/constants configs or in torch.save archives stored as records, and
// attached to the placeholders the graph signature names. Private to the .pt2 reader.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/formats/ZipArchive.h"
#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::pt2 {

/// Where one weight's bytes are and how they are laid out.
struct WeightData {
  Bytes bytes;
  bool viewed = false;  ///< bytes already start at the tensor (from a torch.save pickle)
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  ///< in elements, from a torch.save pickle; empty: contiguous
};

/// Weights described by a PT2 archive's <name>_weights_config.json (or constants config).
Status readWeightConfig(const ZipArchive& zip, const std::string& prefix, const std::string& configPath,
                        const std::string& dataDir, std::unordered_map<std::string, WeightData>& out);

/// Reads a torch.save zip stored as record `rec`: every tensor by its key path.
Status torchSave(const ZipArchive& zip, const ZipEntry& rec, std::unordered_map<std::string, WeightData>& out);
/// The same, in the pickle's order (sample inputs are positional).
Result<std::vector<std::pair<std::string, WeightData>>> torchSaveInOrder(const ZipArchive& zip, const ZipEntry& rec);
/// The same for a torch.save archive that is a zip of its own (the bytes of a lowered
/// module's original_state_dict, say).
Result<std::vector<std::pair<std::string, WeightData>>> torchSaveInOrder(const ZipArchive& archive);

/// Attaches weights (fqn -> bytes) to the placeholders the signature names.
Status attachWeights(Method& m, const std::unordered_map<std::string, WeightData>& weights, const std::string& where);

}  // namespace lstudio::pt2
