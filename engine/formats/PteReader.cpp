#include "engine/formats/PteReader.h"

#include <map>
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstring>

#include "engine/support/FormatUtil.h"
#include "engine/formats/schema/bundled_program_generated.h"
#include "engine/formats/schema/program_generated.h"

namespace lstudio {
namespace fb = executorch_flatbuffer;

namespace {

/// Layer 3 helper: when full verification fails, walks the main tables with
/// fresh verifiers to name the deepest structure that fails and its offset.
class VerificationLocator {
 public:
  VerificationLocator(const uint8_t* buf, size_t size, flatbuffers::Verifier::Options opts)
      : buf_(buf), size_(size), opts_(opts) {}

  using Hit = std::pair<uint64_t, std::string>;

  /// Returns (offset relative to buf, path) of the failing structure.
  Hit locate() {
    if (size_ < 8) return {0, "root offset"};
    uint32_t root = flatbuffers::ReadScalar<uint32_t>(buf_);
    if (root >= size_) return {0, "root table offset"};
    const auto* program = flatbuffers::GetRoot<fb::Program>(buf_);
    auto v = fresh();
    if (!table(program)->VerifyTableStart(v)) return {root, "Program table"};
    Hit hit{root, "Program"};
    auto none = [](const auto*, Hit&) {};
    using P = fb::Program;
    if (vectorOfTables(program, P::VT_EXECUTION_PLAN, [&] { return program->execution_plan(); }, "execution_plan", hit,
                       [&](const fb::ExecutionPlan* plan, Hit& h) { planFailure(plan, h); }) ||
        vectorOfTables(program, P::VT_CONSTANT_BUFFER, [&] { return program->constant_buffer(); }, "constant_buffer", hit, none) ||
        vectorOfTables(program, P::VT_BACKEND_DELEGATE_DATA, [&] { return program->backend_delegate_data(); },
                       "backend_delegate_data", hit, none) ||
        vectorOfTables(program, P::VT_SEGMENTS, [&] { return program->segments(); }, "segments", hit, none) ||
        vectorOfTables(program, P::VT_MUTABLE_DATA_SEGMENTS, [&] { return program->mutable_data_segments(); },
                       "mutable_data_segments", hit, none) ||
        vectorOfTables(program, P::VT_NAMED_DATA, [&] { return program->named_data(); }, "named_data", hit, none))
      return hit;
    auto vc = fresh();
    if (!table(program)->VerifyOffset(vc, P::VT_CONSTANT_SEGMENT)) return {root, "Program.constant_segment"};
    if (auto* cs = program->constant_segment(); cs && !cs->Verify(vc)) return {off(cs), "Program.constant_segment"};
    return {root, "Program (a scalar field or the table's bounds)"};
  }

 private:
  template <class T>
  static const flatbuffers::Table* table(const T* t) { return reinterpret_cast<const flatbuffers::Table*>(t); }
  flatbuffers::Verifier fresh() const { return flatbuffers::Verifier(buf_, size_, opts_); }
  uint64_t off(const void* p) const { return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - buf_); }

  /// True when the failure is in this vector field of `parent` (whose table
  /// start is verified); `hit` is then the deepest failing element found.
  /// `get` reads the field and is only called once its offset is verified.
  template <class Parent, class Get, class Descend>
  bool vectorOfTables(const Parent* parent, flatbuffers::voffset_t vt, Get get, const std::string& name, Hit& hit,
                      Descend&& descend) {
    auto v = fresh();
    std::string base = hit.second + "." + name;
    if (!table(parent)->VerifyOffset(v, vt)) {
      hit = {off(parent), base + " (field offset)"};
      return true;
    }
    auto* vec = get();
    if (!vec) return false;
    if (!v.VerifyVector(vec)) {
      hit = {off(vec), base + " (vector length)"};
      return true;
    }
    for (uint32_t i = 0; i < vec->size(); ++i) {
      auto ve = fresh();
      // The element's offset lies inside the verified vector; its target may not.
      auto* slot = reinterpret_cast<const uint8_t*>(vec->Data()) + i * sizeof(flatbuffers::uoffset_t);
      if (!ve.VerifyOffset(static_cast<size_t>(slot - buf_))) {
        hit = {off(slot), base + "[" + std::to_string(i) + "] (offset)"};
        return true;
      }
      const auto* e = vec->Get(i);
      if (!e->Verify(ve)) {
        hit = {off(e), base + "[" + std::to_string(i) + "]"};
        auto vs = fresh();
        if (table(e)->VerifyTableStart(vs)) descend(e, hit);
        return true;
      }
    }
    return false;
  }

