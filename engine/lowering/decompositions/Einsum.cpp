// einsum as PyTorch lowers it to core ATen: ATen's einsum without a contraction
// path, the operands contracted left to right through bmm.
#include <algorithm>
#include <cctype>
#include <deque>

#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

/// movedim(x, source, destination) for one dimension: ATen writes it as a permute.
TensorRef moveDim(Rewrite& r, TensorRef x, int64_t source, int64_t destination) {
  const int64_t rank = static_cast<int64_t>(r.spec(x.id).sizes.size());
  source = wrapDim(source, static_cast<size_t>(rank));
  destination = wrapDim(destination, static_cast<size_t>(rank));
  std::vector<int64_t> rest, order;
  for (int64_t d = 0; d < rank; ++d)
    if (d != source) rest.push_back(d);
  for (int64_t d = 0, k = 0; d < rank; ++d) order.push_back(d == destination ? source : rest[static_cast<size_t>(k++)]);
  return r.op("aten.permute.default", {x, order});
}

/// sumproduct_pair: (left * right) summed over `sumDims`, keeping them as 1, by
/// permuting both to (batch, rows, summed) and (batch, summed, columns), one
/// bmm, and the product viewed and permuted back (ATen's einsum helper).
TensorRef sumProductPair(Rewrite& r, TensorRef left, TensorRef right, const std::vector<int64_t>& sumDims) {
  if (sumDims.empty()) return r.op("aten.mul.Tensor", {left, right});
  const int64_t dims = static_cast<int64_t>(r.spec(left.id).sizes.size());
  std::vector<bool> summed(static_cast<size_t>(dims), false);
  for (int64_t d : sumDims) summed[static_cast<size_t>(d)] = true;
  // Sizes as torch traces them: a symbolic one (a dynamic batch) is not 1, and the
  // products fold from 1 through _operator.mul.
  auto same = [](const SizeRef& a, const SizeRef& b) {
    return a.isSymbolic() == b.isSymbolic() && (a.isSymbolic() ? a.expression == b.expression : a.value == b.value);
  };
  auto isOne = [](const SizeRef& s) { return !s.isSymbolic() && s.value == 1; };
  std::vector<int64_t> lro, lo, ro;
  SizeRef lroSize{1}, loSize{1}, roSize{1}, sumSize{1};
  for (int64_t i = 0; i < dims; ++i) {
    const SizeRef li = r.size(left.id, static_cast<size_t>(i)), ri = r.size(right.id, static_cast<size_t>(i));
    const bool sl = !isOne(li), sr = !isOne(ri);
    if (summed[static_cast<size_t>(i)]) {
      if (sl && sr) {
        if (!same(li, ri)) {
          r.fail("einsum operands whose summed dimensions differ in size");
          return {};
        }
        sumSize = r.mul(sumSize, li);
      } else if (sl) {
        left = r.op("aten.sum.dim_IntList", {left, std::vector<int64_t>{i}, true});
      } else if (sr) {
        right = r.op("aten.sum.dim_IntList", {right, std::vector<int64_t>{i}, true});
      }
    } else if (sl && sr) {
      if (!same(li, ri)) {
        r.fail("einsum operands whose dimensions do not broadcast");
        return {};
      }
      lro.push_back(i);
      lroSize = r.mul(lroSize, li);
    } else if (sl) {
      lo.push_back(i);
      loSize = r.mul(loSize, li);
    } else {
      ro.push_back(i);
      roSize = r.mul(roSize, ri);
    }
  }
  std::vector<SizeRef> outSize;
  std::vector<int64_t> lperm, rperm, operm(static_cast<size_t>(dims), -1);
  for (int64_t d : lro) outSize.push_back(r.size(left.id, static_cast<size_t>(d)));
  for (int64_t d : lo) outSize.push_back(r.size(left.id, static_cast<size_t>(d)));
  for (size_t k = 0; k < sumDims.size(); ++k) outSize.push_back(SizeRef{1});
  for (int64_t d : ro) outSize.push_back(r.size(right.id, static_cast<size_t>(d)));
  auto append = [](std::vector<int64_t>& to, const std::vector<int64_t>& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(lperm, lro), append(lperm, lo), append(lperm, sumDims), append(lperm, ro);
  append(rperm, lro), append(rperm, sumDims), append(rperm, ro), append(rperm, lo);
  int64_t at = 0;
  for (const std::vector<int64_t>* group : std::initializer_list<const std::vector<int64_t>*>{&lro, &lo, &sumDims, &ro})
    for (int64_t d : *group) operm[static_cast<size_t>(d)] = at++;
  TensorRef l = reshape(r, r.op("aten.permute.default", {left, lperm}).id, std::vector<SizeRef>{lroSize, loSize, sumSize});
  TensorRef rr = reshape(r, r.op("aten.permute.default", {right, rperm}).id, std::vector<SizeRef>{lroSize, sumSize, roSize});
  TensorRef prod = r.op("aten.bmm.default", {l, rr});
  const std::vector<TensorSpec> viewedSpec{Rewrite::contiguousSpec(r.spec(prod.id).dtype, outSize)};
  TensorRef viewed = r.op("aten.view.default", {prod, outSize}, &viewedSpec);
  return r.op("aten.permute.default", {viewed, operm});
}

constexpr int kLabels = 52, kEllipsis = kLabels;

/// An einsum equation as ATen reads it: each operand's labels (kEllipsis for "..."), how
/// many operands name each label, and where each label and the ellipsis stand once the
/// operands are permuted to (output labels, contracted labels).
struct EinsumLabels {
  std::vector<std::vector<int>> opLabels;
  std::vector<int64_t> labelCount = std::vector<int64_t>(kLabels, 0);
  std::vector<int64_t> permIndex = std::vector<int64_t>(kLabels, -1);
  int64_t ellDims = 0, ellIndex = 0, outDims = 0, permDims = 0;
};

/// The rewrite fails with `why`; false, for the helpers below to return.
bool failed(Rewrite& r, std::string why) {
  r.fail(std::move(why));
  return false;
}

/// Labels are numbered A-Z then a-z.
int subscript(unsigned char c) { return std::isupper(c) ? c - 'A' : c - 'a' + 26; }

/// The operands' labels from the equation's left side `lhs`, counted, and the number
/// of dimensions the ellipsis stands for.
bool readOperandLabels(Rewrite& r, const std::string& lhs, const std::vector<ValueId>& operands, EinsumLabels& e) {
  const size_t numOps = operands.size();
  std::vector<std::vector<int>>& opLabels = e.opLabels;
  opLabels.resize(numOps);
  size_t current = 0;
  for (size_t i = 0; i < lhs.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(lhs[i]);
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= lhs.size() || lhs[i + 1] != '.' || lhs[i + 2] != '.') return failed(r, "einsum equation with a '.' outside an ellipsis");
      if (std::find(opLabels[current].begin(), opLabels[current].end(), kEllipsis) != opLabels[current].end())
        return failed(r, "einsum operand " + std::to_string(current) + " has two ellipses");
      opLabels[current].push_back(kEllipsis);
      i += 2;
    } else if (c == ',') {
      if (++current >= numOps) return failed(r, "einsum equation names more operands than it is given");
    } else if (std::isalpha(c)) {
      opLabels[current].push_back(subscript(c));
    } else {
      return failed(r, std::string("einsum subscript '") + static_cast<char>(c) + "' is not a letter");
    }
  }
  if (current + 1 != numOps) return failed(r, "einsum is given more operands than its equation names");
  for (size_t i = 0; i < numOps; ++i) {
    const int64_t rank = static_cast<int64_t>(r.spec(operands[i]).sizes.size());
    int64_t named = 0;
    bool ellipsis = false;
    for (int s : opLabels[i])
      if (s == kEllipsis) ellipsis = true;
      else ++named, ++e.labelCount[s];
    if (ellipsis ? named > rank : named != rank)
      return failed(r, "einsum operand " + std::to_string(i) + " has " + std::to_string(rank) +
                           " dimensions and the equation names " + std::to_string(named));
    if (ellipsis) e.ellDims = std::max(e.ellDims, rank - named);
  }
  return true;
}

