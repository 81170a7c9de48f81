#include "engine/run/KernelRules.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/ir/OpRegistry.h"

namespace lstudio {
namespace {

/// One registered kernel: how many of its leading tensor arguments (a tensor list counts as one,
/// each of its tensors checked) and whether its outs take part in tensors_have_same_dim_order.
/// Read from ExecuTorch's kernel sources for the wheel's registry (portable_lib's
/// _get_operator_names(): 240 operators); the comment is the check as the kernel writes it.
struct KernelRule {
  const char* op;
  uint8_t sameInputs;
  bool sameOuts;
};

constexpr KernelRule kKernels[] = {
    {"aten::_adaptive_avg_pool2d.out", 1, true},  // same(in, out)
    {"aten::_cdist_forward.out", 2, true},  // same(x1, x2, out)
    {"aten::_conj_physical.out", 1, true},  // same(in, out)
    {"aten::_fft_c2r.out", 1, true},  // same(in, out)
    {"aten::_fft_r2c.out", 1, true},  // same(in, out)
    {"aten::_local_scalar_dense", 0, false},
    {"aten::_log_softmax.out", 0, false},
    {"aten::_native_batch_norm_legit.no_stats_out", 1, true},  // same(in, out, mean_out, invstd_out)
    {"aten::_native_batch_norm_legit.out", 1, true},  // same(in, out, mean_out, invstd_out)
    {"aten::_native_batch_norm_legit_no_training.out", 1, true},  // same(in, out, mean_out, invstd_out)
    {"aten::_pdist_forward.out", 1, true},  // same(in, out)
    {"aten::_softmax.out", 1, true},  // same(in, out)
    {"aten::_to_copy.out", 1, true},  // same(self, out)
    {"aten::_upsample_bilinear2d_aa.out", 0, false},
    {"aten::abs.out", 1, true},  // same(in, out)
    {"aten::acos.out", 1, true},  // same(in, out)
    {"aten::acosh.out", 1, true},  // same(in, out)
    {"aten::add.Scalar_out", 1, true},  // same(a, out)
    {"aten::add.out", 2, true},  // same(a, b, out)
    {"aten::addmm.out", 3, true},  // same(in, mat1, mat2, out)
    {"aten::alias_copy.out", 1, true},  // same(in, out)
    {"aten::amax.out", 1, true},  // same(in, out)
    {"aten::amin.out", 1, true},  // same(in, out)
    {"aten::any.all_out", 1, true},  // same(in, out)
    {"aten::any.dims_out", 1, true},  // same(in, out)
    {"aten::any.out", 1, true},  // same(in, out)
    {"aten::arange.out", 0, false},
    {"aten::arange.start_out", 0, false},
    {"aten::argmax.out", 1, true},  // same(in, out)
    {"aten::argmin.out", 1, true},  // same(in, out)
    {"aten::as_strided_copy.out", 1, true},  // same(in, out)
    {"aten::asin.out", 1, true},  // same(in, out)
    {"aten::asinh.out", 1, true},  // same(in, out)
    {"aten::atan.out", 1, true},  // same(in, out)
    {"aten::atan2.out", 2, true},  // same(a, b, out)
    {"aten::atanh.out", 1, true},  // same(in, out)
    {"aten::avg_pool2d.out", 1, true},  // same(in, out)
    {"aten::bitwise_and.Scalar_out", 1, true},  // same(a, out)
    {"aten::bitwise_and.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::bitwise_left_shift.Tensor_Scalar_out", 1, true},  // same(a, out)
    {"aten::bitwise_left_shift.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::bitwise_not.out", 1, true},  // same(in, out)
    {"aten::bitwise_or.Scalar_out", 1, true},  // same(a, out)
    {"aten::bitwise_or.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::bitwise_right_shift.Tensor_Scalar_out", 1, true},  // same(a, out)
    {"aten::bitwise_right_shift.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::bitwise_xor.Scalar_out", 1, true},  // same(a, out)
    {"aten::bitwise_xor.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::bmm.out", 0, false},
    {"aten::cat.out", 1, true},  // same(tensors[i], out)
    {"aten::ceil.out", 1, true},  // same(in, out)
    {"aten::clamp.Tensor_out", 3, true},  // same(in, min, max, out)
    {"aten::clamp.out", 1, true},  // same(in, out)
    {"aten::clone.out", 1, true},  // same(self, out)
    {"aten::constant_pad_nd.out", 1, true},  // same(in, out)
    {"aten::convolution.out", 1, true},  // same(in, out)
    {"aten::convolution_backward.out", 0, false},
    {"aten::copy.out", 1, true},  // same(in, out)
    {"aten::copy_", 2, false},  // same(in, src)
    {"aten::cos.out", 1, true},  // same(in, out)
    {"aten::cosh.out", 1, true},  // same(in, out)
    {"aten::cumsum.out", 1, true},  // same(self, out)
    {"aten::detach_copy.out", 1, true},  // same(self, out)
    {"aten::diagonal_copy.out", 1, true},  // same(in, out)
    {"aten::div.Scalar_mode_out", 1, true},  // same(a, out)
    {"aten::div.Scalar_out", 1, true},  // same(a, out)
    {"aten::div.out", 2, true},  // same(a, b, out)
    {"aten::div.out_mode", 2, true},  // same(a, b, out)
    {"aten::elu.out", 1, true},  // same(in, out)
    {"aten::embedding.out", 2, true},  // same(weight, indices, out)
    {"aten::empty.out", 0, false},
    {"aten::eq.Scalar_out", 1, true},  // same(a, out)
    {"aten::eq.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::erf.out", 1, true},  // same(in, out)
    {"aten::exp.out", 0, false},
    {"aten::expand_copy.out", 1, true},  // same(self, out)
    {"aten::expm1.out", 1, true},  // same(in, out)
    {"aten::fill.Scalar_out", 1, true},  // same(a, out)
    {"aten::fill.Tensor_out", 1, true},  // same(a, out)
    {"aten::flip.out", 1, true},  // same(in, out)
    {"aten::floor.out", 1, true},  // same(in, out)
    {"aten::floor_divide.out", 2, true},  // same(a, b, out)
    {"aten::fmod.Scalar_out", 1, true},  // same(a, out)
    {"aten::fmod.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::full.out", 0, false},
    {"aten::full_like.out", 1, true},  // same(in, out)
    {"aten::gather.out", 0, false},
    {"aten::ge.Scalar_out", 1, true},  // same(a, out)
    {"aten::ge.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::gelu.out", 0, false},
    {"aten::glu.out", 1, true},  // same(self, out)
    {"aten::grid_sampler_2d.out", 0, false},
    {"aten::gt.Scalar_out", 1, true},  // same(a, out)
    {"aten::gt.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::hardtanh.out", 1, true},  // same(in, out)
    {"aten::index.Tensor_out", 1, true},  // same(in, out)
    {"aten::index_put.out", 1, true},  // same(in, out)
    {"aten::index_put_", 2, false},  // same(in, values)
    {"aten::index_select.out", 1, true},  // same(in, out)
    {"aten::isinf.out", 1, true},  // same(in, out)
    {"aten::isnan.out", 1, true},  // same(in, out)
    {"aten::le.Scalar_out", 1, true},  // same(a, out)
    {"aten::le.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::leaky_relu.out", 1, true},  // same(in, out)
    {"aten::lift_fresh_copy.out", 1, true},  // same(in, out)
    {"aten::linear.out", 0, false},
    {"aten::log.out", 1, true},  // same(in, out)
    {"aten::log10.out", 1, true},  // same(in, out)
    {"aten::log1p.out", 1, true},  // same(in, out)
    {"aten::log2.out", 1, true},  // same(in, out)
    {"aten::logical_and.out", 2, true},  // same(a, b, out)
    {"aten::logical_not.out", 1, true},  // same(in, out)
    {"aten::logical_or.out", 2, true},  // same(a, b, out)
    {"aten::logical_xor.out", 2, true},  // same(a, b, out)
    {"aten::logit.out", 1, true},  // same(in, out)
    {"aten::lt.Scalar_out", 1, true},  // same(a, out)
    {"aten::lt.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::masked_fill.Scalar_out", 2, true},  // same(in, mask, out)
    {"aten::masked_scatter.out", 2, true},  // same(in, mask, out)
    {"aten::masked_select.out", 2, true},  // same(in, mask, out)
    {"aten::max.dim_max", 1, true},  // same(in, max)
    {"aten::max.unary_out", 1, true},  // same(in, out)
    {"aten::max_pool2d_with_indices.out", 0, false},
    {"aten::max_pool2d_with_indices_backward.grad_input", 0, false},
    {"aten::maximum.out", 2, true},  // same(a, b, out)
    {"aten::mean.dtype_out", 1, true},  // same(in, out)
    {"aten::mean.out", 1, true},  // same(in, out)
    {"aten::min.dim_min", 1, true},  // same(in, min)
    {"aten::min.unary_out", 1, true},  // same(in, out)
    {"aten::minimum.out", 2, true},  // same(a, b, out)
    {"aten::mm.out", 0, false},
    {"aten::mul.Scalar_out", 1, true},  // same(a, out)
    {"aten::mul.out", 2, true},  // same(a, b, out)
    {"aten::narrow_copy.out", 0, false},
    {"aten::native_dropout.out", 2, true},  // same(input, out, mask)
    {"aten::native_group_norm.out", 1, true},  // same(input, out, mean_out, rstd_out)
    {"aten::native_layer_norm.out", 0, false},
    {"aten::ne.Scalar_out", 1, true},  // same(a, out)
    {"aten::ne.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::neg.out", 1, true},  // same(in, out)
    {"aten::nonzero.out", 0, false},
    {"aten::ones.out", 0, false},
    {"aten::permute_copy.out", 1, true},  // same(in, out)
    {"aten::pixel_shuffle.out", 1, true},  // same(in, out)
    {"aten::pixel_unshuffle.out", 0, false},
    {"aten::pow.Scalar_out", 1, true},  // same(b, out)
    {"aten::pow.Tensor_Scalar_out", 1, true},  // same(a, out)
    {"aten::pow.Tensor_Tensor_out", 2, true},  // same(a, b, out)
    {"aten::prod.int_out", 0, false},
    {"aten::prod.out", 0, false},
    {"aten::rand.out", 0, false},
    {"aten::randn.out", 0, false},
    {"aten::reciprocal.out", 1, true},  // same(in, out)
    {"aten::reflection_pad1d.out", 1, true},  // same(in, out)
    {"aten::reflection_pad2d.out", 1, true},  // same(in, out)
    {"aten::reflection_pad3d.out", 1, true},  // same(in, out)
    {"aten::relu.out", 1, true},  // same(in, out)
    {"aten::remainder.Scalar_out", 1, true},  // same(a, out)
    {"aten::remainder.Tensor_out", 2, true},  // same(a, b, out)
    {"aten::repeat.out", 1, true},  // same(self, out)
    {"aten::repeat_interleave.Tensor_out", 1, true},  // same(repeats, out)
    {"aten::replication_pad1d.out", 0, false},
    {"aten::replication_pad2d.out", 0, false},
    {"aten::replication_pad3d.out", 0, false},
    {"aten::roll.out", 1, true},  // same(in, out)
    {"aten::round.out", 1, true},  // same(in, out)
    {"aten::rsqrt.out", 1, true},  // same(in, out)
    {"aten::rsub.Scalar_out", 1, true},  // same(a, out)
    {"aten::scalar_tensor.out", 0, false},
    {"aten::scatter.src_out", 0, false},
    {"aten::scatter.value_out", 0, false},
    {"aten::scatter_add.out", 2, true},  // same(self, src, out)
    {"aten::select_copy.int_out", 1, true},  // same(in, out)
    {"aten::select_scatter.out", 2, true},  // same(in, src, out)
    {"aten::sigmoid.out", 1, true},  // same(in, out)
    {"aten::sign.out", 1, true},  // same(in, out)
    {"aten::sin.out", 1, true},  // same(in, out)
    {"aten::sinh.out", 1, true},  // same(in, out)
    {"aten::slice_copy.Tensor_out", 1, true},  // same(in, out)
    {"aten::slice_scatter.out", 1, true},  // same(input, out)
    {"aten::split_copy.Tensor_out", 1, true},  // same(input, out[i])
    {"aten::split_with_sizes_copy.out", 1, true},  // same(in, out[i])
    {"aten::sqrt.out", 1, true},  // same(in, out)
    {"aten::squeeze_copy.dim_out", 1, true},  // same(in, out)
    {"aten::squeeze_copy.dims_out", 1, true},  // same(in, out)
    {"aten::stack.out", 1, true},  // same(tensors[i], out)
    {"aten::sub.Scalar_out", 1, true},  // same(a, out)
    {"aten::sub.out", 2, true},  // same(a, b, out)
    {"aten::sum.IntList_out", 1, true},  // same(in, out)
    {"aten::sym_numel", 0, false},
    {"aten::sym_size.int", 0, false},
    {"aten::t_copy.out", 1, true},  // same(in, out)
    {"aten::tan.out", 1, true},  // same(in, out)
    {"aten::tanh.out", 1, true},  // same(in, out)
    {"aten::topk.values", 0, false},
    {"aten::transpose_copy.int_out", 1, true},  // same(in, out)
    {"aten::tril.out", 1, true},  // same(self, out)
    {"aten::trunc.out", 1, true},  // same(in, out)
    {"aten::unbind_copy.int_out", 1, true},  // same(input, out[i])
    {"aten::unfold_copy.out", 0, false},
    {"aten::unsqueeze_copy.out", 0, false},
    {"aten::upsample_bilinear2d.vec_out", 1, true},  // same(in, out)
    {"aten::upsample_nearest2d.vec_out", 1, true},  // same(in, out)
    {"aten::var.correction_out", 0, false},
    {"aten::var.out", 1, true},  // same(in, out)
    {"aten::var_mean.correction_out", 0, false},
    {"aten::view_as_real_copy.out", 1, true},  // same(self, out)
    {"aten::view_copy.out", 1, true},  // same(self, out)
    {"aten::where.self_out", 3, true},  // same(cond, a, b, out)
    {"aten::zeros.out", 0, false},
    {"dim_order_ops::_clone_dim_order.out", 0, false},
    {"dim_order_ops::_empty_dim_order.out", 0, false},
    {"dim_order_ops::_to_dim_order_copy.out", 0, false},
    {"et_copy::_d2h_copy.out", 0, false},
    {"et_copy::_h2d_copy.out", 0, false},
    {"executorch_prim::add.Scalar", 0, false},
    {"executorch_prim::ceil.Scalar", 0, false},
    {"executorch_prim::eq.Scalar", 0, false},
    {"executorch_prim::et_copy_index.tensor", 0, false},
    {"executorch_prim::et_view.default", 0, false},
    {"executorch_prim::floordiv.Scalar", 0, false},
    {"executorch_prim::floordiv.int", 0, false},
    {"executorch_prim::ge.Scalar", 0, false},
    {"executorch_prim::gt.Scalar", 0, false},
    {"executorch_prim::le.Scalar", 0, false},
    {"executorch_prim::lt.Scalar", 0, false},
    {"executorch_prim::mod.Scalar", 0, false},
    {"executorch_prim::mod.int", 0, false},
    {"executorch_prim::mul.Scalar", 0, false},
    {"executorch_prim::neg.Scalar", 0, false},
    {"executorch_prim::round.Scalar", 0, false},
    {"executorch_prim::sub.Scalar", 0, false},
    {"executorch_prim::sym_float.Scalar", 0, false},
    {"executorch_prim::sym_int.Scalar", 0, false},
    {"executorch_prim::sym_ite.Scalar", 0, false},
    {"executorch_prim::sym_max.Scalar", 0, false},
    {"executorch_prim::sym_min.Scalar", 0, false},
    {"executorch_prim::sym_not.Scalar", 0, false},
    {"executorch_prim::truediv.Scalar", 0, false},
    {"executorch_prim::trunc.Scalar", 0, false},
};

const std::unordered_map<std::string_view, const KernelRule*>& kernels() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string_view, const KernelRule*>();
    for (const KernelRule& k : kKernels) (*m)[k.op] = &k;
    return m;
  }();
  return *map;
}

