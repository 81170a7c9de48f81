// The serde Argument union of a node's inputs and outputs, read into values of the IR.
#include <limits>

#include "engine/formats/pt2/ProgramJson.h"

namespace lstudio::pt2 {
namespace {

/// c10 MemoryFormat numbering for the serde MemoryFormat (Contiguous=0,
/// Preserve=1, ChannelsLast=2, ChannelsLast3d=3), as ExecuTorch emits them.
int64_t c10MemoryFormat(int64_t serde) {
  switch (serde) {
    case 1: return 0;
    case 2: return 2;
    case 3: return 3;
    case 4: return 1;
    default: return 0;
  }
}

/// A number torch wrote as Python's -Infinity / Infinity / NaN (a string after
/// replaceNonFiniteTokens).
std::optional<double> nonFinite(simdjson::dom::element x) {
  std::string_view t;
  if (x.get_string().get(t) != simdjson::SUCCESS) return std::nullopt;
  if (t == "Infinity") return std::numeric_limits<double>::infinity();
  if (t == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

}  // namespace

/// Converts one serde Argument into a value id.
Result<ValueId> ProgramJson::argument(element v, const Path& where) {
  auto u = unionMember(v, where);
  if (!u) return u.error();
  auto& [kind, x] = u.value();
  if (kind == "as_none") return addValue(Value{None{}, {}});
  if (kind == "as_tensor") return tensorArgument(x, where);
  if (kind == "as_tensors") {
    auto ids = tensorNames(x, where + ".as_tensors");
    if (!ids) return ids.error();
    return addValue(Value{TensorList{std::move(ids.value())}, {}});
  }
  if (kind == "as_optional_tensors") return optionalTensorsArgument(x, where);
  if (kind == "as_int" || kind == "as_scalar_type" || kind == "as_layout" || kind == "as_memory_format")
    return intArgument(kind, x, where);
  if (kind == "as_ints" || kind == "as_sym_ints") return intsArgument(kind, x, where);
  if (kind == "as_sym_int") return symIntArgument(x, where);
  if (kind == "as_float" || kind == "as_sym_float") return floatArgument(kind, x, where);
  if (kind == "as_floats") return floatsArgument(x, where);
  if (kind == "as_bool") {
    bool b = false;
    if (x.get_bool().get(b) != simdjson::SUCCESS) return fail(where, "a boolean", typeName(x.type()));
    return addValue(Value{b, {}});
  }
  if (kind == "as_bools") return boolsArgument(x, where);
  if (kind == "as_sym_bool") return symBoolArgument(x, where);
  if (kind == "as_string") {
    auto s = string(x, where);
    if (!s) return s.error();
    return addValue(Value{s.value(), {}});
  }
  if (kind == "as_device") {
    auto t = field(x, "type", where);
    if (!t) return t.error();
    auto s = string(*t, where + ".as_device.type");
    if (!s) return s.error();
    return addValue(Value{s.value(), {}});
  }
  if (kind == "as_strings" || kind == "as_graph" || kind == "as_custom_obj" || kind == "as_operator" ||
      kind == "as_complex" || kind == "as_int_lists" || kind == "as_string_to_argument" || kind == "as_sym_bools" ||
      kind == "as_sym_floats") {
    // Kept as a description: ExecuTorch programs have no value kind for these.
    return addValue(Value{std::string("<") + kind.substr(3) + ">", {}});
  }
  return fail(where, "a known Argument member", kind);
}

/// The tensors a list of {"name": ...} names.
Result<std::vector<ValueId>> ProgramJson::tensorNames(element arr, const Path& w) {
  auto a = array(arr, w);
  if (!a) return a.error();
  std::vector<ValueId> out;
  for (element e : *a) {
    auto n = field(e, "name", w);
    if (!n) return n.error();
    auto s = string(*n, w + ".name");
    if (!s) return s.error();
    auto id = tensorByName(*s, w);
    if (!id) return id.error();
    out.push_back(*id);
  }
  return out;
}

/// as_tensor: {"name": ...} (torch 2.1: the bare name).
Result<ValueId> ProgramJson::tensorArgument(element x, const Path& where) {
  if (x.type() == element_type::STRING) return tensorByName(string(x, where).value(), where);  // torch 2.1
  auto n = field(x, "name", where);
  if (!n) return n.error();
  std::string_view s;
  if (n->get_string().get(s) != simdjson::SUCCESS) return fail(where + ".as_tensor.name", "a string", typeName(n->type()));
  return tensorByName(s, where);
}

/// as_optional_tensors: Arguments, each a tensor or None.
Result<ValueId> ProgramJson::optionalTensorsArgument(element x, const Path& where) {
  auto a = array(x, where + ".as_optional_tensors");
  if (!a) return a.error();
  OptionalTensorList l;
  for (element e : *a) {
    auto id = argument(e, where + ".as_optional_tensors[]");
    if (!id) return id.error();
    l.items.push_back(m_.values[*id].kind() == ValueKind::None ? kNoValue : *id);
  }
  return addValue(Value{std::move(l), {}});
}

/// as_int and the enums serialized as ints, renumbered as c10 numbers them.
Result<ValueId> ProgramJson::intArgument(const std::string& kind, element x, const Path& where) {
  auto i = integer(x, where + "." + kind);
  if (!i) return i.error();
  int64_t val = *i;
  if (kind == "as_scalar_type") {
    auto st = serdeScalarType(val, etRecordNumbering_);
    if (!st) return fail(where, "a serialized ScalarType", std::to_string(val));
    val = static_cast<int64_t>(*st);
  } else if (kind == "as_memory_format") {
    val = c10MemoryFormat(val);
  } else if (kind == "as_layout") {
    val = val == 7 ? 0 : val;  // serde Strided (7) is c10's kStrided (0)
  }
  return addInt(val);
}

/// as_ints, as_sym_ints: an IntList of plain or symbolic ints.
Result<ValueId> ProgramJson::intsArgument(const std::string& kind, element x, const Path& where) {
  auto a = array(x, where + "." + kind);
  if (!a) return a.error();
  IntList l;
  for (element e : *a) {
    if (kind == "as_ints") {
      auto i = integer(e, where);
      if (!i) return i.error();
      l.items.push_back(addInt(*i));
    } else {
      auto id = symIntArgument(e, where);
      if (!id) return id.error();
      l.items.push_back(*id);
    }
  }
  return addValue(Value{std::move(l), {}});
}

/// as_float, as_sym_float (a symbolic float without a number is kept as a symbol).
Result<ValueId> ProgramJson::floatArgument(const std::string& kind, element x, const Path& where) {
  double d = 0;
  if (auto nf = nonFinite(x)) return addValue(Value{*nf, {}});
  if (x.get_double().get(d) != simdjson::SUCCESS) {
    if (kind == "as_sym_float") {
      Value v{0.0, "symfloat"};
      v.symbolic = true;
      return addValue(std::move(v));
    }
    return fail(where, "a number", typeName(x.type()));
  }
  return addValue(Value{d, {}});
}

Result<ValueId> ProgramJson::floatsArgument(element x, const Path& where) {
  auto a = array(x, where);
  if (!a) return a.error();
  DoubleList l;
  for (element e : *a) {
    double d = 0;
    if (auto nf = nonFinite(e)) d = *nf;
    else if (e.get_double().get(d) != simdjson::SUCCESS) return fail(where, "numbers", typeName(e.type()));
    l.items.push_back(d);
  }
  return addValue(Value{std::move(l), {}});
}

Result<ValueId> ProgramJson::boolsArgument(element x, const Path& where) {
  auto a = array(x, where);
  if (!a) return a.error();
  BoolList l;
  for (element e : *a) {
    bool b = false;
    if (e.get_bool().get(b) != simdjson::SUCCESS) return fail(where, "booleans", typeName(e.type()));
    l.items.push_back(b);
  }
  return addValue(Value{std::move(l), {}});
}

/// as_sym_bool: a known bool, or a symbol by name.
Result<ValueId> ProgramJson::symBoolArgument(element x, const Path& where) {
  Value v{false, "symbool"};
  v.symbolic = true;
  if (auto s = unionMember(x, where); s && s->first == "as_bool") {
    v.payload = boolOr(s->second, false);
    v.symbolic = false;
  } else if (s && s->first == "as_name") {
    // One value per name: the node that computes a comparison and the
    // _assert_scalar that reads it refer to it by name.
    v.name = string(s->second, where).value_or(v.name);
    if (auto it = symBoolValues_.find(v.name); it != symBoolValues_.end()) return it->second;
    std::string name = v.name;
    ValueId id = addValue(std::move(v));
    symBoolValues_[name] = id;
    return id;
  }
  return addValue(std::move(v));
}

Result<ValueId> ProgramJson::symIntArgument(element v, const Path& where) {
  auto u = unionMember(v, where);
  if (!u) return u.error();
  if (u->first == "as_int") {
    auto i = integer(u->second, where);
    if (!i) return i.error();
    return addInt(*i);
  }
  if (u->first == "as_name") {
    auto s = string(u->second, where);
    if (!s) return s.error();
    auto it = symValues_.find(*s);
    if (it != symValues_.end()) return it->second;
    ValueId id = addInt(symHints_.count(*s) ? symHints_[*s] : 0, *s, true);
    symValues_[*s] = id;
    return id;
  }
  return fail(where, "as_int or as_name", u->first);
}

}  // namespace lstudio::pt2
