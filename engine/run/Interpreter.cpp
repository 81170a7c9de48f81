#include "engine/run/Interpreter.h"
#include "engine/run/KernelRules.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "engine/ir/OpRegistry.h"
#include "engine/run/KernelSupport.h"
#include "engine/run/Kernels.h"
#include "engine/run/RunValue.h"

namespace lstudio::run {

double iotaElement(ScalarType dtype, uint64_t i) {
  if (dtype == ScalarType::Bool) return static_cast<double>(i % 2);
  if (dtype == ScalarType::Float || dtype == ScalarType::Double || dtype == ScalarType::Half ||
      dtype == ScalarType::BFloat16)
    return static_cast<double>(i % 7) * 0.25 - 0.5;
  return static_cast<double>(i % 5);
}

namespace {

/// A value as a run starts with it: a scalar or a list as stored; a tensor only its kind
/// (its bytes are placed by the caller).
RunValue scalarOrList(const Value& v) {
  RunValue r;
  r.kind = v.kind();
  switch (v.kind()) {
    case ValueKind::None: case ValueKind::Tensor: break;
    case ValueKind::Int: r.i = std::get<int64_t>(v.payload); break;
    case ValueKind::Bool: r.b = std::get<bool>(v.payload); break;
    case ValueKind::Double: r.d = std::get<double>(v.payload); break;
    case ValueKind::String: r.s = std::get<std::string>(v.payload); break;
    case ValueKind::IntList: r.items = std::get<IntList>(v.payload).items; break;
    case ValueKind::TensorList: r.items = std::get<TensorList>(v.payload).items; break;
    case ValueKind::OptionalTensorList: r.items = std::get<OptionalTensorList>(v.payload).items; break;
    case ValueKind::DoubleList: r.doubles = std::get<DoubleList>(v.payload).items; break;
    case ValueKind::BoolList: r.bools = std::get<BoolList>(v.payload).items; break;
  }
  return r;
}

/// List items name values of the kind the list holds (kernels read them as such).
Status checkListItems(const std::vector<RunValue>& values, const std::string& path, const std::string& method) {
  for (size_t vi = 0; vi < values.size(); ++vi) {
    const RunValue& r = values[vi];
    for (ValueId item : r.items) {
      bool none = item == kNoValue || (item >= 0 && static_cast<size_t>(item) < values.size() &&
                                       values[item].kind == ValueKind::None);
      bool ok = item >= 0 && static_cast<size_t>(item) < values.size();
      if (ok && r.kind == ValueKind::IntList) ok = values[item].kind == ValueKind::Int;
      if (ok && r.kind == ValueKind::TensorList) ok = values[item].kind == ValueKind::Tensor;
      if (r.kind == ValueKind::OptionalTensorList) ok = none || (ok && values[item].kind == ValueKind::Tensor);
      if (!ok)
        return Error{ErrorCode::Invalid, path, std::nullopt, method + ".values[" + std::to_string(vi) + "] items",
                     std::string("values of the kind a ") + valueKindName(r.kind) + " holds", std::to_string(item)};
    }
  }
  return Ok{};
}

/// The arguments of a kernel call against its schema: the schema's arguments, then one
/// value for what it returns (ExecuTorch appends the return: the tensor, a list of them for
/// a tuple, None for "()"), each argument of the kind its type needs, so a kernel never
/// reads a value that is not there or not what it expects.
Status checkArguments(const std::vector<RunValue>& values, const Node& n, const OperatorRef& op) {
  auto bad = [&](const std::string& why) { return Error{ErrorCode::Invalid, "", std::nullopt, "", "", why}; };
  const OpSchema* schema = OpRegistry::builtin().find(op.name, op.overload);
  if (!schema) return bad("no schema for " + op.fullName());
  size_t want = schema->arguments.size() + 1;
  if (n.args.size() != want)
    return bad(std::to_string(n.args.size()) + " arguments where its schema has " + std::to_string(want) +
               " (its arguments and the return)");
  for (size_t i = 0; i < want; ++i) {
    if (i == schema->arguments.size() && schema->returns.size() != 1) continue;  // a list or None
    const SchemaType& t = i < schema->arguments.size() ? schema->arguments[i].type : schema->returns[0].type;
    ValueKind k = values[n.args[i]].kind;
    if (k == ValueKind::None && (t.optional || t.base == SchemaType::Base::Any)) continue;
    bool ok = true;
    using B = SchemaType::Base;
    if (t.list) {
      if (t.base == B::Tensor) ok = k == ValueKind::TensorList || (t.optionalElements && k == ValueKind::OptionalTensorList);
      else if (t.base == B::Float) ok = k == ValueKind::DoubleList;
      else if (t.base == B::Bool) ok = k == ValueKind::BoolList;
      else if (t.base == B::Int || t.base == B::SymInt) ok = k == ValueKind::IntList;
    } else {
      switch (t.base) {
        case B::Tensor: ok = k == ValueKind::Tensor; break;
        case B::Int: case B::SymInt: case B::ScalarType: case B::Layout: case B::MemoryFormat:
          ok = k == ValueKind::Int;
          break;
        case B::Float: ok = k == ValueKind::Double || k == ValueKind::Int; break;
        case B::Bool: ok = k == ValueKind::Bool; break;
        case B::Scalar: ok = k == ValueKind::Int || k == ValueKind::Double || k == ValueKind::Bool; break;
        case B::Str: ok = k == ValueKind::String; break;
        default: break;
      }
    }
    if (!ok)
      return bad("argument " + std::to_string(i) + " is a " + valueKindName(k) + " where its schema has " +
                 t.toString());
  }
  return Ok{};
}

class MethodRun {
 public:
  MethodRun(const Program& p, const Method& m, const RunOptions& o) : p_(p), m_(m), o_(o) {}

