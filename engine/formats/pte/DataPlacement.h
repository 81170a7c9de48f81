// Decides where every byte of a program goes before anything is built or written: the
// constant table and segment, the initial values of mutable tensors, delegate blobs
// (segments or inline), named data, and the entries of each external .ptd file.
// Private to the .pte writer (engine/formats/PteWriter.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/PteWriter.h"
#include "engine/formats/pte/FileLayout.h"
#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::pte {

struct ExternalEntry {
  std::string key;
  Bytes bytes;
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dimOrder;
  bool hasLayout = true;  ///< false: an opaque blob (a delegate's named data)
};

/// Decides where every byte goes before anything is built or written.
class Planner {
 public:
  Planner(const Program& p, const PteWriteOptions& o, std::string file) : p_(p), o_(o), file_(std::move(file)) {}

  Status plan();

  // Results.
  std::vector<std::vector<uint32_t>> bufferIdx;  // [method][value] data_buffer_idx to write
  std::vector<Bytes> constants{Bytes{}};         // constant table, [0] the placeholder
  std::vector<uint64_t> constantOffsets;
  std::vector<Bytes> mutables;                   // mutable table ([0] placeholder) or empty
  std::vector<uint64_t> mutableOffsets;
  int mutableSegment = -1;
  struct DelegateRef { bool segment = false; uint32_t index = 0; };
  std::vector<std::vector<DelegateRef>> delegateRefs;  // [method][delegate]
  std::vector<Bytes> inlineData;
  std::vector<std::pair<std::string, uint32_t>> namedData;  // key, segment index
  std::vector<SegmentPlan> segments;
  size_t delegateSegments = 0;
  std::map<std::string, std::vector<ExternalEntry>> external;  // tag -> entries
  std::vector<std::string> notes;

  Error error(ErrorCode c, std::string what, std::string expected = {}, std::string found = {}) const {
    return Error{c, file_, std::nullopt, std::move(what), std::move(expected), std::move(found)};
  }
  std::string where(size_t m) const {
    return "methods[" + std::to_string(m) + "] '" + p_.methods[m].name + "'";
  }

 private:
  Status checkOptions() const;

  struct Use {
    size_t m = 0, v = 0;
    uint32_t idx = 0;  // index to keep, 0: append
    Bytes bytes;
  };

  /// The first nbytes of the tensor's data; an error when they are not there.
  Result<Bytes> tensorBytes(const TensorSpec& t, size_t m, size_t v, const char* role) const;
  /// Builds a data table: indices the IR gives are kept when consistent,
  /// other entries are appended, identical bytes sharing an entry.
  void buildTable(std::vector<Use>& uses, std::vector<Bytes>& table, const std::string& what);
  /// The .ptd file an external tensor goes to (see PteWriter.h).
  std::string tagFor(const TensorSpec& t) const;
  Status addExternal(const TensorSpec& t, size_t m, size_t v);
  /// Entries of the opened .ptd files that no tensor names go back to the
  /// file of the same name (a delegate reads its named data from there).
  void addCarriedData();
  /// Entries resolved from an opened .ptd keep that file's order (re-exporting a .pte
  /// and its .ptd rewrites the .ptd as it was), not the order values name them in.
  void keepSourceOrder();
  Status planTensors();
  Status planDelegates();
  Status planNamedData();

  const Program& p_;
  const PteWriteOptions& o_;
  std::string file_;
  std::map<std::string, std::pair<std::string, size_t>> externalKeys_;  // key -> (tag, index)
};

}  // namespace lstudio::pte