  void planFailure(const fb::ExecutionPlan* plan, Hit& hit) {
    auto none = [](const auto*, Hit&) {};
    using E = fb::ExecutionPlan;
    vectorOfTables(plan, E::VT_VALUES, [&] { return plan->values(); }, "values", hit, none) ||
        vectorOfTables(plan, E::VT_CHAINS, [&] { return plan->chains(); }, "chains", hit,
                       [&](const fb::Chain* c, Hit& h) {
                         vectorOfTables(c, fb::Chain::VT_INSTRUCTIONS, [&] { return c->instructions(); },
                                        "instructions", h, none);
                       }) ||
        vectorOfTables(plan, E::VT_OPERATORS, [&] { return plan->operators(); }, "operators", hit, none) ||
        vectorOfTables(plan, E::VT_DELEGATES, [&] { return plan->delegates(); }, "delegates", hit, none);
  }

  const uint8_t* buf_;
  size_t size_;
  flatbuffers::Verifier::Options opts_;
};

flatbuffers::Verifier::Options verifierOptions(uint64_t size) {
  flatbuffers::Verifier::Options o;
  o.max_depth = 64;
  // Each distinct table takes at least 8 bytes; the bound stops DAG-shaped
  // files from making verification exponential.
  o.max_tables = static_cast<flatbuffers::uoffset_t>(std::max<uint64_t>(1'000'000, size / 8 + 1024));
  o.check_alignment = true;
  return o;
}

/// Builds the IR from a verified program, enforcing the semantic rules.
class ProgramBuilder {
 public:
  ProgramBuilder(Program& out, const fb::Program* fbp, const uint8_t* base, uint64_t baseOffset)
      : p_(out), fbp_(fbp), base_(base), baseOffset_(baseOffset) {}

  Status build() {
    if (auto s = readSegments(); !s) return s;
    if (auto s = readConstants(); !s) return s;
    if (auto s = readDelegateData(); !s) return s;
    if (auto s = readNamedData(); !s) return s;
    if (auto* plans = fbp_->execution_plan()) {
      p_.methods.reserve(plans->size());
      for (uint32_t i = 0; i < plans->size(); ++i) {
        Method m;
        if (auto s = readMethod(plans->Get(i), i, m); !s) return s;
        p_.methods.push_back(std::move(m));
      }
    }
    return Ok{};
  }

 private:
  uint64_t fileOffsetOf(const void* ptr) const {
    return baseOffset_ + static_cast<uint64_t>(static_cast<const uint8_t*>(ptr) - base_);
  }
  Error err(ErrorCode code, const void* at, std::string what, std::string expected = {}, std::string found = {}) const {
    return Error{code, p_.path, at ? std::optional<uint64_t>(fileOffsetOf(at)) : std::nullopt, std::move(what),
                 std::move(expected), std::move(found)};
  }
  /// flatbuffers' verifier checks a vector's length field, not that 8-byte
  /// elements are 8-byte aligned; reading misaligned ones is undefined.
  template <class T>
  Status aligned(const flatbuffers::Vector<T>* v, const std::string& what) const {
    if (v && v->size() > 0 && (reinterpret_cast<uintptr_t>(v->Data()) % alignof(T)) != 0)
      return err(ErrorCode::Verification, v->Data(), what + " elements",
                 std::to_string(alignof(T)) + "-byte aligned", "a misaligned vector");
    return Ok{};
  }
  Bytes bytesAt(uint64_t absOffset, uint64_t size) const {
    return Bytes{p_.backing->data() + absOffset, size, absOffset};
  }