  Result<RunResult> run() {
    if (auto s = checkKernels(); !s) return s.error();
    if (auto s = allocate(); !s) return s.error();
    if (auto s = fillInputs(); !s) return s.error();
    RunResult r;
    r.method = m_.name;
    const auto started = std::chrono::steady_clock::now();
    // Each chain's instructions are contiguous in `nodes`; jump targets count within it.
    std::vector<size_t> chainStart(m_.nodes.size(), 0);
    for (size_t i = 1; i < m_.nodes.size(); ++i)
      chainStart[i] = m_.nodes[i].chain == m_.nodes[i - 1].chain ? chainStart[i - 1] : i;
    KernelContext ctx(values_);
    ctx.workLimit = o_.workLimit;
    size_t pc = 0;
    const uint64_t limit = 1000ull * (m_.nodes.size() + 1);  // a jump loop that never ends
    while (pc < m_.nodes.size() && m_.nodes[pc].chain == m_.nodes[0].chain) {
      const Node& n = m_.nodes[pc];
      if (++r.instructions > limit) return fail(pc, "more than " + std::to_string(limit) + " instructions: a loop");
      if (o_.progress && r.instructions % 64 == 0 && !o_.progress(pc, m_.nodes.size()))
        return Error{ErrorCode::Invalid, p_.path, std::nullopt, "running " + m_.name, "", "cancelled"};
      for (ValueId a : n.args)
        if (a < 0 || static_cast<size_t>(a) >= values_.size()) return fail(pc, "an argument out of the value table");
      switch (n.kind) {
        case NodeKind::Kernel: {
          const OperatorRef& op = m_.operators.at(static_cast<size_t>(n.op));
          if (op.name == "executorch_prim::et_view") {
            if (auto s = etView(n); !s) return fail(pc, s.error().found);
          } else if (isPrim(op.name)) {
            if (auto s = prim(n, op); !s) return fail(pc, s.error().found);
          } else if (auto s = checkArguments(values_, n, op); !s) {
            return fail(pc, s.error().found);
          } else if (auto broken = kernelRuleViolation(m_, n)) {  // the runtime refuses the call too
            return fail(pc, *broken);
          } else if (!(*findKernel(op.fullName()))(ctx, n.args)) {
            return fail(pc, ctx.message());
          }
          if (o_.trace) traceNode(r, pc, n, op);
          ++pc;
          break;
        }
        case NodeKind::Delegate: {
          const Delegate* d = n.delegate >= 0 && static_cast<size_t>(n.delegate) < m_.delegates.size()
                                  ? &m_.delegates[static_cast<size_t>(n.delegate)]
                                  : nullptr;
          if (d && d->original && o_.delegateRunner) {
            auto written = runDelegate(n, *d);
            if (!written) return fail(pc, written.error().found);
            if (o_.trace) traceValues(r, pc, n, d->backendId, written.value());
            ++pc;
            break;
          }
          std::string why = "a call into the " + (d ? d->backendId : std::string("unknown")) +
                            " delegate: its compiled blob is not runnable here";
          if (d && !d->originalError.empty()) why += ", and its program before delegation could not be read: " + d->originalError;
          else if (!d || !d->original)
            why += " (the ETRecord written with it keeps the program before delegation: run that, or link it to the .pte)";
          if (!o_.stopAtDelegate) return fail(pc, why);
          r.stoppedAt = "instruction " + std::to_string(pc) + ": " + why;
          r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          return r;
        }
        case NodeKind::Move:
          if (n.args.size() < 2) return fail(pc, "a move without a destination");
          values_[n.args[1]] = values_[n.args[0]];
          ++pc;
          break;
        case NodeKind::JumpFalse: {
          if (n.args.empty()) return fail(pc, "a jump without a condition");
          const RunValue& c = values_[n.args[0]];
          bool cond = c.kind == ValueKind::Tensor ? loadAs<bool>(c.t, 0) : (c.kind == ValueKind::Bool ? c.b : c.i != 0);
          if (!cond && (n.jumpTarget < 0 || chainStart[pc] + static_cast<size_t>(n.jumpTarget) > m_.nodes.size()))
            return fail(pc, "a jump outside its chain");
          pc = cond ? pc + 1 : chainStart[pc] + static_cast<size_t>(n.jumpTarget);
          break;
        }
        case NodeKind::Free:
          ++pc;
          break;
        case NodeKind::Cond:  // programs run as emitted, control flow inlined as jumps
        case NodeKind::Map:
        case NodeKind::Scan:
          return fail(pc, std::string("a ") + nodeKindName(n.kind) + " node, which runs once emitted (as jumps)");
      }
    }
    for (ValueId v : m_.outputs) {
      if (v < 0 || static_cast<size_t>(v) >= values_.size())
        return Error{ErrorCode::OutOfRange, p_.path, std::nullopt, m_.name + " output", "a value index", std::to_string(v)};
      r.outputs.push_back(output(values_[v]));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return r;
  }

 private:
  static bool isPrim(const std::string& name) {
    return name.rfind("executorch_prim::", 0) == 0 || name == "aten::sym_size" || name == "aten::sym_numel" ||
           name == "aten::_local_scalar_dense";
  }

  Status checkKernels() const {
    std::set<std::string> missing;
    for (const Node& n : m_.nodes) {
      if (n.kind != NodeKind::Kernel) continue;
      if (n.op < 0 || static_cast<size_t>(n.op) >= m_.operators.size())
        return Error{ErrorCode::OutOfRange, p_.path, std::nullopt, m_.name + " instruction operator", "an operator index",
                     std::to_string(n.op)};
      const OperatorRef& op = m_.operators[n.op];
      if (!isPrim(op.name) && !findKernel(op.fullName())) missing.insert(op.fullName());
    }
    if (missing.empty()) return Ok{};
    std::string list;
    for (const auto& s : missing) list += (list.empty() ? "" : ", ") + s;
    return Error{ErrorCode::Unsupported, p_.path, std::nullopt, "running " + m_.name,
                 "operators the interpreter has kernels for", "no kernel for " + list};
  }

  Error fail(size_t pc, const std::string& why) const {
    const Node& n = m_.nodes[pc];
    std::string what = "running " + m_.name + " instruction " + std::to_string(pc);
    if (n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m_.operators.size())
      what += " (" + m_.operators[n.op].fullName() + (n.name.empty() ? "" : ", node " + n.name) + ")";
    return Error{ErrorCode::Invalid, p_.path, std::nullopt, what, "", why};
  }

  /// Counts `bytes` against RunOptions::memoryLimit.
  Status reserve(uint64_t bytes, const std::string& what) {
    if (o_.memoryLimit && (bytes > o_.memoryLimit || allocated_ > o_.memoryLimit - bytes))
      return Error{ErrorCode::Overflow, p_.path, std::nullopt, what, "at most " + std::to_string(o_.memoryLimit) +
                   " bytes in all (the run's memory limit)", std::to_string(allocated_ + bytes)};
    allocated_ += bytes;
    return Ok{};
  }

  Status allocate() {
    for (size_t i = 0; i < m_.nonConstBufferSizes.size(); ++i)
      if (auto s = reserve(static_cast<uint64_t>(std::max<int64_t>(m_.nonConstBufferSizes[i], 0)),
                           m_.name + " arena " + std::to_string(i));
          !s)
        return s;
    arenas_.resize(m_.nonConstBufferSizes.size());
    for (size_t i = 0; i < arenas_.size(); ++i) arenas_[i].assign(static_cast<size_t>(std::max<int64_t>(m_.nonConstBufferSizes[i], 0)), 0);
    std::set<ValueId> written;
    for (const Node& n : m_.nodes) {
      for (ValueId v : n.outputs) written.insert(v);
      if (n.kind == NodeKind::Kernel && !n.args.empty()) written.insert(n.args.back());
    }
    values_.resize(m_.values.size());
    for (size_t vi = 0; vi < m_.values.size(); ++vi) {
      values_[vi] = scalarOrList(m_.values[vi]);
      if (m_.values[vi].isTensor())
        if (auto s = place(m_.values[vi].tensor(), vi, written.count(static_cast<ValueId>(vi)) > 0, values_[vi].t); !s)
          return s;
    }
    if (auto s = checkListItems(values_, p_.path, m_.name); !s) return s;
    for (ValueId v : m_.inputs)
      if (v < 0 || static_cast<size_t>(v) >= values_.size())
        return Error{ErrorCode::OutOfRange, p_.path, std::nullopt, m_.name + " input", "a value index", std::to_string(v)};
    return Ok{};
  }

  Status place(const TensorSpec& t, size_t vi, bool written, RunTensor& r) {
    r.dtype = t.dtype;
    r.sizes = t.sizes;
    r.dimOrder = t.dimOrder;
    auto bytes = t.nbytes();
    std::string who = m_.name + ".values[" + std::to_string(vi) + "]";
    if (!bytes) return Error{ErrorCode::Overflow, p_.path, std::nullopt, who + " size", "a size in 64 bits", t.shapeString()};
    r.capacity = *bytes;
    TensorStorage s = t.storage();
    if (t.slot) {
      uint32_t mem = t.slot->memId;
      if (mem >= arenas_.size() || t.slot->offset + *bytes > arenas_[mem].size())
        return Error{ErrorCode::OutOfRange, p_.path, std::nullopt, who + " planned at mem_id " + std::to_string(mem) +
                     " offset " + std::to_string(t.slot->offset),
                     "inside its arena", std::to_string(*bytes) + " bytes past its end"};
      r.data = arenas_[mem].data() + t.slot->offset;
      if (s == TensorStorage::Mutable && t.data.size >= *bytes && *bytes) std::memcpy(r.data, t.data.data, *bytes);
      return Ok{};
    }
    if (s == TensorStorage::Constant || s == TensorStorage::External) {
      if (t.data.size < *bytes)
        return Error{ErrorCode::MissingKey, p_.path, std::nullopt, who + (t.fqn.empty() ? "" : " (" + t.fqn + ")"),
                     std::to_string(*bytes) + " bytes of constant data",
                     t.external ? "none: open its .ptd" : std::to_string(t.data.size) + " bytes"};
      if (!written) {  // read-only: kernels never write their inputs
        r.data = const_cast<uint8_t*>(t.data.data);
        return Ok{};
      }
      if (auto s = reserve(*bytes, who); !s) return s;
      owned_.push_back(std::make_unique<uint8_t[]>(*bytes));
      std::memcpy(owned_.back().get(), t.data.data, *bytes);
      r.data = owned_.back().get();
      return Ok{};
    }
    if (auto s = reserve(*bytes, who); !s) return s;
    owned_.push_back(std::make_unique<uint8_t[]>(std::max<uint64_t>(*bytes, 1)));
    std::memset(owned_.back().get(), 0, std::max<uint64_t>(*bytes, 1));
    r.data = owned_.back().get();
    return Ok{};
  }

  Status fillInputs() {
    if (o_.inputs.empty()) {
      for (ValueId v : m_.inputs) {
        RunValue& r = values_[static_cast<size_t>(v)];
        if (r.kind != ValueKind::Tensor) continue;
        uint64_t n = r.t.numel();
        for (uint64_t i = 0; i < n; ++i) storeAs<double>(r.t, i, iotaElement(r.t.dtype, i));
      }
      return Ok{};
    }
    if (o_.inputs.size() != m_.inputs.size())
      return inputError(m_.name + " inputs", std::to_string(m_.inputs.size()) + " values",
                        std::to_string(o_.inputs.size()) + " given");
    for (size_t k = 0; k < m_.inputs.size(); ++k) {
      RunValue& r = values_[static_cast<size_t>(m_.inputs[k])];
      const HostValue& g = o_.inputs[k];
      std::string who = m_.name + " input " + std::to_string(k);
      TensorSpec given;
      given.dtype = g.dtype;
      given.sizes = g.sizes;
      std::string found = g.kind == ValueKind::Tensor ? given.shapeString() : "a " + std::string(valueKindName(g.kind));
      if (r.kind == ValueKind::Tensor) {
        const TensorSpec& spec = m_.values[static_cast<size_t>(m_.inputs[k])].tensor();
        bool fits = g.kind == ValueKind::Tensor && g.dtype == spec.dtype && g.sizes.size() == spec.sizes.size() &&
                    g.bytes.size() == given.nbytes().value_or(UINT64_MAX);
        for (size_t d = 0; fits && d < g.sizes.size(); ++d)
          fits = spec.dynamism == ShapeDynamism::Static ? g.sizes[d] == spec.sizes[d]
                                                         : g.sizes[d] >= 0 && g.sizes[d] <= spec.sizes[d];
        if (!fits)
          return inputError(who, spec.shapeString() + (spec.dynamism == ShapeDynamism::Static ? "" : " or smaller"), found);
        RunTensor src;
        src.dtype = g.dtype;
        src.sizes = g.sizes;
        src.data = const_cast<uint8_t*>(g.bytes.data());
        r.t.sizes = g.sizes;
        kernels::copyLogical(src, r.t);
        continue;
      }
      bool scalar = r.kind == ValueKind::Int || r.kind == ValueKind::Double || r.kind == ValueKind::Bool;
      if (!scalar) return inputError(who, "no value (a " + std::string(valueKindName(r.kind)) + " input keeps its own)", found);
      double x = g.number;
      if (g.kind == ValueKind::Tensor) {
        RunTensor src;
        src.dtype = g.dtype;
        src.sizes = g.sizes;
        src.data = const_cast<uint8_t*>(g.bytes.data());
        if (src.numel() != 1 || g.bytes.size() != elementSize(g.dtype))
          return inputError(who, "one number (a " + std::string(valueKindName(r.kind)) + ")", found);
        x = loadAs<double>(src, 0);
      }
      if (r.kind == ValueKind::Int) r.i = integerFrom<int64_t>(x);
      else if (r.kind == ValueKind::Double) r.d = x;
      else r.b = x != 0;
    }
    return Ok{};
  }

  Error inputError(const std::string& what, const std::string& expected, const std::string& found) const {
    return Error{ErrorCode::Mismatch, p_.path, std::nullopt, what, expected, found};
  }

  Status etView(const Node& n) {  // (self, size, out): the out shares self's storage
    if (n.args.size() < 3) return Error{ErrorCode::Invalid, "", std::nullopt, "", "", "et_view needs 3 arguments"};
    RunTensor& self = values_[n.args[0]].t;
    RunTensor& out = values_[n.args[2]].t;
    KernelContext ctx(values_);
    std::vector<int64_t> sizes = ctx.ints(n.args[1]);
    int64_t known = 1, infer = -1;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] == -1) infer = static_cast<int64_t>(d);
      else known *= sizes[d];
    if (infer >= 0) sizes[infer] = known ? static_cast<int64_t>(self.numel()) / known : 0;
    out.data = self.data;
    out.capacity = self.capacity;
    if (!ctx.resize(out, sizes) || out.numel() != self.numel())
      return Error{ErrorCode::Invalid, "", std::nullopt, "", "", "et_view to a different element count"};
    return Ok{};
  }