bool checkedNamespace(const std::string& name) {
  for (std::string_view ns : {"aten::", "dim_order_ops::", "executorch_prim::", "et_copy::"})
    if (name.rfind(ns, 0) == 0) return true;
  return false;
}

bool contiguousOrder(const TensorSpec& t) {
  for (size_t d = 0; d < t.dimOrder.size(); ++d)
    if (t.dimOrder[d] != d) return false;
  return true;
}

bool channelsLastOrder(const TensorSpec& t) {
  static const std::vector<uint8_t> cl4{0, 2, 3, 1}, cl5{0, 2, 3, 4, 1};
  return t.dimOrder == cl4 || t.dimOrder == cl5;
}

std::string orderText(const TensorSpec& t) {
  if (contiguousOrder(t)) return "contiguous";
  std::string s = "[";
  for (size_t d = 0; d < t.dimOrder.size(); ++d) s += (d ? ", " : "") + std::to_string(t.dimOrder[d]);
  return s + "]";
}

}  // namespace

bool runtimeHasKernel(const OperatorRef& op) {
  return !checkedNamespace(op.name) || kernels().count(op.fullName());
}

std::optional<std::string> kernelRuleViolation(const Method& m, const Node& n) {
  if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size()) return std::nullopt;
  const OperatorRef& op = m.operators[static_cast<size_t>(n.op)];
  // The portable constant_pad_nd pads only (check_constant_pad_args): torch's col2im
  // decomposition cuts its padding off with a negative pad, which the runtime refuses.
  if (op.fullName() == "aten::constant_pad_nd.out" && n.args.size() > 1 && n.args[1] >= 0)
    if (const auto* pads = std::get_if<IntList>(&m.values[n.args[1]].payload))
      for (ValueId x : pads->items)
        if (const auto* v = x >= 0 ? std::get_if<int64_t>(&m.values[x].payload) : nullptr; v && *v < 0)
          return op.fullName() + " with a negative padding (" + std::to_string(*v) +
                 "): ExecuTorch's portable kernel pads only (check_constant_pad_args; the runtime fails the call with "
                 "InvalidArgument, 0x12)";
  auto it = kernels().find(op.fullName());
  if (it == kernels().end() || (!it->second->sameInputs && !it->second->sameOuts)) return std::nullopt;
  const OpSchema* schema = OpRegistry::builtin().find(op.name, op.overload);
  if (!schema) return std::nullopt;
  // The tensors tensors_have_same_dim_order is given: the leading tensor arguments, then the outs.
  std::vector<std::pair<std::string, const TensorSpec*>> checked;
  size_t inputs = 0;
  for (size_t a = 0; a < schema->arguments.size() && a < n.args.size(); ++a) {
    const SchemaArgument& arg = schema->arguments[a];
    if (arg.type.base != SchemaType::Base::Tensor || n.args[a] < 0) continue;
    const bool isOut = arg.isWrite && arg.kwargOnly;  // an out argument (self of an in-place call is an input)
    if (isOut ? !it->second->sameOuts : inputs >= it->second->sameInputs) continue;
    if (!isOut) ++inputs;
    std::vector<ValueId> tensors;
    m.appendTensors(n.args[a], tensors);
    for (ValueId v : tensors)
      if (const TensorSpec* t = v >= 0 ? m.values[v].tensorIf() : nullptr) checked.emplace_back(arg.name, t);
  }
  if (checked.size() < 2) return std::nullopt;
  const bool allContiguous = std::all_of(checked.begin(), checked.end(), [](auto& c) { return contiguousOrder(*c.second); });
  const bool allChannelsLast = std::all_of(checked.begin(), checked.end(), [](auto& c) { return channelsLastOrder(*c.second); });
  if (allContiguous || allChannelsLast) return std::nullopt;
  std::string found;
  for (const auto& [name, t] : checked) found += (found.empty() ? "" : ", ") + name + " " + orderText(*t);
  return op.fullName() + " needs its tensors (" + found +
         ") all contiguous or all channels-last (ExecuTorch's tensors_have_same_dim_order; the runtime fails the call "
         "with InvalidArgument, 0x12)";
}

}  // namespace lstudio
