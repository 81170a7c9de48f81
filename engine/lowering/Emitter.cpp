#include "engine/lowering/Emitter.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/ControlFlow.h"
#include "engine/ir/TreeSpec.h"
#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio {

PteWriteOptions writeOptionsFor(const ExecutorchBackendConfig& config) {
  PteWriteOptions o;
  o.segmentAlignment = config.segmentAlignment;
  if (config.constantTensorAlignment) o.constantTensorAlignment = *config.constantTensorAlignment;
  if (config.delegateAlignment) o.delegateAlignment = *config.delegateAlignment;
  o.extractDelegateSegments = config.extractDelegateSegments;
  return o;
}

namespace {

std::string describe(const Method& m, const Node& n) {
  std::string op = n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size() ? m.operators[n.op].fullName() : n.target;
  std::string s = "node '" + n.name + "' (" + op + ")";
  if (!n.meta.stackTrace.empty())
    s += " at " + n.meta.stackTrace.back().file + ":" + std::to_string(n.meta.stackTrace.back().line);
  return s;
}

/// Whether ExecuTorch's runtime can call this operator as a kernel: an out
/// variant, a primitive of executorch_prim, or an in-place write-back (copy_).
/// An operator the studio has no schema for (a backend's custom kernel kept
/// from a .pte) is taken at its word when its overload is named like an out
/// variant ("out", "*_out"), as ExecuTorch's to_out_var does.
bool runnable(const OperatorRef& op) {
  if (op.name.rfind("executorch_prim::", 0) == 0) return true;
  const OpSchema* s = OpRegistry::builtin().find(op.name, op.overload);
  if (!s) return op.overload == "out" || op.overload.ends_with("_out");
  return s->isOutVariant() || s->isInplace() || OpRegistry::builtin().hasPrimKernel(*s);
}

class MethodEmitter {
 public:
  /// `layout`: how control flow was inlined into `in` (inlineControlFlow).
  MethodEmitter(const Method& in, InlinedLayout layout, const ExecutorchBackendConfig& c, EmitReport& r,
                std::vector<std::shared_ptr<const MappedFile>>& owned)
      : in_(in), inBranch_(std::move(layout.inBranch)), constantsAt_(std::move(layout.numberedFirst)), c_(c), r_(r),
        owned_(owned) {
    inBranch_.resize(in_.nodes.size(), 0);
  }

  Result<Method> emit() {
    if (auto s = checkNodes(); !s) return s.error();
    if (auto s = classifyInputs(); !s) return s.error();
    liftScalarTensorArguments();
    subgraphConstants();
    optionalTensorLists();
    // Values in ExecuTorch's emission order.
    visitInputs();
    visitNodes();
    for (ValueId o : in_.outputs) visit(o);
    r_.droppedValues += in_.values.size() - order_.size();

    Method out;
    out.name = in_.name;
    out.nonConstBufferSizes = in_.nonConstBufferSizes;
    out.arenaDevices = in_.arenaDevices;
    out.chainCount = 1;
    out.values.reserve(order_.size());
    for (ValueId v : order_) {
      auto val = emitValue(v);
      if (!val) return val.error();
      out.values.push_back(std::move(val.value()));
    }
    emitSignature(out);
    emitInstructions(out);
    noteMissingWriteBacks();
    return out;
  }

 private:
  /// Parameters, buffers and constants; then the lifted scalars, which
  /// lift_constant_tensor_pass places before the first user input; then the user inputs.
  void visitInputs() {
    for (const InputSpec& i : in_.signature.inputs)
      if (i.kind != InputSpec::Kind::User) visit(i.value);
    for (ValueId v : lifted_) visit(v);
    for (const InputSpec& i : in_.signature.inputs)
      if (i.kind == InputSpec::Kind::User) visit(i.value);
    if (in_.signature.inputs.empty())
      for (ValueId v : in_.inputs) visit(v);
  }