  /// ExecuTorch's prim ops: symbolic-int arithmetic and sizes, args (a, b, out).
  Status prim(const Node& n, const OperatorRef& op) {
    auto bad = [&](const std::string& why) { return Error{ErrorCode::Invalid, "", std::nullopt, "", "", why}; };
    KernelContext ctx(values_);
    std::string name = op.name.substr(op.name.find("::") + 2);
    if (name == "sym_size") {
      if (n.args.size() < 3) return bad("sym_size needs 3 arguments");
      const RunTensor& t = values_[n.args[0]].t;
      int64_t d = ctx.integer(n.args[1]);
      if (d < 0) d += static_cast<int64_t>(t.sizes.size());
      if (d < 0 || static_cast<size_t>(d) >= t.sizes.size()) return bad("sym_size dim out of range");
      values_[n.args[2]].i = t.sizes[d];
      values_[n.args[2]].kind = ValueKind::Int;
      return Ok{};
    }
    if (name == "sym_numel") {
      if (n.args.size() < 2) return bad("sym_numel needs 2 arguments");
      values_[n.args[1]].i = static_cast<int64_t>(values_[n.args[0]].t.numel());
      return Ok{};
    }
    if (name == "_local_scalar_dense") {  // (self, out): item() of a one-element tensor
      if (n.args.size() < 2) return bad("_local_scalar_dense needs 2 arguments");
      const RunTensor& t = values_[n.args[0]].t;
      if (t.numel() != 1) return bad("_local_scalar_dense of a tensor of " + std::to_string(t.numel()) + " elements");
      RunValue& out = values_[n.args[1]];
      if (isFloatingPoint(t.dtype)) out.d = loadAs<double>(t, 0), out.kind = ValueKind::Double;
      else if (t.dtype == ScalarType::Bool) out.b = loadAs<int64_t>(t, 0) != 0, out.kind = ValueKind::Bool;
      else out.i = loadAs<int64_t>(t, 0), out.kind = ValueKind::Int;
      return Ok{};
    }
    if (name == "et_copy_index") return copyIndex(n, ctx);
    if (n.args.size() < 3) return bad(op.fullName() + " needs 3 arguments");
    RunValue &a = values_[n.args[0]], &b = values_[n.args[1]], &out = values_[n.args[2]];
    bool fl = a.kind == ValueKind::Double || b.kind == ValueKind::Double;
    double x = ctx.scalar(n.args[0]), y = ctx.scalar(n.args[1]);
    int64_t xi = ctx.integer(n.args[0]), yi = ctx.integer(n.args[1]);
    auto setNum = [&](double d, int64_t i) {
      if (fl) out.d = d, out.kind = ValueKind::Double;
      else out.i = i, out.kind = ValueKind::Int;
    };
    auto setBool = [&](bool v) { out.b = v, out.kind = ValueKind::Bool; };
    if (name == "add") setNum(x + y, xi + yi);
    else if (name == "sub") setNum(x - y, xi - yi);
    else if (name == "mul") setNum(x * y, xi * yi);
    else if (name == "floordiv") {
      if (!fl && yi == 0) return bad("floordiv by zero");
      int64_t q = fl ? 0 : xi / yi;
      if (!fl && (xi % yi != 0) && ((xi < 0) != (yi < 0))) --q;
      setNum(std::floor(x / y), q);
    } else if (name == "truediv") {
      out.d = x / y, out.kind = ValueKind::Double;
    } else if (name == "mod") {
      if (!fl && yi == 0) return bad("mod by zero");
      setNum(std::fmod(x, y), fl ? 0 : ((xi % yi) + yi) % yi);
    } else if (name == "eq") setBool(x == y);
    else if (name == "gt") setBool(x > y);
    else if (name == "lt") setBool(x < y);
    else if (name == "ge") setBool(x >= y);
    else if (name == "le") setBool(x <= y);
    else if (name == "sym_max") setNum(std::max(x, y), std::max(xi, yi));
    else if (name == "sym_min") setNum(std::min(x, y), std::min(xi, yi));
    else return bad("no kernel for " + op.fullName());
    return Ok{};
  }