/// Each label's place: the output's first (as `rhs` orders them when the equation
/// has "->", else the ellipsis and then the labels seen once), then the contracted ones.
bool placeLabels(Rewrite& r, const std::string& equation, size_t arrow, EinsumLabels& e) {
  std::vector<int64_t>& permIndex = e.permIndex;
  int64_t next = 0;
  bool ellInOutput = false;
  if (arrow == std::string::npos) {  // implicit output: the ellipsis, then labels seen once
    next = e.ellDims;
    ellInOutput = true;
    for (int s = 0; s < kLabels; ++s)
      if (e.labelCount[s] == 1) permIndex[s] = next++;
  } else {
    const std::string rhs = equation.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(rhs[i]);
      if (c == ' ') continue;
      if (c == '.') {
        if (ellInOutput || i + 2 >= rhs.size() || rhs[i + 1] != '.' || rhs[i + 2] != '.')
          return failed(r, "einsum output with a '.' outside one ellipsis");
        i += 2;
        e.ellIndex = next;
        next += e.ellDims;
        ellInOutput = true;
        continue;
      }
      if (!std::isalpha(c)) return failed(r, std::string("einsum subscript '") + static_cast<char>(c) + "' is not a letter");
      const int s = subscript(c);
      if (e.labelCount[s] == 0 || permIndex[s] != -1)
        return failed(r, std::string("einsum output subscript '") + static_cast<char>(c) + "' is not an input's, or repeated");
      permIndex[s] = next++;
    }
  }
  e.outDims = next;
  if (!ellInOutput) {
    e.ellIndex = next;
    next += e.ellDims;
  }
  for (int s = 0; s < kLabels; ++s)
    if (e.labelCount[s] > 0 && permIndex[s] == -1) permIndex[s] = next++;
  e.permDims = next;
  return true;
}