  /// The values the instructions make and read, node by node.
  void visitNodes() {
    // A view was a memory.view node in ExecuTorch's graph, where view_copy
    // stood: its value comes before the node that followed it (viewBefore).
    // Without that place, right after the call that made its base, else before
    // the node that reads it. Views in the order nodes first read them.
    std::map<ValueId, std::vector<ValueId>> viewsBefore, viewsOf;
    std::set<ValueId> seenView;
    // A view an instruction makes (et_view) is numbered at that instruction, after its arguments.
    for (const Node& n : in_.nodes) seenView.insert(n.outputs.begin(), n.outputs.end());
    // The tensors a node reads: its arguments, and the items of a list argument (cat's).
    auto tensorsRead = [&](const Node& n) {
      std::vector<ValueId> read;
      for (ValueId a : n.args) in_.appendTensors(a, read);
      return read;
    };
    for (const Node& n : in_.nodes)
      for (ValueId a : tensorsRead(n))
        if (const TensorSpec* t = in_.values[a].tensorIf(); t && t->viewOf != kNoValue && seenView.insert(a).second)
          (t->viewBefore != kNoValue ? viewsBefore[t->viewBefore] : viewsOf[t->viewOf]).push_back(a);
    for (auto& [at, views] : viewsBefore) std::sort(views.begin(), views.end());  // value order: graph order
    // The constant false of a cond's second jump is made after the false
    // branch it skips (_emit_cond): numbered after that branch's last node.
    std::map<size_t, std::vector<ValueId>> afterNode;
    std::set<size_t> deferredJump;
    for (size_t k = 0; k < in_.nodes.size(); ++k)
      if (const Node& n = in_.nodes[k]; jumpsAlways(in_, n) && n.jumpTarget > static_cast<int64_t>(k) + 1) {
        afterNode[static_cast<size_t>(n.jumpTarget - 1)].push_back(n.args[0]);
        deferredJump.insert(k);
      }
    for (size_t k = 0; k < in_.nodes.size(); ++k) {
      const Node& n = in_.nodes[k];
      // The views that stood before this node come first (memory.view nodes
      // of ExecuTorch's graph), then what was made for it: a scalar lifted
      // into a constant where a subgraph reads it, a loop's results and counters.
      const auto first = constantsAt_.find(k);
      if (!deferredJump.count(k)) {
        std::vector<ValueId> made = n.outputs;
        if (first != constantsAt_.end()) made.insert(made.end(), first->second.begin(), first->second.end());
        for (ValueId o : made)
          if (auto it = viewsBefore.find(o); it != viewsBefore.end())
            for (ValueId v : it->second) visit(v);
      }
      if (first != constantsAt_.end())
        for (ValueId v : first->second) visit(v);
      if (deferredJump.count(k)) continue;
      // Then the views the node reads, an out variant's results (ToOutVarPass
      // puts their memory.alloc just before the call), the other arguments.
      // (A view the node writes, et_view's, comes after its arguments.)
      for (ValueId a : tensorsRead(n))
        if (const TensorSpec* t = in_.values[a].tensorIf();
            t && t->viewOf != kNoValue && std::find(n.outputs.begin(), n.outputs.end(), a) == n.outputs.end())
          visit(a);
      if (n.kind == NodeKind::Kernel)
        if (const OpSchema* s = OpRegistry::builtin().find(in_.operators[n.op].name, in_.operators[n.op].overload);
            s && s->isOutVariant())
          for (size_t i = 0; i < s->arguments.size() && i < n.args.size(); ++i)
            if (s->arguments[i].kwargOnly && s->arguments[i].isWrite) {
              // An out list (split_with_sizes_copy's): its tensors are allocated
              // before the call, the list itself is an argument in its place.
              if (const auto* l = std::get_if<TensorList>(&in_.values[n.args[i]].payload))
                for (ValueId x : l->items) visit(x);
              else
                visit(n.args[i]);
            }
      for (ValueId a : n.args) visit(a);
      for (ValueId o : n.outputs) visit(o);  // a prim op's result follows its arguments
      for (ValueId o : n.outputs)
        if (auto it = viewsOf.find(o); it != viewsOf.end())
          for (ValueId v : it->second) visit(v);
      if (auto it = afterNode.find(k); it != afterNode.end())
        for (ValueId v : it->second) visit(v);
    }
  }