  /// et_copy_index(copy_to, copy_from, index): a map's or scan's result gets
  /// slice `index` of dimension 0; copy_to grows to index + 1 rows when it is
  /// shorter (ExecuTorch's kernels/prim_ops/et_copy_index.cpp).
  Status copyIndex(const Node& n, KernelContext& ctx) {
    auto bad = [&](const std::string& why) { return Error{ErrorCode::Invalid, "", std::nullopt, "", "", why}; };
    if (n.args.size() < 3) return bad("et_copy_index needs 3 arguments (copy_to, copy_from, index)");
    RunValue &to = values_[n.args[0]], &from = values_[n.args[1]];
    if (to.kind != ValueKind::Tensor || from.kind != ValueKind::Tensor) return bad("et_copy_index copies between tensors");
    const int64_t index = ctx.integer(n.args[2]);
    if (to.t.sizes.size() != from.t.sizes.size() + 1) return bad("et_copy_index: copy_to's rank must be copy_from's + 1");
    if (index < 0) return bad("et_copy_index at a negative index");
    std::vector<int64_t> sizes{index + 1};
    for (size_t d = 0; d < from.t.sizes.size(); ++d) {
      if (index > 0 && to.t.sizes[d + 1] != from.t.sizes[d]) return bad("et_copy_index: slice shape differs from copy_to's");
      sizes.push_back(from.t.sizes[d]);
    }
    if (to.t.dtype != from.t.dtype) return bad("et_copy_index between different dtypes");
    if (to.t.sizes[0] < sizes[0] && !ctx.resize(to.t, sizes)) return bad("et_copy_index past copy_to's capacity");
    const uint64_t bytes = from.t.nbytes(), offset = static_cast<uint64_t>(index) * bytes;
    if (offset + bytes > to.t.nbytes()) return bad("et_copy_index past the end of copy_to");
    if (bytes) std::memmove(to.t.data + offset, from.t.data, bytes);
    return Ok{};
  }

