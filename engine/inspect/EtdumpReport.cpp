#include "engine/inspect/EtdumpReport.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "engine/run/RunValue.h"

namespace lstudio {

uint64_t medianOf(std::vector<uint64_t> ticks) {
  if (ticks.empty()) return 0;
  auto mid = ticks.begin() + static_cast<std::ptrdiff_t>(ticks.size() / 2);
  std::nth_element(ticks.begin(), mid, ticks.end());
  return *mid;
}

namespace {

constexpr const char* kOperatorCall = "OPERATOR_CALL";
constexpr const char* kDelegateCall = "DELEGATE_CALL";
constexpr const char* kNativeCall = "native_call_";

/// What the program has at node `i`, as the report names it.
std::string describe(const Method& m, const Node& n) {
  if (n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size())
    return m.operators[static_cast<size_t>(n.op)].fullName();
  if (n.kind == NodeKind::Delegate && n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size())
    return m.delegates[static_cast<size_t>(n.delegate)].backendId + " delegate";
  switch (n.kind) {
    case NodeKind::Move: return "move";
    case NodeKind::JumpFalse: return "jump_false";
    case NodeKind::Free: return "free";
    default: return "instruction";
  }
}

/// A logged tensor's bytes, gathered from the debug buffer into logical C order.
Result<run::HostValue> loggedTensor(const EtdumpTensor& t, const MappedFile* buffer, size_t instruction) {
  run::HostValue v;
  v.kind = ValueKind::Tensor;
  v.dtype = t.dtype;
  v.sizes = t.sizes;
  if (!buffer) return v;
  // span: elements from the first to the last; sizes and strides are untrusted, so every
  // product is kept below 2^40 before it is formed.
  constexpr uint64_t kMax = 1ull << 40;
  uint64_t elem = elementSize(t.dtype), numel = 1, span = 1;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    uint64_t s = static_cast<uint64_t>(t.sizes[d]), stride = static_cast<uint64_t>(t.strides[d]);
    bool tooBig = (s && numel > kMax / s) || (s > 1 && stride > (kMax - span) / (s - 1));
    if (tooBig)
      return Error{ErrorCode::Overflow, buffer->path(), static_cast<uint64_t>(std::max<int64_t>(t.offset, 0)),
                   "tensor logged for instruction " + std::to_string(instruction),
                   "sizes and strides that span fewer than 2^40 elements", "more"};
    numel *= s;
    if (s) span += (s - 1) * stride;
  }
  if (numel == 0) return v;
  if (numel > span)  // the runtime logs a tensor's own storage: its elements never share bytes
    return Error{ErrorCode::Invalid, buffer->path(), static_cast<uint64_t>(std::max<int64_t>(t.offset, 0)),
                 "tensor logged for instruction " + std::to_string(instruction), "strides that keep elements apart",
                 std::to_string(numel) + " elements in " + std::to_string(span) + " places"};
  uint64_t begin = static_cast<uint64_t>(std::max<int64_t>(t.offset, 0));
  if (span > (1ull << 40) || begin > buffer->size() || span * elem > buffer->size() - begin)
    return Error{ErrorCode::OutOfRange, buffer->path(), begin,
                 "tensor logged for instruction " + std::to_string(instruction) + " (" + std::string(scalarTypeName(t.dtype)) + ")",
                 std::to_string(span * elem) + " bytes inside the debug buffer (" + std::to_string(buffer->size()) + " bytes)",
                 "past its end"};
  v.bytes.resize(numel * elem);
  std::vector<int64_t> index(t.sizes.size(), 0);
  for (uint64_t i = 0; i < numel; ++i) {
    uint64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d) at += static_cast<uint64_t>(index[d]) * static_cast<uint64_t>(t.strides[d]);
    std::memcpy(v.bytes.data() + i * elem, buffer->data() + begin + at * elem, elem);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.sizes[d]) break;
      index[d] = 0;
    }
  }
  v.checksum = run::fnv1a64(v.bytes.data(), v.bytes.size());
  return v;
}

/// The values node `n` writes: its outputs, or else its last argument (the return).
std::vector<ValueId> writtenBy(const Method& m, const Node& n) {
  std::vector<ValueId> out = n.outputs;
  if (out.empty() && !n.args.empty()) out.push_back(n.args.back());
  std::vector<ValueId> tensors;
  for (ValueId v : out) m.appendTensors(v, tensors);
  return tensors;
}

