// ProgramReader's reading of the execution plans (see ProgramReader.h):
// operators, delegates, values, inputs and outputs, instructions by chain.
#include "engine/formats/pte/ProgramReader.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace lstudio::pte {

namespace {

/// Out-variant kernels repeat their out arguments as returns at the end
/// of args; the repeated tail is what the kernel writes.
/// The outs of a kernel call, found from its return: the outs repeated,
/// or (several outs, as ExecuTorch's emitter writes them) a TensorList of
/// the args just before it.
std::vector<ValueId> repeatedTail(const std::vector<ValueId>& args, const std::vector<Value>& values) {
  size_t n = args.size();
  for (size_t k = n / 2; k >= 1; --k) {
    if (std::equal(args.end() - k, args.end(), args.end() - 2 * k)) return {args.end() - k, args.end()};
  }
  if (n >= 2)
    if (auto* tl = std::get_if<TensorList>(&values[args.back()].payload);
        tl && !tl->items.empty() && tl->items.size() < n &&
        std::equal(tl->items.begin(), tl->items.end(), args.end() - 1 - tl->items.size()))
      return tl->items;
  return {};
}

/// The frames an instruction's debug stack trace lists.
std::vector<StackFrame> stackTrace(const fb::FrameList* trace) {
  std::vector<StackFrame> frames;
  if (auto* items = trace->items()) {
    for (auto* fr : *items) {
      StackFrame sf;
      if (fr->filename()) sf.file = fr->filename()->str();
      sf.line = fr->lineno();
      if (fr->name()) sf.function = fr->name()->str();
      if (fr->context()) sf.context = fr->context()->str();
      frames.push_back(std::move(sf));
    }
  }
  return frames;
}

/// A .pte keeps no node names; they are made as torch.fx makes them, from
/// the operator ("permute_copy", "permute_copy_1", "executorch_call_delegate"),
/// so views, diffs and the de-lowered graph can refer to instructions by name.
void nameNodes(Method& m) {
  std::map<std::string, int> used;
  for (Node& n : m.nodes) {
    std::string base;
    switch (n.kind) {
      case NodeKind::Kernel: {
        const std::string& op = m.operators[n.op].name;
        size_t colon = op.rfind("::");
        base = colon == std::string::npos ? op : op.substr(colon + 2);
        break;
      }
      case NodeKind::Delegate: base = "executorch_call_delegate"; break;
      case NodeKind::Move: base = "move"; break;
      case NodeKind::JumpFalse: base = "jump_false"; break;
      case NodeKind::Free: base = "free"; break;
      case NodeKind::Cond:
      case NodeKind::Map:
      case NodeKind::Scan: base = nodeKindName(n.kind); break;
    }
    if (base.empty()) base = "node";
    int k = used[base]++;
    n.name = k ? base + "_" + std::to_string(k) : base;
  }
}

}  // namespace

