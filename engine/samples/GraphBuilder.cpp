#include "engine/samples/GraphBuilder.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string_view>
#include <thread>
#include <utility>

#include "engine/ir/CallBuilder.h"
#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/ir/TreeSpec.h"
#include "engine/support/MappedFile.h"

namespace lstudio {

GraphBuilder::GraphBuilder(std::string method) { m_.name = std::move(method); }

void GraphBuilder::enterModule(const std::string& path, const std::string& type) { modules_.push_back({path, type}); }
void GraphBuilder::exitModule() {
  if (!modules_.empty()) modules_.pop_back();
}
void GraphBuilder::at(const std::string& file, int line, const std::string& function, const std::string& code) {
  source_ = StackFrame{file, line, function, code};
}

std::string GraphBuilder::freshName(const std::string& base) {
  // torch.fx naming: the first use of a name is bare, later ones get _1, _2, ...
  int& next = nextSuffix_[base];
  std::string name = next == 0 ? base : base + "_" + std::to_string(next);
  while (names_.count(name)) name = base + "_" + std::to_string(++next);
  ++next;
  names_.insert(name);
  return name;
}

TensorRef GraphBuilder::placeholder(const std::string& name, TensorSpec spec, InputSpec::Kind kind, const std::string& fqn,
                                  bool persistent) {
  for (size_t d = spec.dimOrder.size(); d < spec.sizes.size(); ++d) spec.dimOrder.push_back(static_cast<uint8_t>(d));
  spec.fqn = fqn;
  m_.values.push_back(Value{std::move(spec), freshName(name)});
  ValueId id = static_cast<ValueId>(m_.values.size() - 1);
  (kind == InputSpec::Kind::User ? userInputs_ : stateInputs_).push_back(InputSpec{kind, id, fqn, persistent});
  return TensorRef{id};
}

TensorRef GraphBuilder::input(const std::string& name, ScalarType dtype, std::vector<int64_t> sizes,
                            std::vector<std::string> symbols) {
  TensorSpec t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  bool any = false;
  for (const auto& s : symbols) any = any || !s.empty();
  if (any) {
    t.symbols = std::move(symbols);
    t.dynamism = ShapeDynamism::DynamicBound;
  }
  return placeholder(name, std::move(t), InputSpec::Kind::User, {}, true);
}

static std::string placeholderName(const char* prefix, const std::string& fqn) {
  std::string n = prefix + fqn;
  std::replace(n.begin(), n.end(), '.', '_');
  return n;
}

TensorRef GraphBuilder::parameter(const std::string& fqn, ScalarType dtype, std::vector<int64_t> sizes, WeightInit init) {
  TensorSpec t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.requiresGrad = true;
  TensorRef id = placeholder(placeholderName("p_", fqn), std::move(t), InputSpec::Kind::Parameter, fqn, true);
  weights_.push_back({id.id, init});
  return id;
}

TensorRef GraphBuilder::buffer(const std::string& fqn, ScalarType dtype, std::vector<int64_t> sizes, WeightInit init,
                             bool persistent) {
  TensorSpec t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  TensorRef id = placeholder(placeholderName("b_", fqn), std::move(t), InputSpec::Kind::Buffer, fqn, persistent);
  weights_.push_back({id.id, init});
  return id;
}

TensorRef GraphBuilder::constant(const std::string& name, ScalarType dtype, std::vector<int64_t> sizes, WeightInit init) {
  TensorSpec t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  TensorRef id = placeholder("c_" + name, std::move(t), InputSpec::Kind::ConstantTensor, name, true);
  weights_.push_back({id.id, init});
  return id;
}

TensorRef GraphBuilder::symbol(const std::string& name, int64_t hint, int64_t min, int64_t max) {
  m_.symbolRanges.push_back(SymbolRange{name, min, max});
  Value v{hint, name};
  v.symbolic = true;
  m_.values.push_back(std::move(v));
  return TensorRef{static_cast<ValueId>(m_.values.size() - 1)};
}

std::vector<TensorRef> GraphBuilder::call(const std::string& target, std::vector<BuildArg> args) {
  if (error_) return {};
  auto n = buildCall(m_, target, std::move(args), [this](const std::string& base) { return freshName(base); });
  if (!n) {
    error_ = n.error();
    return {};
  }
  n->meta.moduleStack = modules_;
  if (source_) n->meta.stackTrace = {*source_};
  std::vector<TensorRef> outs;
  for (ValueId o : n->outputs) outs.push_back(TensorRef{o});
  m_.nodes.push_back(std::move(n.value()));
  return outs;
}

TensorRef GraphBuilder::op(const std::string& target, std::vector<BuildArg> args) {
  auto outs = call(target, std::move(args));
  return outs.empty() ? TensorRef{} : outs.front();
}

void GraphBuilder::output(TensorRef v) { m_.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::User, v.id, {}}); }
void GraphBuilder::bufferMutation(TensorRef v, const std::string& fqn) {
  m_.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::BufferMutation, v.id, fqn});
}
void GraphBuilder::lossOutput(TensorRef v) { m_.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::Loss, v.id, {}}); }
void GraphBuilder::gradientOutput(TensorRef v, const std::string& fqn) {
  m_.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::GradientToParameter, v.id, fqn});
}

