#include "engine/run/Kernels.h"

#include <numeric>

#include "engine/run/KernelSupport.h"

namespace lstudio::run {

RunTensor& KernelContext::tensor(ValueId id) { return value(id).t; }

int64_t KernelContext::integer(ValueId id) {
  const RunValue& v = value(id);
  if (v.kind == ValueKind::Bool) return v.b ? 1 : 0;
  if (v.kind == ValueKind::Double) return integerFrom<int64_t>(v.d);
  return v.i;
}

double KernelContext::scalar(ValueId id) {
  const RunValue& v = value(id);
  if (v.kind == ValueKind::Double) return v.d;
  if (v.kind == ValueKind::Bool) return v.b ? 1.0 : 0.0;
  if (v.kind == ValueKind::Tensor && v.t.numel() == 1) return loadAs<double>(v.t, 0);
  return static_cast<double>(v.i);
}

std::vector<int64_t> KernelContext::ints(ValueId id) {
  const RunValue& v = value(id);
  if (v.kind == ValueKind::Int) return {v.i};
  std::vector<int64_t> out;
  for (ValueId item : v.items) out.push_back(integer(item));
  return out;
}

bool KernelContext::resize(RunTensor& out, const std::vector<int64_t>& sizes) {
  uint64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return fail("a negative output size");
    if (s && n > UINT64_MAX / 16 / static_cast<uint64_t>(s)) return fail("an output size past 64 bits");
    n *= static_cast<uint64_t>(s);
  }
  if (!allowWork(n)) return false;
  if (n * elementSize(out.dtype) > out.capacity)
    return fail("the output needs " + std::to_string(n * elementSize(out.dtype)) + " bytes; its storage holds " +
                std::to_string(out.capacity));
  if (out.dimOrder.size() != sizes.size()) {
    out.dimOrder.resize(sizes.size());
    std::iota(out.dimOrder.begin(), out.dimOrder.end(), 0);
  }
  out.sizes = sizes;
  return true;
}

namespace {

const kernels::KernelTable& table() {
  static const kernels::KernelTable k = [] {
    kernels::KernelTable t;
    kernels::addElementwiseKernels(t);
    kernels::addShapeKernels(t);
    kernels::addReductionKernels(t);
    kernels::addNeuralNetKernels(t);
    kernels::addImageKernels(t);
    kernels::addIndexingKernels(t);
    return t;
  }();
  return k;
}

}  // namespace

const Kernel* findKernel(const std::string& fullName) {
  auto it = table().find(fullName);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const auto& [name, _] : table()) names.push_back(name);
  return names;
}

}  // namespace lstudio::run
