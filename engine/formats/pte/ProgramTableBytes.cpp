#include "engine/formats/pte/ProgramTableBytes.h"

#include "engine/formats/pte/ContainerReader.h"
#include "engine/formats/schema/program_generated.h"

namespace lstudio::pte {
namespace fb = executorch_flatbuffer;
namespace {

/// Collects the byte extents of flatbuffer objects under one owner at a time.
class Extents {
 public:
  Extents(const uint8_t* fileStart, std::vector<TableBytes>& out) : file_(fileStart), out_(out) {}
  void owner(std::string o) { owner_ = std::move(o); }

  /// A table's inline fields and its vtable.
  void table(const void* t) {
    if (!t) return;
    auto* p = static_cast<const uint8_t*>(t);
    const uint8_t* vt = p - flatbuffers::ReadScalar<flatbuffers::soffset_t>(p);
    add(p, flatbuffers::ReadScalar<flatbuffers::voffset_t>(vt + 2));
    add(vt, flatbuffers::ReadScalar<flatbuffers::voffset_t>(vt));
  }
  /// A vector's length prefix and elements (offsets, for vectors of tables or strings).
  template <class V>
  void vec(const V* v, size_t elemBytes) {
    if (v) add(reinterpret_cast<const uint8_t*>(v), 4 + uint64_t(v->size()) * elemBytes);
  }
  void str(const flatbuffers::String* s) {
    if (s) add(reinterpret_cast<const uint8_t*>(s), 4 + uint64_t(s->size()) + 1);
  }