namespace {

/// A fixed pseudo-random sequence (SplitMix64) so weights are the same on every machine.
uint64_t mix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The next value of a Pattern weight: uniform in [-scale, scale].
double patternValue(uint64_t& s, double scale) { return (double(mix(s) >> 11) / double(1ull << 53) * 2.0 - 1.0) * scale; }


/// Writes the next `count` elements of a weight to `out`; `state` carries
/// the sequence from one call to the next, so a weight filled in chunks
/// gets the same bytes as one filled at once.
void fillElements(uint8_t* out, uint64_t count, ScalarType dtype, const WeightInit& init, uint64_t& state) {
  auto valueAt = [&](uint64_t& s) -> double {
    switch (init.kind) {
      case WeightInit::Kind::Zeros: return 0.0;
      case WeightInit::Kind::Constant: return init.value;
      case WeightInit::Kind::Pattern: return patternValue(s, init.scale);
    }
    return 0.0;
  };
  uint64_t& s = state;
  if (init.kind == WeightInit::Kind::Pattern && (dtype == ScalarType::Float || dtype == ScalarType::BFloat16)) {
    // The common case (every linear and embedding weight) without the per-element switches.
    for (uint64_t i = 0; i < count; ++i) {
      float f = static_cast<float>(patternValue(s, init.scale));
      if (dtype == ScalarType::Float) {
        std::memcpy(out + i * 4, &f, 4);
      } else {
        uint16_t b = floatToBFloat16(f);
        std::memcpy(out + i * 2, &b, 2);
      }
    }
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    double v = valueAt(s);
    switch (dtype) {
      case ScalarType::Float: {
        float f = static_cast<float>(v);
        std::memcpy(out + i * 4, &f, 4);
        break;
      }
      case ScalarType::BFloat16:
      case ScalarType::Half: {
        const float f = static_cast<float>(v);
        const uint16_t b = dtype == ScalarType::Half ? floatToHalf(f) : floatToBFloat16(f);
        std::memcpy(out + i * 2, &b, 2);
        break;
      }
      case ScalarType::Long: {
        int64_t x = static_cast<int64_t>(std::llround(v));
        std::memcpy(out + i * 8, &x, 8);
        break;
      }
      case ScalarType::Int: {
        int32_t x = static_cast<int32_t>(std::lround(v));
        std::memcpy(out + i * 4, &x, 4);
        break;
      }
      case ScalarType::Char: out[i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(v))); break;
      case ScalarType::Byte:
      case ScalarType::Bool: out[i] = static_cast<uint8_t>(std::lround(v)); break;
      default: std::memset(out + i * elementSize(dtype), 0, elementSize(dtype)); break;
    }
  }
}