Status ProgramReader::readMethod(const fb::ExecutionPlan* plan, uint32_t index, Method& m) {
  std::string mname = "execution_plan[" + std::to_string(index) + "]";
  if (plan->name()) {
    m.name = plan->name()->str();
    mname += " '" + m.name + "'";
  }
  if (auto* cm = plan->container_meta_type()) {
    if (cm->encoded_inp_str()) m.encodedInputSpec = cm->encoded_inp_str()->str();
    if (cm->encoded_out_str()) m.encodedOutputSpec = cm->encoded_out_str()->str();
  }
  if (auto s = aligned(plan->non_const_buffer_sizes(), mname + ".non_const_buffer_sizes"); !s) return s;
  if (auto* sizes = plan->non_const_buffer_sizes()) {
    for (uint32_t i = 0; i < sizes->size(); ++i) {
      if (sizes->Get(i) < 0)
        return err(ErrorCode::Invalid, sizes, mname + ".non_const_buffer_sizes[" + std::to_string(i) + "]", ">= 0",
                   std::to_string(sizes->Get(i)));
      m.nonConstBufferSizes.push_back(sizes->Get(i));
    }
  }
  if (auto* devices = plan->non_const_buffer_device()) {
    for (uint32_t i = 0; i < devices->size(); ++i) {
      const auto* d = devices->Get(i);
      const std::string w = mname + ".non_const_buffer_device[" + std::to_string(i) + "]";
      if (d->buffer_idx() < 1 || static_cast<size_t>(d->buffer_idx()) >= m.nonConstBufferSizes.size())
        return err(ErrorCode::OutOfRange, d, w + ".buffer_idx",
                   "a mem_id of non_const_buffer_sizes (1.." + std::to_string(m.nonConstBufferSizes.size()) + ")",
                   std::to_string(d->buffer_idx()));
      auto device = readDevice(d, static_cast<int>(d->device_type()), d->device_index(), w);
      if (!device) return device.error();
      if (m.arenaDevices.empty()) m.arenaDevices.resize(m.nonConstBufferSizes.size());
      m.arenaDevices[static_cast<size_t>(d->buffer_idx())] = *device;
    }
  }
  if (auto* ops = plan->operators()) {
    for (uint32_t i = 0; i < ops->size(); ++i) {
      auto* o = ops->Get(i);
      if (!o->name())
        return err(ErrorCode::Invalid, o, mname + ".operators[" + std::to_string(i) + "].name", "a string", "null");
      m.operators.push_back(OperatorRef{o->name()->str(), o->overload() ? o->overload()->str() : std::string()});
    }
  }
  if (auto* ds = plan->delegates()) {
    for (uint32_t i = 0; i < ds->size(); ++i) {
      auto* d = ds->Get(i);
      std::string w = mname + ".delegates[" + std::to_string(i) + "]";
      Delegate del;
      if (!d->id()) return err(ErrorCode::Invalid, d, w + ".id", "a backend id string", "null");
      del.backendId = d->id()->str();
      auto* pr = d->processed();
      if (!pr) return err(ErrorCode::Invalid, d, w + ".processed", "a data reference", "null");
      del.index = pr->index();
      if (pr->location() == fb::DataLocation::INLINE) {
        del.location = Delegate::Location::Inline;
        if (del.index >= p_.inlineDelegateData.size())
          return err(ErrorCode::OutOfRange, pr, w + ".processed.index (inline)",
                     "< " + std::to_string(p_.inlineDelegateData.size()), std::to_string(del.index));
        del.blob = p_.inlineDelegateData[del.index];
      } else if (pr->location() == fb::DataLocation::SEGMENT) {
        del.location = Delegate::Location::Segment;
        if (del.index >= p_.segments.size())
          return err(ErrorCode::OutOfRange, pr, w + ".processed.index (segment)",
                     "< " + std::to_string(p_.segments.size()), std::to_string(del.index));
        del.blob = bytesAt(p_.segments[del.index].offset, p_.segments[del.index].size);
      } else {
        return err(ErrorCode::Invalid, pr, w + ".processed.location", "INLINE (0) or SEGMENT (1)",
                   std::to_string(static_cast<int>(pr->location())));
      }
      if (auto* specs = d->compile_specs()) {
        for (auto* cs : *specs) {
          CompileSpec c;
          if (cs->key()) c.key = cs->key()->str();
          if (cs->value()) c.value.assign(cs->value()->begin(), cs->value()->end());
          del.compileSpecs.push_back(std::move(c));
        }
      }
      m.delegates.push_back(std::move(del));
    }
  }
  if (auto s = readValues(plan, mname, m); !s) return s;
  for (auto [vec, list, what] : {std::tuple{plan->inputs(), &m.inputs, ".inputs"}, std::tuple{plan->outputs(), &m.outputs, ".outputs"}}) {
    if (!vec) continue;
    for (int32_t x : *vec) {
      if (auto s = checkIndex(x, m.values.size(), vec, mname + what); !s) return s;
      list->push_back(x);
    }
  }
  for (ValueId in : m.inputs) m.signature.inputs.push_back(InputSpec{InputSpec::Kind::User, in, {}, true});
  for (ValueId out : m.outputs) m.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::User, out, {}});
  if (auto s = readChains(plan, mname, m); !s) return s;
  nameNodes(m);
  return Ok{};
}

Status ProgramReader::checkIndex(int64_t idx, size_t count, const void* at, const std::string& what, bool allowNone) {
  if (allowNone && idx == -1) return Ok{};
  if (idx < 0 || static_cast<uint64_t>(idx) >= count)
    return err(ErrorCode::OutOfRange, at, what, "a value index < " + std::to_string(count), std::to_string(idx));
  return Ok{};
}