  /// The method's inputs and outputs (the user's) and their pytree specs.
  void emitSignature(Method& out) const {
    for (ValueId v : userInputs_) out.inputs.push_back(remap_.at(v));
    // ExecuTorch returns the user's outputs only: a buffer mutation is written
    // back in place (copy_), not returned (_remove_non_user_outputs).
    for (size_t i = 0; i < in_.outputs.size(); ++i)
      if (!isBufferMutationOutput(i)) out.outputs.push_back(remap_.at(in_.outputs[i]));
    for (ValueId v : out.inputs) out.signature.inputs.push_back(InputSpec{InputSpec::Kind::User, v, {}, true});
    for (ValueId v : out.outputs) out.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::User, v, {}});
    // The pytree specs: a .pte's own, else the exported root call's (torch's
    // treespec JSON, which ExecuTorch copies), else forward(*user inputs)
    // returning the user outputs.
    const ModuleCall* root = nullptr;
    for (const ModuleCall& c : in_.moduleCalls)
      if (c.fqn.empty() && !root) root = &c;
    const bool storedGetter = in_.isConstantGetter() && !in_.encodedOutputSpec.empty();
    out.encodedInputSpec = storedGetter || !in_.encodedInputSpec.empty() ? in_.encodedInputSpec
                           : root && !root->inSpec.empty() ? root->inSpec
                                                           : treespecArgs(userInputs_.size());
    out.encodedOutputSpec = !in_.encodedOutputSpec.empty()   ? in_.encodedOutputSpec
                            : root && !root->outSpec.empty() ? root->outSpec
                                                             : treespecOutputs(userOutputs());
  }

  /// The instructions, with the operator and delegate tables they index.
  void emitInstructions(Method& out) const {
    std::map<std::pair<std::string, std::string>, int32_t> opIndex;
    std::vector<int32_t> delegateIndex(in_.delegates.size(), -1);
    for (const Node& n : in_.nodes) {
      Node e;
      e.name = n.name;
      e.target = n.target;
      for (ValueId a : n.args) e.args.push_back(remap_.at(a));
      for (ValueId o : n.outputs) e.outputs.push_back(remap_.at(o));
      e.meta.debugHandle = n.meta.debugHandle;
      e.meta.moduleStack = n.meta.moduleStack;
      if (c_.emitStacktrace) e.meta.stackTrace = n.meta.stackTrace;
      if (n.kind == NodeKind::Move || n.kind == NodeKind::JumpFalse) {  // an inlined cond
        e.kind = n.kind;
        e.jumpTarget = n.jumpTarget;
        e.outputs.clear();
        out.nodes.push_back(std::move(e));
        continue;
      }
      if (n.kind == NodeKind::Delegate) {  // the blob stays where it is (the mapped .pte)
        e.kind = NodeKind::Delegate;
        int32_t& d = delegateIndex[n.delegate];
        if (d < 0) {
          d = static_cast<int32_t>(out.delegates.size());
          out.delegates.push_back(in_.delegates[n.delegate]);
        }
        e.delegate = d;
        out.nodes.push_back(std::move(e));
        continue;
      }
      e.kind = NodeKind::Kernel;
      const OperatorRef& ref = in_.operators[n.op];
      auto [it, added] = opIndex.try_emplace({ref.name, ref.overload}, static_cast<int32_t>(out.operators.size()));
      if (added) {
        // ExecuTorch writes a default overload as "" (the runtime looks kernels
        // up by "name" or "name.overload": "aten::copy_", "aten::add.out"),
        // but its prim ops by their registered name ("executorch_prim::et_view.default").
        OperatorRef written = ref;
        if (written.overload == "default" && written.name.rfind("executorch_prim::", 0) != 0) written.overload.clear();
        out.operators.push_back(std::move(written));
      }
      e.op = it->second;
      e.argNames = n.argNames;
      appendReturnValue(ref, e);
      out.nodes.push_back(std::move(e));
    }
  }

  Error fail(std::string what, std::string expected, std::string found = {}) const {
    return Error{ErrorCode::Unsupported, {}, std::nullopt, "method '" + in_.name + "': " + std::move(what),
                 std::move(expected), std::move(found)};
  }

  Status checkNodes() const {
    if (in_.nonConstBufferSizes.empty())
      return fail("memory plan", "a planned program (run the pipeline through MemoryPlanningPass)", "no arenas");
    for (const Node& n : in_.nodes) {
      if (n.kind == NodeKind::Delegate) {
        if (n.delegate < 0 || static_cast<size_t>(n.delegate) >= in_.delegates.size())
          return fail(describe(in_, n), "a delegate of the method's table", "index " + std::to_string(n.delegate));
        for (ValueId a : n.args)
          if (a < 0 || static_cast<size_t>(a) >= in_.values.size())
            return fail(describe(in_, n), "argument value ids in range", std::to_string(a));
        continue;
      }
      if (n.kind == NodeKind::Move || n.kind == NodeKind::JumpFalse) {  // an inlined cond's
        if (n.args.empty() || (n.kind == NodeKind::Move && n.args.size() != 2))
          return fail(describe(in_, n), "a move from one value to another, or a jump on a value", "missing values");
        for (ValueId a : n.args)
          if (a < 0 || static_cast<size_t>(a) >= in_.values.size())
            return fail(describe(in_, n), "argument value ids in range", std::to_string(a));
        continue;
      }
      if (n.kind != NodeKind::Kernel)
        return fail(describe(in_, n), "kernel and delegate calls only", std::string("a ") + nodeKindName(n.kind) + " instruction");
      if (n.op < 0 || static_cast<size_t>(n.op) >= in_.operators.size())
        return fail(describe(in_, n), "an operator of the method's table", "index " + std::to_string(n.op));
      if (!runnable(in_.operators[n.op]))
        return fail(describe(in_, n), "an out variant ExecuTorch's runtime can run",
                    "a functional operator without out variant");
      for (ValueId a : n.args)
        if (a < 0 || static_cast<size_t>(a) >= in_.values.size())
          return fail(describe(in_, n), "argument value ids in range", std::to_string(a));
    }
    for (ValueId v : in_.outputs)
      if (v < 0 || static_cast<size_t>(v) >= in_.values.size())
        return fail("outputs", "value ids in range", std::to_string(v));
    return Ok{};
  }

  /// Splits the placeholders into user inputs, constants and mutable buffers.
  Status classifyInputs() {
    std::set<std::string> mutated;
    for (const OutputSpec& o : in_.signature.outputs)
      if (o.kind == OutputSpec::Kind::BufferMutation) mutated.insert(o.target);
    // A trained weight kept as state (a de-lowered training .pte) stays mutable with its initial value.
    std::set<ValueId> trained;
    for (const OutputSpec& o : in_.signature.outputs)
      if (o.kind == OutputSpec::Kind::Token) {
        trained.insert(o.value);
        if (!o.target.empty()) mutated.insert(o.target);
      }
    for (const InputSpec& i : in_.signature.inputs) {
      if (i.value < 0 || static_cast<size_t>(i.value) >= in_.values.size())
        return fail("graph signature input '" + i.target + "'", "a value id in range", std::to_string(i.value));
      switch (i.kind) {
        case InputSpec::Kind::User: userInputs_.push_back(i.value); break;
        case InputSpec::Kind::Parameter:
          // A trained weight (returned by weights_to_outputs_pass) is state with an
          // initial value, planned like a mutable buffer, as ExecuTorch emits it.
          if (trained.count(i.value)) {
            mutable_[i.value] = i.target;
            trained_.insert(i.value);
          } else {
            constant_.insert(i.value);
          }
          break;
        case InputSpec::Kind::ConstantTensor: constant_.insert(i.value); break;
        case InputSpec::Kind::Buffer: {
          // State without bytes (a .pte's planned buffer that no output returns) is not a constant either.
          const TensorSpec* t = in_.values[i.value].tensorIf();
          bool noData = t && t->data.empty() && t->nbytes().value_or(0) > 0;
          if (mutated.count(i.target) || noData) mutable_[i.value] = i.target;
          else constant_.insert(i.value);
          if (trained.count(i.value)) trained_.insert(i.value);  // a de-lowered training .pte's weight
          break;
        }
        case InputSpec::Kind::CustomObject:
          return fail("input '" + i.target + "'", "tensors and scalars", "a custom object (torchbind), which the emitter does not write");
        case InputSpec::Kind::Token:
          return fail("input '" + in_.values[i.value].name + "'", "tensors and scalars", "an effect token");
      }
    }
    if (in_.signature.inputs.empty()) userInputs_ = in_.inputs;  // a graph without signature: every input is the user's
    // A constant method (to_edge's constant_methods, read back from a .pte) returns its tensors as data.
    if (in_.isConstantGetter())
      for (ValueId v : in_.outputs)
        if (const TensorSpec* t = in_.values[v].tensorIf(); t && (!t->data.empty() || t->external)) constant_.insert(v);
    return Ok{};
  }

  void visit(ValueId v) {
    if (v < 0 || remap_.count(v)) return;
    const Value& val = in_.values[v];
    if (auto* l = std::get_if<IntList>(&val.payload))
      for (ValueId x : l->items) visit(x);
    else if (auto* tl = std::get_if<TensorList>(&val.payload))
      for (ValueId x : tl->items) visit(x);
    else if (auto* ol = std::get_if<OptionalTensorList>(&val.payload))
      for (ValueId x : ol->items) visit(x);
    remap_[v] = static_cast<ValueId>(order_.size());
    order_.push_back(v);
  }

  Result<Value> emitValue(ValueId v) {
    Value out = in_.values[v];
    // A value computed at run time (sym_size.int's result) is written as a
    // zero of its type, which the instruction overwrites, as ExecuTorch does.
    if (out.symbolic) {
      if (out.kind() == ValueKind::Int) out.payload = int64_t{0};
      else if (out.kind() == ValueKind::Bool) out.payload = false;
      else if (out.kind() == ValueKind::Double) out.payload = 0.0;
    }
    out.symbolic = false;
    auto ids = [&](std::vector<ValueId>& items) {
      for (ValueId& x : items)
        if (x != kNoValue) x = remap_.at(x);
    };
    if (auto* l = std::get_if<IntList>(&out.payload)) ids(l->items);
    else if (auto* tl = std::get_if<TensorList>(&out.payload)) ids(tl->items);
    else if (auto* ol = std::get_if<OptionalTensorList>(&out.payload)) ids(ol->items);
    TensorSpec* t = std::get_if<TensorSpec>(&out.payload);
    if (!t) return out;
    // An initial value a .pte kept in its mutable data segment stays with the buffer.
    bool initialValue = (t->mutableSegmentIndex || t->source == ConstantSource::MutableSegment) && !t->data.empty();
    // A view of a constant (ReplaceViewCopyWithViewPass) is a constant over its base's bytes.
    ValueId root = t->viewOf;
    while (root != kNoValue && in_.values[root].isTensor() && in_.values[root].tensor().viewOf != kNoValue)
      root = in_.values[root].tensor().viewOf;
    const bool constantView = root != kNoValue && constant_.count(root) && !t->data.empty();
    // Only what the .pte says about a tensor is kept; the view link is done
    // (the planner gave the view its base's slot).
    t->viewOf = kNoValue;
    t->dataBufferIndex = 0;
    t->mutableSegmentIndex.reset();
    t->source = ConstantSource::None;
    // A trained weight the planner left to the caller (alloc_graph_input or
    // _output off: it is a graph input and output) keeps its initial value
    // with the constants, as ExecuTorch emits it.
    const bool unplannedTrainedWeight = trained_.count(v) && !t->slot && !t->data.empty();
    if (constant_.count(v) || unplannedTrainedWeight || constantView) {
      if (auto s = emitConstant(*t, out.name); !s) return s.error();
    } else if (auto it = mutable_.find(v); it != mutable_.end()) {
      if (auto s = emitMutableBuffer(v, *t, it->second, initialValue); !s) return s.error();
    } else {
      // Inputs and intermediates: planned or supplied at run time, never data.
      t->data = Bytes{};
      t->external = false;
      t->fqn.clear();
      t->constantTag.clear();
    }
    return out;
  }

  /// A constant's bytes: in the constant segment, or named in a .ptd (external).
  Status emitConstant(TensorSpec& t, const std::string& name) {
    t.slot.reset();
    auto nb = t.nbytes().value_or(0);
    // An external tensor of a .pte whose .ptd was not given: named, its bytes stay in that file.
    bool unresolved = t.external && !t.data.data;
    if (nb > 0 && !unresolved && (!t.data.data || t.data.size < nb))
      return fail("constant '" + (t.fqn.empty() ? name : t.fqn) + "'", std::to_string(nb) + " bytes of data",
                  t.data.data ? std::to_string(t.data.size) + " bytes" : "none (the archive has no weights for it)");
    if (!unresolved) t.data.size = nb;
    if (t.external) {
      if (t.fqn.empty()) return fail("external constant '" + name + "'", "a fully qualified name", "none");
      if (unresolved) {
        t.dataBufferIndex = static_cast<uint32_t>(externalBlobs_.size());
        externalBlobs_.push_back(Bytes{});
      } else {
        t.dataBufferIndex = externalIndex(t.data);
      }
      t.source = ConstantSource::External;
      ++r_.externalTensors;
    } else {
      // ExecuTorch names only external tensors and mutable buffers.
      t.fqn.clear();
      t.constantTag.clear();
      t.source = ConstantSource::ConstantSegment;
      ++r_.constants;
    }
    return Ok{};
  }

  /// A mutable buffer (`name` in the graph signature), with its initial value where it keeps one.
  Status emitMutableBuffer(ValueId v, TensorSpec& t, const std::string& name, bool initialValue) {
    // Only shape and dtype: ExecuTorch assumes a mutated buffer's initial
    // state is meaningless, unless the program came with one (in its
    // mutable data segment, or in a .ptd under its name: external mutable weights).
    const bool trainedWeight = trained_.count(v) && !t.data.empty();
    if (trainedWeight && t.external && t.fqn.empty()) t.fqn = name;
    bool externalInitial = t.external && !t.fqn.empty();
    if (externalInitial) {
      t.source = ConstantSource::External;
      if (trainedWeight) {  // its initial value goes to the .ptd under its name
        t.dataBufferIndex = externalIndex(t.data);
      } else {
        t.dataBufferIndex = static_cast<uint32_t>(externalBlobs_.size());
        externalBlobs_.push_back(Bytes{});
      }
    } else {
      if (initialValue || trainedWeight) t.source = ConstantSource::MutableSegment;
      else t.data = Bytes{};
      t.external = false;
      t.constantTag.clear();
    }
    if (externalInitial) {
      // keeps the name it is found by in the .ptd
    } else if (c_.emitMutableBufferNames && !trained_.count(v)) {
      // Buffers only, as ExecuTorch's emitter names them: a trained weight
      // is a parameter, found by its slot and __et_training_fqn_*.
      t.fqn = name;
    } else {
      t.fqn.clear();
      if (!t.slot)
        return fail("mutable buffer '" + name + "'", "a memory-planned slot, or emit_mutable_buffer_names",
                    "neither (alloc_mutable_buffers is off)");
    }
    ++r_.mutableBuffers;
    return Ok{};
  }

  /// ExecuTorch's external buffer index: distinct bytes in order of first use, from 0.
  uint32_t externalIndex(const Bytes& b) {
    auto& bucket = externalBySize_[b.size];
    for (uint32_t i : bucket) {
      const Bytes& o = externalBlobs_[i];
      if (o.data == b.data || b.size == 0 || std::memcmp(o.data, b.data, b.size) == 0) return i;
    }
    uint32_t i = static_cast<uint32_t>(externalBlobs_.size());
    externalBlobs_.push_back(b);
    bucket.push_back(i);
    return i;
  }

  bool isBufferMutationOutput(size_t i) const {
    return in_.signature.outputs.size() == in_.outputs.size() &&
           in_.signature.outputs[i].kind == OutputSpec::Kind::BufferMutation;
  }

  /// ExecuTorch's emitter passes an operator that is not an out variant (an
  /// in-place write such as copy_) its schema arguments and then its return
  /// value, which for an in-place operator is `self` again: aten::copy_ takes
  /// 4 arguments (self, src, non_blocking, self). Its runtime checks the count.
  /// ExecuTorch's KernelCall lists the return value after the schema's
  /// arguments: an in-place operator's is self, a prim op's (sym_size.int,
  /// executorch_prim::mul.Scalar) the value it computes. Out variants list theirs already.
  static void appendReturnValue(const OperatorRef& ref, Node& e) {
    const OpSchema* s = OpRegistry::builtin().find(ref.name, ref.overload);
    if (!s || e.args.empty() || e.args.size() != s->arguments.size() || s->isOutVariant()) return;
    if (s->isInplace()) e.args.push_back(e.args[0]);
    else if (e.outputs.size() == 1 && s->returns.size() == 1 && OpRegistry::builtin().hasPrimKernel(*s))
      e.args.push_back(e.outputs[0]);
  }

  size_t userOutputs() const {
    if (in_.signature.outputs.empty()) return in_.outputs.size();
    size_t n = 0;
    for (const OutputSpec& o : in_.signature.outputs)
      n += o.kind == OutputSpec::Kind::User || o.kind == OutputSpec::Kind::Loss;
    return n;
  }

  /// A buffer mutation that no instruction writes into the buffer leaves the
  /// state unchanged between calls (the write-back pass inserts copy_). One
  /// note per method, naming the first few.
  void noteMissingWriteBacks() {
    std::vector<std::string> missing;
    for (const auto& [buf, fqn] : mutable_) {
      if (trained_.count(buf)) continue;  // a trained weight is updated by the optimizer, not by copy_
      bool written = false;
      for (const Node& n : in_.nodes)
        for (ValueId o : n.outputs) written = written || o == buf;
      for (const OutputSpec& o : in_.signature.outputs)
        if (o.kind == OutputSpec::Kind::BufferMutation && o.target == fqn) {
          const TensorSpec* t = in_.values[o.value].tensorIf();
          written = written || o.value == buf || (t && t->viewOf == buf);
        }
      if (!written) missing.push_back(fqn);
    }
    if (missing.empty()) return;
    std::string names;
    for (size_t i = 0; i < missing.size() && i < 3; ++i) names += (i ? ", " : "") + missing[i];
    if (missing.size() > 3) names += ", ...";
    r_.notes.push_back(in_.name + ": " + std::to_string(missing.size()) + " mutated buffers (" + names +
                       ") are never written back (no copy_): the method returns their new values as outputs and "
                       "the buffers keep their state between calls");
  }

  /// A list passed where the schema has `Tensor?[]` (index_put's and index's
  /// indices) is written as an OptionalTensorList, whatever the source called it:
  /// ExecuTorch's runtime reads that argument as a list of optional tensors and
  /// aborts on a TensorList.
  void optionalTensorLists() {
    const OpRegistry& reg = OpRegistry::builtin();
    for (const Node& n : in_.nodes) {
      if (n.kind != NodeKind::Kernel) continue;
      const OpSchema* s = reg.find(in_.operators[n.op].name, in_.operators[n.op].overload);
      if (!s) continue;
      for (size_t a = 0; a < n.args.size() && a < s->arguments.size(); ++a) {
        if (!s->arguments[a].type.optionalElements || n.args[a] < 0) continue;
        Value& v = in_.values[n.args[a]];
        if (auto* tl = std::get_if<TensorList>(&v.payload)) v.payload = OptionalTensorList{std::move(tl->items)};
      }
    }
  }

  /// Numbers in Tensor slots become 0-dim constant tensors; the bytes are owned by the
  /// emitted program.
  void liftScalarTensorArguments() {
    passes::LiftedScalars l = passes::liftScalarTensorArguments(in_);
    if (l.values.empty()) return;
    owned_.push_back(l.bytes);
    std::set<ValueId> lifted(l.values.begin(), l.values.end());
    std::set<ValueId> inBranch;  // a branch's constant is made in the branch, where it is read
    for (size_t k = 0; k < in_.nodes.size(); ++k)
      if (inBranch_[k])
        for (ValueId a : in_.nodes[k].args)
          if (lifted.count(a) && inBranch.insert(a).second) constantsAt_[k].push_back(a);
    for (ValueId id : l.values) {
      constant_.insert(id);
      if (!inBranch.count(id)) lifted_.push_back(id);
    }
    r_.notes.push_back(in_.name + ": " + std::to_string(l.values.size()) +
                       " scalars passed where a Tensor is expected became 0-dim constant tensors (ScalarToTensorPass)");
  }

  /// A constant a branch or loop body holds itself (a scalar ExecuTorch lifted
  /// there, read back from a .pte) is made where the subgraph first reads it.
  void subgraphConstants() {
    for (size_t k = 0; k < in_.nodes.size(); ++k) {
      if (!inBranch_[k]) continue;
      for (ValueId a : in_.nodes[k].args) {
        const TensorSpec* t = a >= 0 ? in_.values[a].tensorIf() : nullptr;
        if (!t || t->slot || (t->data.empty() && !t->external) || constant_.count(a) || mutable_.count(a)) continue;
        constant_.insert(a);
        constantsAt_[k].push_back(a);
      }
    }
  }

  Method in_;  ///< a working copy: lifting scalars adds values
  std::vector<char> inBranch_;
  /// node -> values numbered before its own: a loop's (InlinedLayout), constants lifted in a branch
  std::map<size_t, std::vector<ValueId>> constantsAt_;
  const ExecutorchBackendConfig& c_;
  EmitReport& r_;
  std::vector<std::shared_ptr<const MappedFile>>& owned_;
  std::vector<ValueId> lifted_;
  std::vector<ValueId> userInputs_;
  std::set<ValueId> constant_;
  std::set<ValueId> trained_;  ///< trained weights: mutable, with their initial value
  std::map<ValueId, std::string> mutable_;
  std::unordered_map<ValueId, ValueId> remap_;
  std::vector<ValueId> order_;
  std::vector<Bytes> externalBlobs_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> externalBySize_;
};

