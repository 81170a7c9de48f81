#include "engine/lowering/Pipeline.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/GraphText.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio {

const char* passStateName(PassRecord::State s) {
  switch (s) {
    case PassRecord::State::NotRun: return "not run";
    case PassRecord::State::Skipped: return "skipped";
    case PassRecord::State::Unchanged: return "unchanged";
    case PassRecord::State::Changed: return "changed";
    case PassRecord::State::Failed: return "failed";
  }
  return "?";
}

std::string verifyProgram(const Program& p) {
  std::string problem;
  forEachGraphOf(p, [&](const Method& m) {
    if (problem.empty()) problem = verifyMethod(m);
  });
  return problem;
}

std::string verifyMethod(const Method& m) {
  std::vector<int> defined(m.values.size(), 0);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    for (ValueId v : n.args)
      if (v < 0 || static_cast<size_t>(v) >= m.values.size())
        return m.name + ": node " + std::to_string(i) + " reads value " + std::to_string(v) + ", which does not exist";
    // In-place operators (copy_, index_put_) write a value that exists already: a mutation, not a definition.
    const OpSchema* s = n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size()
                            ? OpRegistry::builtin().find(m.operators[n.op].name, m.operators[n.op].overload)
                            : nullptr;
    bool inPlace = s && s->isInplace();
    for (ValueId v : n.outputs) {
      // A node writes tensors, or a symbolic scalar (sym_size.int, a prim op on sizes).
      if (v < 0 || static_cast<size_t>(v) >= m.values.size() || !(m.values[v].isTensor() || m.values[v].symbolic))
        return m.name + ": node " + std::to_string(i) + " writes a value that is neither a tensor nor a symbolic scalar";
      // Out variants list their outputs among the arguments; other nodes define each once.
      if (!inPlace && ++defined[v] > 1) return m.name + ": value '" + m.values[v].name + "' is written by two nodes";
    }
  }
  if (m.nonConstBufferSizes.size() > 1) {
    MemoryPlanReport r = analyzeMemoryPlan(m);
    if (!r.overlapFree()) return m.name + ": " + std::to_string(r.overlapCount) + " pairs of live tensors share bytes";
    for (const auto& a : r.arenas)
      if (a.highWater > a.size) return m.name + ": a tensor lies past the end of arena " + std::to_string(a.memId);
  }
  return {};
}

bool isAtenDialect(const Program& p) {
  return p.format == SourceFormat::Pt2 && p.exportFacts.dialect != "EDGE";
}

Pipeline::Pipeline(std::shared_ptr<const Program> input, ExecutorchBackendConfig config,
                   std::vector<std::shared_ptr<const Pass>> passes)
    : input_(std::move(input)), config_(std::move(config)), passes_(std::move(passes)) {
  // A .pte is de-lowered first, then lowered again by to_executorch's
  // passes. It went through to_edge when it was made: its dialect stays as
  // made (e.g. clone without dim order when made with _skip_dim_order).
  if (input_ && input_->format == SourceFormat::Pte) {
    std::erase_if(passes_, [](const auto& p) { return p->name() == "ReplaceViewOpsWithViewCopyOpsPass" || p->name() == "MemoryFormatOpsPass"; });
    passes_.insert(passes_.begin(), passes::delowerPte());
  }
  // Decompositions and the ATen dialect check are for programs torch.export
  // wrote; an edge program (an ETRecord's, a .pte's) went through them already.
  if (input_ && !isAtenDialect(*input_))
    std::erase_if(passes_, [](const auto& p) {
      return p->name() == "run_decompositions" || p->name() == "RemoveNonCoreAtenOpGraphAssertsPass" ||
             p->name() == "EXIRATenDialectVerifier" || p->name() == "RemoveMixedTypeOperators" ||
             p->name() == "SymToTensorPass" || p->name() == "RemoveNoopPass" || p->name() == "PruneEmptyTensorsPass" ||
             p->name() == "RemoveToCopyPass" ||
             p->name() == "FoldRedundantDequantizeQuantizePass" ||
             p->name() == "remove_unused_parameters_pass";
    });
  arrangePartitionRounds();
}