  /// A delegate call run through its original program: the values it reads (the user inputs
  /// of that program, in order), then those it writes, which take the original's outputs.
  /// Returns the values written.
  Result<std::vector<ValueId>> runDelegate(const Node& n, const Delegate& d) {
    auto bad = [&](const std::string& why) { return Error{ErrorCode::Invalid, "", std::nullopt, "", "", why}; };
    if (d.original->methods.empty()) return bad("the " + d.backendId + " delegate's original program has no method");
    const Method& om = d.original->methods.front();
    size_t reads = 0;
    for (const InputSpec& in : om.signature.inputs) reads += in.kind == InputSpec::Kind::User;
    if (om.signature.inputs.empty()) reads = om.inputs.size();
    if (n.args.size() < reads)
      return bad("the " + d.backendId + " delegate call passes " + std::to_string(n.args.size()) +
                 " values where its original program takes " + std::to_string(reads) + " inputs");
    std::vector<HostValue> in;
    for (size_t i = 0; i < reads; ++i) in.push_back(output(values_[static_cast<size_t>(n.args[i])]));
    auto out = o_.delegateRunner(d, in);
    if (!out) return bad("running the " + d.backendId + " delegate's original program: " + out.error().message());
    if (out->size() != n.args.size() - reads)
      return bad("the " + d.backendId + " delegate call writes " + std::to_string(n.args.size() - reads) +
                 " values where its original program returns " + std::to_string(out->size()));
    KernelContext ctx(values_);
    for (size_t k = 0; k < out->size(); ++k) {
      RunValue& dst = values_[static_cast<size_t>(n.args[reads + k])];
      const HostValue& g = (*out)[k];
      std::string which = "the " + d.backendId + " delegate's output " + std::to_string(k);
      if (dst.kind != ValueKind::Tensor || g.kind != ValueKind::Tensor)
        return bad(which + " is not a tensor where the call writes one");
      if (g.dtype != dst.t.dtype || g.sizes.size() != dst.t.sizes.size())
        return bad(which + " is " + std::string(scalarTypeName(g.dtype)) + " of rank " + std::to_string(g.sizes.size()) +
                   " where the call writes " + std::string(scalarTypeName(dst.t.dtype)) + " of rank " + std::to_string(dst.t.sizes.size()));
      if (!ctx.resize(dst.t, g.sizes)) return bad(which + ": " + ctx.message());
      RunTensor src;
      src.dtype = g.dtype;
      src.sizes = g.sizes;
      src.data = const_cast<uint8_t*>(g.bytes.data());
      kernels::copyLogical(src, dst.t);
    }
    return std::vector<ValueId>(n.args.begin() + static_cast<long>(reads), n.args.end());
  }

