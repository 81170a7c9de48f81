// PropagateDevicePass: a delegate whose "target_device" compile spec names a
// device (e.g. "cuda:0") reads and writes tensors there. As ExecuTorch's
// pass does (exir/passes/propagate_device_pass.py):
//  - with enable_non_cpu_memory_planning, every tensor argument gets an
//    et_copy::_h2d_copy in front of the call (a method input the delegate
//    alone reads is put on the device instead when
//    skip_h2d_for_method_inputs), every result an et_copy::_d2h_copy after it
//    that its readers read instead (none for a result that is only returned,
//    when skip_d2h_for_method_outputs), and a device -> host -> same device
//    round trip between two delegates is dropped;
//  - without it, the delegate's arguments and results are only marked as on
//    the device (planned in CPU memory all the same).
// A program that already carries the copies (a .pte re-lowered) keeps them:
// an argument already on the device needs no copy, nor a result that only
// copies read.
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

bool flagFor(const PerMethodFlag& f, const std::string& method) {
  if (f.byMethod.empty()) return f.all;
  auto it = f.byMethod.find(method);
  return it != f.byMethod.end() && it->second;
}

/// A new tensor value like `v` (shape, dtype, dim order) on `device`, with no
/// storage of its own yet.
ValueId deviceCopyOf(Method& m, ValueId v, Device device, const std::string& name) {
  Value copy{m.values[v].payload, name};
  TensorSpec& t = copy.tensor();
  t.device = device;
  t.slot.reset();
  t.viewOf = t.viewBefore = kNoValue;
  t.dataBufferIndex = 0;
  t.mutableSegmentIndex.reset();
  t.external = false;
  t.fqn.clear();
  t.constantTag.clear();
  t.source = ConstantSource::None;
  t.data = {};
  return addValue(m, std::move(copy));
}