void Pipeline::arrangePartitionRounds() {
  // to_edge_transform_and_lower calls to_backend once per partitioner, each on the graph
  // the one before lowered: a partition and a to_backend pass per further partitioner.
  // Rounds past the first are this function's own: their names end in " #N".
  std::erase_if(passes_, [](const auto& p) { return p->name().find(" #") != std::string::npos; });
  if (auto at = std::find_if(passes_.begin(), passes_.end(), [](const auto& p) { return p->name() == "to_backend"; });
      at != passes_.end())
    for (size_t round = 1; round < config_.partitioners.size(); ++round) {
      at = passes_.insert(at + 1, passes::partition(round));
      at = passes_.insert(at + 1, passes::toBackend(round));
    }
  records_.clear();
  for (const auto& p : passes_) records_.push_back(PassRecord{p->name(), p->description()});
}

std::shared_ptr<const Program> Pipeline::current() const { return snapshot(position_); }

std::shared_ptr<const Program> Pipeline::snapshot(size_t passesRun) const {
  if (passesRun > position_) return nullptr;
  for (size_t i = passesRun; i-- > 0;)
    if (records_[i].after) return records_[i].after;
  return input_;
}

bool Pipeline::step() {
  if (atEnd() || failed_) return false;
  PassRecord& r = records_[position_];
  const Pass& pass = *passes_[position_];
  std::shared_ptr<const Program> before = current();
  r.diagnostics.clear();
  if (!pass.enabled(config_)) {
    r.state = PassRecord::State::Skipped;
    r.after = before;
    r.milliseconds = 0;
    ++position_;
    return true;
  }
  // Snapshot: the program is copied by value; weights are spans into the
  // mapped file, so only the graph is duplicated.
  auto next = std::make_shared<Program>(*before);
  auto t0 = std::chrono::steady_clock::now();
  PassOutcome o;
  try {
    o = pass.run(*next, config_);
  } catch (const std::exception& e) {
    // A pass must report, not throw; if one does on a program nobody foresaw,
    // it fails with the reason instead of taking the application down.
    o = PassOutcome{};
    o.failed = true;
    o.diagnostics.push_back({Diagnostic::Severity::Error, -1, "internal error in " + r.name + ": " + e.what()});
  }
  r.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.diagnostics = std::move(o.diagnostics);
  if (!o.failed) {
    if (std::string problem = verifyProgram(*next); !problem.empty()) {
      o.failed = true;
      r.diagnostics.push_back({Diagnostic::Severity::Error, -1, "verifier after " + r.name + ": " + problem});
    }
  }
  if (o.failed) {
    r.state = PassRecord::State::Failed;
    r.after = nullptr;  // earlier snapshots stay; the broken program is not kept
    failed_ = true;
    ++position_;
    return false;
  }
  bool changed = o.changed && programFingerprint(*next) != programFingerprint(*before);
  r.state = changed ? PassRecord::State::Changed : PassRecord::State::Unchanged;
  r.after = changed ? std::shared_ptr<const Program>(std::move(next)) : before;
  ++position_;
  return true;
}

bool Pipeline::runTo(const std::string& name) {
  size_t target = records_.size();
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].name == name) target = i;
  if (target == records_.size()) return false;
  while (position_ <= target && step()) {
  }
  return true;
}

void Pipeline::runToEnd() {
  while (step()) {
  }
}

void Pipeline::back() {
  if (position_ == 0) return;
  --position_;
  records_[position_] = PassRecord{records_[position_].name, records_[position_].description};
  failed_ = false;
}

void Pipeline::reset() {
  while (position_ > 0) back();
}

void Pipeline::setConfig(ExecutorchBackendConfig config) {
  size_t ran = position_;
  config_ = std::move(config);
  reset();
  arrangePartitionRounds();
  while (position_ < ran && step()) {
  }
}

}  // namespace lstudio