  void traceNode(RunResult& r, size_t pc, const Node& n, const OperatorRef& op) const {
    std::vector<ValueId> written = n.outputs;
    if (written.empty() && !n.args.empty()) written.push_back(n.args.back());  // the return
    traceValues(r, pc, n, op.fullName(), written);
  }
  void traceValues(RunResult& r, size_t pc, const Node& n, const std::string& opName,
                   const std::vector<ValueId>& written) const {
    TracedNode t{pc, n.name, opName, {}};
    for (ValueId v : written) {
      const RunValue& x = values_[static_cast<size_t>(v)];
      if (x.kind == ValueKind::Tensor) t.values.push_back(output(x));
      if (x.kind == ValueKind::TensorList)  // split_copy's outputs: each item, as ETDump logs them
        for (ValueId item : x.items)
          if (item >= 0 && static_cast<size_t>(item) < values_.size() && values_[static_cast<size_t>(item)].kind == ValueKind::Tensor)
            t.values.push_back(output(values_[static_cast<size_t>(item)]));
    }
    r.trace.push_back(std::move(t));
  }

  static HostValue output(const RunValue& v) {
    HostValue o;
    o.kind = v.kind;
    if (v.kind == ValueKind::Tensor) {
      o.dtype = v.t.dtype;
      o.sizes = v.t.sizes;
      o.bytes.resize(v.t.nbytes());
      RunTensor logical;  // C order, whatever the dim order inside the run
      logical.dtype = o.dtype;
      logical.sizes = o.sizes;
      logical.data = o.bytes.data();
      kernels::copyLogical(v.t, logical);
    } else if (v.kind == ValueKind::Int) {
      o.number = static_cast<double>(v.i);
    } else if (v.kind == ValueKind::Double) {
      o.number = v.d;
    } else if (v.kind == ValueKind::Bool) {
      o.number = v.b ? 1 : 0;
    }
    o.checksum = fnv1a64(o.bytes.data(), o.bytes.size());
    return o;
  }