Status ProgramReader::readValues(const fb::ExecutionPlan* plan, const std::string& mname, Method& m) {
  auto* vals = plan->values();
  if (!vals) return Ok{};
  m.values.resize(vals->size());
  // Pass 1: payloads. Pass 2 (below): list items refer to values of the right kind.
  for (uint32_t i = 0; i < vals->size(); ++i) {
    auto* ev = vals->Get(i);
    std::string where = mname + ".values[" + std::to_string(i) + "]";
    Value& v = m.values[i];
    if (ev->val_type() != fb::KernelTypes::NONE && !ev->val())
      return err(ErrorCode::Invalid, ev, where + ".val", std::string("a ") + fb::EnumNameKernelTypes(ev->val_type()) + " table",
                 "none (the union has a type but no value)");
    switch (ev->val_type()) {
      case fb::KernelTypes::NONE:
      case fb::KernelTypes::Null: v.payload = None{}; break;
      case fb::KernelTypes::Int: v.payload = ev->val_as_Int()->int_val(); break;
      case fb::KernelTypes::Bool: v.payload = ev->val_as_Bool()->bool_val(); break;
      case fb::KernelTypes::Double: v.payload = ev->val_as_Double()->double_val(); break;
      case fb::KernelTypes::String: {
        auto* s = ev->val_as_String()->string_val();
        v.payload = s ? s->str() : std::string();
        break;
      }
      case fb::KernelTypes::Tensor: {
        TensorSpec spec;
        if (auto s = readTensor(ev->val_as_Tensor(), m, where, spec); !s) return s;
        v.name = spec.fqn;
        v.payload = std::move(spec);
        break;
      }
      case fb::KernelTypes::IntList: {
        IntList l;
        if (auto s = aligned(ev->val_as_IntList()->items(), where + ".items"); !s) return s;
        if (auto* it = ev->val_as_IntList()->items()) {
          l.items.reserve(it->size());
          for (int64_t x : *it) {
            if (auto s = checkIndex(x, vals->size(), it, where + ".items"); !s) return s;
            l.items.push_back(static_cast<ValueId>(x));
          }
        }
        v.payload = std::move(l);
        break;
      }
      case fb::KernelTypes::DoubleList: {
        DoubleList l;
        if (auto s = aligned(ev->val_as_DoubleList()->items(), where + ".items"); !s) return s;
        if (auto* it = ev->val_as_DoubleList()->items()) l.items.assign(it->begin(), it->end());
        v.payload = std::move(l);
        break;
      }
      case fb::KernelTypes::BoolList: {
        BoolList l;
        if (auto* it = ev->val_as_BoolList()->items())
          for (auto b : *it) l.items.push_back(b ? 1 : 0);
        v.payload = std::move(l);
        break;
      }
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList: {
        bool opt = ev->val_type() == fb::KernelTypes::OptionalTensorList;
        auto* it = opt ? ev->val_as_OptionalTensorList()->items() : ev->val_as_TensorList()->items();
        std::vector<ValueId> items;
        if (it) {
          items.reserve(it->size());
          for (int32_t x : *it) {
            if (auto s = checkIndex(x, vals->size(), it, where + ".items", opt); !s) return s;
            items.push_back(x);
          }
        }
        if (opt) v.payload = OptionalTensorList{std::move(items)};
        else v.payload = TensorList{std::move(items)};
        break;
      }
      default:
        return err(ErrorCode::Invalid, ev, where + ".val_type", "a KernelTypes member (0..11)",
                   std::to_string(static_cast<int>(ev->val_type())));
    }
  }
  for (uint32_t i = 0; i < vals->size(); ++i) {
    const Value& v = m.values[i];
    auto expectKind = [&](const std::vector<ValueId>& items, ValueKind want, const char* what) -> Status {
      for (ValueId x : items) {
        if (x == kNoValue) continue;
        if (m.values[x].kind() != want)
          return err(ErrorCode::Invalid, vals->Get(i), mname + ".values[" + std::to_string(i) + "] " + what,
                     std::string("items that are ") + valueKindName(want) + " values",
                     "values[" + std::to_string(x) + "] is " + valueKindName(m.values[x].kind()));
      }
      return Ok{};
    };
    Status s = Ok{};
    if (auto* l = std::get_if<IntList>(&v.payload)) s = expectKind(l->items, ValueKind::Int, "IntList");
    else if (auto* tl = std::get_if<TensorList>(&v.payload)) s = expectKind(tl->items, ValueKind::Tensor, "TensorList");
    else if (auto* ol = std::get_if<OptionalTensorList>(&v.payload))
      s = expectKind(ol->items, ValueKind::Tensor, "OptionalTensorList");
    if (!s) return s;
  }
  return Ok{};
}