/// The earlier kernel instructions (same chain) whose written tensors node `at` reads. A read
/// tensor that no instruction writes and that is neither an input nor a constant (a static
/// view sharing another tensor's storage) has an unknown producer: kUnknownProducer.
constexpr size_t kUnknownProducer = SIZE_MAX;
std::vector<size_t> producersOf(const Method& m, size_t at) {
  const Node& n = m.nodes[at];
  std::vector<ValueId> written = writtenBy(m, n), read;
  for (ValueId a : n.args)
    if (std::find(written.begin(), written.end(), a) == written.end()) m.appendTensors(a, read);
  std::vector<size_t> producers;
  auto add = [&](size_t p) {
    if (std::find(producers.begin(), producers.end(), p) == producers.end()) producers.push_back(p);
  };
  for (ValueId v : read) {
    bool found = false;
    for (size_t j = at; j-- > 0 && m.nodes[j].chain == n.chain && !found;) {
      if (m.nodes[j].kind == NodeKind::Free) continue;
      std::vector<ValueId> w = writtenBy(m, m.nodes[j]);
      if (std::find(w.begin(), w.end(), v) != w.end()) add(j), found = true;
    }
    // A static view has no instruction of its own: it shares its base's bytes, so its producer
    // is the last instruction that wrote a tensor overlapping them.
    const Value& value = m.value(v);
    const TensorSpec* spec = value.isTensor() ? &value.tensor() : nullptr;
    if (!found && spec && spec->slot && spec->nbytes())
      for (size_t j = at; j-- > 0 && m.nodes[j].chain == n.chain && !found;) {
        if (m.nodes[j].kind == NodeKind::Free) continue;
        for (ValueId w : writtenBy(m, m.nodes[j])) {
          const Value& x = m.value(w);
          if (!x.isTensor() || !x.tensor().slot || !x.tensor().nbytes() || x.tensor().slot->memId != spec->slot->memId)
            continue;
          uint64_t a0 = spec->slot->offset, a1 = a0 + *spec->nbytes();
          uint64_t b0 = x.tensor().slot->offset, b1 = b0 + *x.tensor().nbytes();
          if (a0 < b1 && b0 < a1) add(j), found = true;
        }
      }
    if (found) continue;
    bool given = std::find(m.inputs.begin(), m.inputs.end(), v) != m.inputs.end();
    bool constant = spec && (spec->storage() == TensorStorage::Constant || spec->storage() == TensorStorage::External);
    if (!given && !constant) add(kUnknownProducer);
  }
  return producers;
}

/// The report for one method, or why the ETDump does not fit it.
Result<EtdumpReport> linkMethod(const Etdump& dump, const Program& program, const Method& m, const MappedFile* buffer) {
  EtdumpReport r;
  r.method = m.name;
  r.valuesRead = buffer != nullptr;
  std::vector<size_t> chainStart;  // node index where each chain begins
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (i == 0 || m.nodes[i].chain != m.nodes[i - 1].chain) chainStart.push_back(i);
  auto mismatch = [&](const std::string& event, const std::string& expected, const std::string& found) {
    return Error{ErrorCode::Mismatch, dump.path, std::nullopt, event + " (method " + m.name + " of " + program.path + ")",
                 expected, found + ": the ETDump is of another program or method"};
  };
  std::map<size_t, ProfiledInstruction> timed;
  std::map<size_t, LoggedInstruction> logged;
  bool firstExecution = true;
  for (const EtdumpBlock& b : dump.blocks) {
    bool execute = b.name == "Execute";
    for (const EtdumpEvent& e : b.events) {
      if (const auto* p = std::get_if<EtdumpProfileEvent>(&e)) {
        if (p->chain < 0) {  // a method-level step
          if (p->name == "Method::execute") r.executeTicks.push_back(p->duration());
          if (p->name == "Program::load_method") r.loadTicks.push_back(p->duration());
          continue;
        }
        if (static_cast<size_t>(p->chain) >= chainStart.size())
          return mismatch("profile event \"" + p->name + "\"", "chain < " + std::to_string(chainStart.size()),
                          "chain " + std::to_string(p->chain));
        size_t chainEnd = static_cast<size_t>(p->chain) + 1 < chainStart.size() ? chainStart[p->chain + 1] : m.nodes.size();
        size_t node = chainStart[p->chain] + static_cast<size_t>(std::max(p->instruction, 0));
        if (p->instruction < 0 || node >= chainEnd)
          return mismatch("profile event \"" + p->name + "\"", "an instruction below " + std::to_string(chainEnd - chainStart[p->chain]),
                          "instruction " + std::to_string(p->instruction));
        const Node& n = m.nodes[node];
        ProfiledInstruction& t = timed[node];
        t.instruction = node;
        t.what = describe(m, n);
        t.node = n.name;
        bool inDelegate = p->name.empty() && (!p->delegateDebugName.empty() || p->delegateDebugId >= 0);
        if (p->name == kOperatorCall || p->name == kDelegateCall) {
          bool delegateCall = p->name == kDelegateCall;
          if (delegateCall != (n.kind == NodeKind::Delegate))
            return mismatch("profile event " + p->name + " at instruction " + std::to_string(p->instruction),
                            t.what, delegateCall ? "a delegate call" : "an operator call");
          t.ticks.push_back(p->duration());
        } else if (p->name.rfind(kNativeCall, 0) == 0) {
          std::string want = t.what.substr(t.what.find("::") == std::string::npos ? 0 : t.what.find("::") + 2);
          if (n.kind != NodeKind::Kernel || p->name.substr(std::strlen(kNativeCall)) != want)
            return mismatch("profile event \"" + p->name + "\" at instruction " + std::to_string(p->instruction), t.what,
                            p->name.substr(std::strlen(kNativeCall)));
        } else if (inDelegate) {
          std::string name = p->delegateDebugName.empty() ? "#" + std::to_string(p->delegateDebugId) : p->delegateDebugName;
          auto it = std::find_if(t.delegateEvents.begin(), t.delegateEvents.end(),
                                 [&](const ProfiledInstruction::Inner& x) { return x.name == name; });
          if (it == t.delegateEvents.end()) it = t.delegateEvents.insert(it, {name, {}});
          it->ticks.push_back(p->duration());
        }
      } else if (const auto* d = std::get_if<EtdumpDebugEvent>(&e); d && execute && firstExecution) {
        for (const EtdumpTensor& t : d->value.tensors) {
          size_t node = static_cast<size_t>(std::max(d->instruction, 0));
          if (d->value.output) {
            auto v = loggedTensor(t, buffer, SIZE_MAX);
            if (!v) return v.error();
            r.outputs.push_back(std::move(v.value()));
            continue;
          }
          if (d->chain >= chainStart.size() || d->instruction < 0 || chainStart[d->chain] + node >= m.nodes.size())
            return mismatch("debug event at instruction " + std::to_string(d->instruction), "an instruction of the method",
                            "chain " + std::to_string(d->chain) + ", instruction " + std::to_string(d->instruction));
          node += chainStart[d->chain];
          auto v = loggedTensor(t, buffer, node);
          if (!v) return v.error();
          LoggedInstruction& l = logged[node];
          l.instruction = node;
          l.tensors.push_back(std::move(v.value()));
        }
      }
    }
    if (execute) {
      ++r.executions;
      firstExecution = false;
    }
  }
  for (auto& [i, t] : timed) r.instructions.push_back(std::move(t));
  for (auto& [i, l] : logged) {
    l.producers = producersOf(m, i);
    r.logged.push_back(std::move(l));
  }
  return r;
}

}  // namespace

