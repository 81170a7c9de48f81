// torch.export's serialized ExportedProgram (torch/_export/serde/schema.py) read into one
// Method of the IR. Private to the .pt2 reader: Pt2Reader.cpp finds the program records in
// the container; ProgramJson.cpp reads the graph (symbols, tensors, nodes),
// ProgramArguments.cpp the arguments of its nodes, ProgramSignature.cpp its signature.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/MappedFile.h"
#include "engine/support/Error.h"

namespace lstudio::pt2 {

/// What the lowered backend modules of an edge program (an ETRecord made after
/// to_edge_transform_and_lower) carry besides their delegate call: the bytes
/// decoded from the JSON, owned here until the Program takes them, and the
/// named data their backends stored for the .pte or for .ptd files.
struct LoweredData {
  std::vector<std::shared_ptr<const MappedFile>> buffers;
  std::vector<NamedBlob> namedData;
  std::vector<CarriedData> external;
};

/// Parses the program JSON `text` of record `where` into `m` and records the schema and
/// torch versions and the dialect in `facts`. `parser` is reused across the file's programs.
/// With `lowered`, executorch_call_delegate nodes become delegate calls (LoweredModules.cpp).
Status readProgramJson(std::string& text, const std::string& where, bool etRecordNumbering,
                       simdjson::dom::parser& parser, Method& m, ExportFacts& facts, LoweredData* lowered = nullptr);

/// An nn_module_stack string ("L__self__,,Type;L__self__linear,linear,torch.nn.Linear"), outermost first.
std::vector<ModuleFrame> parseModuleStack(std::string_view text);

using simdjson::dom::element;
using simdjson::dom::element_type;

inline bool boolOr(element e, bool fallback) {
  bool b;
  return e.get_bool().get(b) == simdjson::SUCCESS ? b : fallback;
}

/// torch.export's serialized ScalarType numbering (torch/_export/serde/schema.py),
/// which differs from c10's.
/// ExecuTorch's own copy of the schema (ETRecords) numbers three types differently.
std::optional<ScalarType> serdeScalarType(int64_t v, bool etRecord = false);

/// A JSON path for error messages, built into text only when an error
/// needs it (a 100 MB program has millions of arguments).
class Path {
 public:
  // Paths point at their parent and root text: a Path kept in a variable
  // must be built from named objects, never from temporaries.
  Path(const char* root) : root_(root) {}
  Path(const std::string& root) : root_(root.c_str()) {}
  Path(const Path* parent, std::string suffix) : parent_(parent), suffix_(std::move(suffix)) {}
  std::string str() const { return (parent_ ? parent_->str() : std::string(root_ ? root_ : "")) + suffix_; }

 private:
  const Path* parent_ = nullptr;
  const char* root_ = nullptr;
  std::string suffix_;
};
inline Path operator+(const Path& p, std::string suffix) { return Path(&p, std::move(suffix)); }

/// Builds one Method from a serialized ExportedProgram.
class ProgramJson {
 public:
  ProgramJson(std::string file, Method& m, bool etRecord, LoweredData* lowered = nullptr)
      : file_(std::move(file)), m_(m), etRecordNumbering_(etRecord), lowered_(lowered) {}

  Error fail(const Path& where, std::string expected, std::string found) const {
    return Error{ErrorCode::Invalid, file_, std::nullopt, where.str(), std::move(expected), std::move(found)};
  }

  static const char* typeName(element_type t) {
    switch (t) {
      case element_type::ARRAY: return "an array";
      case element_type::OBJECT: return "an object";
      case element_type::INT64:
      case element_type::UINT64: return "an integer";
      case element_type::DOUBLE: return "a number";
      case element_type::STRING: return "a string";
      case element_type::BOOL: return "a boolean";
      case element_type::NULL_VALUE: return "null";
    }
    return "?";
  }

  // --- typed access with error context ---
  Result<element> field(element obj, const char* key, const Path& where) {
    if (obj.type() != element_type::OBJECT) return fail(where, "an object", typeName(obj.type()));
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return fail(where + "." + key, "a value", "nothing");
    return v;
  }
  /// An optional field: absent and null are the same (emitters differ).
  static std::optional<element> optField(element obj, const char* key) {
    element v;
    if (obj.type() != element_type::OBJECT || obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
    return v;
  }
  Result<int64_t> integer(element v, const Path& where) {
    int64_t i;
    if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
    bool b;
    if (v.get_bool().get(b) == simdjson::SUCCESS) return b ? 1 : 0;
    return fail(where, "an integer", typeName(v.type()));
  }
  Result<std::string> string(element v, const Path& where) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return fail(where, "a string", typeName(v.type()));
    return std::string(s);
  }
  Result<simdjson::dom::array> array(element v, const Path& where) {
    simdjson::dom::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS) return fail(where, "an array", typeName(v.type()));
    return a;
  }

