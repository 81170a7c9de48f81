// A statically quantized three-layer perceptron (784-256-128-10, ReLU between
// the layers) as the PT2E flow leaves it:
//
//   m = torch.export.export(model.eval(), (x,)).module()
//   m = prepare_pt2e(m, XNNPACKQuantizer().set_global(
//           get_symmetric_quantization_config(is_per_channel=False)))
//   m(*calibration_inputs)
//   m = convert_pt2e(m)                    # fold_quantize=True
//   ep = torch.export.export(m, (x,)).run_decompositions()
//
// which is what ExecuTorch's tests do (backends/test/harness/stages/quantize.py,
// backends/xnnpack/test/ops/test_linear.py: test_qs8_linear and
// test_qs8_linear_fused_relu with quant_type "per_tensor"; exir/tests/
// test_quantization.py). What this reproduces:
//  - activations: quantized_decomposed.quantize_per_tensor.default followed by
//    dequantize_per_tensor.default, int8, per-tensor affine, quant_min -128,
//    quant_max 127, scale and zero_point as literal arguments (what
//    HistogramObserver calibration would have found; float32 values);
//  - weights: per-tensor symmetric int8 (quant_min -127, quant_max 127,
//    zero_point 0). convert_pt2e folds quantize(weight) into a frozen int8
//    tensor that constant folding registers on the GraphModule as a buffer
//    named _frozen_param<i> (torch's constant_folding: gm.register_buffer), so
//    the re-export lifts it as a BUFFER input b__frozen_param<i>, not as a
//    tensor constant (ExecuTorch's backends/qualcomm/tests/test_passes.py
//    looks up the placeholder "b__frozen_param0" after exactly this flow, and
//    the graph dumps in backends/qualcomm/tests/test_qnn_delegate.py show it
//    feeding a convolution), dequantized with dequantize_per_tensor right
//    before the linear; the float weight is gone (unused get_attr deleted);
//  - the bias is not annotated by the XNNPACK quantizer (bias spec None) and
//    stays a float parameter;
//  - nn.Linear decomposes to permute + addmm; ReLU is annotated together with
//    the linear before it (linear_relu pattern), so its output, not the
//    addmm's, is quantized: dq -> permute/addmm -> relu -> q;
//  - the output is quantized and dequantized again, so every operator sits in
//    dq -> op -> q, ready for a quant-fusion or XNNPACK partitioning pass.
//
// Simplifications:
//  - per-tensor weights: XNNPACK's default per-channel config would give
//    dequantize_per_channel with per-channel scale/zero_point tensors and
//    axis 0, which GraphBuilder cannot infer yet (no rule for it);
//  - weights are a deterministic pattern over the whole int8 range [-127, 127],
//    biases a small float pattern; the scales are plausible literals, not
//    computed from the weights;
//  - the batch is static.
#include <cmath>

#include "engine/samples/Samples.h"

namespace lstudio::samples {
namespace {

constexpr const char* kQuantize = "quantized_decomposed.quantize_per_tensor.default";
constexpr const char* kDequantize = "quantized_decomposed.dequantize_per_tensor.default";
constexpr ScalarType I8 = ScalarType::Char;

/// The observers' qparams are float32 tensors; convert_pt2e writes them as Python floats.
double f32(double x) { return static_cast<double>(static_cast<float>(x)); }

struct QParams {
  double scale;
  int64_t zeroPoint;
};

/// quantize_per_tensor -> dequantize_per_tensor of an activation (int8, [-128, 127]).
TensorRef quantDequant(GraphBuilder& b, TensorRef x, QParams q) {
  TensorRef qx = b.op(kQuantize, {x, q.scale, q.zeroPoint, int64_t(-128), int64_t(127), I8});
  return b.op(kDequantize, {qx, q.scale, q.zeroPoint, int64_t(-128), int64_t(127), I8});
}

/// A quantized nn.Linear at `fqn`: int8 frozen weight buffer `frozen`, dequantized with
/// `weightScale` (symmetric, zero point 0, [-127, 127]), float bias, permute + addmm.
TensorRef quantizedLinear(GraphBuilder& b, const std::string& fqn, const std::string& frozen, TensorRef dqx,
                          int64_t in, int64_t out, double weightScale) {
  b.enterModule(fqn, kLinear);
  TensorRef bias = b.parameter(fqn + ".bias", F, {out}, WeightInit{WeightInit::Kind::Pattern, 0, 0.01});
  TensorRef wq = b.buffer(frozen, I8, {out, in}, WeightInit{WeightInit::Kind::Pattern, 0, 127.0});
  TensorRef w = b.op(kDequantize, {wq, weightScale, int64_t(0), int64_t(-127), int64_t(127), I8});
  TensorRef wt = b.op("aten.permute.default", {w, std::vector<int64_t>{1, 0}});
  TensorRef y = b.op("aten.addmm.default", {bias, dqx, wt});
  b.exitModule();
  return y;
}

}  // namespace

Result<Program> quantizedLinear(const SampleOptions& o) {
  int64_t batch = o.batch ? o.batch : 4;
  GraphBuilder b;
  b.enterModule("", "samples.QuantizedMLP");
  TensorRef x = b.input("x", F, {batch, 784});

  // Activation qparams as calibration would find them (range -> scale = range / 255,
  // zero_point = -128 - round(min / scale)); ReLU outputs start at 0, hence zero_point -128.
  const QParams in{f32(2.0 / 255), 0};            // x in [-1, 1]
  const QParams h1{f32(6.0 / 255), -128};         // relu(fc1) in [0, 6]
  const QParams h2{f32(4.0 / 255), -128};         // relu(fc2) in [0, 4]
  const QParams out{f32(16.0 / 255), 0};          // fc3 in [-8, 8]
  // Symmetric weight scales: max |w| / 127 for weights of about +-1/sqrt(in).
  const double w1 = f32(1.0 / std::sqrt(784.0) / 127), w2 = f32(1.0 / std::sqrt(256.0) / 127),
               w3 = f32(1.0 / std::sqrt(128.0) / 127);

  b.at("samples/quantized_mlp.py", 14, "forward", "x = torch.relu(self.fc1(x))");
  TensorRef h = quantizedLinear(b, "fc1", "_frozen_param0", quantDequant(b, x, in), 784, 256, w1);
  h = b.op("aten.relu.default", {h});
  b.at("samples/quantized_mlp.py", 15, "forward", "x = torch.relu(self.fc2(x))");
  h = quantizedLinear(b, "fc2", "_frozen_param1", quantDequant(b, h, h1), 256, 128, w2);
  h = b.op("aten.relu.default", {h});
  b.at("samples/quantized_mlp.py", 16, "forward", "return self.fc3(x)");
  h = quantizedLinear(b, "fc3", "_frozen_param2", quantDequant(b, h, h2), 128, 10, w3);
  b.output(quantDequant(b, h, out));
  return b.finish("quantized_linear");
}

}  // namespace lstudio::samples
