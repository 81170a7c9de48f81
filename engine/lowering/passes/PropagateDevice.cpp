// PropagateDevicePass: ExecuTorch records on each TensorSpec the device a
// delegate's "target_device" compile spec names, and inserts host/device
// copies around it (unless propagate_device_config skips them for the
// method's inputs or outputs). The studio plans for CPU only and its IR
// records no device: every tensor is on CPU, which is ExecuTorch's default
// too. A delegate asking for another device is reported (a warning: the
// program still lowers, planned for CPU memory, without those copies).
#include <cctype>

#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class PropagateDevice : public Pass {
 public:
  std::string name() const override { return "PropagateDevicePass"; }
  std::string description() const override { return "device of every tensor: CPU (the IR records no other)"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    for (const Method& m : p.methods)
      for (const Delegate& d : m.delegates)
        for (const CompileSpec& s : d.compileSpecs) {
          if (s.key != "target_device") continue;
          std::string device(s.value.begin(), s.value.end());
          for (char& ch : device) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          if (device.rfind("cpu", 0) == 0) continue;
          auto skips = [&](const PerMethodFlag& f) {
            auto it = f.byMethod.find(m.name);
            return f.byMethod.empty() ? f.all : it != f.byMethod.end() && it->second;
          };
          std::string copies;
          if (skips(c.propagateDevice.skipH2dForMethodInputs)) copies += " (inputs stay on the device: skip_h2d_for_method_inputs)";
          if (skips(c.propagateDevice.skipD2hForMethodOutputs)) copies += " (outputs stay on the device: skip_d2h_for_method_outputs)";
          out.diagnostics.push_back({Diagnostic::Severity::Warning, -1,
                                     m.name + ": delegate " + d.backendId + " targets device '" + device +
                                         "'; the studio plans every tensor in CPU memory" + copies});
        }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> propagateDevice() { return std::make_shared<PropagateDevice>(); }

}  // namespace lstudio::passes