  /// A serde union: new files hold only the set member; torch 2.1/2.2 hold
  /// every member with all but one null; early-2024 nightlies a $type/$value
  /// pair. Returns (member, value).
  Result<std::pair<std::string, element>> unionMember(element v, const Path& where) {
    simdjson::dom::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) return fail(where, "a union object", typeName(v.type()));
    element tag, tagged;  // nightlies of early 2024 (schema 3.x/4.x): {"$type": member, "$value": v}
    std::string_view tagName;
    if (o["$type"].get(tag) == simdjson::SUCCESS && tag.get_string().get(tagName) == simdjson::SUCCESS &&
        o["$value"].get(tagged) == simdjson::SUCCESS)
      return std::pair<std::string, element>{std::string(tagName), tagged};
    std::optional<element> none;
    for (auto [key, value] : o) {
      if (!value.is_null()) return std::pair<std::string, element>{std::string(key), value};
      if (key == "as_none") none = value;
    }
    if (none) return std::pair<std::string, element>{"as_none", *none};
    return fail(where, "one set union member", "none");
  }

  ValueId addValue(Value v) {
    m_.values.push_back(std::move(v));
    return static_cast<ValueId>(m_.values.size() - 1);
  }
  ValueId addInt(int64_t i, std::string name = {}, bool symbolic = false) {
    Value v{i, std::move(name)};
    v.symbolic = symbolic;
    return addValue(std::move(v));
  }

  Result<ValueId> tensorByName(std::string_view name, const Path& where) {
    auto it = tensors_.find(name);
    if (it == tensors_.end())
      return fail(where, "a tensor named in tensor_values", "'" + std::string(name) + "', which is not there");
    return it->second;
  }

  /// Converts a SymInt into (hint or value, symbol name; empty when a plain int).
  Result<std::pair<int64_t, std::string>> symInt(element v, const Path& where);
  Result<TensorSpec> tensorMeta(element v, const Path& where);
  /// Upper bound of a bare symbol from range_constraints.
  std::optional<int64_t> upperBound(const std::string& symbol) const;

  /// Converts one serde Argument into a value id (ProgramArguments.cpp), one
  /// reader per member of the Argument union that needs more than a line.
  Result<ValueId> argument(element v, const Path& where);
  Result<std::vector<ValueId>> tensorNames(element arr, const Path& w);
  Result<ValueId> tensorArgument(element x, const Path& where);
  Result<ValueId> optionalTensorsArgument(element x, const Path& where);
  Result<ValueId> intArgument(const std::string& kind, element x, const Path& where);
  Result<ValueId> intsArgument(const std::string& kind, element x, const Path& where);
  Result<ValueId> symIntArgument(element v, const Path& where);
  Result<ValueId> floatArgument(const std::string& kind, element x, const Path& where);
  Result<ValueId> floatsArgument(element x, const Path& where);
  Result<ValueId> boolsArgument(element x, const Path& where);
  Result<ValueId> symBoolArgument(element x, const Path& where);

  /// Reads the whole graph module: symbols, tensor values, inputs, nodes, outputs, signature.
  Status parse(element root);
  /// One graph: its symbols, tensor values, inputs, nodes and outputs.
  Status readGraph(element graph);
  /// A cond, map or scan node (n.kind set): its graphs become subgraphs of the method.
  Status controlFlowNode(element inputs, const Path& w, Node& n);
  /// wrap_with_set_grad_enabled(enabled, graph, operands...), and wrap_with_autocast
  /// (device_type, dtype, enabled, cache_enabled, graph, operands...) when it casts nothing
  /// on CPU: the graph's calls go into this graph in its place (to_edge's retrace inlines it too).
  Status inlineWrappedGraph(element inputs, const Path& w, Node& n, std::map<std::string, int32_t>& opIndex);
  void symbolRanges(element root);
  void symbolValues(element graph);
  Status tensorValues(element graph);
  Status node(element nj, const std::string& w, std::map<std::string, int32_t>& opIndex, Node& n);
  /// An executorch_call_delegate node whose first argument is the lowered
  /// module's JSON, made a delegate call of the method (LoweredModules.cpp).
  Status loweredModule(Node& n, const std::string& w);

  /// The graph signature and module call graph (ProgramSignature.cpp).
  Status signatureV1(element sig);
  Status signature(element gm);
  Status inputSpec(element spec, const std::string& w);
  Status outputSpec(element spec, const std::string& w);
  void moduleCallGraph(element gm);

 private:
  std::string file_;
  Method& m_;
  /// Lookups by string_view without building a std::string per reference.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, ValueId, NameHash, std::equal_to<>> tensors_;
  std::unordered_map<std::string, ValueId> symValues_;
  std::unordered_map<std::string, ValueId> symBoolValues_;  ///< a SymBool by name: one value, as for SymInts
  std::unordered_map<std::string, int64_t> symHints_;
  bool etRecordNumbering_ = false;
  LoweredData* lowered_ = nullptr;
};

}  // namespace lstudio::pt2
