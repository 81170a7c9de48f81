#include "engine/formats/EtdumpReader.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstring>

#include "engine/formats/schema/etdump_generated.h"
#include "engine/support/FormatUtil.h"

namespace lstudio {
namespace fb = etdump;

namespace {

std::string text(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

template <class T>
std::vector<T> items(const flatbuffers::Vector<T>* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>();
}

/// Whether a vector's elements lie at their natural alignment: flatbuffers 2.0's verifier
/// checks only the length prefix's, and reading an int64 off it would be undefined.
template <class T>
bool elementsAligned(const flatbuffers::Vector<T>* v) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) == 0;
}

/// A logged tensor; false (with `why`) when its dtype is not one ExecuTorch defines or its
/// sizes and strides disagree.
bool readTensor(const fb::Tensor* t, EtdumpTensor& out, std::string& why) {
  if (!t) return why = "a Tensor value without its tensor", false;
  if (!elementsAligned(t->sizes()) || !elementsAligned(t->strides()))
    return why = "sizes or strides not 8-byte aligned", false;
  int raw = static_cast<int>(t->scalar_type());
  if (!isKnownScalarType(raw)) return why = "a tensor of unknown scalar type " + std::to_string(raw), false;
  out.dtype = static_cast<ScalarType>(raw);
  out.sizes = items(t->sizes());
  out.strides = items(t->strides());
  out.offset = t->offset();
  if (out.strides.size() != out.sizes.size())
    return why = std::to_string(out.sizes.size()) + " sizes but " + std::to_string(out.strides.size()) + " strides", false;
  for (size_t i = 0; i < out.sizes.size(); ++i)
    if (out.sizes[i] < 0 || out.strides[i] < 0) return why = "a negative size or stride", false;
  bool empty = std::find(out.sizes.begin(), out.sizes.end(), 0) != out.sizes.end();
  if (out.offset < 0 && !empty) return why = "a negative debug-buffer offset", false;  // -1: an empty tensor
  return true;
}

bool readValue(const fb::Value* v, EtdumpValue& out, std::string& why) {
  if (!v) return true;  // a debug event without an entry: Null
  using K = EtdumpValue::Kind;
  out.output = v->output() && v->output()->bool_val();
  switch (v->val()) {
    case fb::ValueType::Null: out.kind = K::Null; return true;
    case fb::ValueType::Int: out.kind = K::Int, out.integer = v->int_value() ? v->int_value()->int_val() : 0; return true;
    case fb::ValueType::Bool: out.kind = K::Bool, out.flag = v->bool_value() && v->bool_value()->bool_val(); return true;
    case fb::ValueType::Float: out.kind = K::Float, out.number = v->float_value() ? v->float_value()->float_val() : 0; return true;
    case fb::ValueType::Double:
      out.kind = K::Double, out.number = v->double_value() ? v->double_value()->double_val() : 0;
      return true;
    case fb::ValueType::String: out.kind = K::String; return true;
    case fb::ValueType::Tensor: out.kind = K::Tensor, out.tensors.resize(1); return readTensor(v->tensor(), out.tensors[0], why);
    case fb::ValueType::TensorList:
      out.kind = K::TensorList;
      if (v->tensor_list() && v->tensor_list()->tensors())
        for (const fb::Tensor* t : *v->tensor_list()->tensors())
          if (!readTensor(t, out.tensors.emplace_back(), why)) return false;
      return true;
  }
  return why = "a value of unknown type " + std::to_string(static_cast<int>(v->val())), false;
}

}  // namespace

Result<Etdump> readEtdump(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readEtdump(*f.value());
}