 private:
  void add(const uint8_t* p, uint64_t n) {
    if (n) out_.push_back({uint64_t(p - file_), n, owner_});
  }
  const uint8_t* file_;
  std::vector<TableBytes>& out_;
  std::string owner_;
};

void tensor(Extents& x, const fb::Tensor* t) {
  x.table(t);
  x.vec(t->sizes(), 4);
  x.vec(t->dim_order(), 1);
  x.table(t->allocation_info());
  if (auto* e = t->extra_tensor_info()) {
    x.table(e);
    x.str(e->fully_qualified_name());
  }
}

void value(Extents& x, const fb::EValue* v) {
  x.table(v);
  using K = fb::KernelTypes;
  switch (v->val_type()) {
    case K::Tensor: if (auto* t = v->val_as_Tensor()) tensor(x, t); break;
    case K::String: if (auto* s = v->val_as_String()) { x.table(s); x.str(s->string_val()); } break;
    case K::IntList: if (auto* l = v->val_as_IntList()) { x.table(l); x.vec(l->items(), 8); } break;
    case K::DoubleList: if (auto* l = v->val_as_DoubleList()) { x.table(l); x.vec(l->items(), 8); } break;
    case K::BoolList: if (auto* l = v->val_as_BoolList()) { x.table(l); x.vec(l->items(), 1); } break;
    case K::TensorList: if (auto* l = v->val_as_TensorList()) { x.table(l); x.vec(l->items(), 4); } break;
    case K::OptionalTensorList: if (auto* l = v->val_as_OptionalTensorList()) { x.table(l); x.vec(l->items(), 4); } break;
    // One small table each. Members this schema does not know are not
    // verified (flatbuffers accepts them unread): never walked.
    case K::Int: x.table(v->val_as_Int()); break;
    case K::Bool: x.table(v->val_as_Bool()); break;
    case K::Double: x.table(v->val_as_Double()); break;
    case K::Null: x.table(v->val_as_Null()); break;
    default: break;
  }
}

void instruction(Extents& x, const fb::Instruction* in) {
  x.table(in);
  if (auto* k = in->instr_args_as_KernelCall()) {
    x.table(k);
    x.vec(k->args(), 4);
  } else if (auto* d = in->instr_args_as_DelegateCall()) {
    x.table(d);
    x.vec(d->args(), 4);
  } else if (auto* m = in->instr_args_as_MoveCall()) {
    x.table(m);
  } else if (auto* j = in->instr_args_as_JumpFalseCall()) {
    x.table(j);
  } else if (auto* f = in->instr_args_as_FreeCall()) {
    x.table(f);
  }  // an unknown member is not verified: never walked
}

void stackTraces(Extents& x, const fb::Chain* c) {
  x.vec(c->stacktrace(), 4);
  if (!c->stacktrace()) return;
  for (auto* frames : *c->stacktrace()) {
    x.table(frames);
    x.vec(frames->items(), 4);
    if (!frames->items()) continue;
    for (auto* f : *frames->items()) {
      x.table(f);
      x.str(f->filename());
      x.str(f->name());
      x.str(f->context());
    }
  }
}

void method(Extents& x, const fb::ExecutionPlan* plan) {
  const std::string name = plan->name() ? plan->name()->str() : "method";
  x.owner(name + ": values");
  x.vec(plan->values(), 4);
  if (plan->values())
    for (auto* v : *plan->values()) value(x, v);
  x.owner(name + ": stack traces");
  if (plan->chains())
    for (auto* c : *plan->chains()) stackTraces(x, c);
  x.owner(name + ": instructions");
  x.vec(plan->chains(), 4);
  if (plan->chains())
    for (auto* c : *plan->chains()) {
      x.table(c);
      x.vec(c->inputs(), 4);
      x.vec(c->outputs(), 4);
      x.vec(c->instructions(), 4);
      if (c->instructions())
        for (auto* in : *c->instructions()) instruction(x, in);
    }
  x.owner(name + ": operators");
  x.vec(plan->operators(), 4);
  if (plan->operators())
    for (auto* op : *plan->operators()) {
      x.table(op);
      x.str(op->name());
      x.str(op->overload());
    }
  x.owner(name + ": delegate tables and compile specs");
  x.vec(plan->delegates(), 4);
  if (plan->delegates())
    for (auto* d : *plan->delegates()) {
      x.table(d);
      x.str(d->id());
      x.table(d->processed());
      x.vec(d->compile_specs(), 4);
      if (d->compile_specs())
        for (auto* s : *d->compile_specs()) {
          x.table(s);
          x.str(s->key());
          x.vec(s->value(), 1);
        }
    }
  x.owner(name + ": name, inputs, outputs, arenas");
  x.table(plan);
  x.str(plan->name());
  x.vec(plan->inputs(), 4);
  x.vec(plan->outputs(), 4);
  x.vec(plan->non_const_buffer_sizes(), 8);
  if (auto* c = plan->container_meta_type()) {
    x.table(c);
    x.str(c->encoded_inp_str());
    x.str(c->encoded_out_str());
  }
}

}  // namespace

std::vector<TableBytes> programTableBytes(const MappedFile& file, uint64_t base, uint64_t programSize) {
  std::vector<TableBytes> out;
  if (programSize < 8 || base + programSize > file.size() || !verifyProgramTable(file, base, programSize).ok()) return out;
  const fb::Program* program = fb::GetProgram(file.data() + base);
  Extents x(file.data(), out);
  if (program->execution_plan())
    for (auto* plan : *program->execution_plan()) method(x, plan);
  x.owner("program: tables of segments, constants and named data");
  x.table(program);
  x.vec(program->execution_plan(), 4);
  x.vec(program->segments(), 4);
  if (program->segments())
    for (auto* s : *program->segments()) x.table(s);
  if (auto* cs = program->constant_segment()) {
    x.table(cs);
    x.vec(cs->offsets(), 8);
  }
  x.vec(program->mutable_data_segments(), 4);
  if (program->mutable_data_segments())
    for (auto* m : *program->mutable_data_segments()) {
      x.table(m);
      x.vec(m->offsets(), 8);
    }
  x.vec(program->named_data(), 4);
  if (program->named_data())
    for (auto* n : *program->named_data()) {
      x.table(n);
      x.str(n->key());
    }
  x.vec(program->constant_buffer(), 4);
  if (program->constant_buffer())
    for (auto* b : *program->constant_buffer()) x.table(b);  // its storage is counted as constants
  x.vec(program->backend_delegate_data(), 4);
  if (program->backend_delegate_data())
    for (auto* d : *program->backend_delegate_data()) x.table(d);  // its data is counted as payloads
  return out;
}

}  // namespace lstudio::pte