/// Every operand aligned to permDims dimensions (a repeated label's diagonal taken, missing
/// labels unsqueezed, permuted), into `ops`; `dimCounts` counts the operands that are not 1
/// along each dimension.
bool alignOperands(Rewrite& r, const std::vector<ValueId>& operands, const EinsumLabels& e, std::deque<TensorRef>& ops,
                   std::vector<uint64_t>& dimCounts) {
  const int64_t ellDims = e.ellDims, ellIndex = e.ellIndex, permDims = e.permDims;
  const std::vector<int64_t>& permIndex = e.permIndex;
  std::vector<int64_t> labelSize(kLabels, 1), ellSizes(static_cast<size_t>(ellDims), 1);
  dimCounts.assign(static_cast<size_t>(permDims), 0);
  for (size_t i = 0; i < operands.size(); ++i) {
    TensorRef op{operands[i]};
    const int64_t rank = static_cast<int64_t>(r.spec(op.id).sizes.size());
    std::vector<int64_t> permutation(static_cast<size_t>(permDims), -1);
    int64_t dim = 0;
    for (int s : e.opLabels[i]) {
      const std::vector<int64_t> sizes = r.spec(op.id).sizes;
      if (s == kEllipsis) {
        const int64_t covered = rank - (static_cast<int64_t>(e.opLabels[i].size()) - 1);
        for (int64_t j = ellDims - covered; j < ellDims; ++j) {
          if (sizes[dim] != 1) {
            if (ellSizes[j] != 1 && ellSizes[j] != sizes[dim]) return failed(r, "einsum ellipsis dimensions do not broadcast");
            ellSizes[j] = sizes[dim];
            ++dimCounts[static_cast<size_t>(ellIndex + j)];
          }
          permutation[static_cast<size_t>(ellIndex + j)] = dim++;
        }
      } else if (permutation[static_cast<size_t>(permIndex[s])] == -1) {
        if (sizes[dim] != 1) {
          if (labelSize[s] != 1 && labelSize[s] != sizes[dim]) return failed(r, "einsum subscript sizes do not broadcast");
          labelSize[s] = sizes[dim];
          ++dimCounts[static_cast<size_t>(permIndex[s])];
        }
        permutation[static_cast<size_t>(permIndex[s])] = dim++;
      } else {  // a repeated label: its diagonal, moved to where the label first stood
        const int64_t prev = permutation[static_cast<size_t>(permIndex[s])];
        if (!r.spec(op.id).symbols.empty())
          return failed(r, "einsum with a repeated subscript on a tensor of symbolic sizes is not decomposed yet");
        if (sizes[dim] != sizes[prev]) return failed(r, "einsum repeated subscript with different sizes");
        std::vector<int64_t> diagSizes;
        for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d)
          if (d != prev && d != dim) diagSizes.push_back(sizes[d]);
        diagSizes.push_back(sizes[dim]);
        TensorSpec diag = r.spec(op.id);
        diag.sizes = diagSizes;
        diag.dimOrder.clear();
        diag.strides.clear();
        const std::vector<TensorSpec> specs{diag};
        op = r.op("aten.diagonal.default", {op, int64_t(0), prev, dim}, &specs);
        op = moveDim(r, op, -1, prev);
      }
    }
    for (int64_t& p : permutation)
      if (p == -1) {
        op = r.op("aten.unsqueeze.default", {op, dim});
        p = dim++;
      }
    ops.push_back(r.op("aten.permute.default", {op, permutation}));
  }
  return true;
}