  Status readSegments() {
    auto* segs = fbp_->segments();
    if (!segs || segs->size() == 0) return Ok{};
    const auto& f = p_.facts;
    if (f.header == ContainerFacts::Header::None) {
      // Without an extended header there is no segment base: only empty
      // segments (ExecuTorch writes one as the constant placeholder) make sense.
      for (uint32_t i = 0; i < segs->size(); ++i) {
        if (segs->Get(i)->size() != 0)
          return err(ErrorCode::Invalid, segs->Get(i),
                     "segments[" + std::to_string(i) + "] has data but the file has no eh00 header to locate it",
                     "an eh00 header at byte 8", "no header");
        p_.segments.push_back(Segment{baseOffset_ + f.programSize, 0});
      }
      return Ok{};
    }
    uint64_t fileEnd = baseOffset_ + programSpan_;
    p_.segments.reserve(segs->size());
    for (uint32_t i = 0; i < segs->size(); ++i) {
      auto* s = segs->Get(i);
      uint64_t start = 0, end = 0;
      if (!checkedAdd(f.segmentBaseOffset, s->offset(), start) || !checkedAdd(start, s->size(), end) ||
          end > fileEnd)
        return err(ErrorCode::OutOfRange, s, "segments[" + std::to_string(i) + "] lies outside the file",
                   "end <= " + std::to_string(fileEnd),
                   "offset " + std::to_string(s->offset()) + " + size " + std::to_string(s->size()) +
                       " from segment base " + std::to_string(f.segmentBaseOffset));
      p_.segments.push_back(Segment{start, s->size()});
    }
    return Ok{};
  }

  Status readConstants() {
    auto* cb = fbp_->constant_buffer();
    auto* cs = fbp_->constant_segment();
    if (cs)
      if (auto s = aligned(cs->offsets(), "constant_segment.offsets"); !s) return s;
    bool hasSegmentOffsets = cs && cs->offsets() && cs->offsets()->size() > 0;
    bool hasBuffers = cb && cb->size() > 0;
    if (hasSegmentOffsets && hasBuffers && cb->size() > 1)
      return err(ErrorCode::Invalid, cb, "constant_buffer and constant_segment are both used",
                 "only one constant storage", std::to_string(cb->size()) + " buffers and " +
                                                  std::to_string(cs->offsets()->size()) + " segment offsets");
    if (hasSegmentOffsets) {
      p_.facts.constants = ContainerFacts::Constants::ConstantSegment;
      uint32_t si = cs->segment_index();
      if (si >= p_.segments.size())
        return err(ErrorCode::OutOfRange, cs, "constant_segment.segment_index",
                   "< " + std::to_string(p_.segments.size()), std::to_string(si));
      const Segment& seg = p_.segments[si];
      auto* offs = cs->offsets();
      p_.constants.reserve(offs->size());
      for (uint32_t i = 0; i < offs->size(); ++i) {
        uint64_t o = offs->Get(i);
        uint64_t next = i + 1 < offs->size() ? offs->Get(i + 1) : seg.size;
        if (o > seg.size || next < o) {
          // Offsets need not be sorted in principle; only the start is checked here,
          // each tensor's own length is checked against the segment end.
          if (o > seg.size)
            return err(ErrorCode::OutOfRange, offs, "constant_segment.offsets[" + std::to_string(i) + "]",
                       "<= segment size " + std::to_string(seg.size), std::to_string(o));
          next = seg.size;
        }
        p_.constants.push_back(bytesAt(seg.offset + o, std::min(next, seg.size) - o));
      }
      constantLimit_.reserve(offs->size());
      for (uint32_t i = 0; i < offs->size(); ++i) constantLimit_.push_back(seg.size - offs->Get(i));
    } else if (hasBuffers) {
      p_.facts.constants = ContainerFacts::Constants::ConstantBuffer;
      p_.constants.reserve(cb->size());
      for (uint32_t i = 0; i < cb->size(); ++i) {
        auto* st = cb->Get(i)->storage();
        Bytes b = st ? Bytes{st->data(), st->size(), fileOffsetOf(st->data())} : Bytes{};
        p_.constants.push_back(b);
        constantLimit_.push_back(b.size);
      }
    }
    return Ok{};
  }

  Status readDelegateData() {
    if (auto* dd = fbp_->backend_delegate_data()) {
      for (uint32_t i = 0; i < dd->size(); ++i) {
        auto* d = dd->Get(i)->data();
        p_.inlineDelegateData.push_back(d ? Bytes{d->data(), d->size(), fileOffsetOf(d->data())} : Bytes{});
      }
    }
    return Ok{};
  }

