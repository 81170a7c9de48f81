// Which constants leave the .pte, and for which .ptd file.
//
// ExecuTorch tags constant placeholders (`node.meta["constant_tag"]`) after
// the pre-planning passes: `external_constants=True` sends every constant
// that is not a lifted tensor constant to "_default_external_constant"; a
// callable picks a tag per node; `external_mutable_weights` sends the
// parameters of a training program that receive a gradient to the default
// file. The studio keeps ExecuTorch's boolean and replaces the callable by
// ordered rules (name glob, module prefix, consuming op, minimum size ->
// file, or keep inside the .pte) that a GUI can edit; the first matching
// rule decides, and a constant no rule matches stays in the .pte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

inline constexpr const char* kDefaultExternalTag = "_default_external_constant";

/// One constant of a method as the tagging sees it.
struct ConstantEntry {
  ValueId value = kNoValue;
  std::string name;    ///< fully qualified name ("layers.0.attention.wq.weight"), else the value's name
  std::string module;  ///< module path: the name without its last component ("layers.0.attention.wq")
  std::string op;      ///< operator of the first node that reads it ("aten::permute_copy"), or empty
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  uint64_t bytes = 0;
  bool mutableWeight = false;  ///< a parameter that receives a gradient (training programs)
  bool lifted = false;         ///< a lifted tensor constant: never external (ExecuTorch keeps them)
  /// Where the config sends it: empty = inside the .pte, else the tag (the .ptd file's stem).
  std::string destination;
  /// Why it cannot leave the .pte even if a rule says so (no name to key it by); empty otherwise.
  std::string pinnedReason;
};

/// "weights.ptd" -> "weights"; "dir/w.ptd" -> "w"; a name without ".ptd" is a tag already.
std::string tagFromFileName(const std::string& file);
/// Shell-style glob ('*' any run, '?' one character) over the whole name.
bool globMatch(const std::string& pattern, const std::string& name);
/// True when every condition the rule sets holds for `c`.
bool ruleMatches(const ConstantTagRule& rule, const ConstantEntry& c);
/// Where `config` sends `c`: empty = keep in the .pte, else a tag.
std::string constantDestination(const ExecutorchBackendConfig& config, const ConstantEntry& c);

/// The constants of a method, in value order, with their destination under
/// `config`. For an exported graph these are the parameter, buffer and
/// constant-tensor placeholders that no BufferMutation output writes; for a
/// program read from a .pte, its constant and external tensors (an external
/// one keeps its current file unless the config says otherwise).
std::vector<ConstantEntry> listConstants(const Method& m, const ExecutorchBackendConfig& config);

/// Applies the destinations to the method's tensor specs (external flag, fqn
/// and constantTag). Returns how many specs changed.
size_t applyConstantTags(Method& m, const std::vector<ConstantEntry>& entries);

}  // namespace lstudio