  const Program& p_;
  const Method& m_;
  const RunOptions& o_;
  std::vector<std::vector<uint8_t>> arenas_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_;
  std::vector<RunValue> values_;
  uint64_t allocated_ = 0;
};

}  // namespace

Result<RunResult> runProgram(const Program& program, const RunOptions& options) {
  if (program.methods.empty())
    return Error{ErrorCode::Invalid, program.path, std::nullopt, "running", "a method", "none"};
  const Method* m = nullptr;
  std::string want = options.method.empty() ? "forward" : options.method;
  for (const Method& x : program.methods)
    if (x.name == want) m = &x;
  if (!m && options.method.empty()) m = &program.methods[0];
  if (!m) return Error{ErrorCode::Invalid, program.path, std::nullopt, "running", "a method named " + want, "none"};
  return MethodRun(program, *m, options).run();
}

Status runKernelCalls(const Method& m, const std::vector<size_t>& nodes,
                      const std::function<uint8_t*(ValueId)>& bytesOf) {
  std::vector<RunValue> values(m.values.size());
  for (size_t vi = 0; vi < m.values.size(); ++vi) {
    values[vi] = scalarOrList(m.values[vi]);
    if (const TensorSpec* t = m.values[vi].tensorIf()) {
      RunTensor& r = values[vi].t;
      r.dtype = t->dtype;
      r.sizes = t->sizes;
      r.dimOrder = t->dimOrder;
      r.data = bytesOf(static_cast<ValueId>(vi));
      r.capacity = r.data ? t->nbytes().value_or(0) : 0;
    }
  }
  if (auto s = checkListItems(values, "", m.name); !s) return s;
  KernelContext ctx(values);
  for (size_t i : nodes) {
    const Node& n = m.nodes.at(i);
    auto fail = [&](const std::string& why) {
      std::string op = n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size() ? m.operators[n.op].fullName() : "?";
      return Error{ErrorCode::Invalid, "", std::nullopt, "evaluating node " + n.name + " (" + op + ")", "", why};
    };
    if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size())
      return fail("not a kernel call");
    const OperatorRef& op = m.operators[n.op];
    const Kernel* k = findKernel(op.fullName());
    if (!k) return fail("no kernel for it");
    for (ValueId a : n.args)
      if (a < 0 || static_cast<size_t>(a) >= values.size()) return fail("an argument out of the value table");
    if (auto s = checkArguments(values, n, op); !s) return fail(s.error().found);
    for (ValueId a : n.args) {
      const RunValue& v = values[a];
      bool noBytes = v.kind == ValueKind::Tensor && !v.t.data && v.t.nbytes() > 0;
      for (ValueId item : v.items)
        noBytes = noBytes || (item >= 0 && values[item].kind == ValueKind::Tensor && !values[item].t.data &&
                              values[item].t.nbytes() > 0);
      if (noBytes) return fail("a tensor argument without bytes");
    }
    if (!(*k)(ctx, n.args)) return fail(ctx.message());
  }
  return Ok{};
}

