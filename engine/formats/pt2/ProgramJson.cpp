// The graph of a serialized ExportedProgram: symbols and their ranges, tensor values,
// inputs, nodes (with their stack traces and module stacks) and outputs; and the entry that
// parses a program record's text and reads the schema's facts.
#include "engine/formats/pt2/ProgramJson.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"

namespace lstudio::pt2 {
namespace {

constexpr int64_t kNewestMajor = 8;  // newest serde schema major version this reader knows
constexpr const char* kWrapWithSetGradEnabled = "torch.ops.higher_order.wrap_with_set_grad_enabled";
constexpr const char* kWrapWithAutocast = "torch.ops.higher_order.wrap_with_autocast";

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

/// "File \"x.py\", line 12, in forward\n    code" -> frames (innermost last).
std::vector<StackFrame> parseStackTrace(std::string_view text) {
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


/// Recent torch writes a size expression as sympy's srepr
/// ("Add(Mul(Integer(2), Symbol('s77', positive=True, integer=True)), Integer(1))")
/// where older files have the printed form ("2*s77 + 1"), which the rest of
/// the studio reads. Symbol, Integer, Add and Mul are turned into that form;
/// anything else is kept as written (its bound is then reported unknown).
class SreprReader {
 public:
  explicit SreprReader(std::string_view s) : s_(s) {}
  std::optional<std::string> expression() {
    auto head = identifier();
    if (!head || !eat('(')) return std::nullopt;
    if (*head == "Symbol" || *head == "Integer") {
      std::string atom;
      bool quoted = i_ < s_.size() && s_[i_] == '\'';
      if (quoted) ++i_;
      while (i_ < s_.size() && (quoted ? s_[i_] != '\'' : (s_[i_] != ',' && s_[i_] != ')'))) atom += s_[i_++];
      if (quoted && !eat('\'')) return std::nullopt;
      int depth = 0;  // skip the assumptions: positive=True, integer=True
      while (i_ < s_.size() && (depth > 0 || s_[i_] != ')')) depth += s_[i_] == '(' ? 1 : s_[i_] == ')' ? -1 : 0, ++i_;
      if (!eat(')') || atom.empty()) return std::nullopt;
      return atom;
    }
    if (*head != "Add" && *head != "Mul") return std::nullopt;
    std::vector<std::string> terms;
    do {
      auto t = expression();
      if (!t) return std::nullopt;
      terms.push_back(*head == "Mul" && t->find(' ') != std::string::npos ? "(" + *t + ")" : *t);
    } while (eat(','));
    if (!eat(')')) return std::nullopt;
    std::string out;
    if (*head == "Mul") {
      for (size_t k = 0; k < terms.size(); ++k) out += (k ? "*" : "") + terms[k];
      return out;
    }
    // As sympy prints a sum: the number last, a negative term subtracted ("s27 - 2").
    auto isNumber = [](const std::string& t) {
      return !t.empty() && t.find_first_not_of("-0123456789") == std::string::npos;
    };
    std::stable_partition(terms.begin(), terms.end(), [&](const std::string& t) { return !isNumber(t); });
    for (size_t k = 0; k < terms.size(); ++k) {
      const std::string& t = terms[k];
      if (k == 0) out = t;
      else if (t[0] == '-') out += " - " + t.substr(1);
      else out += " + " + t;
    }
    return out;
  }
  bool done() {
    skip();
    return i_ == s_.size();
  }

 private:
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  std::optional<std::string> identifier() {
    skip();
    size_t start = i_;
    while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ == start) return std::nullopt;
    return std::string(s_.substr(start, i_ - start));
  }
  std::string_view s_;
  size_t i_ = 0;
};

std::string readableSizeExpression(const std::string& text) {
  if (text.find('(') == std::string::npos || text.find("Symbol(") == std::string::npos) return text;
  SreprReader r(text);
  auto e = r.expression();
  return e && r.done() ? *e : text;
}

}  // namespace

/// "L__self__,,Type;L__self__linear,linear,torch.nn.Linear" (newer: key,path,type per entry).
/// get_greatest_ancestor_node_identifier: the node a `from_node` record (torch.fx's
/// provenance, serialized as a JSON string) traces back to, as "name.graph_id"; every node of
/// one such ancestor gets one debug handle (PT2E's quantize and dequantize nodes share the
/// observer's or the observed node's). Empty when the record is missing or unreadable.
static std::string greatestAncestor(std::string_view text) {
  nlohmann::json chain = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* source = nullptr;
  while (chain.is_array() && !chain.empty() && chain.back().is_object()) {
    source = &chain.back();
    auto next = source->find("from_node");
    if (next == source->end() || !next->is_array() || next->empty()) break;
    nlohmann::json inner = *next;  // keep the ancestor alive past the reassignment
    chain = std::move(inner);
    source = nullptr;
  }
  if (!source) {
    if (!chain.is_array() || chain.empty() || !chain.back().is_object()) return {};
    source = &chain.back();
  }
  auto name = source->find("name");
  auto graph = source->find("graph_id");
  if (name == source->end() || !name->is_string() || graph == source->end()) return {};
  return name->get<std::string>() + "." + (graph->is_string() ? graph->get<std::string>() : graph->dump());
}

std::vector<ModuleFrame> parseModuleStack(std::string_view text) {
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


/// torch.export's serialized ScalarType numbering (torch/_export/serde/schema.py),
/// which differs from c10's.
/// ExecuTorch's own copy of the schema (ETRecords) numbers three types differently.
std::optional<ScalarType> serdeScalarType(int64_t v, bool etRecord) {
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

/// A SymInt: {"as_int": 3} or {"as_expr": {"expr_str": "s0", "hint": ...}} (older: {"as_name": "s0"}).
Result<std::pair<int64_t, std::string>> ProgramJson::symInt(element v, const Path& where) {
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
    return std::pair<int64_t, std::string>{hint, readableSizeExpression(s.value())};
  }
  if (kind == "as_name") {  // a reference to sym_int_values
    auto s = string(x, where);
    if (!s) return s.error();
    return std::pair<int64_t, std::string>{symHints_.count(*s) ? symHints_[*s] : 0, s.value()};
  }
  return fail(where, "as_int or as_expr", kind);
}

Result<TensorSpec> ProgramJson::tensorMeta(element v, const Path& where) {
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
std::optional<int64_t> ProgramJson::upperBound(const std::string& symbol) const {
  for (const auto& r : m_.symbolRanges)
    if (r.symbol == symbol) return r.max;
  return std::nullopt;
}

Status ProgramJson::parse(element root) {
  auto gm = field(root, "graph_module", "ExportedProgram");
  if (!gm) return gm.error();
  auto graph = field(*gm, "graph", "graph_module");
  if (!graph) return graph.error();
  symbolRanges(root);  // first: they bound dynamic sizes
  if (auto s = readGraph(*graph); !s) return s;
  if (auto s = signature(*gm); !s) return s;
  moduleCallGraph(*gm);
  return Ok{};
}

Status ProgramJson::readGraph(element graph) {
  symbolValues(graph);
  if (auto s = tensorValues(graph); !s) return s;
  // Graph inputs (placeholders) and outputs.
  auto ins = field(graph, "inputs", "graph");
  if (!ins) return ins.error();
  auto ia = array(*ins, "graph.inputs");
  if (!ia) return ia.error();
  size_t idx = 0;
  for (element in : *ia) {
    auto id = argument(in, "graph.inputs[" + std::to_string(idx++) + "]");
    if (!id) return id.error();
    m_.inputs.push_back(*id);
  }
  auto nodes = field(graph, "nodes", "graph");
  if (!nodes) return nodes.error();
  auto na = array(*nodes, "graph.nodes");
  if (!na) return na.error();
  idx = 0;
  std::map<std::string, int32_t> opIndex;
  for (element nj : *na) {
    Node n;
    if (auto s = node(nj, "graph.nodes[" + std::to_string(idx++) + "]", opIndex, n); !s) return s;
    if (n.target != kWrapWithSetGradEnabled && n.target != kWrapWithAutocast) m_.nodes.push_back(std::move(n));  // else inlined already
  }
  auto outs = field(graph, "outputs", "graph");
  if (!outs) return outs.error();
  auto oa = array(*outs, "graph.outputs");
  if (!oa) return oa.error();
  idx = 0;
  for (element o : *oa) {
    auto id = argument(o, "graph.outputs[" + std::to_string(idx++) + "]");
    if (!id) return id.error();
    m_.outputs.push_back(*id);
  }
  return Ok{};
}

Status ProgramJson::inlineWrappedGraph(element inputs, const Path& w, Node& n, std::map<std::string, int32_t>& opIndex) {
  auto ina = array(inputs, w + ".inputs");
  if (!ina) return ina.error();
  std::vector<element> in(ina->begin(), ina->end());
  // wrap_with_set_grad_enabled(enabled, graph, operands...);
  // wrap_with_autocast(device_type, dtype, enabled, cache_enabled, graph, operands...).
  const bool autocast = n.target == kWrapWithAutocast;
  const size_t graphAt = autocast ? 4 : 1;
  if (in.size() <= graphAt)
    return fail(w + ".inputs", autocast ? "device_type, dtype, enabled, cache_enabled, a graph and its operands"
                                        : "enabled, a graph and its operands",
                std::to_string(in.size()) + " arguments");
  std::vector<element> args;
  for (size_t i = 0; i < in.size(); ++i) {
    auto a = field(in[i], "arg", w + (".inputs[" + std::to_string(i) + "]"));
    if (!a) return a.error();
    args.push_back(*a);
  }
  if (autocast) {
    // A region that casts nothing on CPU (disabled, or for another device) is its calls, as
    // to_edge's retrace inlines it; one that would cast on CPU is not lowered yet.
    auto device = unionMember(args[0], w + ".inputs[0]"), enabled = unionMember(args[2], w + ".inputs[2]");
    if (!device) return device.error();
    if (!enabled) return enabled.error();
    std::string_view deviceType;
    bool on = true;
    if (device->first == "as_string") (void)device->second.get_string().get(deviceType);
    if (enabled->first == "as_bool") (void)enabled->second.get_bool().get(on);
    if (on && (deviceType == "cpu" || device->first != "as_string"))
      return fail(w, "an autocast region that casts nothing on CPU (enabled=False, or another device_type)",
                  "torch.autocast(device_type='cpu', enabled=True), which the studio does not lower yet");
  }
  auto u = unionMember(args[graphAt], w + ".inputs[" + std::to_string(graphAt) + "]");
  if (!u) return u.error();
  if (u->first != "as_graph") return fail(w + ".inputs[" + std::to_string(graphAt) + "]", "a graph (as_graph)", u->first);
  auto g = field(u->second, "graph", w + ".inputs[" + std::to_string(graphAt) + "].as_graph");
  if (!g) return g.error();
  Method sub;
  sub.symbolRanges = m_.symbolRanges;
  ProgramJson reader(file_, sub, etRecordNumbering_, lowered_);
  if (auto s = reader.readGraph(*g); !s) return s;
  std::vector<ValueId> operands;
  for (size_t i = graphAt + 1; i < args.size(); ++i) {
    auto id = argument(args[i], w + (".inputs[" + std::to_string(i) + "]"));
    if (!id) return id.error();
    operands.push_back(*id);
  }
  if (sub.inputs.size() != operands.size() || sub.outputs.size() != n.outputs.size())
    return fail(w, "a graph taking the " + std::to_string(operands.size()) + " operands and making the " +
                       std::to_string(n.outputs.size()) + " results",
                "one with " + std::to_string(sub.inputs.size()) + " inputs and " + std::to_string(sub.outputs.size()) + " outputs");
  // The graph's inputs are the operands, its outputs the node's results; its
  // other values join this graph (renamed where a name is taken).
  if (!sub.subgraphs.empty()) return fail(w, "a wrapped graph of operator calls", "control flow inside it");
  std::vector<ValueId> map(sub.values.size(), kNoValue);
  for (size_t k = 0; k < operands.size(); ++k) map.at(static_cast<size_t>(sub.inputs[k])) = operands[k];
  for (size_t k = 0; k < n.outputs.size(); ++k) map.at(static_cast<size_t>(sub.outputs[k])) = n.outputs[k];
  std::vector<char> fresh(sub.values.size(), 0);
  for (size_t v = 0; v < sub.values.size(); ++v) {
    if (map[v] != kNoValue) continue;
    fresh[v] = 1;
    Value x = sub.values[v];
    if (!x.name.empty() && tensors_.count(x.name)) {
      std::string base = x.name;
      for (int k = 1; tensors_.count(x.name); ++k) x.name = base + "_" + std::to_string(k);
    }
    if (!x.name.empty() && x.isTensor()) tensors_[x.name] = static_cast<ValueId>(m_.values.size());
    map[v] = addValue(std::move(x));
  }
  auto at = [&](ValueId v) { return v < 0 ? v : map.at(static_cast<size_t>(v)); };
  for (size_t v = 0; v < sub.values.size(); ++v) {
    if (!fresh[v]) continue;  // an operand or a result: this graph's value already
    Value& x = m_.values[static_cast<size_t>(map[v])];
    auto remap = [&](std::vector<ValueId>& items) {
      for (ValueId& i : items) i = at(i);
    };
    if (auto* l = std::get_if<IntList>(&x.payload)) remap(l->items);
    else if (auto* tl = std::get_if<TensorList>(&x.payload)) remap(tl->items);
    else if (auto* ol = std::get_if<OptionalTensorList>(&x.payload)) remap(ol->items);
  }
  for (Node s : sub.nodes) {
    for (ValueId& a : s.args) a = at(a);
    for (ValueId& o : s.outputs) o = at(o);
    if (s.op >= 0) {
      const OperatorRef& op = sub.operators.at(static_cast<size_t>(s.op));
      auto [it, inserted] = opIndex.emplace(op.name + "." + op.overload, static_cast<int32_t>(m_.operators.size()));
      if (inserted) m_.operators.push_back(op);
      s.op = it->second;
    }
    if (!s.outputs.empty()) s.name = m_.values[static_cast<size_t>(s.outputs.front())].name;
    s.meta.origin = n.meta.origin;  // inlined from the wrap node: its from_node root
    m_.nodes.push_back(std::move(s));
  }
  return Ok{};
}

/// torch.cond(pred, true_graph, false_graph, operands): the branches are
/// graphs of their own (serde's as_graph, with their own tensor_values),
/// read into subgraphs of the method; the node reads [pred, operands...].
Status ProgramJson::controlFlowNode(element inputs, const Path& w, Node& n) {
  n.op = -1;
  auto ina = array(inputs, w + ".inputs");
  if (!ina) return ina.error();
  std::vector<element> in(ina->begin(), ina->end());
  // Where the graphs are and what each list of tensors is, as torch's
  // higher-order ops take them: cond(pred, true_fn, false_fn, operands),
  // map_impl(body, xs, operands), scan(combine_fn, init, xs, additional_inputs).
  std::vector<size_t> graphs;
  std::vector<std::string> lists;
  std::string expected;
  switch (n.kind) {
    case NodeKind::Cond: graphs = {1, 2}; lists = {"", "", "", "operands"}; expected = "4 arguments (pred, true_fn, false_fn, operands)"; break;
    case NodeKind::Map: graphs = {0}; lists = {"", "xs", "operands"}; expected = "3 arguments (body, xs, operands)"; break;
    default: graphs = {0}; lists = {"", "init", "xs", "additional_inputs"}; expected = "4 arguments (combine_fn, init, xs, additional_inputs)"; break;
  }
  if (in.size() != lists.size()) return fail(w + ".inputs", expected, std::to_string(in.size()));
  std::vector<element> args;
  for (size_t i = 0; i < in.size(); ++i) {
    auto a = field(in[i], "arg", w + (".inputs[" + std::to_string(i) + "]"));
    if (!a) return a.error();
    args.push_back(*a);
  }
  if (n.kind == NodeKind::Cond) {
    auto pred = argument(args[0], w + ".inputs[0]");
    if (!pred) return pred.error();
    n.args.push_back(*pred);
    n.argNames.push_back("pred");
  }
  for (size_t b : graphs) {
    const Path bw = w + (".inputs[" + std::to_string(b) + "]");
    auto u = unionMember(args[b], bw);
    if (!u) return u.error();
    if (u->first != "as_graph") return fail(bw, "a graph (as_graph)", u->first);
    auto g = field(u->second, "graph", bw + ".as_graph");
    if (!g) return g.error();
    Method sub;
    if (auto nm = optField(u->second, "name"))
      if (auto s = string(*nm, bw + ".as_graph.name")) sub.name = *s;
    sub.symbolRanges = m_.symbolRanges;
    ProgramJson reader(file_, sub, etRecordNumbering_, lowered_);
    if (auto s = reader.readGraph(*g); !s) return s;
    resolveEdgeDialect(sub);
    n.subgraphs.push_back(static_cast<int32_t>(m_.subgraphs.size()));
    m_.subgraphs.push_back(std::move(sub));
  }
  size_t operands = 0;
  for (size_t i = 0; i < lists.size(); ++i) {
    if (lists[i].empty()) continue;
    const Path lw = w + (".inputs[" + std::to_string(i) + "]");
    auto l = unionMember(args[i], lw);
    if (!l) return l.error();
    if (l->first != "as_tensors") return fail(lw, lists[i] + " as a list of tensors (as_tensors)", l->first);
    auto ids = tensorNames(l->second, lw + ".as_tensors");
    if (!ids) return ids.error();
    for (ValueId v : *ids) {
      n.args.push_back(v);
      n.argNames.push_back(lists[i]);
    }
    operands += ids->size();
  }
  for (int32_t b : n.subgraphs)
    if (m_.subgraphs[b].inputs.size() != operands)
      return fail(w, "graphs that take the " + std::to_string(operands) + " operands",
                  "graph '" + m_.subgraphs[b].name + "' with " + std::to_string(m_.subgraphs[b].inputs.size()) + " inputs");
  return Ok{};
}

/// range_constraints: the bounds of each symbol.
void ProgramJson::symbolRanges(element root) {
  auto rc = optField(root, "range_constraints");
  simdjson::dom::object o;
  if (!rc || rc->is_null() || rc->get_object().get(o) != simdjson::SUCCESS) return;
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

/// sym_int_values: each declared symbol's hint, and a value for it.
void ProgramJson::symbolValues(element graph) {
  auto syms = optField(graph, "sym_int_values");
  simdjson::dom::object o;
  if (!syms || syms->is_null() || syms->get_object().get(o) != simdjson::SUCCESS) return;
  for (auto [name, v] : o)
    if (auto si = symInt(v, "sym_int_values." + std::string(name))) {
      std::string n(name);
      symHints_[n] = si->first;
      // Every declared symbol becomes a value, referenced or not, so it survives a rewrite.
      symValues_[n] = addInt(si->first, n, true);
    }
}

/// tensor_values: one tensor value per name, which arguments refer to.
Status ProgramJson::tensorValues(element graph) {
  auto tv = field(graph, "tensor_values", "graph");
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
  return Ok{};
}

/// One graph node at `w`: its operator (added to the method's table on first use),
/// named arguments, results and metadata.
Status ProgramJson::node(element nj, const std::string& w, std::map<std::string, int32_t>& opIndex, Node& n) {
  auto target = field(nj, "target", w);
  if (!target) return target.error();
  auto ts = string(*target, w + ".target");
  if (!ts) return ts.error();
  n.target = ts.value();
  if (n.target == "torch.ops.higher_order.cond") n.kind = NodeKind::Cond;
  else if (n.target == "torch.ops.higher_order.map_impl") n.kind = NodeKind::Map;
  else if (n.target == "torch.ops.higher_order.scan") n.kind = NodeKind::Scan;
  const bool controlFlow = isControlFlow(n.kind);
  const bool delegateCall = lowered_ && n.target == "torch.ops.higher_order.executorch_call_delegate";
  const bool wrapped = n.target == kWrapWithSetGradEnabled || n.target == kWrapWithAutocast;
  if (!delegateCall && !controlFlow && !wrapped) {
    OperatorRef op = operatorFromTarget(n.target);
    std::string key = op.name + "." + op.overload;
    auto [it, inserted] = opIndex.emplace(key, static_cast<int32_t>(m_.operators.size()));
    if (inserted) m_.operators.push_back(op);
    n.op = it->second;
  }
  auto inputs = field(nj, "inputs", w);
  if (!inputs) return inputs.error();
  auto ina = array(*inputs, w + ".inputs");
  if (!ina) return ina.error();
  size_t ai = 0;
  const Path nodePath(w);
  if (controlFlow)
    if (auto s = controlFlowNode(*inputs, nodePath, n); !s) return s;
  for (element na2 : *ina) {
    if (controlFlow || wrapped) break;
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
    n.args.push_back(*id);
    n.argNames.push_back(ans.value());
  }
  // torch.export.save writes no argument names for operators it has no schema
  // for (an edge program's executorch.exir.dialects.edge._ops.*): they are
  // positional, in the order of the operator's schema.
  if (!n.args.empty() && n.op >= 0 && std::ranges::all_of(n.argNames, [](const std::string& a) { return a.empty(); }))
    if (const OpSchema* s = OpRegistry::builtin().find(m_.operators[n.op].name, m_.operators[n.op].overload);
        s && n.args.size() <= s->arguments.size())
      for (size_t i = 0; i < n.args.size(); ++i) n.argNames[i] = s->arguments[i].name;
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
    if ((*meta)["from_node"].get(e) == simdjson::SUCCESS && e.get_string().get(s) == simdjson::SUCCESS)
      n.meta.origin = greatestAncestor(s);
  }
  if (!n.outputs.empty()) n.name = m_.values[n.outputs.front()].name;
  if (n.meta.origin.empty()) n.meta.origin = n.name;
  if (delegateCall) return loweredModule(n, w);
  if (wrapped) return inlineWrappedGraph(*inputs, nodePath, n, opIndex);
  return Ok{};
}

Status readProgramJson(std::string& text, const std::string& where, bool etRecordNumbering,
                       simdjson::dom::parser& parser, Method& m, ExportFacts& facts, LoweredData* lowered) {
  replaceNonFiniteTokens(text);
  simdjson::dom::element root;
  auto err = parser.parse(text.data(), text.size()).get(root);
  if (err != simdjson::SUCCESS) {
    // simdjson says what but not where; nlohmann finds the byte.
    uint64_t at = 0;
    try {
      auto unused = nlohmann::json::parse(text);
      (void)unused;
    } catch (const nlohmann::json::parse_error& pe) {
      at = pe.byte;
    } catch (const nlohmann::json::exception&) {  // number overflow and the like: no position
    }
    return Error{ErrorCode::Invalid, where, at, "JSON of the exported program", "valid JSON", simdjson::error_message(err)};
  }
  ProgramJson pj(where, m, etRecordNumbering, lowered);
  if (auto s = pj.parse(root); !s) return s;
  resolveEdgeDialect(m);
  // Facts about the schema.
  element v;
  if (root["schema_version"].get(v) == simdjson::SUCCESS) {
    int64_t major = 0, minor = 0, plain = 0;
    if (v.get_int64().get(plain) == simdjson::SUCCESS) facts.schemaVersion = std::to_string(plain);
    else if (v["major"].get_int64().get(major) == simdjson::SUCCESS) {
      if (v["minor"].get_int64().get(minor) != simdjson::SUCCESS) minor = 0;
      facts.schemaVersion = std::to_string(major) + "." + std::to_string(minor);
      if (major > kNewestMajor)
        return Error{ErrorCode::Unsupported, where, std::nullopt, "exported program schema version",
                     "major version <= " + std::to_string(kNewestMajor), facts.schemaVersion};
    }
  }
  std::string_view s;
  if (root["torch_version"].get(v) == simdjson::SUCCESS && v.get_string().get(s) == simdjson::SUCCESS)
    facts.torchVersion = std::string(s);
  if (root["dialect"].get(v) == simdjson::SUCCESS && v.get_string().get(s) == simdjson::SUCCESS)
    facts.dialect = std::string(s);
  simdjson::dom::array verifiers;
  if (root["verifiers"].get(v) == simdjson::SUCCESS && v.get_array().get(verifiers) == simdjson::SUCCESS)
    for (element x : verifiers)
      if (x.get_string().get(s) == simdjson::SUCCESS) facts.dialect = std::string(s);
  return Ok{};
}

}  // namespace lstudio::pt2
