#include "engine/formats/pte/ProgramTable.h"

#include <algorithm>
#include <limits>
#include <string>

#include "engine/formats/schema/program_generated.h"

namespace lstudio::pte {
namespace fb = executorch_flatbuffer;

namespace {

// Headroom kept below flatbuffers' 2 GiB limit while the builder grows.
constexpr uint64_t kFlatbufferLimit = FLATBUFFERS_MAX_BUFFER_SIZE - (1u << 20);

using Fbb = flatbuffers::FlatBufferBuilder;

class ProgramEmitter {
 public:
  ProgramEmitter(const Program& p, const PteWriteOptions& o, const Planner& plan) : p_(p), o_(o), plan_(plan) {}

  /// Builds the Program flatbuffer (segment offsets as laid out by the caller).
  Status build(Fbb& fbb, const std::vector<uint64_t>& segmentOffsets) {
    // As ExecuTorch's emit_stacktrace: when any node has a trace, every chain
    // carries one frame list per instruction.
    for (const auto& m : p_.methods)
      for (const auto& n : m.nodes) stackTraces_ = stackTraces_ || !n.meta.stackTrace.empty();
    std::vector<flatbuffers::Offset<fb::ExecutionPlan>> plans;
    for (size_t m = 0; m < p_.methods.size(); ++m) {
      auto r = method(fbb, m);
      if (!r) return r.error();
      plans.push_back(r.value());
    }
    auto planVec = fbb.CreateVector(plans);
    auto constantBuffer = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Buffer>>{});
    std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> inl;
    for (const Bytes& b : plan_.inlineData) {
      if (auto s = room(fbb, b.size + o_.delegateAlignment + 64, "inline delegate data"); !s) return s;
      if (b.size) fbb.PreAlign(b.size, o_.delegateAlignment);
      auto data = fbb.CreateVector(b.data, static_cast<size_t>(b.size));
      inl.push_back(fb::CreateBackendDelegateInlineData(fbb, data));
    }
    auto inlineVec = fbb.CreateVector(inl);
    std::vector<flatbuffers::Offset<fb::DataSegment>> segs;
    for (size_t i = 0; i < plan_.segments.size(); ++i)
      segs.push_back(fb::CreateDataSegment(fbb, segmentOffsets[i], plan_.segments[i].size));
    auto segVec = fbb.CreateVector(segs);
    auto constSeg = fb::CreateSubsegmentOffsets(fbb, 0, fbb.CreateVector(plan_.constantOffsets));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::SubsegmentOffsets>>> mutVec = 0;
    if (plan_.mutableSegment >= 0) {
      auto sub = fb::CreateSubsegmentOffsets(fbb, static_cast<uint32_t>(plan_.mutableSegment),
                                             fbb.CreateVector(plan_.mutableOffsets));
      mutVec = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::SubsegmentOffsets>>{sub});
    }
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NamedData>>> namedVec = 0;
    if (!plan_.namedData.empty()) {
      std::vector<flatbuffers::Offset<fb::NamedData>> nd;
      for (const auto& [key, seg] : plan_.namedData) nd.push_back(fb::CreateNamedData(fbb, str(fbb, key), seg));
      namedVec = fbb.CreateVector(nd);
    }
    auto root = fb::CreateProgram(fbb, 0, planVec, constantBuffer, inlineVec, segVec, constSeg, mutVec, namedVec);
    if (auto s = room(fbb, 64, "program"); !s) return s;
    fb::FinishProgramBuffer(fbb, root);
    return Ok{};
  }

 private:
  Status room(const Fbb& fbb, uint64_t extra, const std::string& what) const {
    if (static_cast<uint64_t>(fbb.GetSize()) + extra > kFlatbufferLimit)
      return plan_.error(ErrorCode::Overflow, "the program's flatbuffer (at " + what + ")",
                         "< 2 GiB (flatbuffers' limit; weights and extracted delegate blobs do not count)",
                         "more; extract delegate segments or move weights out of the flatbuffer");
    return Ok{};
  }
  /// Upper bound of what a value adds to the flatbuffer beyond its tables.
  static uint64_t payloadBytes(const Value& v) {
    switch (v.kind()) {
      case ValueKind::String: return std::get<std::string>(v.payload).size();
      case ValueKind::Tensor: {
        const TensorSpec& t = v.tensor();
        return 4 * t.sizes.size() + t.dimOrder.size() + t.sizes.size() + t.fqn.size();
      }
      case ValueKind::IntList: return 8 * std::get<IntList>(v.payload).items.size();
      case ValueKind::DoubleList: return 8 * std::get<DoubleList>(v.payload).items.size();
      case ValueKind::BoolList: return std::get<BoolList>(v.payload).items.size();
      case ValueKind::TensorList: return 4 * std::get<TensorList>(v.payload).items.size();
      case ValueKind::OptionalTensorList: return 4 * std::get<OptionalTensorList>(v.payload).items.size();
      default: return 0;
    }
  }
  static flatbuffers::Offset<flatbuffers::String> str(Fbb& fbb, const std::string& s) {
    return fbb.CreateString(s.data(), s.size());
  }