Status ProgramReader::readChains(const fb::ExecutionPlan* plan, const std::string& mname, Method& m) {
  auto* chains = plan->chains();
  if (!chains) return Ok{};
  m.chainCount = chains->size();
  size_t nv = m.values.size();
  size_t total = 0;
  for (auto* c : *chains) total += c->instructions() ? c->instructions()->size() : 0;
  m.nodes.reserve(total);
  for (uint32_t ci = 0; ci < chains->size(); ++ci) {
    auto* c = chains->Get(ci);
    std::string cw = mname + ".chains[" + std::to_string(ci) + "]";
    for (auto* io : {c->inputs(), c->outputs()})
      if (io)
        for (int32_t x : *io)
          if (auto s = checkIndex(x, nv, io, cw + " inputs/outputs"); !s) return s;
    auto* ins = c->instructions();
    if (!ins) continue;
    auto* st = c->stacktrace();
    if (st && st->size() != 0 && st->size() != ins->size())
      return err(ErrorCode::Invalid, st, cw + ".stacktrace", std::to_string(ins->size()) + " frame lists (one per instruction)",
                 std::to_string(st->size()));
    for (uint32_t ii = 0; ii < ins->size(); ++ii) {
      Node n;
      n.chain = ci;
      if (auto s = readInstruction(plan, ins->Get(ii), ins->size(), cw + ".instructions[" + std::to_string(ii) + "]", m, n); !s)
        return s;
      if (st && st->size() == ins->size()) n.meta.stackTrace = stackTrace(st->Get(ii));
      m.nodes.push_back(std::move(n));
    }
  }
  return Ok{};
}

Status ProgramReader::readInstruction(const fb::ExecutionPlan* plan, const fb::Instruction* in, uint32_t chainSize, const std::string& w,
                       const Method& m, Node& n) {
  size_t nv = m.values.size();
  if (!in->instr_args())
    return err(ErrorCode::Invalid, in, w + ".instr_args", std::string("a ") + fb::EnumNameInstructionArguments(in->instr_args_type()) + " table",
               "none");
  auto readArgs = [&](const flatbuffers::Vector<int32_t>* args) -> Status {
    if (!args) return Ok{};
    n.args.reserve(args->size());
    for (int32_t x : *args) {
      if (auto s = checkIndex(x, nv, args, w + ".args"); !s) return s;
      n.args.push_back(x);
    }
    return Ok{};
  };
  switch (in->instr_args_type()) {
    case fb::InstructionArguments::KernelCall: {
      auto* k = in->instr_args_as_KernelCall();
      n.kind = NodeKind::Kernel;
      n.op = k->op_index();
      size_t nops = plan->operators() ? plan->operators()->size() : 0;
      if (n.op < 0 || static_cast<size_t>(n.op) >= nops)
        return err(ErrorCode::OutOfRange, k, w + ".op_index", "< " + std::to_string(nops) + " operators",
                   std::to_string(n.op));
      if (auto s = readArgs(k->args()); !s) return s;
      n.outputs = repeatedTail(n.args, m.values);
      break;
    }
    case fb::InstructionArguments::DelegateCall: {
      auto* d = in->instr_args_as_DelegateCall();
      n.kind = NodeKind::Delegate;
      n.delegate = d->delegate_index();
      size_t nd = plan->delegates() ? plan->delegates()->size() : 0;
      if (n.delegate < 0 || static_cast<size_t>(n.delegate) >= nd)
        return err(ErrorCode::OutOfRange, d, w + ".delegate_index", "< " + std::to_string(nd) + " delegates",
                   std::to_string(n.delegate));
      if (auto s = readArgs(d->args()); !s) return s;
      break;
    }
    case fb::InstructionArguments::MoveCall: {
      auto* mv = in->instr_args_as_MoveCall();
      n.kind = NodeKind::Move;
      if (auto s = checkIndex(mv->move_from(), nv, mv, w + ".move_from"); !s) return s;
      if (auto s = checkIndex(mv->move_to(), nv, mv, w + ".move_to"); !s) return s;
      n.args = {mv->move_from(), mv->move_to()};
      n.outputs = {mv->move_to()};
      break;
    }
    case fb::InstructionArguments::JumpFalseCall: {
      auto* j = in->instr_args_as_JumpFalseCall();
      n.kind = NodeKind::JumpFalse;
      if (auto s = checkIndex(j->cond_value_index(), nv, j, w + ".cond_value_index"); !s) return s;
      if (j->destination_instruction() < 0 || static_cast<uint32_t>(j->destination_instruction()) > chainSize)
        return err(ErrorCode::OutOfRange, j, w + ".destination_instruction",
                   "<= " + std::to_string(chainSize), std::to_string(j->destination_instruction()));
      n.args = {j->cond_value_index()};
      n.jumpTarget = j->destination_instruction();
      break;
    }
    case fb::InstructionArguments::FreeCall: {
      auto* f = in->instr_args_as_FreeCall();
      n.kind = NodeKind::Free;
      if (auto s = checkIndex(f->value_index(), nv, f, w + ".value_index"); !s) return s;
      n.args = {f->value_index()};
      break;
    }
    default:
      return err(ErrorCode::Invalid, in, w + ".instr_args_type", "KernelCall, DelegateCall, MoveCall, JumpFalseCall or FreeCall",
                 std::to_string(static_cast<int>(in->instr_args_type())));
  }
  return Ok{};
}

}  // namespace lstudio::pte