/// ExecuTorch's getters of a training program (_get_training_metadata and
/// _emit_prim_getters in exir/emit/): per method that returns gradients,
/// `__et_training_gradients_index_<m>` (position of the first gradient among the
/// outputs), `__et_training_fqn_<m>` (the parameters' names) and
/// `__et_training_parameters_index_<m>` (position of the first trained weight),
/// in that order. ExecuTorch's TrainingModule reads them.
std::vector<Method> trainingGetters(const Method& m) {
  std::optional<int64_t> gradients, parameters;
  std::vector<std::string> fqns;
  int64_t i = 0;
  for (const OutputSpec& o : m.signature.outputs) {
    if (o.kind == OutputSpec::Kind::GradientToParameter) {
      if (!gradients) gradients = i;
      fqns.push_back(o.target);
    } else if (o.kind == OutputSpec::Kind::Token && gradients && !parameters) {
      parameters = i;
    }
    ++i;
  }
  std::vector<Method> out;
  auto getter = [&](std::string name, std::vector<Value> values, PyTree spec) {
    Method g;
    g.name = std::move(name);
    g.values = std::move(values);
    for (size_t k = 0; k < g.values.size(); ++k) g.outputs.push_back(static_cast<ValueId>(k));
    g.nonConstBufferSizes = {0};
    g.encodedOutputSpec = treespecJson(spec);
    out.push_back(std::move(g));
  };
  if (gradients) getter("__et_training_gradients_index_" + m.name, {Value{*gradients, {}}}, PyTree{});
  if (!fqns.empty()) {
    std::vector<Value> names;
    for (const std::string& f : fqns) names.push_back(Value{f, {}});
    getter("__et_training_fqn_" + m.name, std::move(names),
           PyTree{PyTree::Kind::List, {}, std::vector<PyTree>(fqns.size())});
  }
  if (parameters) getter("__et_training_parameters_index_" + m.name, {Value{*parameters, {}}}, PyTree{});
  return out;
}

}  // namespace