  Status readNamedData() {
    auto* nd = fbp_->named_data();
    if (!nd) return Ok{};
    for (uint32_t i = 0; i < nd->size(); ++i) {
      auto* e = nd->Get(i);
      if (!e->key())
        return err(ErrorCode::Invalid, e, "named_data[" + std::to_string(i) + "].key", "a string", "null");
      if (e->segment_index() >= p_.segments.size())
        return err(ErrorCode::OutOfRange, e, "named_data[" + std::to_string(i) + "].segment_index",
                   "< " + std::to_string(p_.segments.size()), std::to_string(e->segment_index()));
      const Segment& s = p_.segments[e->segment_index()];
      p_.namedData.push_back(NamedBlob{e->key()->str(), e->segment_index(), bytesAt(s.offset, s.size)});
    }
    return Ok{};
  }

  Status readTensor(const fb::Tensor* t, const Method& m, const std::string& where, TensorSpec& spec) {
    int raw = static_cast<int>(t->scalar_type());
    if (!isKnownScalarType(raw) || elementSize(static_cast<ScalarType>(raw)) == 0)
      return err(ErrorCode::Invalid, t, where + ".scalar_type", "a defined ExecuTorch scalar type", std::to_string(raw));
    spec.dtype = static_cast<ScalarType>(raw);
    int dyn = static_cast<int>(t->shape_dynamism());
    if (dyn < 0 || dyn > 2)
      return err(ErrorCode::Invalid, t, where + ".shape_dynamism", "0, 1 or 2", std::to_string(dyn));
    spec.dynamism = static_cast<ShapeDynamism>(dyn);
    if (auto* sz = t->sizes()) {
      spec.sizes.reserve(sz->size());
      for (uint32_t i = 0; i < sz->size(); ++i) {
        int32_t s = sz->Get(i);
        // Sizes of unbounded dynamic tensors mean nothing; any value is kept as 0.
        if (s < 0 && spec.dynamism == ShapeDynamism::DynamicUnbound) s = 0;
        if (s < 0)
          return err(ErrorCode::Invalid, sz, where + ".sizes[" + std::to_string(i) + "]", "a size >= 0",
                     std::to_string(s));
        spec.sizes.push_back(s);
      }
    }
    if (auto* d = t->dim_order(); d && d->size() > 0) {
      if (d->size() != spec.sizes.size())
        return err(ErrorCode::Invalid, d, where + ".dim_order", std::to_string(spec.sizes.size()) + " entries (one per dim)",
                   std::to_string(d->size()));
      std::vector<bool> seen(d->size(), false);
      for (uint32_t i = 0; i < d->size(); ++i) {
        uint8_t x = d->Get(i);
        if (x >= d->size() || seen[x])
          return err(ErrorCode::Invalid, d, where + ".dim_order", "a permutation of 0.." + std::to_string(d->size() - 1),
                     "entry " + std::to_string(x) + " at position " + std::to_string(i));
        seen[x] = true;
        spec.dimOrder.push_back(x);
      }
    }
    spec.storageOffset = t->storage_offset();
    spec.layout = t->layout();
    spec.requiresGrad = t->requires_grad();
    auto nbytes = spec.nbytes();
    if (!nbytes)
      return err(ErrorCode::Overflow, t, where + " byte size", "numel x element size < 2^64", spec.shapeString());

    if (auto* a = t->allocation_info()) {
      uint64_t offset = (static_cast<uint64_t>(a->memory_offset_high()) << 32) | a->memory_offset_low();
      spec.slot = PlannedSlot{a->memory_id(), offset};
      const auto& arenas = m.nonConstBufferSizes;
      if (a->memory_id() >= arenas.size())
        return err(ErrorCode::OutOfRange, a, where + ".allocation_info.memory_id",
                   "< " + std::to_string(arenas.size()) + " (entries in non_const_buffer_sizes)",
                   std::to_string(a->memory_id()));
      uint64_t end = 0;
      if (spec.dynamism != ShapeDynamism::DynamicUnbound &&
          (!checkedAdd(offset, *nbytes, end) || end > static_cast<uint64_t>(arenas[a->memory_id()])))
        return err(ErrorCode::OutOfRange, a, where + " planned bytes lie outside arena " + std::to_string(a->memory_id()),
                   "offset + " + std::to_string(*nbytes) + " <= " + std::to_string(arenas[a->memory_id()]),
                   "offset " + std::to_string(offset));
    }
    spec.dataBufferIndex = t->data_buffer_idx();
    if (auto* x = t->extra_tensor_info()) {
      if (x->fully_qualified_name()) spec.fqn = x->fully_qualified_name()->str();
      if (x->location() == fb::TensorDataLocation::EXTERNAL) {
        if (spec.fqn.empty())
          return err(ErrorCode::Invalid, x, where + ".extra_tensor_info", "a fully_qualified_name for an EXTERNAL tensor",
                     "none");
        spec.external = true;
        spec.source = ConstantSource::External;
      } else if (static_cast<int>(x->location()) != 0) {
        return err(ErrorCode::Invalid, x, where + ".extra_tensor_info.location", "SEGMENT (0) or EXTERNAL (1)",
                   std::to_string(static_cast<int>(x->location())));
      }
      if (spec.slot && spec.dataBufferIndex > 0 && x->mutable_data_segments_idx() != 0)
        spec.mutableSegmentIndex = x->mutable_data_segments_idx();
    }
    if (spec.external) return Ok{};
    if (spec.dataBufferIndex == 0) return Ok{};
    if (spec.slot) return readMutableInitial(t, where, spec, *nbytes);
    // A constant.
    if (spec.dataBufferIndex >= p_.constants.size())
      return err(ErrorCode::OutOfRange, t, where + ".data_buffer_idx", "< " + std::to_string(p_.constants.size()) + " constants",
                 std::to_string(spec.dataBufferIndex));
    if (*nbytes > constantLimit_[spec.dataBufferIndex])
      return err(ErrorCode::OutOfRange, t, where + " constant data runs past the end of its storage",
                 std::to_string(*nbytes) + " bytes available", std::to_string(constantLimit_[spec.dataBufferIndex]));
    spec.source = p_.facts.constants == ContainerFacts::Constants::ConstantBuffer ? ConstantSource::ConstantBuffer
                                                                                  : ConstantSource::ConstantSegment;
    Bytes b = p_.constants[spec.dataBufferIndex];
    b.size = *nbytes;
    spec.data = b;
    return Ok{};
  }

