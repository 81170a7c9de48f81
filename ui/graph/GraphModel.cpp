#include "ui/graph/GraphModel.h"
#include "ui/graph/GraphGrouping.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include "engine/formats/delegates/XnnpackPayload.h"
#include "engine/inspect/Inspect.h"
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace lstudio::ui {
namespace {

// Ops that only reinterpret or reshape their input (no new values computed).
bool isViewOp(std::string_view op) {
  static const std::set<std::string_view> views = {
      "view", "view_copy", "_unsafe_view", "reshape", "_reshape_alias", "_reshape_alias_copy", "permute",
      "permute_copy", "expand", "expand_copy", "t", "t_copy", "transpose", "transpose_copy", "squeeze",
      "squeeze_copy", "unsqueeze", "unsqueeze_copy", "slice", "slice_copy", "select", "select_copy", "alias",
      "alias_copy", "as_strided", "as_strided_copy", "unbind", "unbind_copy", "split", "split_copy",
      "split_with_sizes", "split_with_sizes_copy", "narrow", "narrow_copy", "flatten", "unflatten",
      "detach", "detach_copy", "view_as_real", "view_as_complex", "diagonal_copy", "unfold_copy"};
  return views.count(op) > 0;
}

// Ops whose job is moving or managing bytes rather than computing.
bool isMemoryOp(std::string_view op) {
  static const std::set<std::string_view> memory = {
      "copy", "copy_", "alloc", "free", "clone", "_to_copy", "_to_dim_order_copy", "_clone_dim_order",
      "contiguous", "empty", "empty_like", "zeros", "zeros_like", "full", "full_like", "move", "update_cache"};
  return memory.count(op) > 0;
}

std::string baseName(const std::string& op) {  // "aten::addmm" -> "addmm", "memory.alloc" -> "alloc"
  size_t c = op.rfind("::");
  std::string s = c == std::string::npos ? op : op.substr(c + 2);
  size_t d = s.rfind('.');
  return d == std::string::npos ? s : s.substr(d + 1);
}

std::string shortType(const std::string& type) {
  size_t d = type.rfind('.');
  return d == std::string::npos ? type : type.substr(d + 1);
}

std::string shapeOf(const Method& m, const std::vector<ValueId>& outs) {
  std::vector<ValueId> ts;
  for (ValueId v : outs) m.appendTensors(v, ts);
  if (ts.empty()) return {};
  std::string s = m.values[ts[0]].tensor().shapeString();
  if (ts.size() > 1) s += "  +" + std::to_string(ts.size() - 1);
  return s;
}

// Builds the boxes and edges of one method in execution order: the method's
// inputs first, then each node with the placeholders and removed views its
// arguments need, then the outputs marker.
class BoxBuilder {
 public:
  BoxBuilder(const Method& m, GraphModel& g) : m_(m), g_(g) {
    g_.nodeOfValue.assign(m_.values.size(), -1);
    g_.nodeOfMethodNode.assign(m_.nodes.size(), -1);
    for (const InputSpec& in : m_.signature.inputs) specOf_[in.value] = &in;
  }

  void addInputs() {
    for (ValueId v : m_.inputs)
      if (v >= 0 && static_cast<size_t>(v) < m_.values.size() && g_.nodeOfValue[v] < 0) placeholder(v, true);
  }

  void addNodes() {
    for (size_t i = 0; i < m_.nodes.size(); ++i) addNode(i);
  }

  void addOutputsMarker();

 private:
  std::vector<int> addReturnedConstants();
  int groupFor(const std::vector<ModuleFrame>& stack);
  int placeholder(ValueId v, bool isInput);
  void placeholderKind(ValueId v, bool isInput, GraphNode& n) const;
  void addEdge(int from, int to, ValueId v, bool side = false) {
    if (from < 0 || to < 0 || from == to || !seen_.insert({from, to}).second) return;
    g_.edges.push_back({from, to, v, side});
  }
  int removedView(ValueId v, int group);
  /// The base of a view no instruction makes, or kNoValue. A .pte does not
  /// record it: there, the tensor written last into the same planned slot.
  ValueId viewBase(ValueId v) const {
    const TensorSpec* t = m_.values[v].tensorIf();
    if (!t) return kNoValue;
    if (t->viewOf != kNoValue && t->viewOf >= 0 && static_cast<size_t>(t->viewOf) < m_.values.size()) return t->viewOf;
    if (!t->slot || t->storage() != TensorStorage::Planned) return kNoValue;
    auto it = lastInSlot_.find({t->slot->memId, t->slot->offset});
    return it == lastInSlot_.end() || it->second == v ? kNoValue : it->second;
  }
  bool isRemovedView(ValueId v) const { return viewBase(v) != kNoValue; }
  void addNode(size_t i);
  void describeNode(const Node& node, const std::vector<ValueId>& written, GraphNode& n) const;
  int delegateGroup(const Node& node, const GraphNode& n);
  void connectArguments(const Node& node, int me, const std::vector<ValueId>& written);
  void addPayload(const Node& node, const xnnpack::Graph& payload, int me);

  const Method& m_;
  GraphModel& g_;
  std::map<std::string, int> groupOfPath_;  ///< "/layers.3/layers.3.attention" -> group
  std::unordered_map<ValueId, const InputSpec*> specOf_;
  std::set<std::pair<int, int>> seen_;  ///< one edge per pair of boxes
  std::map<std::pair<uint32_t, uint64_t>, ValueId> lastInSlot_;  ///< planned slot -> tensor written there last
};

// Groups from a node's module stack: one per module path, nested as the stack nests.
int BoxBuilder::groupFor(const std::vector<ModuleFrame>& stack) {
  int parent = -1;
  std::string key;
  for (const ModuleFrame& f : stack) {
    if (f.path.empty()) continue;  // the root module wraps everything
    key += "/" + f.path;
    auto it = groupOfPath_.find(key);
    if (it == groupOfPath_.end()) {
      GraphGroup grp;
      grp.path = f.path;
      grp.type = shortType(f.type);
      grp.parent = parent;
      g_.groups.push_back(grp);
      it = groupOfPath_.emplace(key, int(g_.groups.size()) - 1).first;
    }
    parent = it->second;
  }
  return parent;
}

// A placeholder's kind and title: from the export signature or (for .pte
// programs, which have none) from where the bytes live.
void BoxBuilder::placeholderKind(ValueId v, bool isInput, GraphNode& n) const {
  auto it = specOf_.find(v);
  const TensorSpec* t = m_.values[v].tensorIf();
  if (it != specOf_.end()) {
    switch (it->second->kind) {
      case InputSpec::Kind::Parameter:
      case InputSpec::Kind::Buffer: n.kind = VisualKind::Parameter; break;
      case InputSpec::Kind::ConstantTensor: n.kind = VisualKind::Constant; break;
      default: n.kind = VisualKind::Input;
    }
    if (!it->second->target.empty()) n.title = it->second->target;
  } else if (t) {
    switch (t->storage()) {
      case TensorStorage::Constant:
      case TensorStorage::External: n.kind = VisualKind::Constant; break;
      case TensorStorage::Mutable: n.kind = VisualKind::Parameter; break;
      default: n.kind = isInput ? VisualKind::Input : VisualKind::Constant;
    }
    if (!t->fqn.empty()) n.title = t->fqn;
  } else {
    n.kind = VisualKind::Input;
  }
}

// A box for a value no node produces: a method input, a weight or a constant the program embeds.
int BoxBuilder::placeholder(ValueId v, bool isInput) {
  GraphNode n;
  n.value = v;
  const Value& x = m_.values[v];
  n.name = x.name.empty() ? "%" + std::to_string(v) : x.name;
  n.title = n.name;
  placeholderKind(v, isInput, n);
  if (const TensorSpec* t = x.tensorIf()) n.subtitle = t->shapeString();
  g_.nodes.push_back(std::move(n));
  g_.nodeOfValue[v] = int(g_.nodes.size()) - 1;
  return int(g_.nodes.size()) - 1;
}

// A view that lowering made a window on its base's bytes (no instruction
// makes it) is still a use of that base: one dashed box, fed by the base.
int BoxBuilder::removedView(ValueId v, int group) {
  const TensorSpec& t = m_.values[v].tensor();
  ValueId base = viewBase(v);
  int from = g_.nodeOfValue[base] >= 0 ? g_.nodeOfValue[base] : placeholder(base, false);
  GraphNode n;
  n.kind = VisualKind::View;
  n.value = v;
  n.name = m_.values[v].name.empty() ? "%" + std::to_string(v) : m_.values[v].name;
  n.title = "view";
  n.subtitle = t.shapeString();
  n.group = group;
  g_.nodes.push_back(std::move(n));
  int me = int(g_.nodes.size()) - 1;
  g_.nodeOfValue[v] = me;
  addEdge(from, me, base);
  return me;
}

// What a node writes. .pte kernels whose outputs could not be told: the last
// argument is the return; a move writes its second argument.
std::vector<ValueId> writtenBy(const Node& node) {
  std::vector<ValueId> written = node.outputs;
  if (written.empty() && node.kind == NodeKind::Kernel && !node.args.empty()) written.push_back(node.args.back());
  if (node.kind == NodeKind::Move && node.args.size() > 1) written = {node.args[1]};
  return written;
}

// A node box's title and kind from what it runs: kernels by their operator
// (or by writing a view), delegates by their backend.
void BoxBuilder::describeNode(const Node& node, const std::vector<ValueId>& written, GraphNode& n) const {
  switch (node.kind) {
    case NodeKind::Kernel: {
      OperatorRef ref = node.op >= 0 && static_cast<size_t>(node.op) < m_.operators.size()
                            ? m_.operators[node.op]
                            : operatorFromTarget(node.target);
      std::string op = baseName(ref.name);
      n.title = ref.overload.empty() || ref.overload == "default" ? op : op + "." + ref.overload;
      bool viewResult = false;
      std::vector<ValueId> outs;
      for (ValueId v : written) m_.appendTensors(v, outs);
      for (ValueId v : outs) viewResult |= m_.values[v].tensor().viewOf != kNoValue;
      n.kind = isViewOp(op) || viewResult ? VisualKind::View
               : isMemoryOp(op)           ? VisualKind::Memory
                                          : VisualKind::Compute;
      break;
    }
    case NodeKind::Delegate: {
      n.kind = VisualKind::Delegate;
      const Delegate* d = node.delegate >= 0 && static_cast<size_t>(node.delegate) < m_.delegates.size()
                              ? &m_.delegates[node.delegate]
                              : nullptr;
      n.title = "delegate " + (d ? d->backendId : std::string("?"));
      break;
    }
    case NodeKind::Move: n.kind = VisualKind::Memory; n.title = "move"; break;
    case NodeKind::Free: n.kind = VisualKind::Memory; n.title = "free"; break;
    case NodeKind::JumpFalse: n.kind = VisualKind::Memory; n.title = "jump_false"; break;
    case NodeKind::Cond:
    case NodeKind::Map:
    case NodeKind::Scan: n.kind = VisualKind::Compute; n.title = nodeKindName(node.kind); break;
  }
}

// A delegate call gets a group of its own inside its module's, named by its backend.
int BoxBuilder::delegateGroup(const Node& node, const GraphNode& n) {
  GraphGroup d;
  d.path = "delegate " + std::to_string(node.delegate);
  d.type = n.title.substr(9);
  d.parent = n.group;
  d.delegate = true;
  g_.groups.push_back(d);
  return int(g_.groups.size()) - 1;
}

void BoxBuilder::addNode(size_t i) {
  const Node& node = m_.nodes[i];
  GraphNode n;
  n.node = int(i);
  n.name = node.name;
  n.target = node.target;
  std::optional<xnnpack::Graph> payload;
  if (node.kind == NodeKind::Delegate && node.delegate >= 0 && static_cast<size_t>(node.delegate) < m_.delegates.size())
    if (auto x = xnnpack::decode(m_.delegates[node.delegate].blob, {})) payload = std::move(x.value());
  std::vector<ValueId> written = writtenBy(node);
  if (payload && written.empty())  // a .pte's delegate call: its payload says which arguments are results
    for (const auto& v : payload->values)
      if (v.isOutput() && v.externalId < node.args.size()) written.push_back(node.args[v.externalId]);
  describeNode(node, written, n);
  n.subtitle = shapeOf(m_, written);
  n.group = groupFor(node.meta.moduleStack);
  if (node.kind == NodeKind::Delegate) n.group = delegateGroup(node, n);
  g_.nodes.push_back(std::move(n));
  int me = int(g_.nodes.size()) - 1;
  g_.nodeOfMethodNode[i] = me;
  connectArguments(node, me, written);
  if (payload) addPayload(node, *payload, me);
}

// An XNNPACK delegate's own operators, inside its group: the call node is
// where its inputs enter, the operator writing an external output is where
// that output leaves. Constants of the payload are part of their operator.
// A payload that does not decode leaves the call one box (the Inspector says why).
void BoxBuilder::addPayload(const Node& node, const xnnpack::Graph& x, int me) {
  std::unordered_map<uint32_t, const xnnpack::Value*> byId;
  for (const auto& v : x.values) byId[v.id] = &v;
  auto methodValue = [&](const xnnpack::Value& v) -> ValueId {
    return v.externalId < node.args.size() ? node.args[v.externalId] : kNoValue;
  };
  std::unordered_map<uint32_t, int> producer;  // payload value id -> graph node
  const int group = g_.nodes[me].group;
  for (size_t k = 0; k < x.nodes.size(); ++k) {
    const auto& xn = x.nodes[k];
    GraphNode n;
    n.kind = VisualKind::Delegate;
    n.group = group;
    n.delegateCall = g_.nodes[me].node;
    n.title = xn.type.rfind("XNN", 0) == 0 ? xn.type.substr(3) : xn.type;
    n.name = g_.nodes[me].name + "/" + std::to_string(k) + " " + n.title;
    n.target = "xnnpack::" + xn.type;
    if (!xn.outputs.empty())
      if (auto it = byId.find(xn.outputs[0]); it != byId.end()) {
        std::string dims;
        for (uint32_t d : it->second->dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        n.subtitle = xnnpack::datatypeName(it->second->datatype) + "[" + dims + "]";
      }
    // Made from (an ETRecord keeps the program before delegation): its module.
    if (const DelegateOrigin* o = m_.delegates[node.delegate].origin(xn.debugHandle); o && !o->module.empty())
      n.subtitle = o->module + " · " + n.subtitle;
    g_.nodes.push_back(std::move(n));
    const int at = int(g_.nodes.size()) - 1;
    for (uint32_t in : xn.inputs) {
      auto v = byId.find(in);
      if (v == byId.end() || v->second->constantIndex != 0) continue;
      auto p = producer.find(in);
      if (p != producer.end()) addEdge(p->second, at, kNoValue);
      else if (v->second->isInput()) addEdge(me, at, methodValue(*v->second));
    }
    for (uint32_t out : xn.outputs) {
      producer[out] = at;
      auto v = byId.find(out);
      if (v == byId.end() || !v->second->isOutput()) continue;
      ValueId mv = methodValue(*v->second);
      if (mv >= 0 && static_cast<size_t>(mv) < g_.nodeOfValue.size()) g_.nodeOfValue[mv] = at;
    }
  }
}

// Edges from the producers of a node's tensor arguments; arguments nothing
// produced yet get a placeholder (constants the program embeds) or a removed view.
void BoxBuilder::connectArguments(const Node& node, int me, const std::vector<ValueId>& written) {
  std::set<ValueId> writes;
  std::vector<ValueId> outs, ins;
  for (ValueId v : written) m_.appendTensors(v, outs);
  writes.insert(outs.begin(), outs.end());
  for (ValueId a : node.args) {
    ins.clear();
    m_.appendTensors(a, ins);
    for (ValueId v : ins) {
      int from = g_.nodeOfValue[v];
      if (writes.count(v)) {
        addEdge(from, me, v);  // written again (an out= buffer from alloc): keep where it came from
        continue;
      }
      if (from < 0) from = isRemovedView(v) ? removedView(v, g_.nodes[me].group) : placeholder(v, false);
      addEdge(from, me, v);
    }
  }
  for (ValueId v : writes) {
    g_.nodeOfValue[v] = me;
    if (const TensorSpec* t = m_.values[v].tensorIf(); t && t->slot) lastInSlot_[{t->slot->memId, t->slot->offset}] = v;
  }
  // Sizes computed at run time (sym_size.int, a prim op's product) flow to the
  // calls that read them, alone or inside a size list.
  auto scalar = [&](ValueId v) {
    if (v < 0 || static_cast<size_t>(v) >= m_.values.size()) return false;
    const ValueKind k = m_.values[v].kind();
    return k == ValueKind::Int || k == ValueKind::Bool || k == ValueKind::Double;
  };
  for (ValueId a : node.args) {
    std::vector<ValueId> items{a};
    if (a >= 0 && static_cast<size_t>(a) < m_.values.size())
      if (const auto* l = std::get_if<IntList>(&m_.values[a].payload)) items = l->items;
    for (ValueId v : items)
      if (scalar(v) && g_.nodeOfValue[v] >= 0 && g_.nodeOfValue[v] != me) addEdge(g_.nodeOfValue[v], me, v);
  }
  for (ValueId v : written)
    if (scalar(v)) g_.nodeOfValue[v] = me;
}

namespace {

// A small tensor's values ("[1, 2.5, 3]"), or empty when it is large, unresolved or of an odd dtype.
std::string smallTensorValues(const TensorSpec& t) {
  constexpr uint64_t kMaxShown = 16;
  const auto n = t.numel();
  const uint32_t size = elementSize(t.dtype);
  if (!n || *n > kMaxShown || size == 0 || !t.data.data || t.data.size < *n * size) return {};
  std::ostringstream o;
  o << "[";
  for (uint64_t i = 0; i < *n; ++i) {
    const uint8_t* p = t.data.data + i * size;
    auto read = [p]<typename T>(T) { T x; std::memcpy(&x, p, sizeof x); return x; };
    o << (i ? ", " : "");
    switch (t.dtype) {
      case ScalarType::Float: o << read(float{}); break;
      case ScalarType::Double: o << read(double{}); break;
      case ScalarType::Long: o << read(int64_t{}); break;
      case ScalarType::Int: o << read(int32_t{}); break;
      case ScalarType::Short: o << read(int16_t{}); break;
      case ScalarType::Char: o << int(read(int8_t{})); break;
      case ScalarType::Byte: o << int(read(uint8_t{})); break;
      case ScalarType::Bool: o << (*p ? "true" : "false"); break;
      default: return {};
    }
  }
  return o.str() + "]";
}

}  // namespace

// A method with no nodes and no inputs (ExecuTorch's constant methods such as
// get_max_seq_len) returns constants: one box per returned value showing it,
// as the Text view prints it, instead of a lone outputs marker.
std::vector<int> BoxBuilder::addReturnedConstants() {
  std::vector<int> boxes;
  if (!m_.isConstantGetter()) return boxes;
  for (size_t i = 0; i < m_.outputs.size(); ++i) {
    const ValueId v = m_.outputs[i];
    if (v < 0 || static_cast<size_t>(v) >= m_.values.size()) continue;
    const Value& x = m_.values[v];
    GraphNode n;
    n.kind = VisualKind::Constant;
    n.value = v;
    n.name = x.name.empty() ? "%" + std::to_string(v) : x.name;
    std::string shown;
    if (const TensorSpec* t = x.tensorIf()) {
      shown = t->shapeString();
      if (std::string values = smallTensorValues(*t); !values.empty()) shown += " " + values;
      n.subtitle = n.name;
    } else {
      shown = describeValue(m_, v);  // "Int 128"
      if (!shown.empty()) shown[0] = char(std::tolower(static_cast<unsigned char>(shown[0])));
      n.subtitle = "returned constant";
    }
    n.title = m_.name + (m_.outputs.size() > 1 ? "[" + std::to_string(i) + "]" : "") + " \u2192 " + shown;
    g_.nodes.push_back(std::move(n));
    boxes.push_back(int(g_.nodes.size()) - 1);
  }
  return boxes;
}

// One marker for the method's outputs; mutated buffers it returns besides the
// user outputs come in on side-effect edges.
void BoxBuilder::addOutputsMarker() {
  const std::vector<int> returned = addReturnedConstants();
  GraphNode out;
  out.kind = VisualKind::Output;
  out.title = "output";
  out.name = "output";
  out.subtitle = std::to_string(m_.outputs.size()) + (m_.outputs.size() == 1 ? " value" : " values");
  g_.nodes.push_back(out);
  int outIdx = int(g_.nodes.size()) - 1;
  std::set<ValueId> userOutputs;
  for (const OutputSpec& o : m_.signature.outputs)
    if (o.kind == OutputSpec::Kind::User || o.kind == OutputSpec::Kind::Loss) userOutputs.insert(o.value);
  std::vector<ValueId> ins;
  for (ValueId v : m_.outputs) {
    ins.clear();
    m_.appendTensors(v, ins);
    bool side = !m_.signature.outputs.empty() && !userOutputs.count(v);
    for (ValueId t : ins) {
      int from = g_.nodeOfValue[t] < 0 && isRemovedView(t) ? removedView(t, -1) : g_.nodeOfValue[t];
      addEdge(from, outIdx, t, side);
    }
  }
  for (int box : returned) addEdge(box, outIdx, g_.nodes[box].value);
}


}  // namespace

const char* visualKindName(VisualKind k) {
  switch (k) {
    case VisualKind::Compute: return "compute";
    case VisualKind::View: return "view";
    case VisualKind::Memory: return "memory";
    case VisualKind::Delegate: return "delegate";
    case VisualKind::Input: return "input";
    case VisualKind::Parameter: return "parameter";
    case VisualKind::Constant: return "constant";
    case VisualKind::Output: return "output";
  }
  return "?";
}

std::string GraphGroup::shortPath(const GraphModel& m) const {
  if (parent < 0) return path;
  const std::string& p = m.groups[parent].path;
  return path.size() > p.size() + 1 && path.compare(0, p.size(), p) == 0 && path[p.size()] == '.' ? path.substr(p.size() + 1) : path;
}

std::string GraphGroup::label() const {
  std::string s = path;
  s += " (";
  if (!type.empty()) s += type + ", ";
  s += std::to_string(nodeCount) + (nodeCount == 1 ? " node)" : " nodes)");
  return s;
}

GraphModel GraphModel::build(const Method& m) {
  GraphModel g;
  BoxBuilder boxes(m, g);
  boxes.addInputs();
  boxes.addNodes();
  boxes.addOutputsMarker();
  arrangeGroups(g, m);
  return g;
}

std::string GraphModel::displayTitle(int i) const {
  const GraphNode& n = nodes[i];
  if (n.node >= 0) return n.title;
  // Drop the path of the innermost enclosing group the name starts with.
  for (int g = n.group; g >= 0; g = groups[g].parent) {
    const std::string& p = groups[g].path;
    if (n.title.size() > p.size() + 1 && n.title.compare(0, p.size(), p) == 0 && n.title[p.size()] == '.')
      return n.title.substr(p.size() + 1);
  }
  return n.title;
}

bool GraphModel::inGroup(int n, int grp) const {
  for (int x = nodes[n].group; x >= 0; x = groups[x].parent)
    if (x == grp) return true;
  return false;
}

int VisibleGraph::itemGroup(const GraphModel& m, int item) const {
  int n = int(m.nodes.size());
  return item < n ? m.nodes[item].group : m.groups[item - n].parent;
}

VisibleGraph visibleGraph(const GraphModel& m, const std::vector<char>& collapsed, size_t fanout) {
  VisibleGraph v;
  const int n = int(m.nodes.size());
  // The outermost collapsed group at or above each group, or -1.
  std::vector<int> fold(m.groups.size(), -1);
  for (size_t g = 0; g < m.groups.size(); ++g) {
    int p = m.groups[g].parent;
    fold[g] = p >= 0 && fold[p] >= 0 ? fold[p] : (g < collapsed.size() && collapsed[g] ? int(g) : -1);
  }
  v.itemOfNode.resize(m.nodes.size());
  std::vector<char> shown(m.nodes.size() + m.groups.size(), 0);
  std::vector<char> clusterUsed(m.groups.size(), 0);
  for (int i = 0; i < n; ++i) {
    if (m.nodes[i].host >= 0) continue;  // a line in its host's box: placed below
    int grp = m.nodes[i].group;
    int item = grp >= 0 && fold[grp] >= 0 ? n + fold[grp] : i;
    v.itemOfNode[i] = item;
    if (!shown[item]) {
      shown[item] = 1;
      v.items.push_back(item);
      for (int c = v.itemGroup(m, item); c >= 0 && !clusterUsed[c]; c = m.groups[c].parent) clusterUsed[c] = 1;
    }
  }
  for (int i = 0; i < n; ++i)
    if (m.nodes[i].host >= 0) v.itemOfNode[i] = v.itemOfNode[m.nodes[i].host];
  for (size_t g = 0; g < m.groups.size(); ++g)
    if (clusterUsed[g]) v.clusters.push_back(int(g));
  std::map<std::pair<int, int>, size_t> merged;
  std::vector<char> side;
  for (const GraphEdge& e : m.edges) {
    if (m.nodes[e.from].host >= 0) continue;  // drawn inside each reader instead
    int a = v.itemOfNode[e.from], b = v.itemOfNode[e.to];
    if (a == b) continue;
    auto [it, fresh] = merged.emplace(std::make_pair(a, b), v.edges.size());
    if (fresh) {
      v.edges.push_back({a, b, e.value, 1, false});
      side.push_back(e.sideEffect);
    } else {
      ++v.edges[it->second].count;
      side[it->second] &= e.sideEffect;
    }
  }
  // Long fans drown the layout in crossing lines (and make dot slow): leave them out.
  std::unordered_map<int, size_t> out, sideIn;
  for (size_t i = 0; i < v.edges.size(); ++i) {
    ++out[v.edges[i].from];
    if (side[i]) ++sideIn[v.edges[i].to];
  }
  // A folded group's results are the graph's main flow: never bundled.
  for (size_t i = 0; i < v.edges.size(); ++i)
    v.edges[i].bundled = (v.edges[i].from < n && out[v.edges[i].from] > fanout) || (side[i] && sideIn[v.edges[i].to] > fanout);
  return v;
}

std::vector<char> initialCollapsed(const GraphModel& m, size_t bigGraph) {
  std::vector<char> c(m.groups.size(), 0);
  const size_t boxes = std::count_if(m.nodes.begin(), m.nodes.end(), [](const GraphNode& n) { return n.host < 0; });
  if (boxes <= bigGraph) {
    for (size_t g = 0; g < m.groups.size(); ++g) c[g] = m.groups[g].delegate && m.groups[g].nodeCount > 1;
    return c;
  }
  std::fill(c.begin(), c.end(), 1);
  // Open wrappers while the view would still be tiny (e.g. one root module).
  for (;;) {
    VisibleGraph v = visibleGraph(m, c);
    if (v.items.size() >= 8) break;
    int best = -1;
    for (int item : v.items) {
      int g = item - int(m.nodes.size());
      if (g >= 0 && !m.groups[g].repeat && (best < 0 || m.groups[g].nodeCount > m.groups[best].nodeCount)) best = g;
    }
    if (best < 0) break;
    c[best] = 0;
  }
  return c;
}

}  // namespace lstudio::ui