Result<EtdumpReport> linkEtdump(const Etdump& dump, const Program& program, const std::string& method,
                                const MappedFile* debugBuffer) {
  std::vector<const Method*> candidates;
  for (const Method& m : program.methods)
    if (method.empty() ? m.name == "forward" : m.name == method) candidates.push_back(&m);
  if (!method.empty() && candidates.empty())
    return Error{ErrorCode::Invalid, program.path, std::nullopt, "method for the ETDump", "a method named " + method, "none"};
  if (method.empty())
    for (const Method& m : program.methods)
      if (m.name != "forward" && !m.isConstantGetter()) candidates.push_back(&m);
  std::optional<Error> first;
  for (const Method* m : candidates) {
    auto r = linkMethod(dump, program, *m, debugBuffer);
    if (r || r.error().code != ErrorCode::Mismatch) return r;
    if (!first) first = r.error();
  }
  if (first) return *first;
  return Error{ErrorCode::Invalid, program.path, std::nullopt, "method for the ETDump", "a method with instructions", "none"};
}

void compareWithInterpreter(EtdumpReport& report, const run::RunResult& traced) {
  // An instruction in a loop (a map's or scan's body) runs once per iteration:
  // its values over every visit, in order, as the ETDump logs them.
  std::map<size_t, std::vector<run::HostValue>> byInstruction;
  for (const run::TracedNode& t : traced.trace) {
    auto& values = byInstruction[t.instruction];
    values.insert(values.end(), t.values.begin(), t.values.end());
  }
  for (LoggedInstruction& l : report.logged) {
    auto it = byInstruction.find(l.instruction);
    if (!report.valuesRead) l.notCompared = "no debug buffer";
    else if (it == byInstruction.end()) l.notCompared = "not run by the interpreter";
    else if (it->second.empty()) l.notCompared = "the interpreter wrote no tensor there";
    else {
      const auto& mine = it->second;
      double worst = 0;
      for (size_t k = 1; k <= std::min(mine.size(), l.tensors.size()); ++k)
        worst = std::max(worst, run::maxDifference(l.tensors[l.tensors.size() - k], mine[mine.size() - k]));
      l.difference = worst;
    }
  }
  std::map<size_t, const LoggedInstruction*> loggedAt;
  for (const LoggedInstruction& l : report.logged) loggedAt[l.instruction] = &l;
  for (LoggedInstruction& l : report.logged)
    l.inputsExact = l.difference && std::all_of(l.producers.begin(), l.producers.end(), [&](size_t p) {
      auto it = loggedAt.find(p);
      return it != loggedAt.end() && it->second->difference && *it->second->difference == 0;
    });
  if (report.valuesRead && !report.outputs.empty() && report.outputs.size() <= traced.outputs.size()) {
    double worst = 0;
    size_t k = 0;
    for (const run::HostValue& o : traced.outputs)
      if (o.kind == ValueKind::Tensor && k < report.outputs.size()) worst = std::max(worst, run::maxDifference(report.outputs[k++], o));
    if (k == report.outputs.size()) report.outputDifference = worst;
  }
}

}  // namespace lstudio