  Status readMutableInitial(const fb::Tensor* t, const std::string& where, TensorSpec& spec, uint64_t nbytes) {
    auto* mds = fbp_->mutable_data_segments();
    uint64_t idx = spec.mutableSegmentIndex.value_or(0);
    if ((!mds || mds->size() == 0) && !spec.mutableSegmentIndex && spec.dataBufferIndex < p_.constants.size() &&
        nbytes <= constantLimit_[spec.dataBufferIndex]) {
      // Programs written before mutable_data_segments existed kept initial
      // values in the constant table.
      spec.source = p_.facts.constants == ContainerFacts::Constants::ConstantBuffer ? ConstantSource::ConstantBuffer
                                                                                    : ConstantSource::ConstantSegment;
      spec.data = p_.constants[spec.dataBufferIndex];
      spec.data.size = nbytes;
      return Ok{};
    }
    if (!mds || idx >= mds->size())
      return err(ErrorCode::OutOfRange, t, where + " initial value: mutable_data_segments index",
                 "< " + std::to_string(mds ? mds->size() : 0), std::to_string(idx));
    auto* sub = mds->Get(static_cast<uint32_t>(idx));
    if (sub->segment_index() >= p_.segments.size())
      return err(ErrorCode::OutOfRange, sub, "mutable_data_segments[" + std::to_string(idx) + "].segment_index",
                 "< " + std::to_string(p_.segments.size()), std::to_string(sub->segment_index()));
    auto* offs = sub->offsets();
    if (auto s = aligned(offs, "mutable_data_segments offsets"); !s) return s;
    if (!offs || spec.dataBufferIndex >= offs->size())
      return err(ErrorCode::OutOfRange, t, where + ".data_buffer_idx (mutable)",
                 "< " + std::to_string(offs ? offs->size() : 0), std::to_string(spec.dataBufferIndex));
    const Segment& seg = p_.segments[sub->segment_index()];
    uint64_t o = offs->Get(spec.dataBufferIndex), end = 0;
    if (!checkedAdd(o, nbytes, end) || end > seg.size)
      return err(ErrorCode::OutOfRange, offs, where + " initial value lies outside its segment",
                 "offset + " + std::to_string(nbytes) + " <= " + std::to_string(seg.size), "offset " + std::to_string(o));
    spec.source = ConstantSource::MutableSegment;
    spec.data = bytesAt(seg.offset + o, nbytes);
    return Ok{};
  }