double maxDifference(const HostValue& a, const HostValue& b) {
  const double inf = std::numeric_limits<double>::infinity();
  if (a.kind != b.kind) return inf;
  if (a.kind != ValueKind::Tensor) return a.number == b.number ? 0 : std::fabs(a.number - b.number);
  if (a.dtype != b.dtype || a.sizes != b.sizes || a.bytes.size() != b.bytes.size()) return inf;
  if (a.bytes == b.bytes) return 0;
  RunTensor ta, tb;
  ta.dtype = tb.dtype = a.dtype;
  ta.sizes = tb.sizes = a.sizes;
  ta.data = const_cast<uint8_t*>(a.bytes.data());
  tb.data = const_cast<uint8_t*>(b.bytes.data());
  double worst = 0;
  for (uint64_t i = 0; i < ta.numel(); ++i) {
    double x = loadAs<double>(ta, i), y = loadAs<double>(tb, i);
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    double d = std::fabs(x - y);
    worst = std::max(worst, std::isnan(d) ? inf : d);
  }
  return worst;
}

std::optional<NodeDifference> firstDifferingNode(const RunResult& run, const RunResult& reference, double tolerance) {
  // A node in a loop (a map's or scan's body) runs once per iteration: visit k
  // of a node is compared with visit k of its namesake.
  std::map<std::string, std::vector<const TracedNode*>> byName;
  for (const TracedNode& t : reference.trace)
    if (!t.node.empty()) byName[t.node].push_back(&t);
  std::map<std::string, size_t> visits;
  for (const TracedNode& t : run.trace) {
    auto it = byName.find(t.node);
    if (t.node.empty() || it == byName.end()) continue;
    const size_t k = visits[t.node]++;
    if (k >= it->second.size()) continue;
    const TracedNode& ref = *it->second[k];
    double worst = t.values.size() == ref.values.size() ? 0 : std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < t.values.size() && i < ref.values.size(); ++i)
      worst = std::max(worst, maxDifference(t.values[i], ref.values[i]));
    if (worst > tolerance) return NodeDifference{t.instruction, t.node, t.op, worst};
  }
  return std::nullopt;
}

ValueStats valueStats(const HostValue& v, size_t bins) {
  ValueStats s;
  s.histogram.assign(bins, 0);
  if (v.kind != ValueKind::Tensor) {
    s.count = 1;
    s.min = s.max = s.mean = v.number;
    if (bins) s.histogram[bins / 2] = 1;
    return s;
  }
  RunTensor t;
  t.dtype = v.dtype;
  t.sizes = v.sizes;
  t.data = const_cast<uint8_t*>(v.bytes.data());
  uint64_t n = std::min<uint64_t>(t.numel(), v.bytes.size() / std::max<uint32_t>(elementSize(v.dtype), 1));
  s.count = n;
  double sum = 0, sq = 0;
  uint64_t finite = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double x = loadAs<double>(t, i);
    if (std::isnan(x)) { ++s.nans; continue; }
    if (std::isinf(x)) { ++s.infinities; continue; }
    s.min = finite ? std::min(s.min, x) : x;
    s.max = finite ? std::max(s.max, x) : x;
    sum += x;
    ++finite;
  }
  if (!finite) return s;
  s.mean = sum / static_cast<double>(finite);
  double width = (s.max - s.min) / static_cast<double>(std::max<size_t>(bins, 1));
  for (uint64_t i = 0; i < n; ++i) {
    double x = loadAs<double>(t, i);
    if (!std::isfinite(x)) continue;
    sq += (x - s.mean) * (x - s.mean);
    if (bins) {
      size_t b = width > 0 ? static_cast<size_t>(std::min((x - s.min) / width, static_cast<double>(bins - 1))) : bins / 2;
      ++s.histogram[b];
    }
  }
  s.stddev = std::sqrt(sq / static_cast<double>(finite));
  return s;
}

std::vector<double> leadingValues(const HostValue& o, size_t count) {
  if (o.kind != ValueKind::Tensor) return {o.number};
  RunTensor t;
  t.dtype = o.dtype;
  t.sizes = o.sizes;
  t.data = const_cast<uint8_t*>(o.bytes.data());
  std::vector<double> v;
  for (uint64_t i = 0; i < std::min<uint64_t>(t.numel(), count); ++i) v.push_back(loadAs<double>(t, i));
  return v;
}

std::string firstValues(const HostValue& o, size_t count) {
  std::ostringstream s;
  std::vector<double> v = leadingValues(o, count);
  if (o.kind != ValueKind::Tensor) {
    s << v[0];
    return s.str();
  }
  s << "[";
  RunTensor t;  // integers printed whole: 64-bit values do not all fit a double
  t.dtype = o.dtype;
  t.sizes = o.sizes;
  t.data = const_cast<uint8_t*>(o.bytes.data());
  for (size_t i = 0; i < v.size(); ++i) {
    s << (i ? ", " : "");
    if (kernels::isIntegral(o.dtype)) s << loadAs<int64_t>(t, i);
    else s << v[i];
  }
  uint64_t n = 1;
  for (int64_t d : o.sizes) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  if (n > v.size()) s << ", ...";
  s << "]";
  return s.str();
}

}  // namespace lstudio::run