/// The first state of a weight's sequence: seeded by its name alone, so
/// weights can be filled in any order and on any number of threads.
uint64_t weightSeed(const TensorSpec& t) {
  uint64_t seed = 0x5eed;
  for (char c : t.fqn) seed = seed * 131 + static_cast<uint8_t>(c);
  return seed;
}

}  // namespace

void GraphBuilder::callSpecs(PyTree inputs, PyTree outputs) { callSpecs_ = {std::move(inputs), std::move(outputs)}; }

Status GraphBuilder::finishSignature(const std::string& name) {
  // torch.export orders placeholders: parameters, buffers, then user inputs;
  // outputs: buffer mutations first, then user outputs, loss, gradients.
  auto kindRank = [](const InputSpec& s) {
    return s.kind == InputSpec::Kind::Parameter ? 0 : s.kind == InputSpec::Kind::Buffer ? 1 : 2;
  };
  std::stable_sort(stateInputs_.begin(), stateInputs_.end(),
                   [&](const InputSpec& a, const InputSpec& b) { return kindRank(a) < kindRank(b); });
  m_.signature.inputs = stateInputs_;
  m_.signature.inputs.insert(m_.signature.inputs.end(), userInputs_.begin(), userInputs_.end());
  m_.inputs.clear();
  for (const auto& s : m_.signature.inputs) m_.inputs.push_back(s.value);
  auto rank = [](OutputSpec::Kind k) {
    switch (k) {
      case OutputSpec::Kind::BufferMutation: return 0;
      case OutputSpec::Kind::UserInputMutation: return 0;
      case OutputSpec::Kind::Loss: return 1;  // torch puts the loss before the other user outputs
      case OutputSpec::Kind::GradientToParameter: return 4;
      default: return 2;
    }
  };
  std::stable_sort(m_.signature.outputs.begin(), m_.signature.outputs.end(),
                   [&](const OutputSpec& a, const OutputSpec& b) { return rank(a.kind) < rank(b.kind); });
  m_.outputs.clear();
  for (const auto& s : m_.signature.outputs) m_.outputs.push_back(s.value);
  // The root call's pytree specs: forward(*user inputs) returning its user outputs.
  size_t userOutputs = 0;
  for (const auto& o : m_.signature.outputs)
    userOutputs += o.kind == OutputSpec::Kind::User || o.kind == OutputSpec::Kind::Loss;
  ModuleCall root{"", {}, {}, treespecArgs(userInputs_.size()), treespecOutputs(userOutputs)};
  if (callSpecs_) {
    if (callSpecs_->first.leafCount() != userInputs_.size() || callSpecs_->second.leafCount() != userOutputs)
      return Error{ErrorCode::Invalid, {}, std::nullopt, "pytree specs of " + name,
                   std::to_string(userInputs_.size()) + " input and " + std::to_string(userOutputs) + " output leaves",
                   std::to_string(callSpecs_->first.leafCount()) + " and " + std::to_string(callSpecs_->second.leafCount())};
    root.inSpec = treespecJson(callSpecs_->first);
    root.outSpec = treespecJson(callSpecs_->second);
  }
  m_.moduleCalls = {std::move(root)};
  return Ok{};
}

