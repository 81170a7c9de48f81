#include "engine/formats/pte/ProgramReader.h"

#include <algorithm>

#include "engine/support/FormatUtil.h"

namespace lstudio::pte {

Status ProgramReader::build() {
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

Status ProgramReader::readSegments() {
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

Status ProgramReader::readConstants() {
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

Status ProgramReader::readDelegateData() {
  if (auto* dd = fbp_->backend_delegate_data()) {
    for (uint32_t i = 0; i < dd->size(); ++i) {
      auto* d = dd->Get(i)->data();
      p_.inlineDelegateData.push_back(d ? Bytes{d->data(), d->size(), fileOffsetOf(d->data())} : Bytes{});
    }
  }
  return Ok{};
}

Status ProgramReader::readNamedData() {
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

Status ProgramReader::readTensor(const fb::Tensor* t, const Method& m, const std::string& where, TensorSpec& spec) {
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
    auto device = readDevice(x, static_cast<int>(x->device_type()), x->device_index(), where + ".extra_tensor_info");
    if (!device) return device.error();
    spec.device = *device;
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

Status ProgramReader::readMutableInitial(const fb::Tensor* t, const std::string& where, TensorSpec& spec, uint64_t nbytes) {
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

}  // namespace lstudio::pte
