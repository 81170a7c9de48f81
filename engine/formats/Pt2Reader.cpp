#include "engine/formats/Pt2Reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "engine/ir/EdgeDialect.h"
#include "engine/formats/TorchPickle.h"
#include "engine/formats/ZipArchive.h"

namespace lstudio {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

bool boolOr(element e, bool fallback) {
  bool b;
  return e.get_bool().get(b) == simdjson::SUCCESS ? b : fallback;
}

constexpr uint64_t kMaxJson = uint64_t(4) << 30;  // a program JSON larger than 4 GiB is refused

/// torch.export's serialized ScalarType numbering (torch/_export/serde/schema.py),
/// which differs from c10's.
/// ExecuTorch's own copy of the schema (ETRecords) numbers three types differently.
std::optional<ScalarType> serdeScalarType(int64_t v, bool etRecord = false) {
  if (etRecord && v >= 14 && v <= 16)
    return v == 14 ? ScalarType::UInt16 : v == 15 ? ScalarType::Float8_e5m2 : ScalarType::Float8_e4m3fn;
  switch (v) {
    case 1: return ScalarType::Byte;
    case 2: return ScalarType::Char;
    case 3: return ScalarType::Short;
    case 4: return ScalarType::Int;
    case 5: return ScalarType::Long;
    case 6: return ScalarType::Half;
    case 7: return ScalarType::Float;
    case 8: return ScalarType::Double;
    case 9: return ScalarType::ComplexHalf;
    case 10: return ScalarType::ComplexFloat;
    case 11: return ScalarType::ComplexDouble;
    case 12: return ScalarType::Bool;
    case 13: return ScalarType::BFloat16;
    case 28: return ScalarType::UInt16;
    case 29: return ScalarType::Float8_e4m3fn;
    case 30: return ScalarType::Float8_e5m2;
    case 31: return ScalarType::Float8_e4m3fnuz;
    case 32: return ScalarType::Float8_e5m2fnuz;
    case 34: return ScalarType::UInt32;
    case 35: return ScalarType::UInt64;
    default: return std::nullopt;
  }
}

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

/// Older torch and ExecuTorch wrote bare NaN / Infinity / -Infinity tokens
/// (range bounds), which strict JSON parsers refuse: they become null, which
/// the reader treats as "unbounded" or "unknown". Strings are left alone.
void replaceNonFiniteTokens(std::string& s) {
  if (s.find("Infinity") == std::string::npos && s.find("NaN") == std::string::npos) return;
  std::string out;
  out.reserve(s.size());
  bool inString = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (inString) {
      out += c;
      if (c == '\\' && i + 1 < s.size()) out += s[++i];
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') inString = true;
    bool replaced = false;
    for (std::string_view tok : {"-Infinity", "Infinity", "NaN"})
      if (!inString && s.compare(i, tok.size(), tok) == 0) {
        out += '"';  // kept as a string that nonFinite() reads back
        out += tok;
        out += '"';
        i += tok.size() - 1;
        replaced = true;
        break;
      }
    if (!replaced) out += c;
  }
  s.swap(out);
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
Path operator+(const Path& p, std::string suffix) { return Path(&p, std::move(suffix)); }

/// Builds one Method from a serialized ExportedProgram.
class ProgramJson {
 public:
  ProgramJson(std::string file, Method& m, bool etRecord) : file_(std::move(file)), m_(m), etRecordNumbering_(etRecord) {}

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

  /// A SymInt: {"as_int": 3} or {"as_expr": {"expr_str": "s0", "hint": ...}} (older: {"as_name": "s0"}).
  Result<std::pair<int64_t, std::string>> symInt(element v, const Path& where) {
    auto u = unionMember(v, where);
    if (!u) return u.error();
    auto& [kind, x] = u.value();
    if (kind == "as_int") {
      auto i = integer(x, where);
      if (!i) return i.error();
      return std::pair<int64_t, std::string>{*i, {}};
    }
    if (kind == "as_expr") {
      auto expr = field(x, "expr_str", where + ".as_expr");
      if (!expr) return expr.error();
      auto s = string(*expr, where + ".as_expr.expr_str");
      if (!s) return s.error();
      int64_t hint = 0;
      auto h = optField(x, "hint");
      if (h && !h->is_null()) {
        int64_t direct;
        if (h->get_int64().get(direct) == simdjson::SUCCESS) {
          hint = direct;
        } else if (auto hu = unionMember(*h, where + ".hint"); hu && hu->first == "as_int") {
          auto i = integer(hu->second, where + ".hint.as_int");
          if (i) hint = *i;
        }
      }
      return std::pair<int64_t, std::string>{hint, s.value()};
    }
    if (kind == "as_name") {  // a reference to sym_int_values
      auto s = string(x, where);
      if (!s) return s.error();
      return std::pair<int64_t, std::string>{symHints_.count(*s) ? symHints_[*s] : 0, s.value()};
    }
    return fail(where, "as_int or as_expr", kind);
  }

  Result<TensorSpec> tensorMeta(element v, const Path& where) {
    TensorSpec t;
    element inner;  // torch 2.1 wrapped the meta: {"meta": TensorMeta}
    if (v.type() == element_type::OBJECT && v["meta"].get(inner) == simdjson::SUCCESS && !inner.is_null()) v = inner;
    auto dt = field(v, "dtype", where);
    if (!dt) return dt.error();
    auto dti = integer(*dt, where + ".dtype");
    if (!dti) return dti.error();
    auto st = serdeScalarType(*dti, etRecordNumbering_);
    if (!st) return fail(where + ".dtype", "a serialized ScalarType (1-13, 28-35)", std::to_string(*dti));
    t.dtype = *st;
    auto sizes = field(v, "sizes", where);
    if (!sizes) return sizes.error();
    auto sa = array(*sizes, where + ".sizes");
    if (!sa) return sa.error();
    bool dynamic = false;
    size_t i = 0;
    for (element s : *sa) {
      auto si = symInt(s, where + ".sizes[" + std::to_string(i) + "]");
      ++i;
      if (!si) return si.error();
      int64_t size = si->first;
      if (!si->second.empty()) {
        dynamic = true;
        if (auto ub = upperBound(si->second)) size = *ub;
      }
      if (size < 0) return fail(where + ".sizes", "sizes >= 0", std::to_string(size));
      t.sizes.push_back(size);
      t.symbols.push_back(si->second);
    }
    if (!dynamic) t.symbols.clear();
    t.dynamism = dynamic ? ShapeDynamism::DynamicBound : ShapeDynamism::Static;
    if (auto strides = optField(v, "strides"); strides && !strides->is_null()) {
      if (auto a = array(*strides, where + ".strides"))
        for (element s : *a)
          if (auto si = symInt(s, where + ".strides")) t.strides.push_back(si->first);
    }
    for (size_t d = 0; d < t.sizes.size(); ++d) t.dimOrder.push_back(static_cast<uint8_t>(d));
    if (t.strides.size() == t.sizes.size()) {
      // Dim order from strides: outermost (largest stride) first, stable for ties.
      std::stable_sort(t.dimOrder.begin(), t.dimOrder.end(),
                       [&](uint8_t a, uint8_t b) { return t.strides[a] > t.strides[b]; });
    }
    if (auto rg = optField(v, "requires_grad"); rg && !rg->is_null()) t.requiresGrad = boolOr(*rg, false);
    if (auto so = optField(v, "storage_offset"); so && !so->is_null()) {
      int64_t plain;  // an int before schema 5.x, a SymInt after
      if (so->get_int64().get(plain) == simdjson::SUCCESS) t.storageOffset = static_cast<int32_t>(plain);
      else if (auto si = symInt(*so, where + ".storage_offset")) t.storageOffset = static_cast<int32_t>(si->first);
    }
    if (!t.nbytes()) return Error{ErrorCode::Overflow, file_, std::nullopt, (where + " byte size").str(), "< 2^64", t.shapeString()};
    return t;
  }

  /// Upper bound of a bare symbol from range_constraints.
  std::optional<int64_t> upperBound(const std::string& symbol) const {
    for (const auto& r : m_.symbolRanges)
      if (r.symbol == symbol) return r.max;
    return std::nullopt;
  }

  /// Converts one serde Argument into a value id.
  Result<ValueId> argument(element v, const Path& where) {
    auto u = unionMember(v, where);
    if (!u) return u.error();
    auto& [kind, x] = u.value();
    auto names = [&](element arr, const Path& w) -> Result<std::vector<ValueId>> {
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
    };
    if (kind == "as_none") return addValue(Value{None{}, {}});
    if (kind == "as_tensor") {
      if (x.type() == element_type::STRING) return tensorByName(string(x, where).value(), where);  // torch 2.1
      auto n = field(x, "name", where);
      if (!n) return n.error();
      std::string_view s;
      if (n->get_string().get(s) != simdjson::SUCCESS) return fail(where + ".as_tensor.name", "a string", typeName(n->type()));
      return tensorByName(s, where);
    }
    if (kind == "as_tensors") {
      auto ids = names(x, where + ".as_tensors");
      if (!ids) return ids.error();
      return addValue(Value{TensorList{std::move(ids.value())}, {}});
    }
    if (kind == "as_optional_tensors") {
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
    if (kind == "as_int" || kind == "as_scalar_type" || kind == "as_layout" || kind == "as_memory_format") {
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
    if (kind == "as_ints" || kind == "as_sym_ints") {
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
    if (kind == "as_sym_int") return symIntArgument(x, where);
    if (kind == "as_float" || kind == "as_sym_float") {
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
    if (kind == "as_floats") {
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
    if (kind == "as_bool") {
      bool b = false;
      if (x.get_bool().get(b) != simdjson::SUCCESS) return fail(where, "a boolean", typeName(x.type()));
      return addValue(Value{b, {}});
    }
    if (kind == "as_bools") {
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
    if (kind == "as_sym_bool") {
      Value v{false, "symbool"};
      v.symbolic = true;
      if (auto s = unionMember(x, where); s && s->first == "as_bool") {
        v.payload = boolOr(s->second, false);
        v.symbolic = false;
      } else if (s && s->first == "as_name") {
        v.name = string(s->second, where).value_or(v.name);
      }
      return addValue(std::move(v));
    }
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

  Result<ValueId> symIntArgument(element v, const Path& where) {
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

  /// "File \"x.py\", line 12, in forward\n    code" -> frames (innermost last).
  static std::vector<StackFrame> parseStackTrace(std::string_view text) {
    std::vector<StackFrame> frames;
    size_t pos = 0;
    while ((pos = text.find("File \"", pos)) != std::string_view::npos) {
      StackFrame f;
      size_t q = text.find('"', pos + 6);
      if (q == std::string_view::npos) break;
      f.file = std::string(text.substr(pos + 6, q - pos - 6));
      size_t ln = text.find("line ", q);
      size_t eol = text.find('\n', q);
      if (ln != std::string_view::npos && (eol == std::string_view::npos || ln < eol)) f.line = std::atoi(text.data() + ln + 5);
      size_t in = text.find(", in ", q);
      if (in != std::string_view::npos && (eol == std::string_view::npos || in < eol))
        f.function = std::string(text.substr(in + 5, (eol == std::string_view::npos ? text.size() : eol) - in - 5));
      if (eol != std::string_view::npos) {
        size_t next = text.find('\n', eol + 1);
        std::string_view ctx = text.substr(eol + 1, (next == std::string_view::npos ? text.size() : next) - eol - 1);
        if (ctx.find("File \"") == std::string_view::npos) {
          while (!ctx.empty() && ctx.front() == ' ') ctx.remove_prefix(1);
          f.context = std::string(ctx);
        }
      }
      frames.push_back(std::move(f));
      pos = q;
    }
    return frames;
  }

  /// "L__self__,,Type;L__self__linear,linear,torch.nn.Linear" (newer: key,path,type per entry).
  static std::vector<ModuleFrame> parseModuleStack(std::string_view text) {
    std::vector<ModuleFrame> out;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(';', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view entry = text.substr(start, end - start);
      // key,path,type: paths may hold commas inside brackets or parentheses.
      std::vector<size_t> commas;
      int depth = 0;
      for (size_t i = 0; i < entry.size(); ++i) {
        char ch = entry[i];
        if (ch == '(' || ch == '[') ++depth;
        else if ((ch == ')' || ch == ']') && depth > 0) --depth;
        else if (ch == ',' && depth == 0) commas.push_back(i);
      }
      if (commas.size() >= 2)
        out.push_back(ModuleFrame{std::string(entry.substr(commas[0] + 1, commas[1] - commas[0] - 1)),
                                  std::string(entry.substr(commas[1] + 1))});
      start = end + 1;
    }
    return out;
  }

  Status parse(element root) {
    auto gm = field(root, "graph_module", "ExportedProgram");
    if (!gm) return gm.error();
    auto graph = field(*gm, "graph", "graph_module");
    if (!graph) return graph.error();

    // Symbol ranges first: they bound dynamic sizes.
    if (auto rc = optField(root, "range_constraints"); rc && !rc->is_null()) {
      simdjson::dom::object o;
      if (rc->get_object().get(o) == simdjson::SUCCESS)
        for (auto [sym, r] : o) {
          SymbolRange range;
          range.symbol = std::string(sym);
          int64_t v;
          element e;
          if (r["min_val"].get(e) == simdjson::SUCCESS && e.get_int64().get(v) == simdjson::SUCCESS) range.min = v;
          if (r["max_val"].get(e) == simdjson::SUCCESS && e.get_int64().get(v) == simdjson::SUCCESS &&
              v < (int64_t(1) << 62))
            range.max = v;
          m_.symbolRanges.push_back(std::move(range));
        }
    }
    if (auto syms = optField(*graph, "sym_int_values"); syms && !syms->is_null()) {
      simdjson::dom::object o;
      if (syms->get_object().get(o) == simdjson::SUCCESS)
        for (auto [name, v] : o)
          if (auto si = symInt(v, "sym_int_values." + std::string(name))) {
            std::string n(name);
            symHints_[n] = si->first;
            // Every declared symbol becomes a value, referenced or not, so it survives a rewrite.
            symValues_[n] = addInt(si->first, n, true);
          }
    }
    auto tv = field(*graph, "tensor_values", "graph");
    if (!tv) return tv.error();
    simdjson::dom::object tensors;
    if (tv->get_object().get(tensors) != simdjson::SUCCESS) return fail("graph.tensor_values", "an object", typeName(tv->type()));
    tensors_.reserve(tensors.size());
    m_.values.reserve(tensors.size() * 2);
    for (auto [name, meta] : tensors) {
      std::string n(name);
      auto spec = tensorMeta(meta, "tensor_values." + n);
      if (!spec) return spec.error();
      tensors_[n] = addValue(Value{std::move(spec.value()), n});
    }
    // Graph inputs (placeholders) and outputs.
    auto ins = field(*graph, "inputs", "graph");
    if (!ins) return ins.error();
    auto ia = array(*ins, "graph.inputs");
    if (!ia) return ia.error();
    size_t idx = 0;
    for (element in : *ia) {
      auto id = argument(in, "graph.inputs[" + std::to_string(idx++) + "]");
      if (!id) return id.error();
      m_.inputs.push_back(*id);
    }
    auto nodes = field(*graph, "nodes", "graph");
    if (!nodes) return nodes.error();
    auto na = array(*nodes, "graph.nodes");
    if (!na) return na.error();
    idx = 0;
    std::map<std::string, int32_t> opIndex;
    for (element nj : *na) {
      std::string w = "graph.nodes[" + std::to_string(idx++) + "]";
      Node n;
      auto target = field(nj, "target", w);
      if (!target) return target.error();
      auto ts = string(*target, w + ".target");
      if (!ts) return ts.error();
      n.target = ts.value();
      OperatorRef op = operatorFromTarget(n.target);
      std::string key = op.name + "." + op.overload;
      auto [it, inserted] = opIndex.emplace(key, static_cast<int32_t>(m_.operators.size()));
      if (inserted) m_.operators.push_back(op);
      n.op = it->second;
      auto inputs = field(nj, "inputs", w);
      if (!inputs) return inputs.error();
      auto ina = array(*inputs, w + ".inputs");
      if (!ina) return ina.error();
      size_t ai = 0;
      const Path nodePath(w);
      for (element na2 : *ina) {
        const Path aw = nodePath + (".inputs[" + std::to_string(ai++) + "]");
        auto an = field(na2, "name", aw);
        if (!an) return an.error();
        auto ans = string(*an, aw + ".name");
        if (!ans) return ans.error();
        auto arg = field(na2, "arg", aw);
        if (!arg) return arg.error();
        auto id = argument(*arg, aw);
        if (!id) {
          Error e = id.error();
          e.what += " (" + n.target + " argument '" + ans.value() + "')";
          return e;
        }
        if (!id) return id.error();
        n.args.push_back(*id);
        n.argNames.push_back(ans.value());
      }
      auto outs = field(nj, "outputs", w);
      if (!outs) return outs.error();
      auto oa = array(*outs, w + ".outputs");
      if (!oa) return oa.error();
      for (element o : *oa) {
        auto id = argument(o, w + ".outputs");
        if (!id) return id.error();
        // A list of results: the node writes each element.
        if (auto* tl = std::get_if<TensorList>(&m_.values[*id].payload)) {
          for (ValueId x : tl->items) n.outputs.push_back(x);
        } else if (m_.values[*id].kind() != ValueKind::None) {
          n.outputs.push_back(*id);
        }
      }
      if (auto meta = optField(nj, "metadata"); meta && !meta->is_null()) {
        std::string_view s;
        element e;
        if ((*meta)["stack_trace"].get(e) == simdjson::SUCCESS && e.get_string().get(s) == simdjson::SUCCESS)
          n.meta.stackTrace = parseStackTrace(s);
        if ((*meta)["nn_module_stack"].get(e) == simdjson::SUCCESS && e.get_string().get(s) == simdjson::SUCCESS)
          n.meta.moduleStack = parseModuleStack(s);
        if ((*meta)["debug_handle"].get(e) == simdjson::SUCCESS && e.get_string().get(s) == simdjson::SUCCESS)
          n.meta.debugHandle = std::atoll(std::string(s).c_str());
      }
      if (!n.outputs.empty()) n.name = m_.values[n.outputs.front()].name;
      m_.nodes.push_back(std::move(n));
    }
    auto outs = field(*graph, "outputs", "graph");
    if (!outs) return outs.error();
    auto oa = array(*outs, "graph.outputs");
    if (!oa) return oa.error();
    idx = 0;
    for (element o : *oa) {
      auto id = argument(o, "graph.outputs[" + std::to_string(idx++) + "]");
      if (!id) return id.error();
      m_.outputs.push_back(*id);
    }
    if (auto s = signature(*gm); !s) return s;
    moduleCallGraph(*gm);
    return Ok{};
  }

  /// torch 2.1's signature: name maps instead of spec lists.
  Status signatureV1(element sig) {
    auto names = [&](const char* key) {
      std::vector<std::string> out;
      simdjson::dom::array a;
      element e;
      if (sig[key].get(e) == simdjson::SUCCESS && e.get_array().get(a) == simdjson::SUCCESS)
        for (element x : a) {
          std::string_view s;
          if (x.get_string().get(s) == simdjson::SUCCESS) out.push_back(std::string(s));
        }
      return out;
    };
    auto mapping = [&](element obj, const char* key) {
      std::vector<std::pair<std::string, std::string>> out;
      simdjson::dom::object o;
      element e;
      if (obj[key].get(e) == simdjson::SUCCESS && e.get_object().get(o) == simdjson::SUCCESS)
        for (auto [k, v] : o) {
          std::string_view s;
          if (v.get_string().get(s) == simdjson::SUCCESS) out.push_back({std::string(k), std::string(s)});
        }
      return out;
    };
    auto params = mapping(sig, "inputs_to_parameters"), buffers = mapping(sig, "inputs_to_buffers");
    auto userIns = names("user_inputs");
    for (ValueId v : m_.inputs) {
      const std::string& n = m_.values[v].name;
      InputSpec s;
      s.value = v;
      for (auto& [in, target] : params)
        if (in == n) s.kind = InputSpec::Kind::Parameter, s.target = target;
      for (auto& [in, target] : buffers)
        if (in == n) s.kind = InputSpec::Kind::Buffer, s.target = target;
      if (!s.target.empty())
        if (auto* t = std::get_if<TensorSpec>(&m_.values[v].payload)) t->fqn = s.target;
      m_.signature.inputs.push_back(s);
    }
    auto mutated = mapping(sig, "buffers_to_mutate");
    for (ValueId v : m_.outputs) {
      OutputSpec s;
      s.value = v;
      for (auto& [out, target] : mutated)
        if (out == m_.values[v].name) s.kind = OutputSpec::Kind::BufferMutation, s.target = target;
      m_.signature.outputs.push_back(s);
    }
    return Ok{};
  }

  Status signature(element gm) {
    auto sig = field(gm, "signature", "graph_module");
    if (!sig) return sig.error();
    element probe;
    if (sig->type() == element_type::OBJECT && (*sig)["input_specs"].get(probe) != simdjson::SUCCESS &&
        (*sig)["inputs_to_parameters"].get(probe) == simdjson::SUCCESS)
      return signatureV1(*sig);
    auto in = field(*sig, "input_specs", "signature");
    if (!in) return in.error();
    auto ia = array(*in, "signature.input_specs");
    if (!ia) return ia.error();
    size_t idx = 0;
    for (element spec : *ia) {
      std::string w = "signature.input_specs[" + std::to_string(idx++) + "]";
      auto u = unionMember(spec, w);
      if (!u) return u.error();
      auto& [kind, x] = u.value();
      InputSpec s;
      const char* targetKey = nullptr;
      if (kind == "user_input") s.kind = InputSpec::Kind::User;
      else if (kind == "parameter") s.kind = InputSpec::Kind::Parameter, targetKey = "parameter_name";
      else if (kind == "buffer") s.kind = InputSpec::Kind::Buffer, targetKey = "buffer_name";
      else if (kind == "tensor_constant" || kind == "constant_tensor")
        s.kind = InputSpec::Kind::ConstantTensor, targetKey = "tensor_constant_name";
      else if (kind == "custom_obj") s.kind = InputSpec::Kind::CustomObject, targetKey = "custom_obj_name";
      else if (kind == "token") s.kind = InputSpec::Kind::Token;
      else if (kind == "constant_input") {
        s.kind = InputSpec::Kind::User;  // a constant bound to an input; no placeholder value
        m_.signature.inputs.push_back(s);
        continue;
      } else {
        return fail(w, "a known input spec kind", kind);
      }
      auto arg = field(x, "arg", w);
      if (!arg) return arg.error();
      // Parameters and buffers hold {"name": ...}; user inputs hold an Argument.
      element nameEl;
      std::string name;
      if (arg->type() == element_type::OBJECT && (*arg)["name"].get(nameEl) == simdjson::SUCCESS) {
        auto ns = string(nameEl, w + ".arg.name");
        if (!ns) return ns.error();
        name = ns.value();
      } else if (auto am = unionMember(*arg, w + ".arg"); am && am->first == "as_tensor") {
        element ne;
        if (am->second["name"].get(ne) == simdjson::SUCCESS) name = string(ne, w).value();
      }
      if (!name.empty()) {
        auto id = tensorByName(name, w + ".arg");
        if (id) s.value = *id;
        else if (s.kind != InputSpec::Kind::User && s.kind != InputSpec::Kind::CustomObject) return id.error();
      }
      if (targetKey) {
        auto t = optField(x, targetKey);
        if (t && !t->is_null()) s.target = string(*t, w).value_or(std::string());
        if (kind == "constant_tensor") {
          auto t2 = optField(x, "constant_name");
          if (t2 && !t2->is_null()) s.target = string(*t2, w).value_or(std::string());
        }
      }
      if (kind == "buffer") {
        bool persistent = true;
        element pe;
        if (x["persistent"].get(pe) == simdjson::SUCCESS) persistent = boolOr(pe, true);
        s.persistent = persistent;
      }
      if (s.value != kNoValue && !s.target.empty()) {
        TensorSpec* t = std::get_if<TensorSpec>(&m_.values[s.value].payload);
        if (t) t->fqn = s.target;
      }
      m_.signature.inputs.push_back(s);
    }
    auto out = field(*sig, "output_specs", "signature");
    if (!out) return out.error();
    auto oa = array(*out, "signature.output_specs");
    if (!oa) return oa.error();
    idx = 0;
    for (element spec : *oa) {
      std::string w = "signature.output_specs[" + std::to_string(idx++) + "]";
      auto u = unionMember(spec, w);
      if (!u) return u.error();
      auto& [kind, x] = u.value();
      OutputSpec s;
      const char* targetKey = nullptr;
      if (kind == "user_output") s.kind = OutputSpec::Kind::User;
      else if (kind == "loss_output") s.kind = OutputSpec::Kind::Loss;
      else if (kind == "buffer_mutation") s.kind = OutputSpec::Kind::BufferMutation, targetKey = "buffer_name";
      else if (kind == "gradient_to_parameter") s.kind = OutputSpec::Kind::GradientToParameter, targetKey = "parameter_name";
      else if (kind == "gradient_to_user_input") s.kind = OutputSpec::Kind::GradientToUserInput, targetKey = "user_input_name";
      else if (kind == "user_input_mutation") s.kind = OutputSpec::Kind::UserInputMutation, targetKey = "user_input_name";
      else if (kind == "parameter_mutation") s.kind = OutputSpec::Kind::BufferMutation, targetKey = "parameter_name";
      else if (kind == "token") s.kind = OutputSpec::Kind::Token;
      else return fail(w, "a known output spec kind", kind);
      auto arg = field(x, "arg", w);
      if (!arg) return arg.error();
      element nameEl;
      if (arg->type() == element_type::OBJECT && (*arg)["name"].get(nameEl) == simdjson::SUCCESS) {
        if (auto id = tensorByName(string(nameEl, w).value_or(""), w)) s.value = *id;
      } else if (auto am = unionMember(*arg, w + ".arg"); am && am->first == "as_tensor") {
        element ne;
        if (am->second["name"].get(ne) == simdjson::SUCCESS)
          if (auto id = tensorByName(string(ne, w).value_or(""), w)) s.value = *id;
      }
      if (targetKey) {
        auto t = optField(x, targetKey);
        if (t && !t->is_null()) s.target = string(*t, w).value_or(std::string());
      }
      m_.signature.outputs.push_back(s);
    }
    return Ok{};
  }

  void moduleCallGraph(element gm) {
    element mcg;
    simdjson::dom::array a;
    if (gm["module_call_graph"].get(mcg) != simdjson::SUCCESS || mcg.get_array().get(a) != simdjson::SUCCESS) return;
    for (element e : a) {
      ModuleCall call;
      std::string_view s;
      element f;
      if (e["fqn"].get(f) == simdjson::SUCCESS && f.get_string().get(s) == simdjson::SUCCESS) call.fqn = std::string(s);
      element sig;
      if (e["signature"].get(sig) == simdjson::SUCCESS && sig.is_object()) {
        if (sig["in_spec"].get(f) == simdjson::SUCCESS && f.get_string().get(s) == simdjson::SUCCESS) call.inSpec = std::string(s);
        if (sig["out_spec"].get(f) == simdjson::SUCCESS && f.get_string().get(s) == simdjson::SUCCESS) call.outSpec = std::string(s);
      }
      m_.moduleCalls.push_back(std::move(call));
    }
  }

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
  std::unordered_map<std::string, int64_t> symHints_;
  bool etRecordNumbering_ = false;
};

/// Where one weight's bytes are and how they are laid out.
struct WeightData {
  Bytes bytes;
  bool viewed = false;  ///< bytes already start at the tensor (from a torch.save pickle)
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
};

/// Bytes a tensor with these sizes/strides/offset reaches into its storage.
uint64_t storageExtent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                       uint32_t elemSize) {
  uint64_t last = static_cast<uint64_t>(std::max<int64_t>(offset, 0));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    int64_t stride = i < strides.size() ? strides[i] : 0;
    last += static_cast<uint64_t>(sizes[i] - 1) * static_cast<uint64_t>(std::max<int64_t>(stride, 0));
  }
  return (last + 1) * elemSize;
}

class ExportImporter {
 public:
  ExportImporter(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {}

  Result<Program> run() {
    auto zip = ZipArchive::open(file_);
    if (!zip) {
      Error e = zip.error();
      e.what = "not a .pt2 archive: " + e.what;
      return e;
    }
    zip_ = std::move(zip.value());
    program_.path = file_->path();
    program_.backing = file_;
    program_.facts.fileSize = file_->size();
    const auto& entries = zip_.entries();
    auto any = [&](auto pred) { return std::any_of(entries.begin(), entries.end(), pred); };
    bool hasAoti = any([](const ZipEntry& e) { return e.name.find("data/aotinductor/") != std::string::npos; });
    if (any([](const ZipEntry& e) { return e.name == "ETRECORD_V0" || e.name.ends_with("/ETRECORD_V0") ||
                                            e.name == "edge_dialect_exported_program"; }))
      return etRecord();
    auto models = zip_.findSuffix(".json");
    std::erase_if(models, [](const ZipEntry* e) { return e->name.find("/models/") == std::string::npos &&
                                                         e->name.rfind("models/", 0) != 0; });
    if (!models.empty()) return archive(models);
    if (auto legacy = zip_.findSuffix("serialized_exported_program.json"); !legacy.empty()) return legacyZip(*legacy.front());
    if (hasAoti)
      return refuse("an AOTInductor package: it holds compiled model code (data/aotinductor/...), not an exported "
                    "graph, so there is nothing to lower");
    if (!zip_.findSuffix("data.pkl").empty())
      return refuse("a torch.save checkpoint (data.pkl), not a torch.export program");
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(entries.size(), 4); ++i) names += (i ? ", " : "") + entries[i].name;
    return refuse("a zip archive without an exported program (first entries: " + names + ")");
  }

 private:
  Error refuse(std::string what) {
    return Error{ErrorCode::Unsupported, file_->path(), std::nullopt, "this file is " + what,
                 "a torch.export .pt2 (models/*.json or serialized_exported_program.json)", "none"};
  }

  Result<std::string> readText(const ZipEntry& e) { return zip_.read(e, kMaxJson); }

  Status parseProgram(const ZipEntry& e, const std::string& methodName, Method& m) {
    auto text = readText(e);
    if (!text) return text.error();
    std::string where = file_->path() + ":" + e.name;
    replaceNonFiniteTokens(text.value());
    simdjson::dom::element root;
    auto err = parser_.parse(text->data(), text->size()).get(root);
    if (err != simdjson::SUCCESS) {
      // simdjson says what but not where; nlohmann finds the byte.
      uint64_t at = 0;
      try {
        auto unused = nlohmann::json::parse(text.value());
        (void)unused;
      } catch (const nlohmann::json::parse_error& pe) {
        at = pe.byte;
      } catch (const nlohmann::json::exception&) {  // number overflow and the like: no position
      }
      return Error{ErrorCode::Invalid, where, at, "JSON of the exported program", "valid JSON", simdjson::error_message(err)};
    }
    m.name = methodName;
    ProgramJson pj(where, m, program_.format == SourceFormat::EtRecord);
    if (auto s = pj.parse(root); !s) return s;
    resolveEdgeDialect(m);
    // Facts about the schema.
    element v;
    if (root["schema_version"].get(v) == simdjson::SUCCESS) {
      int64_t major = 0, minor = 0, plain = 0;
      if (v.get_int64().get(plain) == simdjson::SUCCESS) program_.exportFacts.schemaVersion = std::to_string(plain);
      else if (v["major"].get_int64().get(major) == simdjson::SUCCESS) {
        if (v["minor"].get_int64().get(minor) != simdjson::SUCCESS) minor = 0;
        program_.exportFacts.schemaVersion = std::to_string(major) + "." + std::to_string(minor);
        if (major > kNewestMajor)
          return Error{ErrorCode::Unsupported, where, std::nullopt, "exported program schema version",
                       "major version <= " + std::to_string(kNewestMajor), program_.exportFacts.schemaVersion};
      }
    }
    std::string_view s;
    if (root["torch_version"].get(v) == simdjson::SUCCESS && v.get_string().get(s) == simdjson::SUCCESS)
      program_.exportFacts.torchVersion = std::string(s);
    if (root["dialect"].get(v) == simdjson::SUCCESS && v.get_string().get(s) == simdjson::SUCCESS)
      program_.exportFacts.dialect = std::string(s);
    simdjson::dom::array verifiers;
    if (root["verifiers"].get(v) == simdjson::SUCCESS && v.get_array().get(verifiers) == simdjson::SUCCESS)
      for (element x : verifiers)
        if (x.get_string().get(s) == simdjson::SUCCESS) program_.exportFacts.dialect = std::string(s);
    return Ok{};
  }

  /// Attaches weights (fqn -> bytes) to the placeholders the signature names.
  Status attachWeights(Method& m, const std::unordered_map<std::string, WeightData>& weights, const std::string& where) {
    for (const InputSpec& in : m.signature.inputs) {
      if (in.kind != InputSpec::Kind::Parameter && in.kind != InputSpec::Kind::Buffer &&
          in.kind != InputSpec::Kind::ConstantTensor)
        continue;
      if (in.value == kNoValue) continue;
      auto it = weights.find(in.target);
      if (it == weights.end()) {
        if (in.kind == InputSpec::Kind::Buffer && !in.persistent) continue;  // non-persistent buffers may be absent
        return Error{ErrorCode::MissingKey, where, std::nullopt, "weights of '" + in.target + "'",
                     "a stored tensor for every parameter, buffer and constant", "none"};
      }
      TensorSpec& t = m.values[in.value].tensor();
      const WeightData& w = it->second;
      t.fqn = in.target;
      if (w.bytes.size == 0 && !w.viewed) continue;  // a 0-byte record stands for a fake (meta) tensor
      // Raw records hold a whole storage: the tensor is a view at its
      // storage offset; pickled ones are already the tensor's own view.
      uint32_t es = elementSize(t.dtype);
      uint64_t start = w.viewed ? 0 : static_cast<uint64_t>(std::max(t.storageOffset, 0)) * es;
      uint64_t end = t.strides.size() == t.sizes.size()
                         ? storageExtent(t.sizes, t.strides, w.viewed ? 0 : t.storageOffset, es)
                         : start + t.nbytes().value_or(0);
      if (w.bytes.size < end)
        return Error{ErrorCode::Truncated, where, w.bytes.fileOffset, "weights of '" + in.target + "'",
                     std::to_string(end) + " bytes for " + t.shapeString(), std::to_string(w.bytes.size) + " bytes"};
      t.data = Bytes{w.bytes.data + start, end - std::min(end, start), w.bytes.fileOffset + start};
    }
    return Ok{};
  }

  /// Weights described by a PT2 archive's <name>_weights_config.json (or constants config).
  Status readWeightConfig(const std::string& prefix, const std::string& configPath, const std::string& dataDir,
                          std::unordered_map<std::string, WeightData>& out) {
    // nlohmann throws on type mismatches; nothing may escape the engine.
    try {
      return readWeightConfigUnchecked(prefix, configPath, dataDir, out);
    } catch (const nlohmann::json::exception& e) {
      return Error{ErrorCode::Invalid, file_->path() + ":" + configPath, std::nullopt, "weights config",
                   "the documented fields and types", e.what()};
    }
  }

  Status readWeightConfigUnchecked(const std::string& prefix, const std::string& configPath, const std::string& dataDir,
                                   std::unordered_map<std::string, WeightData>& out) {
    const ZipEntry* cfg = zip_.find(configPath);
    if (!cfg) return Ok{};
    auto text = readText(*cfg);
    if (!text) return text.error();
    nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, false);
    std::string where = file_->path() + ":" + configPath;
    if (j.is_discarded() || !j.is_object())
      return Error{ErrorCode::Invalid, where, std::nullopt, "weights config", "a JSON object", "invalid JSON"};
    const auto& config = j.contains("config") ? j["config"] : j;
    if (!config.is_object())
      return Error{ErrorCode::Invalid, where, std::nullopt, "weights config 'config'", "an object", config.type_name()};
    for (const auto& [fqn, entry] : config.items()) {
      if (!entry.is_object() || !entry.contains("path_name") || !entry["path_name"].is_string())
        return Error{ErrorCode::Invalid, where, std::nullopt, "weights config entry '" + fqn + "'", "a path_name", "none"};
      std::string path = prefix + dataDir + entry["path_name"].get<std::string>();
      const ZipEntry* rec = zip_.find(path);
      if (!rec)
        return Error{ErrorCode::MissingKey, where, std::nullopt, "weights record of '" + fqn + "'", path, "no such record"};
      if (entry.value("use_pickle", false)) {
        auto w = pickledTensor(*rec, fqn);
        if (!w) return w.error();
        out[fqn] = w.value();
        continue;
      }
      auto b = zip_.bytes(*rec);
      if (!b) return b.error();
      out[fqn] = WeightData{b.value(), false, ScalarType::Float, {}};
    }
    return Ok{};
  }

  /// A torch.save blob stored as a record: its first tensor's bytes.
  Result<WeightData> pickledTensor(const ZipEntry& rec, const std::string& fqn) {
    std::unordered_map<std::string, WeightData> all;
    if (auto s = torchSave(rec, all); !s) return s.error();
    if (all.empty())
      return Error{ErrorCode::Invalid, file_->path(), rec.dataOffset, "pickled weights of '" + fqn + "'", "a tensor", "none"};
    return all.begin()->second;
  }

  /// Reads a torch.save zip stored as record `rec`: every tensor by its key path.
  Status torchSave(const ZipEntry& rec, std::unordered_map<std::string, WeightData>& out) {
    if (!rec.stored)
      return Error{ErrorCode::Unsupported, file_->path(), rec.dataOffset, "record '" + rec.name + "'",
                   "a stored torch.save archive", "a compressed one"};
    auto inner = ZipArchive::open(file_, rec.dataOffset, rec.size, file_->path() + ":" + rec.name);
    if (!inner) return inner.error();
    auto pkls = inner->findSuffix("data.pkl");
    if (pkls.empty())
      return Error{ErrorCode::Invalid, inner->name(), std::nullopt, "torch.save archive", "a data.pkl record", "none"};
    const ZipEntry& pkl = *pkls.front();
    std::string prefix = pkl.name.substr(0, pkl.name.size() - std::string("data.pkl").size());
    auto text = inner->read(pkl, kMaxJson);
    if (!text) return text.error();
    auto objs = decodeTorchPickle(reinterpret_cast<const uint8_t*>(text->data()), text->size(), inner->name() + ":" + pkl.name);
    if (!objs) return objs.error();
    for (const auto& [key, t] : objs->tensors) {
      const ZipEntry* storage = inner->find(prefix + "data/" + t.storageKey);
      if (!storage)
        return Error{ErrorCode::MissingKey, inner->name(), std::nullopt, "storage of tensor '" + key + "'",
                     prefix + "data/" + t.storageKey, "no such record"};
      auto b = inner->bytes(*storage);
      if (!b) return b.error();
      uint32_t es = elementSize(t.dtype);
      uint64_t start = static_cast<uint64_t>(std::max<int64_t>(t.storageOffset, 0)) * es;
      uint64_t extent = storageExtent(t.sizes, t.strides, t.storageOffset, es);
      if (extent > b->size || start > b->size)
        return Error{ErrorCode::Truncated, inner->name(), b->fileOffset, "storage of tensor '" + key + "'",
                     std::to_string(extent) + " bytes", std::to_string(b->size) + " bytes"};
      Bytes view{b->data + start, extent - std::min(extent, start), b->fileOffset + start};
      out[key] = WeightData{view, true, t.dtype, t.sizes};
    }
    return Ok{};
  }

  Result<Program> archive(const std::vector<const ZipEntry*>& models) {
    program_.format = SourceFormat::Pt2;
    program_.exportFacts.container = "pt2 archive";
    for (const ZipEntry* model : models) {
      size_t at = model->name.find("models/");
      std::string prefix = model->name.substr(0, at);
      std::string name = model->name.substr(at + 7, model->name.size() - at - 7 - 5);
      if (const ZipEntry* v = zip_.find(prefix + "archive_version"))
        program_.exportFacts.archiveVersion = zip_.read(*v, 64).value_or(std::string());
      program_.exportFacts.hasSampleInputs = zip_.find(prefix + "data/sample_inputs/" + name + ".pt") != nullptr;
      Method m;
      if (auto s = parseProgram(*model, name == "model" ? "forward" : name, m); !s) return s.error();
      std::unordered_map<std::string, WeightData> weights;
      if (auto s = readWeightConfig(prefix, prefix + "data/weights/" + name + "_weights_config.json", "data/weights/", weights); !s)
        return s.error();
      if (auto s = readWeightConfig(prefix, prefix + "data/constants/" + name + "_constants_config.json", "data/constants/", weights);
          !s)
        return s.error();
      // torch 2.8 stored the whole state dict / constants as one torch.save file each.
      for (const char* dir : {"data/weights/", "data/constants/"})
        if (const ZipEntry* e = zip_.find(prefix + dir + name + ".pt"); e && e->size > 0)
          if (auto s = torchSave(*e, weights); !s) return s.error();
      if (auto s = attachWeights(m, weights, file_->path() + ":" + model->name); !s) return s.error();
      program_.methods.push_back(std::move(m));
    }
    return std::move(program_);
  }

  Result<Program> legacyZip(const ZipEntry& json) {
    program_.format = SourceFormat::Pt2;
    program_.exportFacts.container = "legacy torch.export zip";
    std::string prefix = json.name.substr(0, json.name.size() - std::string("serialized_exported_program.json").size());
    if (const ZipEntry* v = zip_.find(prefix + "version")) program_.exportFacts.archiveVersion = zip_.read(*v, 64).value_or("");
    program_.exportFacts.hasSampleInputs = zip_.find(prefix + "serialized_example_inputs.pt") != nullptr;
    Method m;
    if (auto s = parseProgram(json, "forward", m); !s) return s.error();
    std::unordered_map<std::string, WeightData> weights;
    for (const char* rec : {"serialized_state_dict.pt", "serialized_constants.pt"})
      if (const ZipEntry* e = zip_.find(prefix + rec); e && e->size > 0)
        if (auto s = torchSave(*e, weights); !s) return s.error();
    if (auto s = attachWeights(m, weights, file_->path() + ":" + json.name); !s) return s.error();
    program_.methods.push_back(std::move(m));
    return std::move(program_);
  }

  /// An ETRecord opens as its edge programs, the input of to_executorch, one
  /// method each: "edge_dialect_exported_program" (older files, forward only) or
  /// "edge_dialect_exported_program/<method>" (ExecuTorch 1.x). Files with no edge
  /// program open as what they have: the ATen outputs and extra modules.
  Result<Program> etRecord() {
    program_.format = SourceFormat::EtRecord;
    program_.exportFacts.container = "etrecord";
    static constexpr std::string_view kEdge = "edge_dialect_exported_program";
    auto isSidecar = [](const std::string& n) {
      return n.ends_with("_state_dict") || n.ends_with("_constants") || n.ends_with("_example_inputs");
    };
    std::vector<std::pair<const ZipEntry*, std::string>> programs;  // entry, method name
    for (const ZipEntry& e : zip_.entries()) {
      if (isSidecar(e.name)) continue;
      if (e.name == kEdge) programs.emplace_back(&e, "forward");
      else if (e.name.size() > kEdge.size() + 1 && e.name.starts_with(kEdge) && e.name[kEdge.size()] == '/')
        programs.emplace_back(&e, e.name.substr(kEdge.size() + 1));
    }
    if (programs.empty())
      for (const ZipEntry& e : zip_.entries())
        if (!isSidecar(e.name) && (e.name.starts_with("aten_dialect_output/") || e.name.starts_with("edge_dialect_output/") ||
                                   e.name == "extra_export_modules"))
          programs.emplace_back(&e, e.name);
    for (const auto& [entry, name] : programs) {
      Method m;
      if (auto s = parseProgram(*entry, name, m); !s) return s.error();
      std::unordered_map<std::string, WeightData> weights;
      for (const char* sidecar : {"_state_dict", "_constants"})
        if (const ZipEntry* sd = zip_.find(entry->name + sidecar); sd && sd->size > 0)
          if (auto s = torchSave(*sd, weights); !s) return s.error();
      if (auto s = attachWeights(m, weights, file_->path() + ":" + entry->name); !s) return s.error();
      program_.methods.push_back(std::move(m));
    }
    if (program_.methods.empty()) return refuse("an ETRecord without exported programs");
    return std::move(program_);
  }

  static constexpr int64_t kNewestMajor = 8;  // newest serde schema major version this reader knows
  std::shared_ptr<const MappedFile> file_;
  ZipArchive zip_;
  Program program_;
  simdjson::dom::parser parser_;
};

}  // namespace

bool looksLikeZip(const MappedFile& file) { return file.size() >= 4 && std::memcmp(file.data(), "PK\x03\x04", 4) == 0; }

Result<Program> readExport(std::shared_ptr<const MappedFile> file) { return ExportImporter(std::move(file)).run(); }

Result<Program> readExportFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readExport(std::move(f.value()));
}

}  // namespace lstudio