Result<std::shared_ptr<const MappedFile>> GraphBuilder::storeWeights(const std::string& name,
                                                                      const std::vector<uint64_t>& offsets, uint64_t total) {
  // Every core fills weights when there is enough to fill (gigabytes for
  // the large llama samples); the bytes are the same whatever the number of threads.
  const unsigned threads =
      total >= (uint64_t(64) << 20) ? std::clamp(std::thread::hardware_concurrency(), 1u, 8u) : 1u;
  auto onThreads = [&](const std::function<void()>& work) {
    std::vector<std::thread> helpers;
    for (unsigned k = 1; k < threads; ++k) helpers.emplace_back(work);
    work();
    for (std::thread& h : helpers) h.join();
  };
  std::shared_ptr<const MappedFile> storage;
  const std::string what = name + " (generated weights)";
  if (spillDir_.empty()) {
    storage = MappedFile::generated(what, total, [&](uint8_t* base) {
      std::atomic<size_t> next{0};
      onThreads([&] {
        for (size_t i; (i = next.fetch_add(1)) < weights_.size();) {
          const TensorSpec& t = m_.values[weights_[i].value].tensor();
          uint64_t state = weightSeed(t);
          fillElements(base + offsets[i], t.numel().value_or(0), t.dtype, weights_[i].init, state);
        }
      });
    });
    if (!storage)
      return Error{ErrorCode::Io, name, std::nullopt, "memory for the weights", std::to_string(total) + " bytes",
                   "allocation failed"};
  } else {
    // Straight to a temporary file, a chunk at a time: memory stays flat
    // however large the weights (16 GB for an 8B-class preset).
    auto spilled = MappedFile::spilled(what, spillDir_, total, [&](int fd) -> Status {
      constexpr uint64_t kChunk = 8u << 20;
      std::atomic<size_t> next{0};
      std::atomic<int> error{0};
      onThreads([&] {
        std::vector<uint8_t> chunk(kChunk);
        for (size_t i; !error && (i = next.fetch_add(1)) < weights_.size();) {
          const TensorSpec& t = m_.values[weights_[i].value].tensor();
          const uint64_t element = std::max<uint64_t>(elementSize(t.dtype), 1), perChunk = kChunk / element;
          uint64_t state = weightSeed(t), n = t.numel().value_or(0);
          for (uint64_t done = 0; done < n && !error;) {
            uint64_t k = std::min(perChunk, n - done);
            fillElements(chunk.data(), k, t.dtype, weights_[i].init, state);
            for (uint64_t w = 0; w < k * element;) {
              ssize_t r = ::pwrite(fd, chunk.data() + w, k * element - w,
                                   static_cast<off_t>(offsets[i] + done * element + w));
              if (r < 0 && errno == EINTR) continue;
              if (r <= 0) {
                error = r < 0 ? errno : ENOSPC;
                break;
              }
              w += static_cast<uint64_t>(r);
            }
            done += k;
          }
        }
      });
      if (error)
        return Error{ErrorCode::Io, spillDir_, std::nullopt, "cannot write the generated weights to a temporary file",
                     std::to_string(total) + " bytes", std::strerror(error)};
      return Ok{};
    });
    if (!spilled) return spilled.error();
    storage = spilled.value();
  }
  return storage;
}

Result<Program> GraphBuilder::finish(const std::string& name) {
  if (error_) return *error_;
  if (auto s = finishSignature(name); !s) return s.error();
  // Weights in one deterministic buffer, 64-byte aligned each.
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (const auto& w : weights_) {
    offsets.push_back(total);
    total += (m_.values[w.value].tensor().nbytes().value_or(0) + 63) / 64 * 64;
  }
  auto stored = storeWeights(name, offsets, total);
  if (!stored) return stored.error();
  std::shared_ptr<const MappedFile> storage = stored.value();
  for (size_t i = 0; i < weights_.size(); ++i) {
    TensorSpec& t = m_.values[weights_[i].value].tensor();
    t.data = Bytes{storage->data() + offsets[i], t.nbytes().value_or(0), offsets[i]};
  }
  Program p;
  p.path = name;
  p.format = SourceFormat::Pt2;
  p.exportFacts.container = "pt2 archive";
  p.exportFacts.schemaVersion = "8.12";
  p.exportFacts.dialect = "ATEN";
  p.exportFacts.torchVersion = "lowering-studio sample";
  p.backing = storage;
  p.methods.push_back(std::move(m_));
  m_ = Method{};
  return p;
}

}  // namespace lstudio