/// The aligned operands contracted left to right: a dimension only one operand still
/// has is summed there, one both have and no later operand does goes to sumProductPair.
void contract(Rewrite& r, std::deque<TensorRef>& ops, std::vector<uint64_t>& dimCounts, int64_t outDims, int64_t permDims) {
  while (ops.size() > 1 && !r.failure()) {
    TensorRef a = ops[0], b = ops[1];
    ops.erase(ops.begin(), ops.begin() + 2);
    const std::vector<int64_t> as = r.spec(a.id).sizes, bs = r.spec(b.id).sizes;
    std::vector<int64_t> sumDims, aSum, bSum;
    for (int64_t d = outDims; d < permDims; ++d) {
      uint64_t& count = dimCounts[static_cast<size_t>(d)];
      if (as[d] != 1 && bs[d] != 1) {
        if (--count == 1) {
          sumDims.push_back(d);
          count = 0;
        }
      } else if (count == 1) {
        if (as[d] != 1) aSum.push_back(d), count = 0;
        else if (bs[d] != 1) bSum.push_back(d), count = 0;
      }
    }
    if (!aSum.empty()) a = r.op("aten.sum.dim_IntList", {a, aSum, true});
    if (!bSum.empty()) b = r.op("aten.sum.dim_IntList", {b, bSum, true});
    ops.push_front(sumProductPair(r, a, b, sumDims));
  }
}

/// einsum as ATen computes it without a contraction path: each operand's
/// repeated labels taken as diagonals, missing labels unsqueezed, dimensions
/// permuted to (output labels, contracted labels); operands contracted left to
/// right by sumProductPair; the contracted dimensions viewed away at the end.
/// Labels are numbered A-Z then a-z, so an implicit output is in that order.
void einsum(Rewrite& r) {
  const ValueId eqArg = r.arg("equation");
  const auto* eqText = eqArg >= 0 ? std::get_if<std::string>(&r.method().values[eqArg].payload) : nullptr;
  if (!eqText) return r.fail("einsum without an equation string");
  const std::string equation = *eqText;
  const std::vector<ValueId> operands = r.tensors("tensors");
  if (operands.empty()) return r.fail("einsum of no operands");
  if (!r.isNone("path")) return r.fail("einsum with a contraction path is not decomposed yet");
  const size_t arrow = equation.find("->");
  EinsumLabels e;
  if (!readOperandLabels(r, equation.substr(0, arrow), operands, e) || !placeLabels(r, equation, arrow, e)) return;
  std::vector<uint64_t> dimCounts;
  std::deque<TensorRef> ops;
  if (!alignOperands(r, operands, e, ops, dimCounts)) return;
  const int64_t outDims = e.outDims, permDims = e.permDims;
  contract(r, ops, dimCounts, outDims, permDims);
  if (r.failure()) return;
  TensorRef result = ops[0];
  if (permDims > outDims) {  // the contracted dimensions: viewed away, or summed for one operand
    if (operands.size() > 1) {
      const std::vector<SizeRef> sizes = r.sizes(result.id, 0, static_cast<size_t>(outDims));
      const std::vector<TensorSpec> spec{Rewrite::contiguousSpec(r.spec(result.id).dtype, sizes)};
      result = r.op("aten.view.default", {result, sizes}, &spec);
    } else {
      std::vector<int64_t> dims;
      for (int64_t d = outDims; d < permDims; ++d) dims.push_back(d);
      result = r.op("aten.sum.dim_IntList", {result, dims});
    }
  }
  r.resultIs(result.id);
}

}  // namespace

void registerEinsumRules(std::vector<std::pair<std::string, Rule>>& t) { t.insert(t.end(), {{"aten::einsum.default", einsum}}); }

}  // namespace lstudio::decompositions