  Status checkValue(int64_t id, size_t count, const std::string& what, bool allowNone = false) const {
    if (allowNone && id == kNoValue) return Ok{};
    if (id < 0 || static_cast<uint64_t>(id) >= count)
      return plan_.error(ErrorCode::OutOfRange, what, "a value index < " + std::to_string(count), std::to_string(id));
    return Ok{};
  }

  Result<flatbuffers::Offset<fb::Tensor>> tensor(Fbb& fbb, const TensorSpec& t, uint32_t bufferIdx,
                                                 const std::string& w) {
    std::vector<int32_t> sizes;
    sizes.reserve(t.sizes.size());
    for (size_t i = 0; i < t.sizes.size(); ++i) {
      int64_t s = t.sizes[i];
      if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max())
        return plan_.error(ErrorCode::Overflow, w + ".sizes[" + std::to_string(i) + "]", "a 32-bit size",
                           std::to_string(s));
      sizes.push_back(static_cast<int32_t>(s));
    }
    std::vector<uint8_t> dims = t.dimOrder;
    if (dims.empty() && !t.sizes.empty()) {
      // The runtime needs one entry per dimension; none known means contiguous.
      for (size_t i = 0; i < t.sizes.size(); ++i) dims.push_back(static_cast<uint8_t>(i));
      ++filledDimOrders_;
    } else if (dims.size() != t.sizes.size()) {
      return plan_.error(ErrorCode::Invalid, w + ".dim_order", std::to_string(t.sizes.size()) + " entries",
                         std::to_string(dims.size()));
    }
    auto sizesVec = fbb.CreateVector(sizes);
    auto dimsVec = fbb.CreateVector(dims);
    flatbuffers::Offset<fb::AllocationDetails> alloc = 0;
    if (t.slot)
      alloc = fb::CreateAllocationDetails(fbb, t.slot->memId, static_cast<uint32_t>(t.slot->offset & 0xffffffffu),
                                          static_cast<uint32_t>(t.slot->offset >> 32));
    flatbuffers::Offset<fb::ExtraTensorInfo> extra = 0;
    if (t.external || !t.fqn.empty())
      extra = fb::CreateExtraTensorInfo(fbb, 0, str(fbb, t.fqn),
                                        t.external ? fb::TensorDataLocation::EXTERNAL : fb::TensorDataLocation::SEGMENT);
    return fb::CreateTensor(fbb, static_cast<fb::ScalarType>(t.dtype), t.storageOffset, sizesVec, dimsVec,
                            t.requiresGrad, bufferIdx, alloc, t.layout,
                            static_cast<fb::TensorShapeDynamism>(t.dynamism), extra);
  }

  Result<flatbuffers::Offset<fb::EValue>> value(Fbb& fbb, const Method& m, size_t mi, size_t vi) {
    const Value& v = m.values[vi];
    std::string w = plan_.where(mi) + ".values[" + std::to_string(vi) + "]";
    size_t n = m.values.size();
    auto ids = [&](const std::vector<ValueId>& items, bool allowNone) -> Result<std::vector<int32_t>> {
      for (size_t i = 0; i < items.size(); ++i)
        if (auto s = checkValue(items[i], n, w + ".items[" + std::to_string(i) + "]", allowNone); !s) return s.error();
      return std::vector<int32_t>(items.begin(), items.end());
    };
    switch (v.kind()) {
      case ValueKind::None:
        return fb::CreateEValue(fbb, fb::KernelTypes::Null, fb::CreateNull(fbb).Union());
      case ValueKind::Int:
        return fb::CreateEValue(fbb, fb::KernelTypes::Int, fb::CreateInt(fbb, std::get<int64_t>(v.payload)).Union());
      case ValueKind::Bool:
        return fb::CreateEValue(fbb, fb::KernelTypes::Bool, fb::CreateBool(fbb, std::get<bool>(v.payload)).Union());
      case ValueKind::Double:
        return fb::CreateEValue(fbb, fb::KernelTypes::Double,
                                fb::CreateDouble(fbb, std::get<double>(v.payload)).Union());
      case ValueKind::String:
        return fb::CreateEValue(fbb, fb::KernelTypes::String,
                                fb::CreateString(fbb, str(fbb, std::get<std::string>(v.payload))).Union());
      case ValueKind::Tensor: {
        auto t = tensor(fbb, v.tensor(), plan_.bufferIdx[mi][vi], w);
        if (!t) return t.error();
        return fb::CreateEValue(fbb, fb::KernelTypes::Tensor, t.value().Union());
      }
      case ValueKind::IntList: {
        auto r = ids(std::get<IntList>(v.payload).items, false);
        if (!r) return r.error();
        std::vector<int64_t> items(r->begin(), r->end());
        return fb::CreateEValue(fbb, fb::KernelTypes::IntList, fb::CreateIntList(fbb, fbb.CreateVector(items)).Union());
      }
      case ValueKind::DoubleList:
        return fb::CreateEValue(fbb, fb::KernelTypes::DoubleList,
                                fb::CreateDoubleList(fbb, fbb.CreateVector(std::get<DoubleList>(v.payload).items)).Union());
      case ValueKind::BoolList: {
        std::vector<uint8_t> items;
        for (uint8_t b : std::get<BoolList>(v.payload).items) items.push_back(b ? 1 : 0);
        return fb::CreateEValue(fbb, fb::KernelTypes::BoolList, fb::CreateBoolList(fbb, fbb.CreateVector(items)).Union());
      }
      case ValueKind::TensorList: {
        auto r = ids(std::get<TensorList>(v.payload).items, false);
        if (!r) return r.error();
        return fb::CreateEValue(fbb, fb::KernelTypes::TensorList,
                                fb::CreateTensorList(fbb, fbb.CreateVector(r.value())).Union());
      }
      case ValueKind::OptionalTensorList: {
        auto r = ids(std::get<OptionalTensorList>(v.payload).items, true);
        if (!r) return r.error();
        return fb::CreateEValue(fbb, fb::KernelTypes::OptionalTensorList,
                                fb::CreateOptionalTensorList(fbb, fbb.CreateVector(r.value())).Union());
      }
    }
    return plan_.error(ErrorCode::Invalid, w + " kind", "a known value kind", std::to_string(static_cast<int>(v.kind())));
  }

  Result<flatbuffers::Offset<fb::Instruction>> instruction(Fbb& fbb, const Method& m, size_t mi, size_t ni,
                                                           uint32_t chainSize) {
    const Node& n = m.nodes[ni];
    std::string w = plan_.where(mi) + ".nodes[" + std::to_string(ni) + "]";
    size_t nv = m.values.size();
    for (size_t i = 0; i < n.args.size(); ++i)
      if (auto s = checkValue(n.args[i], nv, w + ".args[" + std::to_string(i) + "]"); !s) return s.error();
    auto need = [&](size_t count) -> Status {
      if (n.args.size() < count)
        return plan_.error(ErrorCode::Invalid, w + " (" + nodeKindName(n.kind) + ") args",
                           "at least " + std::to_string(count), std::to_string(n.args.size()));
      return Ok{};
    };
    switch (n.kind) {
      case NodeKind::Kernel: {
        if (n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size())
          return plan_.error(ErrorCode::OutOfRange, w + ".op", "< " + std::to_string(m.operators.size()) + " operators",
                             std::to_string(n.op));
        std::vector<int32_t> args(n.args.begin(), n.args.end());
        auto k = fb::CreateKernelCall(fbb, n.op, fbb.CreateVector(args));
        return fb::CreateInstruction(fbb, fb::InstructionArguments::KernelCall, k.Union());
      }
      case NodeKind::Delegate: {
        if (n.delegate < 0 || static_cast<size_t>(n.delegate) >= m.delegates.size())
          return plan_.error(ErrorCode::OutOfRange, w + ".delegate",
                             "< " + std::to_string(m.delegates.size()) + " delegates", std::to_string(n.delegate));
        std::vector<int32_t> args(n.args.begin(), n.args.end());
        auto d = fb::CreateDelegateCall(fbb, n.delegate, fbb.CreateVector(args));
        return fb::CreateInstruction(fbb, fb::InstructionArguments::DelegateCall, d.Union());
      }
      case NodeKind::Move: {
        if (auto s = need(1); !s) return s.error();
        ValueId to = n.args.size() >= 2 ? n.args[1] : (n.outputs.empty() ? kNoValue : n.outputs[0]);
        if (auto s = checkValue(to, nv, w + " move destination"); !s) return s.error();
        auto mv = fb::CreateMoveCall(fbb, n.args[0], to);
        return fb::CreateInstruction(fbb, fb::InstructionArguments::MoveCall, mv.Union());
      }
      case NodeKind::JumpFalse: {
        if (auto s = need(1); !s) return s.error();
        if (n.jumpTarget < 0 || n.jumpTarget > static_cast<int64_t>(chainSize))
          return plan_.error(ErrorCode::OutOfRange, w + ".jumpTarget",
                             "an instruction of its chain (<= " + std::to_string(chainSize) + ")",
                             std::to_string(n.jumpTarget));
        auto j = fb::CreateJumpFalseCall(fbb, n.args[0], static_cast<int32_t>(n.jumpTarget));
        return fb::CreateInstruction(fbb, fb::InstructionArguments::JumpFalseCall, j.Union());
      }
      case NodeKind::Free: {
        if (auto s = need(1); !s) return s.error();
        auto f = fb::CreateFreeCall(fbb, n.args[0]);
        return fb::CreateInstruction(fbb, fb::InstructionArguments::FreeCall, f.Union());
      }
    }
    return plan_.error(ErrorCode::Invalid, w + " kind", "a known node kind", std::to_string(static_cast<int>(n.kind)));
  }

  flatbuffers::Offset<fb::FrameList> frames(Fbb& fbb, const Node& n) {
    std::vector<flatbuffers::Offset<fb::Frame>> fr;
    for (const auto& f : n.meta.stackTrace)
      fr.push_back(fb::CreateFrame(fbb, str(fbb, f.file), f.line, str(fbb, f.function), str(fbb, f.context)));
    return fb::CreateFrameList(fbb, fbb.CreateVector(fr));
  }

  Result<flatbuffers::Offset<fb::ExecutionPlan>> method(Fbb& fbb, size_t mi) {
    const Method& m = p_.methods[mi];
    std::string w = plan_.where(mi);
    size_t nv = m.values.size();
    std::vector<flatbuffers::Offset<fb::EValue>> values;
    values.reserve(nv);
    for (size_t vi = 0; vi < nv; ++vi) {
      if (auto s = room(fbb, 4096 + payloadBytes(m.values[vi]), w + ".values"); !s) return s.error();
      auto r = value(fbb, m, mi, vi);
      if (!r) return r.error();
      values.push_back(r.value());
    }
    auto valuesVec = fbb.CreateVector(values);
    std::vector<int32_t> ins, outs;
    for (ValueId x : m.inputs) {
      if (auto s = checkValue(x, nv, w + ".inputs"); !s) return s.error();
      ins.push_back(x);
    }
    for (ValueId x : m.outputs) {
      if (auto s = checkValue(x, nv, w + ".outputs"); !s) return s.error();
      outs.push_back(x);
    }
    auto insVec = fbb.CreateVector(ins);
    auto outsVec = fbb.CreateVector(outs);
    // Chains: nodes grouped by Node::chain, in order within each chain.
    uint64_t nchains = m.chainCount;
    for (size_t ni = 0; ni < m.nodes.size(); ++ni) {
      uint32_t c = m.nodes[ni].chain;
      if (c >= static_cast<uint64_t>(m.chainCount) + m.nodes.size())
        return plan_.error(ErrorCode::OutOfRange, w + ".nodes[" + std::to_string(ni) + "].chain",
                           "< " + std::to_string(m.chainCount) + " chains", std::to_string(c));
      nchains = std::max<uint64_t>(nchains, uint64_t(c) + 1);
    }
    std::vector<std::vector<size_t>> byChain(nchains);
    for (size_t ni = 0; ni < m.nodes.size(); ++ni) byChain[m.nodes[ni].chain].push_back(ni);
    std::vector<flatbuffers::Offset<fb::Chain>> chains;
    for (uint64_t c = 0; c < nchains; ++c) {
      std::vector<flatbuffers::Offset<fb::Instruction>> instrs;
      for (size_t ni : byChain[c]) {
        if (auto s = room(fbb, 4096 + 4 * m.nodes[ni].args.size(), w + ".chains"); !s) return s.error();
        auto r = instruction(fbb, m, mi, ni, static_cast<uint32_t>(byChain[c].size()));
        if (!r) return r.error();
        instrs.push_back(r.value());
      }
      auto instrVec = fbb.CreateVector(instrs);
      flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::FrameList>>> stVec = 0;
      if (stackTraces_) {
        // One frame list per instruction (empty for nodes without a trace).
        std::vector<flatbuffers::Offset<fb::FrameList>> st;
        for (size_t ni : byChain[c]) {
          uint64_t bytes = 0;
          for (const auto& f : m.nodes[ni].meta.stackTrace)
            bytes += 64 + f.file.size() + f.function.size() + f.context.size();
          if (auto s = room(fbb, 4096 + bytes, w + " stack traces"); !s) return s.error();
          st.push_back(frames(fbb, m.nodes[ni]));
        }
        stVec = fbb.CreateVector(st);
      }
      // The IR does not keep chain inputs/outputs; ExecuTorch writes them empty.
      auto none = fbb.CreateVector(std::vector<int32_t>{});
      chains.push_back(fb::CreateChain(fbb, none, none, instrVec, stVec));
    }
    auto chainsVec = fbb.CreateVector(chains);
    std::vector<flatbuffers::Offset<fb::Operator>> ops;
    for (const auto& o : m.operators) ops.push_back(fb::CreateOperator(fbb, str(fbb, o.name), str(fbb, o.overload)));
    auto opsVec = fbb.CreateVector(ops);
    std::vector<flatbuffers::Offset<fb::BackendDelegate>> dels;
    for (size_t d = 0; d < m.delegates.size(); ++d) {
      const Delegate& del = m.delegates[d];
      uint64_t specBytes = 0;
      for (const auto& cs : del.compileSpecs) specBytes += 64 + cs.key.size() + cs.value.size();
      if (auto s = room(fbb, 4096 + specBytes, w + ".delegates"); !s) return s.error();
      std::vector<flatbuffers::Offset<fb::CompileSpec>> specs;
      for (const auto& cs : del.compileSpecs)
        specs.push_back(fb::CreateCompileSpec(fbb, str(fbb, cs.key), fbb.CreateVector(cs.value)));
      auto specVec = fbb.CreateVector(specs);
      const auto& ref = plan_.delegateRefs[mi][d];
      auto processed = fb::CreateBackendDelegateDataReference(
          fbb, ref.segment ? fb::DataLocation::SEGMENT : fb::DataLocation::INLINE, ref.index);
      dels.push_back(fb::CreateBackendDelegate(fbb, str(fbb, del.backendId), processed, specVec));
    }
    auto delsVec = fbb.CreateVector(dels);
    for (size_t i = 0; i < m.nonConstBufferSizes.size(); ++i)
      if (m.nonConstBufferSizes[i] < 0)
        return plan_.error(ErrorCode::Invalid, w + ".nonConstBufferSizes[" + std::to_string(i) + "]", ">= 0",
                           std::to_string(m.nonConstBufferSizes[i]));
    auto sizesVec = fbb.CreateVector(m.nonConstBufferSizes);
    if (auto s = room(fbb, 4096 + m.name.size() + m.encodedInputSpec.size() + m.encodedOutputSpec.size() +
                               8 * m.nonConstBufferSizes.size() + 64 * m.operators.size(),
                      w);
        !s)
      return s.error();
    auto meta = fb::CreateContainerMetadata(fbb, str(fbb, m.encodedInputSpec), str(fbb, m.encodedOutputSpec));
    return fb::CreateExecutionPlan(fbb, str(fbb, m.name), meta, valuesVec, insVec, outsVec, chainsVec, opsVec, delsVec,
                                   sizesVec);
  }

 public:
  size_t filledDimOrders_ = 0;

 private:
  const Program& p_;
  const PteWriteOptions& o_;
  const Planner& plan_;
  bool stackTraces_ = false;
};

}  // namespace

Status buildProgramTable(Fbb& fbb, const Program& program, const PteWriteOptions& o, const Planner& plan,
                         const std::vector<uint64_t>& segmentOffsets, size_t& filledDimOrders) {
  ProgramEmitter em(program, o, plan);
  if (auto s = em.build(fbb, segmentOffsets); !s) return s;
  filledDimOrders = em.filledDimOrders_;
  return Ok{};
}

}  // namespace lstudio::pte