  Status checkIndex(int64_t idx, size_t count, const void* at, const std::string& what, bool allowNone = false) {
    if (allowNone && idx == -1) return Ok{};
    if (idx < 0 || static_cast<uint64_t>(idx) >= count)
      return err(ErrorCode::OutOfRange, at, what, "a value index < " + std::to_string(count), std::to_string(idx));
    return Ok{};
  }

  Status readValues(const fb::ExecutionPlan* plan, const std::string& mname, Method& m) {
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

  /// Out-variant kernels repeat their out arguments as returns at the end
  /// of args; the repeated tail is what the kernel writes.
  /// The outs of a kernel call, found from its return: the outs repeated,
  /// or (several outs, as ExecuTorch's emitter writes them) a TensorList of
  /// the args just before it.
  static std::vector<ValueId> repeatedTail(const std::vector<ValueId>& args, const std::vector<Value>& values) {
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

  Status readChains(const fb::ExecutionPlan* plan, const std::string& mname, Method& m) {
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

  /// One instruction of a chain of `chainSize` as a node: what it runs, what it reads and writes.
  Status readInstruction(const fb::ExecutionPlan* plan, const fb::Instruction* in, uint32_t chainSize, const std::string& w,
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

  /// The frames an instruction's debug stack trace lists.
  static std::vector<StackFrame> stackTrace(const fb::FrameList* trace) {
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
  static void nameNodes(Method& m) {
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
      }
      if (base.empty()) base = "node";
      int k = used[base]++;
      n.name = k ? base + "_" + std::to_string(k) : base;
    }
  }

  Status readMethod(const fb::ExecutionPlan* plan, uint32_t index, Method& m) {
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

  Program& p_;
  const fb::Program* fbp_;
  const uint8_t* base_;   // start of the program's bytes
  uint64_t baseOffset_;   // its offset in the backing file
  std::vector<uint64_t> constantLimit_;  // bytes available from each constant's start
 public:
  uint64_t programSpan_ = 0;  // bytes of the program including segments
};

/// Layers 1 to 4 for a program that starts at `base` within the backing file.
Result<Program> readEmbeddedProgram(std::shared_ptr<const MappedFile> file, uint64_t base, uint64_t span,
                                    Program p) {
  const std::string& path = file->path();
  const uint8_t* data = file->data() + base;
  auto at = [&](uint64_t rel) { return std::optional<uint64_t>(base + rel); };
  if (span < 8)
    return Error{ErrorCode::Truncated, path, at(0), "file too short for a flatbuffer", "at least 8 bytes",
                 std::to_string(span) + " bytes"};
  std::string ident(reinterpret_cast<const char*>(data) + 4, 4);
  if (ident != "ET12")
    return Error{ErrorCode::BadMagic, path, at(4), "ExecuTorch program identifier", "\"ET12\"", describeMagic(ident)};
  ContainerFacts& f = p.facts;
  f.identifier = ident;
  f.fileSize = file->size();
  f.programSize = span;
  if (span >= 16 && std::memcmp(data + 8, "eh00", 4) == 0) {
    uint32_t len = readLe32(data + 12);
    if (len < 24)
      return Error{ErrorCode::BadHeader, path, at(12), "eh00 header length", ">= 24", std::to_string(len)};
    if (8 + static_cast<uint64_t>(len) > span)
      return Error{ErrorCode::Truncated, path, at(8), "eh00 header", std::to_string(len) + " bytes",
                   std::to_string(span - 8) + " bytes left"};
    f.header = len >= 32 ? ContainerFacts::Header::Eh00 : ContainerFacts::Header::Eh00Short;
    f.headerLength = len;
    f.programSize = readLe64(data + 16);
    uint64_t segBase = readLe64(data + 24);
    f.segmentDataSize = len >= 32 ? readLe64(data + 32) : 0;
    if (f.programSize < 8 + static_cast<uint64_t>(len) || f.programSize > span)
      return Error{ErrorCode::BadHeader, path, at(16), "eh00 program_size",
                   "between " + std::to_string(8 + len) + " and the file size " + std::to_string(span),
                   std::to_string(f.programSize)};
    if (segBase > span || (segBase != 0 && segBase < f.programSize))
      return Error{ErrorCode::BadHeader, path, at(24), "eh00 segment_base_offset",
                   "between program_size " + std::to_string(f.programSize) + " and the file size " + std::to_string(span),
                   std::to_string(segBase)};
    uint64_t segEnd = 0;
    if (!checkedAdd(segBase, f.segmentDataSize, segEnd) || segEnd > span)
      return Error{ErrorCode::Truncated, path, at(32), "segment data announced by eh00",
                   "segment_base_offset + segment_data_size <= " + std::to_string(span),
                   std::to_string(segBase) + " + " + std::to_string(f.segmentDataSize)};
    f.segmentBaseOffset = base + segBase;
  }
  if (f.programSize > FLATBUFFERS_MAX_BUFFER_SIZE)
    return Error{ErrorCode::Unsupported, path, at(16), "flatbuffer part of the program", "< 2 GiB",
                 std::to_string(f.programSize) + " bytes"};
  auto opts = verifierOptions(f.programSize);
  flatbuffers::Verifier verifier(data, f.programSize, opts);
  if (!verifier.VerifyBuffer<fb::Program>("ET12")) {
    VerificationLocator loc(data, f.programSize, opts);
    auto [rel, where] = loc.locate();
    return Error{ErrorCode::Verification, path, at(rel), "flatbuffer verification failed in " + where,
                 "a well-formed Program table", "offsets or lengths that leave the buffer or break alignment"};
  }
  const fb::Program* fbp = fb::GetProgram(data);
  f.schemaVersion = fbp->version();
  ProgramBuilder builder(p, fbp, data, base);
  builder.programSpan_ = span;
  if (auto s = builder.build(); !s) return s.error();
  // Segment alignment is not stored; report the largest power of two every segment start honours.
  uint64_t a = 65536;
  bool any = false;
  for (const auto& s : p.segments) {
    if (s.size == 0) continue;
    any = true;
    while (a > 1 && (s.offset - base) % a != 0) a /= 2;
  }
  f.segmentAlignment = any ? a : 0;
  return p;
}

}  // namespace

Result<Program> readProgram(std::shared_ptr<const MappedFile> file) {
  Program p;
  p.path = file->path();
  p.backing = file;
  const uint8_t* data = file->data();
  uint64_t size = file->size();
  if (size >= 8 && std::memcmp(data + 4, "BP08", 4) == 0) {
    // A bundled program: verify the wrapper, then read the program it embeds.
    namespace bp = bundled_program_flatbuffer;
    if (size > FLATBUFFERS_MAX_BUFFER_SIZE)
      return Error{ErrorCode::Unsupported, p.path, 0, "bundled program size", "< 2 GiB", std::to_string(size)};
    flatbuffers::Verifier v(data, size, verifierOptions(size));
    if (!v.VerifyBuffer<bp::BundledProgram>("BP08"))
      return Error{ErrorCode::Verification, p.path, 0, "flatbuffer verification of the BundledProgram failed",
                   "a well-formed BundledProgram table", "offsets or lengths that leave the file"};
    auto* b = bp::GetBundledProgram(data);
    if (!b->program() || b->program()->size() == 0)
      return Error{ErrorCode::Invalid, p.path, std::nullopt, "BundledProgram.program", "an embedded .pte", "none"};
    p.facts.bundled = true;
    p.facts.embeddedOffset = static_cast<uint64_t>(b->program()->data() - data);
    p.facts.bundledTestSuites = b->method_test_suites() ? b->method_test_suites()->size() : 0;
    uint64_t off = p.facts.embeddedOffset;
    return readEmbeddedProgram(file, off, b->program()->size(), std::move(p));
  }
  return readEmbeddedProgram(file, 0, size, std::move(p));
}

Result<Program> readProgramFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readProgram(std::move(f.value()));
}

}  // namespace lstudio
