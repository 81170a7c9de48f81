// sym_shape_eval_pass: every symbolic size becomes a concrete number memory
// can be planned for — its upper bound from the range constraints (ExecuTorch's
// default, ConstraintBasedSymShapeEvalPass) or its example hint.
#include "engine/lowering/passes/Passes.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace lstudio::passes {
namespace {

/// The range of a size expression as torch.export writes it ("s77",
/// "2*s77 + 1", "Max(s0, s1)", "(s0//2)"), by interval arithmetic over the
/// symbols' ranges, as ExecuTorch's ConstraintBasedSymShapeEvalPass bounds
/// it (bound_sympy). No upper bound when a symbol has none or the expression
/// has a form not read here.
class SizeBound {
 public:
  struct Range {
    int64_t lo = 0;
    std::optional<int64_t> hi;
  };

  SizeBound(const std::string& text, const std::vector<SymbolRange>& ranges) : s_(text), ranges_(ranges) {}

  std::optional<Range> evaluate() {
    auto r = sum();
    skipSpace();
    if (!r || i_ != s_.size()) return std::nullopt;
    return r;
  }

 private:
  static constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 4;

  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const char* tok) {
    skipSpace();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(i_, n, tok) != 0) return false;
    i_ += n;
    return true;
  }
  static std::optional<int64_t> add(std::optional<int64_t> a, std::optional<int64_t> b) {
    if (!a || !b) return std::nullopt;
    return std::clamp<int64_t>(*a + *b, -kBig, kBig);
  }

  std::optional<Range> sum() {
    auto r = product();
    while (r) {
      if (eat("+")) {
        auto b = product();
        if (!b) return std::nullopt;
        r = Range{r->lo + b->lo, add(r->hi, b->hi)};
      } else if (eat("-")) {
        auto b = product();
        if (!b || !b->hi) return std::nullopt;  // a - b: its low end needs b's high end
        r = Range{r->lo - *b->hi, r->hi ? std::optional<int64_t>(*r->hi - b->lo) : std::nullopt};
      } else {
        break;
      }
    }
    return r;
  }

  std::optional<Range> product() {
    auto r = atom();
    while (r) {
      if (eat("//")) {
        auto b = atom();
        if (!b || b->lo <= 0) return std::nullopt;  // sizes: divisors are positive
        r = Range{r->lo >= 0 ? r->lo / (b->hi ? *b->hi : kBig) : r->lo, r->hi ? std::optional<int64_t>(*r->hi / b->lo) : std::nullopt};
      } else if (eat("*")) {
        auto b = atom();
        if (!b || r->lo < 0 || b->lo < 0) return std::nullopt;  // sizes are not negative
        std::optional<int64_t> hi;
        if (r->hi && b->hi) hi = (*r->hi != 0 && *b->hi > kBig / *r->hi) ? kBig : *r->hi * *b->hi;
        r = Range{r->lo * b->lo, hi};
      } else {
        break;
      }
    }
    return r;
  }

  std::optional<Range> atom() {
    skipSpace();
    if (i_ >= s_.size()) return std::nullopt;
    if (eat("(")) {
      auto r = sum();
      if (!r || !eat(")")) return std::nullopt;
      return r;
    }
    if (eat("-")) {  // a negated term ("-s0 + s1"): its range turned over
      auto r = atom();
      if (!r || !r->hi) return std::nullopt;
      return Range{-*r->hi, -r->lo};
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (v > kBig / 10) return std::nullopt;
        v = v * 10 + (s_[i_++] - '0');
      }
      return Range{v, v};
    }
    size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
    std::string name = s_.substr(start, i_ - start);
    if (name.empty()) return std::nullopt;
    if (name == "Max" || name == "Min") {
      if (!eat("(")) return std::nullopt;
      auto a = sum();
      if (!a || !eat(",")) return std::nullopt;
      auto b = sum();
      if (!b || !eat(")")) return std::nullopt;
      if (name == "Max")
        return Range{std::max(a->lo, b->lo), a->hi && b->hi ? std::optional<int64_t>(std::max(*a->hi, *b->hi)) : std::nullopt};
      std::optional<int64_t> hi = !a->hi ? b->hi : !b->hi ? a->hi : std::optional<int64_t>(std::min(*a->hi, *b->hi));
      return Range{std::min(a->lo, b->lo), hi};
    }
    for (const auto& r : ranges_)
      if (r.symbol == name) return Range{r.min, r.max};
    return std::nullopt;
  }

  const std::string& s_;
  const std::vector<SymbolRange>& ranges_;
  size_t i_ = 0;
};

class SymShapeEval : public Pass {
 public:
  std::string name() const override { return "SymShapeEvalPass"; }
  std::string description() const override { return "symbolic sizes become upper bounds (or hints) to plan memory for"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p))
      for (Value& v : m.values) {
        TensorSpec* t = std::get_if<TensorSpec>(&v.payload);
        if (!t || t->symbols.empty()) continue;
        for (size_t d = 0; d < t->sizes.size() && d < t->symbols.size(); ++d) {
          if (t->symbols[d].empty()) continue;
          std::optional<int64_t> bound;
          if (auto r = SizeBound(t->symbols[d], m.symbolRanges).evaluate()) bound = r->hi;
          if (c.symShapeEval == "upper_bound" && !bound) {
            out.failed = true;
            out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                                       "value '" + v.name + "': symbol " + t->symbols[d] +
                                           " has no upper bound; give it a max in torch.export's dynamic_shapes, or use "
                                           "sym_shape_eval_pass \"hint\""});
            continue;
          }
          // The importer already sized symbolic dimensions by their bound; a
          // hint-based evaluation would keep the example size instead.
          if (bound && t->sizes[d] != *bound && c.symShapeEval == "upper_bound") {
            t->sizes[d] = *bound;
            out.changed = true;
          }
        }
        t->dynamism = ShapeDynamism::DynamicBound;
      }
    return out;
  }
};

}  // namespace

std::optional<int64_t> sizeUpperBound(const std::string& size, const std::vector<SymbolRange>& ranges) {
  auto r = SizeBound(size, ranges).evaluate();
  return r ? r->hi : std::nullopt;
}

std::shared_ptr<const Pass> symShapeEval() { return std::make_shared<SymShapeEval>(); }

}  // namespace lstudio::passes