Result<Etdump> readEtdump(const MappedFile& file) {
  Etdump d;
  d.path = file.path();
  const uint8_t* data = file.data();
  uint64_t size = file.size();
  auto error = [&](ErrorCode c, std::optional<uint64_t> at, std::string what, std::string expected, std::string found) {
    return Error{c, d.path, at, std::move(what), std::move(expected), std::move(found)};
  };
  // Bytes 0-3: the length of what follows; 4-7: the root offset; 8-11: "ED00".
  if (size < 12)
    return error(ErrorCode::Truncated, 0, "ETDump header", "a size prefix, a root offset and \"ED00\" (12 bytes)",
                 std::to_string(size) + " bytes");
  if (std::memcmp(data + 4, "ET", 2) == 0)
    return error(ErrorCode::BadMagic, 4, "ETDump identifier", "\"ED00\" at byte 8",
                 "an ExecuTorch program (" + std::string(reinterpret_cast<const char*>(data) + 4, 4) +
                     "): open it as the program, and the ETDump beside it");
  if (std::memcmp(data + 8, "ED00", 4) != 0)
    return error(ErrorCode::BadMagic, 8, "ETDump identifier", "\"ED00\"",
                 describeMagic(std::string(reinterpret_cast<const char*>(data) + 8, 4)));
  uint64_t length = readLe32(data);
  if (length + 4 != size)
    return error(length + 4 > size ? ErrorCode::Truncated : ErrorCode::BadHeader, 0, "ETDump size prefix",
                 std::to_string(size - 4) + " bytes after it (the file's size)", std::to_string(length));
  if (size > FLATBUFFERS_MAX_BUFFER_SIZE)
    return error(ErrorCode::Unsupported, 0, "ETDump size", "< 2 GiB", std::to_string(size));
  flatbuffers::Verifier::Options opts;
  opts.max_tables = static_cast<flatbuffers::uoffset_t>(std::max<uint64_t>(1'000'000, size / 8 + 1024));
  flatbuffers::Verifier v(data, size, opts);
  if (!fb::VerifySizePrefixedETDumpBuffer(v))
    return error(ErrorCode::Verification, 4, "flatbuffer verification of the ETDump failed",
                 "a well-formed ETDump table in bytes [4, " + std::to_string(size) + ")", "offsets or lengths that leave it");
  const fb::ETDump* root = fb::GetSizePrefixedETDump(data);
  d.version = root->version();
  if (!root->run_data()) return d;
  for (const fb::RunData* r : *root->run_data()) {
    EtdumpBlock& b = d.blocks.emplace_back();
    b.name = text(r->name());
    b.bundledInput = r->bundled_input_index();
    if (r->allocators())
      for (const fb::Allocator* a : *r->allocators()) b.allocators.push_back(text(a->name()));
    if (!r->events()) continue;
    for (const fb::Event* e : *r->events()) {
      // Where the event's table starts: the offset a message about it names.
      uint64_t at = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(e) - data);
      int members = (e->profile_event() != nullptr) + (e->allocation_event() != nullptr) + (e->debug_event() != nullptr);
      if (members != 1)
        return error(ErrorCode::Invalid, at, "ETDump event " + std::to_string(b.events.size()) + " of block \"" + b.name + "\"",
                     "exactly one of profile_event, allocation_event, debug_event", std::to_string(members) + " set");
      if (const fb::ProfileEvent* p = e->profile_event()) {
        EtdumpProfileEvent x;
        x.name = text(p->name());
        x.chain = p->chain_index();
        x.instruction = p->instruction_id();
        x.delegateDebugId = p->delegate_debug_id_int();
        x.delegateDebugName = text(p->delegate_debug_id_str());
        x.delegateMetadata = items(p->delegate_debug_metadata());
        x.start = p->start_time();
        x.end = p->end_time();
        b.events.emplace_back(std::move(x));
      } else if (const fb::AllocationEvent* a = e->allocation_event()) {
        b.events.emplace_back(EtdumpAllocationEvent{a->allocator_id(), a->allocation_size()});
      } else {
        const fb::DebugEvent* g = e->debug_event();
        EtdumpDebugEvent x;
        x.chain = g->chain_index();
        x.instruction = g->instruction_id();
        x.delegateDebugId = g->delegate_debug_id_int();
        x.delegateDebugName = text(g->delegate_debug_id_str());
        x.name = text(g->name());
        std::string why;
        if (!readValue(g->debug_entry(), x.value, why))
          return error(ErrorCode::Invalid, at, "ETDump debug event " + std::to_string(b.events.size()) + " of block \"" + b.name + "\"",
                       "a value the runtime logs", why);
        b.events.emplace_back(std::move(x));
      }
    }
  }
  return d;
}

}  // namespace lstudio
