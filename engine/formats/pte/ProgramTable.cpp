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

// Byte layout: ExecuTorch packs the Program with flatbuffers' Python object API
// (exir/_serialize/_flatbuffer_program.py, `ProgramT.Pack`). Its generated Pack methods
// build each table's strings, vectors and sub-tables in field declaration order, depth
// first, then add the table's fields in declaration order (flatc's C++ CreateX helpers
// sort them by size instead). Every table below is built the same way, so a program
// upstream would write equal comes out byte-identical.

/// A vector as the Python builder writes it: it aligns even an empty vector to the
/// length prefix and to its elements (the C++ builder skips the padding for length 0).
template <typename T>
flatbuffers::Offset<flatbuffers::Vector<T>> vec(Fbb& fbb, const T* data, size_t n) {
  if (n == 0) {
    fbb.Align(sizeof(flatbuffers::uoffset_t));
    fbb.Align(sizeof(T));
  }
  return fbb.CreateVector(data, n);
}
template <typename T>
flatbuffers::Offset<flatbuffers::Vector<T>> vec(Fbb& fbb, const std::vector<T>& v) {
  return vec(fbb, v.data(), v.size());
}

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
    auto planVec = vec(fbb, plans);
    auto constantBuffer = vec(fbb, std::vector<flatbuffers::Offset<fb::Buffer>>{});
    std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> inl;
    for (const Bytes& b : plan_.inlineData) {
      if (auto s = room(fbb, b.size + o_.delegateAlignment + 64, "inline delegate data"); !s) return s;
      // As upstream's packer: the bytes start on the delegate alignment, even when empty.
      if (b.size) {
        fbb.PreAlign(b.size, o_.delegateAlignment);
      } else {
        fbb.Align(sizeof(flatbuffers::uoffset_t));
        fbb.Align(o_.delegateAlignment);
      }
      auto data = fbb.CreateVector(b.data, static_cast<size_t>(b.size));
      fb::BackendDelegateInlineDataBuilder t(fbb);
      t.add_data(data);
      inl.push_back(t.Finish());
    }
    auto inlineVec = vec(fbb, inl);
    std::vector<flatbuffers::Offset<fb::DataSegment>> segs;
    for (size_t i = 0; i < plan_.segments.size(); ++i) {
      fb::DataSegmentBuilder t(fbb);
      t.add_offset(segmentOffsets[i]);
      t.add_size(plan_.segments[i].size);
      segs.push_back(t.Finish());
    }
    auto segVec = vec(fbb, segs);
    auto constSeg = subsegment(fbb, 0, plan_.constantOffsets);
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::SubsegmentOffsets>>> mutVec = 0;
    if (plan_.mutableSegment >= 0) {
      auto sub = subsegment(fbb, static_cast<uint32_t>(plan_.mutableSegment), plan_.mutableOffsets);
      mutVec = vec(fbb, std::vector<flatbuffers::Offset<fb::SubsegmentOffsets>>{sub});
    }
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NamedData>>> namedVec = 0;
    if (!plan_.namedData.empty()) {
      std::vector<flatbuffers::Offset<fb::NamedData>> nd;
      for (const auto& [key, seg] : plan_.namedData) {
        auto k = str(fbb, key);
        fb::NamedDataBuilder t(fbb);
        t.add_key(k);
        t.add_segment_index(seg);
        nd.push_back(t.Finish());
      }
      namedVec = vec(fbb, nd);
    }
    fb::ProgramBuilder root(fbb);
    root.add_version(0);
    root.add_execution_plan(planVec);
    root.add_constant_buffer(constantBuffer);
    root.add_backend_delegate_data(inlineVec);
    root.add_segments(segVec);
    root.add_constant_segment(constSeg);
    if (!mutVec.IsNull()) root.add_mutable_data_segments(mutVec);
    if (!namedVec.IsNull()) root.add_named_data(namedVec);
    auto rootOffset = root.Finish();
    if (auto s = room(fbb, 64, "program"); !s) return s;
    fb::FinishProgramBuffer(fbb, rootOffset);
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
  static flatbuffers::Offset<fb::SubsegmentOffsets> subsegment(Fbb& fbb, uint32_t segment,
                                                                const std::vector<uint64_t>& offsets) {
    auto v = vec(fbb, offsets);
    fb::SubsegmentOffsetsBuilder t(fbb);
    t.add_segment_index(segment);
    t.add_offsets(v);
    return t.Finish();
  }
  /// A table of one scalar or offset field (Int, Bool, Double, String, the lists).
  template <typename B, typename F, typename V>
  static auto single(Fbb& fbb, F add, V value) {
    B t(fbb);
    (t.*add)(value);
    return t.Finish();
  }
  template <typename T>
  static flatbuffers::Offset<fb::EValue> evalue(Fbb& fbb, fb::KernelTypes type, flatbuffers::Offset<T> val) {
    fb::EValueBuilder t(fbb);
    t.add_val_type(type);
    t.add_val(val.Union());
    return t.Finish();
  }
  template <typename T>
  static flatbuffers::Offset<fb::Instruction> instr(Fbb& fbb, fb::InstructionArguments type,
                                                    flatbuffers::Offset<T> args) {
    fb::InstructionBuilder t(fbb);
    t.add_instr_args_type(type);
    t.add_instr_args(args.Union());
    return t.Finish();
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
    auto sizesVec = vec(fbb, sizes);
    auto dimsVec = vec(fbb, dims);
    flatbuffers::Offset<fb::AllocationDetails> alloc = 0;
    if (t.slot) {
      fb::AllocationDetailsBuilder a(fbb);
      a.add_memory_id(t.slot->memId);
      a.add_memory_offset_low(static_cast<uint32_t>(t.slot->offset & 0xffffffffu));
      a.add_memory_offset_high(static_cast<uint32_t>(t.slot->offset >> 32));
      alloc = a.Finish();
    }
    flatbuffers::Offset<fb::ExtraTensorInfo> extra = 0;
    // ExecuTorch gives a tensor extra_tensor_info for a name, a .ptd, or a device.
    if (t.external || !t.fqn.empty() || !t.device.isCpu()) {
      flatbuffers::Offset<flatbuffers::String> fqn = 0;
      if (t.external || !t.fqn.empty()) fqn = str(fbb, t.fqn);
      fb::ExtraTensorInfoBuilder e(fbb);
      e.add_mutable_data_segments_idx(0);
      if (!fqn.IsNull()) e.add_fully_qualified_name(fqn);
      e.add_location(t.external ? fb::TensorDataLocation::EXTERNAL : fb::TensorDataLocation::SEGMENT);
      e.add_device_type(static_cast<fb::DeviceType>(t.device.type));
      e.add_device_index(t.device.index);
      extra = e.Finish();
    }
    fb::TensorBuilder b(fbb);
    b.add_scalar_type(static_cast<fb::ScalarType>(t.dtype));
    b.add_storage_offset(t.storageOffset);
    b.add_sizes(sizesVec);
    b.add_dim_order(dimsVec);
    b.add_requires_grad(t.requiresGrad);
    b.add_data_buffer_idx(bufferIdx);
    if (!alloc.IsNull()) b.add_allocation_info(alloc);
    b.add_layout(t.layout);
    b.add_shape_dynamism(static_cast<fb::TensorShapeDynamism>(t.dynamism));
    if (!extra.IsNull()) b.add_extra_tensor_info(extra);
    return b.Finish();
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
        return evalue(fbb, fb::KernelTypes::Null, fb::NullBuilder(fbb).Finish());
      case ValueKind::Int:
        return evalue(fbb, fb::KernelTypes::Int,
                      single<fb::IntBuilder>(fbb, &fb::IntBuilder::add_int_val, std::get<int64_t>(v.payload)));
      case ValueKind::Bool:
        return evalue(fbb, fb::KernelTypes::Bool,
                      single<fb::BoolBuilder>(fbb, &fb::BoolBuilder::add_bool_val, std::get<bool>(v.payload)));
      case ValueKind::Double:
        return evalue(fbb, fb::KernelTypes::Double,
                      single<fb::DoubleBuilder>(fbb, &fb::DoubleBuilder::add_double_val, std::get<double>(v.payload)));
      case ValueKind::String: {
        auto s = str(fbb, std::get<std::string>(v.payload));
        return evalue(fbb, fb::KernelTypes::String, single<fb::StringBuilder>(fbb, &fb::StringBuilder::add_string_val, s));
      }
      case ValueKind::Tensor: {
        auto t = tensor(fbb, v.tensor(), plan_.bufferIdx[mi][vi], w);
        if (!t) return t.error();
        return evalue(fbb, fb::KernelTypes::Tensor, t.value());
      }
      case ValueKind::IntList: {
        auto r = ids(std::get<IntList>(v.payload).items, false);
        if (!r) return r.error();
        auto items = vec(fbb, std::vector<int64_t>(r->begin(), r->end()));
        return evalue(fbb, fb::KernelTypes::IntList, single<fb::IntListBuilder>(fbb, &fb::IntListBuilder::add_items, items));
      }
      case ValueKind::DoubleList: {
        auto items = vec(fbb, std::get<DoubleList>(v.payload).items);
        return evalue(fbb, fb::KernelTypes::DoubleList,
                      single<fb::DoubleListBuilder>(fbb, &fb::DoubleListBuilder::add_items, items));
      }
      case ValueKind::BoolList: {
        std::vector<uint8_t> bools;
        for (uint8_t b : std::get<BoolList>(v.payload).items) bools.push_back(b ? 1 : 0);
        auto items = vec(fbb, bools);
        return evalue(fbb, fb::KernelTypes::BoolList,
                      single<fb::BoolListBuilder>(fbb, &fb::BoolListBuilder::add_items, items));
      }
      case ValueKind::TensorList: {
        auto r = ids(std::get<TensorList>(v.payload).items, false);
        if (!r) return r.error();
        auto items = vec(fbb, r.value());
        return evalue(fbb, fb::KernelTypes::TensorList,
                      single<fb::TensorListBuilder>(fbb, &fb::TensorListBuilder::add_items, items));
      }
      case ValueKind::OptionalTensorList: {
        auto r = ids(std::get<OptionalTensorList>(v.payload).items, true);
        if (!r) return r.error();
        auto items = vec(fbb, r.value());
        return evalue(fbb, fb::KernelTypes::OptionalTensorList,
                      single<fb::OptionalTensorListBuilder>(fbb, &fb::OptionalTensorListBuilder::add_items, items));
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
        auto args = vec(fbb, std::vector<int32_t>(n.args.begin(), n.args.end()));
        fb::KernelCallBuilder k(fbb);
        k.add_op_index(n.op);
        k.add_args(args);
        return instr(fbb, fb::InstructionArguments::KernelCall, k.Finish());
      }
      case NodeKind::Delegate: {
        if (n.delegate < 0 || static_cast<size_t>(n.delegate) >= m.delegates.size())
          return plan_.error(ErrorCode::OutOfRange, w + ".delegate",
                             "< " + std::to_string(m.delegates.size()) + " delegates", std::to_string(n.delegate));
        auto args = vec(fbb, std::vector<int32_t>(n.args.begin(), n.args.end()));
        fb::DelegateCallBuilder d(fbb);
        d.add_delegate_index(n.delegate);
        d.add_args(args);
        return instr(fbb, fb::InstructionArguments::DelegateCall, d.Finish());
      }
      case NodeKind::Move: {
        if (auto s = need(1); !s) return s.error();
        ValueId to = n.args.size() >= 2 ? n.args[1] : (n.outputs.empty() ? kNoValue : n.outputs[0]);
        if (auto s = checkValue(to, nv, w + " move destination"); !s) return s.error();
        fb::MoveCallBuilder mv(fbb);
        mv.add_move_from(n.args[0]);
        mv.add_move_to(to);
        return instr(fbb, fb::InstructionArguments::MoveCall, mv.Finish());
      }
      case NodeKind::JumpFalse: {
        if (auto s = need(1); !s) return s.error();
        if (n.jumpTarget < 0 || n.jumpTarget > static_cast<int64_t>(chainSize))
          return plan_.error(ErrorCode::OutOfRange, w + ".jumpTarget",
                             "an instruction of its chain (<= " + std::to_string(chainSize) + ")",
                             std::to_string(n.jumpTarget));
        fb::JumpFalseCallBuilder j(fbb);
        j.add_cond_value_index(n.args[0]);
        j.add_destination_instruction(static_cast<int32_t>(n.jumpTarget));
        return instr(fbb, fb::InstructionArguments::JumpFalseCall, j.Finish());
      }
      case NodeKind::Free: {
        if (auto s = need(1); !s) return s.error();
        return instr(fbb, fb::InstructionArguments::FreeCall,
                     single<fb::FreeCallBuilder>(fbb, &fb::FreeCallBuilder::add_value_index, n.args[0]));
      }
      case NodeKind::Cond:  // the emitter inlines control flow as jumps
      case NodeKind::Map:
      case NodeKind::Scan:
        return plan_.error(ErrorCode::Invalid, w + " kind", "instructions (control flow inlined by the emitter)",
                           std::string("a ") + nodeKindName(n.kind) + " node");
    }
    return plan_.error(ErrorCode::Invalid, w + " kind", "a known node kind", std::to_string(static_cast<int>(n.kind)));
  }

  flatbuffers::Offset<fb::FrameList> frames(Fbb& fbb, const Node& n) {
    std::vector<flatbuffers::Offset<fb::Frame>> fr;
    for (const auto& f : n.meta.stackTrace) {
      auto file = str(fbb, f.file);
      auto name = str(fbb, f.function);
      auto context = str(fbb, f.context);
      fb::FrameBuilder t(fbb);
      t.add_filename(file);
      t.add_lineno(f.line);
      t.add_name(name);
      t.add_context(context);
      fr.push_back(t.Finish());
    }
    auto items = vec(fbb, fr);
    return single<fb::FrameListBuilder>(fbb, &fb::FrameListBuilder::add_items, items);
  }

  using ChainsOffset = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Chain>>>;
  /// The method's chains: nodes grouped by Node::chain, in order within each chain.
  Result<ChainsOffset> chains(Fbb& fbb, const Method& m, size_t mi) {
    std::string w = plan_.where(mi);
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
    std::vector<flatbuffers::Offset<fb::Chain>> list;
    for (uint64_t c = 0; c < nchains; ++c) {
      // The IR does not keep chain inputs/outputs; ExecuTorch writes them empty.
      auto chainIns = vec(fbb, std::vector<int32_t>{});
      auto chainOuts = vec(fbb, std::vector<int32_t>{});
      std::vector<flatbuffers::Offset<fb::Instruction>> instrs;
      for (size_t ni : byChain[c]) {
        if (auto s = room(fbb, 4096 + 4 * m.nodes[ni].args.size(), w + ".chains"); !s) return s.error();
        auto r = instruction(fbb, m, mi, ni, static_cast<uint32_t>(byChain[c].size()));
        if (!r) return r.error();
        instrs.push_back(r.value());
      }
      auto instrVec = vec(fbb, instrs);
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
        stVec = vec(fbb, st);
      }
      fb::ChainBuilder chain(fbb);
      chain.add_inputs(chainIns);
      chain.add_outputs(chainOuts);
      chain.add_instructions(instrVec);
      if (!stVec.IsNull()) chain.add_stacktrace(stVec);
      list.push_back(chain.Finish());
    }
    return vec(fbb, list);
  }

  using DelegatesOffset = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::BackendDelegate>>>;
  Result<DelegatesOffset> delegates(Fbb& fbb, const Method& m, size_t mi) {
    std::string w = plan_.where(mi);
    std::vector<flatbuffers::Offset<fb::BackendDelegate>> dels;
    for (size_t d = 0; d < m.delegates.size(); ++d) {
      const Delegate& del = m.delegates[d];
      uint64_t specBytes = 0;
      for (const auto& cs : del.compileSpecs) specBytes += 64 + cs.key.size() + cs.value.size();
      if (auto s = room(fbb, 4096 + specBytes, w + ".delegates"); !s) return s.error();
      auto id = str(fbb, del.backendId);
      const auto& ref = plan_.delegateRefs[mi][d];
      fb::BackendDelegateDataReferenceBuilder processedBuilder(fbb);
      processedBuilder.add_location(ref.segment ? fb::DataLocation::SEGMENT : fb::DataLocation::INLINE);
      processedBuilder.add_index(ref.index);
      auto processed = processedBuilder.Finish();
      std::vector<flatbuffers::Offset<fb::CompileSpec>> specs;
      for (const auto& cs : del.compileSpecs) {
        auto key = str(fbb, cs.key);
        auto bytes = vec(fbb, cs.value);
        fb::CompileSpecBuilder t(fbb);
        t.add_key(key);
        t.add_value(bytes);
        specs.push_back(t.Finish());
      }
      auto specVec = vec(fbb, specs);
      fb::BackendDelegateBuilder t(fbb);
      t.add_id(id);
      t.add_processed(processed);
      t.add_compile_specs(specVec);
      dels.push_back(t.Finish());
    }
    return vec(fbb, dels);
  }

  Result<flatbuffers::Offset<fb::ExecutionPlan>> method(Fbb& fbb, size_t mi) {
    const Method& m = p_.methods[mi];
    std::string w = plan_.where(mi);
    size_t nv = m.values.size();
    if (auto s = room(fbb, 4096 + m.name.size() + m.encodedInputSpec.size() + m.encodedOutputSpec.size() +
                               8 * m.nonConstBufferSizes.size() + 64 * m.operators.size(),
                      w);
        !s)
      return s.error();
    // Children in ExecutionPlan's field order: name, container_meta_type, values,
    // inputs, outputs, chains, operators, delegates, non_const_buffer_sizes.
    auto name = str(fbb, m.name);
    auto inSpec = str(fbb, m.encodedInputSpec);
    auto outSpec = str(fbb, m.encodedOutputSpec);
    fb::ContainerMetadataBuilder metaBuilder(fbb);
    metaBuilder.add_encoded_inp_str(inSpec);
    metaBuilder.add_encoded_out_str(outSpec);
    auto meta = metaBuilder.Finish();

    std::vector<flatbuffers::Offset<fb::EValue>> values;
    values.reserve(nv);
    for (size_t vi = 0; vi < nv; ++vi) {
      if (auto s = room(fbb, 4096 + payloadBytes(m.values[vi]), w + ".values"); !s) return s.error();
      auto r = value(fbb, m, mi, vi);
      if (!r) return r.error();
      values.push_back(r.value());
    }
    auto valuesVec = vec(fbb, values);
    std::vector<int32_t> ins, outs;
    for (ValueId x : m.inputs) {
      if (auto s = checkValue(x, nv, w + ".inputs"); !s) return s.error();
      ins.push_back(x);
    }
    for (ValueId x : m.outputs) {
      if (auto s = checkValue(x, nv, w + ".outputs"); !s) return s.error();
      outs.push_back(x);
    }
    auto insVec = vec(fbb, ins);
    auto outsVec = vec(fbb, outs);
    auto chainsVec = chains(fbb, m, mi);
    if (!chainsVec) return chainsVec.error();
    std::vector<flatbuffers::Offset<fb::Operator>> ops;
    for (const auto& o : m.operators) {
      auto opName = str(fbb, o.name);
      auto overload = str(fbb, o.overload);
      fb::OperatorBuilder t(fbb);
      t.add_name(opName);
      t.add_overload(overload);
      ops.push_back(t.Finish());
    }
    auto opsVec = vec(fbb, ops);
    auto delsVec = delegates(fbb, m, mi);
    if (!delsVec) return delsVec.error();
    for (size_t i = 0; i < m.nonConstBufferSizes.size(); ++i)
      if (m.nonConstBufferSizes[i] < 0)
        return plan_.error(ErrorCode::Invalid, w + ".nonConstBufferSizes[" + std::to_string(i) + "]", ">= 0",
                           std::to_string(m.nonConstBufferSizes[i]));
    auto sizesVec = vec(fbb, m.nonConstBufferSizes);
    // non_const_buffer_device: one entry per arena not in CPU memory, none at all
    // for a CPU-only method (ExecuTorch's _build_non_const_buffer_device).
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NonConstBufferDevice>>> devicesVec = 0;
    if (std::any_of(m.arenaDevices.begin(), m.arenaDevices.end(), [](const Device& d) { return !d.isCpu(); })) {
      std::vector<flatbuffers::Offset<fb::NonConstBufferDevice>> devices;
      for (size_t i = 0; i < m.arenaDevices.size(); ++i) {
        if (m.arenaDevices[i].isCpu()) continue;
        if (i >= m.nonConstBufferSizes.size())
          return plan_.error(ErrorCode::Invalid, w + ".arenaDevices[" + std::to_string(i) + "]",
                             "an arena of non_const_buffer_sizes", "mem_id " + std::to_string(i));
        fb::NonConstBufferDeviceBuilder d(fbb);
        d.add_buffer_idx(static_cast<int32_t>(i));
        d.add_device_type(static_cast<fb::DeviceType>(m.arenaDevices[i].type));
        d.add_device_index(m.arenaDevices[i].index);
        devices.push_back(d.Finish());
      }
      devicesVec = fbb.CreateVector(devices);
    }
    fb::ExecutionPlanBuilder plan(fbb);
    plan.add_name(name);
    plan.add_container_meta_type(meta);
    plan.add_values(valuesVec);
    plan.add_inputs(insVec);
    plan.add_outputs(outsVec);
    plan.add_chains(chainsVec.value());
    plan.add_operators(opsVec);
    plan.add_delegates(delsVec.value());
    plan.add_non_const_buffer_sizes(sizesVec);
    if (!devicesVec.IsNull()) plan.add_non_const_buffer_device(devicesVec);
    return plan.Finish();
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
