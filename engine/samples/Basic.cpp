// The small samples: the bundled multilayer perceptron and a model with a
// symbolic batch dimension.
#include "engine/samples/Samples.h"

namespace lstudio::samples {

TensorRef linear(GraphBuilder& b, const std::string& fqn, TensorRef x, int64_t in, int64_t out, bool bias) {
  b.enterModule(fqn, kLinear);
  TensorRef w = b.parameter(fqn + ".weight", F, {out, in});
  TensorRef wt = b.op("aten.permute.default", {w, std::vector<int64_t>{1, 0}});
  TensorRef y;
  if (bias) {
    TensorRef bb = b.parameter(fqn + ".bias", F, {out}, WeightInit{WeightInit::Kind::Pattern, 0, 0.01});
    y = b.op("aten.addmm.default", {bb, x, wt});
  } else {
    y = b.op("aten.mm.default", {x, wt});
  }
  b.exitModule();
  return y;
}

Result<Program> mlp(const SampleOptions& o) {
  int64_t batch = o.batch ? o.batch : 4;
  GraphBuilder b;
  b.enterModule("", "samples.MLP");
  TensorRef x = b.input("x", F, {batch, 784});
  b.at("samples/mlp.py", 14, "forward", "x = torch.relu(self.fc1(x))");
  TensorRef h = b.op("aten.relu.default", {linear(b, "fc1", x, 784, 256)});
  b.at("samples/mlp.py", 15, "forward", "x = torch.relu(self.fc2(x))");
  h = b.op("aten.relu.default", {linear(b, "fc2", h, 256, 128)});
  b.at("samples/mlp.py", 16, "forward", "return self.fc3(x)");
  b.output(linear(b, "fc3", h, 128, 10));
  return b.finish("mlp");
}

/// A model with a symbolic batch dimension: torch.export records "s0" and its range.
Result<Program> dynamicBatch(const SampleOptions&) {
  GraphBuilder b;
  b.enterModule("", "samples.DynamicBatch");
  b.symbol("s0", 8, 1, 64);
  TensorRef x = b.input("x", F, {64, 32}, {"s0", ""});
  b.at("samples/dynamic.py", 9, "forward", "return self.head(torch.sigmoid(self.body(x)))");
  TensorRef h = b.op("aten.sigmoid.default", {linear(b, "body", x, 32, 64)});
  b.output(linear(b, "head", h, 64, 8));
  return b.finish("dynamic_batch");
}

}  // namespace lstudio::samples