Result<Program> emitProgram(const Program& lowered, const ExecutorchBackendConfig& config, EmitReport* report) {
  EmitReport local;
  EmitReport& r = report ? *report : local;
  Program out;
  out.path = lowered.path;
  out.format = SourceFormat::Pte;
  out.backing = lowered.backing;  // weights stay in the mapped archive
  out.namedData = lowered.namedData;  // delegates' shared data (a de-lowered .pte)
  out.derivedData = lowered.derivedData;  // bytes passes made: folded constants, delegate payloads
  // Also keeps alive the bytes the emitter creates (lifted scalar constants).
  out.externalFiles = lowered.externalFiles;
  out.carriedData = lowered.carriedData;  // .ptd entries no tensor names, written back as they were
  for (const Method& m : lowered.methods) {
    InlinedLayout layout;
    std::optional<Method> flat;
    if (!m.subgraphs.empty()) {
      Result<Method> inlined = inlineControlFlow(m, layout);
      if (!inlined) {
        Error err = inlined.error();
        err.file = lowered.path;
        err.what = "method '" + m.name + "': " + err.what;
        return err;
      }
      flat = std::move(inlined.value());
    }
    MethodEmitter e(flat ? *flat : m, std::move(layout), config, r, out.externalFiles);
    auto em = e.emit();
    if (!em) {
      Error err = em.error();
      if (err.file.empty()) err.file = lowered.path;
      return err;
    }
    r.userInputs += em->inputs.size();
    out.methods.push_back(std::move(em.value()));
  }
  // ExecuTorch writes the methods by name, then the constant getters (methods
  // without instructions or inputs) in the order they came.
  std::stable_sort(out.methods.begin(), out.methods.end(), [](const Method& a, const Method& b) {
    const bool getterA = a.isConstantGetter(), getterB = b.isConstantGetter();
    if (getterA != getterB) return getterB;
    return !getterA && a.name < b.name;
  });
  // A program read back from a .pte keeps the getters it has.
  for (const Method& m : lowered.methods)
    for (Method& g : trainingGetters(m))
      if (!lowered.method(g.name)) out.methods.push_back(std::move(g));
  // The named data a backend's preprocess made, as ExecuTorch's emitter gathers it: by
  // delegate, in the order the calls are emitted.
  for (const Method& m : out.methods)
    for (const Delegate& d : m.delegates) out.namedData.insert(out.namedData.end(), d.namedData.begin(), d.namedData.end());
  return out;
}

}  // namespace lstudio
