// Operator schemas: the data model of a signature such as
// "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" and its parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/support/Error.h"

namespace lstudio {

/// A type in an operator schema: Tensor, Tensor?, Tensor[], Tensor?[], int, int[], int[2], SymInt, SymInt[],
/// float, bool, str, Scalar, ScalarType, Layout, Device, MemoryFormat, Generator, Dimname, Storage, Any, ...
struct SchemaType {
  enum class Base : uint8_t {
    Tensor, Int, SymInt, Float, Bool, Str, Scalar, ScalarType, Layout, Device, MemoryFormat, Generator, Dimname,
    Storage, Any, Other
  };
  Base base = Base::Tensor;
  /// The value itself may be None: "?" on a single value ("Tensor?") or after the
  /// brackets of a list ("int[]?", "SymInt[1]?"). "Tensor?[]" is not optional: it
  /// is a list whose elements may be None (see optionalElements).
  bool optional = false;
  bool list = false;              ///< "[]" or "[N]"
  bool optionalElements = false;  ///< "Tensor?[]"
  int fixedSize = 0;              ///< N in "int[N]", 0 otherwise
  /// As written without alias annotation and blanks, e.g. "SymInt[1]?", "Tensor?[]".
  /// For Base::Other the leading word names the type ("SymFloat", "Stream", ...).
  std::string spelling;

  /// The type as the canonical schema text writes it, with `annotation` (e.g. "(a!)")
  /// placed after the element type's name.
  std::string toString(std::string_view annotation = {}) const;
  /// True for Tensor, Tensor?, Tensor[] and Tensor?[].
  bool isTensorLike() const { return base == Base::Tensor; }
  bool operator==(const SchemaType&) const = default;
};

/// The element type's name as schemas write it ("Tensor", "int", "SymInt", "float", ...).
/// Base::Other has no fixed name: its name is the leading word of SchemaType::spelling.
const char* schemaBaseName(SchemaType::Base base);

struct SchemaArgument {
  std::string name;               ///< may be empty for returns
  SchemaType type;
  std::optional<std::string> defaultValue;  ///< as written: "1", "None", "[]", "False", "0.5", "contiguous_format", ...
  bool kwargOnly = false;         ///< after "*"
  std::string aliasSet;           ///< "a" for Tensor(a) / Tensor(a!); may be "a|b"
  bool isWrite = false;           ///< "!" (mutated, e.g. out arguments)
  /// The set after "->" in "Tensor(a -> *)" (split, chunk: the results may alias
  /// anything in `aliasSet`), usually empty.
  std::string aliasAfterSet;

  /// "Tensor(a!) out", "int[2] stride=1", "Tensor(a)" (a return without a name).
  std::string toString() const;
  bool operator==(const SchemaArgument&) const = default;
};

struct OpSchema {
  std::string ns;                 ///< "aten", "quantized_decomposed", "dim_order_ops", "executorch_prim", ...
  std::string name;               ///< "add"
  std::string overload;           ///< "Tensor", "out", "" for default
  std::vector<SchemaArgument> arguments, returns;

  /// Has kwarg-only mutable (!) out arguments, and every return that carries an
  /// alias annotation aliases one of them ("-> ()" counts, as for unbind_copy.int_out).
  bool isOutVariant() const;
  /// The name ends with "_" and self is written ("add_", "index_put_", "__iand__"; not "__and__").
  bool isInplace() const;
  /// "aten::add.Tensor"; "aten::convolution" for a default overload.
  std::string qualifiedName() const;
  /// Canonical schema text that parses back to an equal schema.
  std::string toString() const;
  bool operator==(const OpSchema&) const = default;
};

/// Parses "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" (the namespace
/// prefix is optional; defaultNamespace applies when absent). Errors name the character offset.
Result<OpSchema> parseSchema(std::string_view text, std::string_view defaultNamespace = "aten");

}  // namespace lstudio