class PropagateDevice : public Pass {
 public:
  std::string name() const override { return "PropagateDevicePass"; }
  std::string description() const override {
    return "tensors a delegate reads and writes on its target_device, with host/device copies around it";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      const bool skipH2d = flagFor(c.propagateDevice.skipH2dForMethodInputs, m.name);
      const bool skipD2h = flagFor(c.propagateDevice.skipD2hForMethodOutputs, m.name);
      if ((skipH2d || skipD2h) && !c.enableNonCpuMemoryPlanning) {
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                                   m.name + ": skip_h2d_for_method_inputs / skip_d2h_for_method_outputs need "
                                            "enable_non_cpu_memory_planning (the copies they skip exist only then)"});
        return out;
      }
      if (!propagate(m, c.enableNonCpuMemoryPlanning, skipH2d, skipD2h, out)) return out;
    }
    return out;
  }

 private:
  /// The device a delegate node targets: nullopt for none (or CPU); fails the pass on
  /// a device ExecuTorch's schema does not have.
  static bool targetOf(const Method& m, const Node& n, int32_t at, std::optional<Device>& device, PassOutcome& out) {
    device.reset();
    for (const CompileSpec& s : m.delegates[n.delegate].compileSpecs) {
      if (s.key != "target_device") continue;
      std::string text(s.value.begin(), s.value.end());
      auto d = parseDevice(text);
      if (!d) {
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, at,
                                   m.name + ": delegate " + m.delegates[n.delegate].backendId + " targets device '" +
                                       text + "'; the schema's device types are CPU and CUDA"});
        return false;
      }
      device = *d;  // "cpu" too: ExecuTorch copies for it as well (to drop the round trips after)
      return true;
    }
    return true;
  }

  bool propagate(Method& m, bool copies, bool skipH2d, bool skipD2h, PassOutcome& out) const {
    FreshNames fresh(m);
    size_t inserted = 0, marked = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (m.nodes[i].kind != NodeKind::Delegate) continue;
      std::optional<Device> device;
      if (!targetOf(m, m.nodes[i], static_cast<int32_t>(i), device, out)) return false;
      if (!device) continue;
      const std::optional<size_t> added = placeDelegate(m, i, *device, copies, skipH2d, skipD2h, fresh, marked, out);
      if (!added) return false;
      inserted += *added;
      i += *added;
    }
    const size_t elided = copies ? elideRoundTrips(m) : 0;
    if (inserted || marked) {
      out.changed = true;
      if (inserted) renumberValues(m);
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                 m.name + ": " + std::to_string(marked) + " tensors marked on a device, " +
                                     std::to_string(inserted - 2 * elided) + " host/device copies added" +
                                     (elided ? " (" + std::to_string(elided) + " round trips dropped)" : "")});
    }
    return true;
  }

  /// Delegate node `i`'s tensors on `device`: its arguments through an _h2d_copy in front of
  /// it (or only marked), its results through a _d2h_copy after it. Returns how many copies
  /// were inserted, or nullopt when the pass failed.
  static std::optional<size_t> placeDelegate(Method& m, size_t i, Device device, bool copies, bool skipH2d, bool skipD2h,
                                             FreshNames& fresh, size_t& marked, PassOutcome& out) {
    const OpSchema* h2d = OpRegistry::builtin().find("et_copy::_h2d_copy", "");
    const OpSchema* d2h = OpRegistry::builtin().find("et_copy::_d2h_copy", "");
    auto copyNode = [&](const OpSchema& op, ValueId from, ValueId to, const Node& at) {
      Node c;
      c.name = m.values[to].name;
      c.meta = at.meta;
      c.args = {from};
      c.argNames = {"self"};
      c.outputs = {to};
      setOperator(m, c, op);
      return c;
    };
    const size_t results = m.nodes[i].outputs.size();
    const size_t reads = m.nodes[i].args.size() - std::min(results, m.nodes[i].args.size());
    // Nodes reading v, the delegate's own results aside; a return counts as a reader too.
    auto readers = [&](ValueId v, bool& onlyCopies) {
      size_t count = 0;
      onlyCopies = true;
      for (size_t k = 0; k < m.nodes.size(); ++k) {
        const Node& n = m.nodes[k];
        const size_t end = k == i ? reads : n.args.size();
        if (std::find(n.args.begin(), n.args.begin() + static_cast<std::ptrdiff_t>(end), v) == n.args.begin() + static_cast<std::ptrdiff_t>(end)) continue;
        ++count;
        onlyCopies = onlyCopies && calls(m, n, "et_copy::_d2h_copy");
      }
      if (std::find(m.outputs.begin(), m.outputs.end(), v) != m.outputs.end()) ++count, onlyCopies = false;
      return count;
    };
    // Arguments: on the device, through a copy unless they already are there (the
    // result of a copy, or of a delegate on the same device).
    std::vector<Node> before;
    for (size_t a = 0; a < reads; ++a) {
      ValueId v = m.nodes[i].args[a];
      if (v < 0 || !m.values[v].isTensor()) continue;
      const int src = producerOf(m, v);
      const bool there = m.values[v].tensor().device == device &&
                         ((src >= 0 && calls(m, m.nodes[src], "et_copy::_h2d_copy")) || !device.isCpu());
      if (copies && there) continue;
      const bool input = std::find(m.inputs.begin(), m.inputs.end(), v) != m.inputs.end();
      if (!copies || (skipH2d && input)) {
        bool onlyCopies = false;
        if (size_t n = readers(v, onlyCopies); copies && n != 1) {
          out.failed = true;
          out.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i),
                                     m.name + ": skip_h2d_for_method_inputs needs input '" + m.values[v].name +
                                         "' to be read by this delegate only; " + std::to_string(n) +
                                         " nodes read it"});
          return std::nullopt;
        }
        m.values[v].tensor().device = device;
        ++marked;
        continue;
      }
      ValueId onDevice = deviceCopyOf(m, v, device, fresh("_h2d_copy_default"));
      before.push_back(copyNode(*h2d, v, onDevice, m.nodes[i]));
      m.nodes[i].args[a] = onDevice;
    }
    // Results: made on the device; their readers read a host copy.
    std::vector<Node> after;
    for (size_t r = 0; r < results; ++r) {
      ValueId v = m.nodes[i].outputs[r];
      if (v < 0 || !m.values[v].isTensor()) continue;
      m.values[v].tensor().device = device;
      ++marked;
      if (!copies) continue;
      bool onlyCopies = false;
      const size_t n = readers(v, onlyCopies);
      const bool returned = std::find(m.outputs.begin(), m.outputs.end(), v) != m.outputs.end();
      bool onlyReturned = returned;
      for (const Node& k : m.nodes)
        if (&k != &m.nodes[i] && std::find(k.args.begin(), k.args.end(), v) != k.args.end()) onlyReturned = false;
      if ((skipD2h && onlyReturned) || (n > 0 && onlyCopies)) continue;
      ValueId onHost = deviceCopyOf(m, v, Device{}, fresh("_d2h_copy_default"));
      replaceUses(m, v, onHost);
      m.nodes[i].args[reads + r] = v;  // the delegate still writes its own result
      after.push_back(copyNode(*d2h, v, onHost, m.nodes[i]));
    }
    m.nodes.insert(m.nodes.begin() + static_cast<std::ptrdiff_t>(i + 1), after.begin(), after.end());
    m.nodes.insert(m.nodes.begin() + static_cast<std::ptrdiff_t>(i), before.begin(), before.end());
    return before.size() + after.size();
  }

  /// _h2d_copy(_d2h_copy(x)) with x already on the device the h2d copies to: readers read
  /// x, and both copies go (the d2h stays while a host reader needs it). Returns how many.
  static size_t elideRoundTrips(Method& m) {
    size_t elided = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const Node& h = m.nodes[i];
      if (!calls(m, h, "et_copy::_h2d_copy") || h.args.empty() || h.outputs.empty()) continue;
      int src = producerOf(m, h.args[0]);
      if (src < 0 || !calls(m, m.nodes[src], "et_copy::_d2h_copy") || m.nodes[src].args.empty()) continue;
      ValueId x = m.nodes[src].args[0];
      if (!m.values[x].isTensor() || m.values[x].tensor().device != m.values[h.outputs[0]].tensor().device) continue;
      replaceUses(m, h.outputs[0], x);
      m.nodes.erase(m.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
      ++elided;
      ValueId hostCopy = m.nodes[src].outputs[0];
      if (useCounts(m)[hostCopy] == 0 && std::find(m.outputs.begin(), m.outputs.end(), hostCopy) == m.outputs.end()) {
        m.nodes.erase(m.nodes.begin() + src);
        if (static_cast<size_t>(src) <= i) --i;
      }
    }
    return elided;
  }
};

}  // namespace

std::shared_ptr<const Pass> propagateDevice() { return std::make_shared<PropagateDevice>(); }

}  // namespace lstudio::passes
