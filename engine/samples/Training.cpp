// A joint forward + backward program as ExecuTorch's training flow exports it
// (extension/training/examples/XOR/export_model.py):
//
//   class Net(nn.Module):                 # linear -> sigmoid -> linear2
//   class TrainingNet(nn.Module):         # forward(input, target) -> loss
//       def forward(self, input, target):
//           return self.loss(self.net(input), target)     # nn.MSELoss()
//   ep = torch.export.export(TrainingNet(Net()), (x, target), strict=True)
//   ep = torch.export.experimental._export_forward_backward(ep)
//
// The loss is the first output (OutputKind.LOSS_OUTPUT), the gradients follow in
// parameter order (OutputKind.GRADIENT_TO_PARAMETER, target = the parameter's
// fqn). to_executorch later appends the parameters themselves as outputs
// (exir/passes/weights_to_outputs_pass.py); that is not part of the exported
// program. The gradient seed, the linear and the sigmoid backward use the core
// ATen ops of the XOR fixture's joint graph (xor.pte), in the same arrangement;
// the MSE parts follow torch's decompositions (torch/_decomp):
//  - mse_loss decomposes to sub, pow.Tensor_Scalar(2), mean.default;
//  - the loss gradient seed is ones_like(loss) = full_like(loss, 1);
//  - mse_loss_backward decomposes to (input - target) * (2 / numel) * grad;
//  - a linear's backward: grad_input = mm(grad, permute(permute(W))),
//    grad_W = permute(permute(mm(permute(grad), input))) (the gradient of the
//    permuted weight, permuted back), grad_b = view(sum.dim_IntList(grad, [0],
//    keepdim=True), [out]); the first layer computes no grad_input (the input
//    needs no gradient);
//  - sigmoid_backward decomposes to grad * (y * (1 - y)) with 1 a lifted scalar
//    tensor constant and y the saved sigmoid output seen through two detach
//    aliases in the forward and two more in the backward (aten.alias, as in
//    xor.pte's alias_copy chain).
//
// The math (N = batch * out elements, g = dL/dL = 1):
//   z1 = x W1^T + b1          [B, H]      h  = sigmoid(z1)
//   y  = h W2^T + b2          [B, O]      L  = (1/N) sum (y - t)^2
//   dL/dy  = g * 2 (y - t) / N            [B, O]
//   dL/dW2 = (dL/dy)^T h                  [O, H]
//   dL/db2 = sum over rows of dL/dy       [O]
//   dL/dh  = dL/dy W2                     [B, H]
//   dL/dz1 = dL/dh * h * (1 - h)          [B, H]   (sigmoid' = h (1 - h))
//   dL/dW1 = (dL/dz1)^T x                 [H, I]
//   dL/db1 = sum over rows of dL/dz1      [H]
//
// Simplifications (and builder workarounds):
//  - the XOR example uses CrossEntropyLoss and also returns the detached
//    argmax; this sample has an MSE loss against a float `target` input and
//    returns only the loss and the gradients (GraphBuilder::finish orders user
//    outputs before the loss, where torch puts the loss first);
//  - the lifted constant 1 of sigmoid's backward is float32 here, where torch
//    lifts an int64 [] tensor (xor.pte has it): GraphBuilder's binary rule takes
//    the result dtype from the first argument and would call 1 - y int64;
//  - full_like(loss, 1) is written as full([], 1.0, dtype=float32), which makes
//    the same tensor: GraphBuilder has no inference rule for full_like;
//  - backward nodes carry no module stack (torch keeps the forward's only as
//    fwd_nn_module_stack, which the IR has no field for) and the source line of
//    the forward call they differentiate;
//  - weights are a deterministic pattern, the batch is static; the source
//    lines in torch/nn/modules are approximate (they move between releases).
#include "engine/samples/Samples.h"

namespace lstudio::samples {
namespace {

constexpr const char* kPy = "samples/training.py";
const std::vector<int64_t> kT = {1, 0};

struct LinearFwd {
  TensorRef w, b, wt, y;
};

LinearFwd linearForward(GraphBuilder& b, const std::string& fqn, TensorRef x, int64_t in, int64_t out) {
  b.enterModule(fqn, kLinear);
  LinearFwd l;
  l.w = b.parameter(fqn + ".weight", F, {out, in}, WeightInit{WeightInit::Kind::Pattern, 0, 0.5});
  l.b = b.parameter(fqn + ".bias", F, {out}, WeightInit{WeightInit::Kind::Pattern, 0, 0.1});
  b.at("torch/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)");
  l.wt = b.op("aten.permute.default", {l.w, kT});
  l.y = b.op("aten.addmm.default", {l.b, x, l.wt});
  b.exitModule();
  return l;
}

struct LinearGrads {
  TensorRef input, weight, bias;
};

/// The backward of y = x W^T + b for dL/dy = `grad` [B, out], given the forward's
/// permuted weight `wt` [in, out] and input `x` [B, in].
LinearGrads linearBackward(GraphBuilder& b, const LinearFwd& l, TensorRef x, TensorRef grad, int64_t out,
                           bool needInputGrad) {
  LinearGrads g;
  if (needInputGrad) {
    TensorRef w = b.op("aten.permute.default", {l.wt, kT});   // (W^T)^T = W   [out, in]
    g.input = b.op("aten.mm.default", {grad, w});             // dL/dx = dL/dy W   [B, in]
  }
  TensorRef gradT = b.op("aten.permute.default", {grad, kT});  // [out, B]
  TensorRef gw = b.op("aten.mm.default", {gradT, x});           // (dL/dy)^T x = dL/dW   [out, in]
  TensorRef gwt = b.op("aten.permute.default", {gw, kT});       // dL/d(W^T)   [in, out]
  TensorRef gb = b.op("aten.sum.dim_IntList", {grad, std::vector<int64_t>{0}, true});  // [1, out]
  g.bias = b.op("aten.view.default", {gb, std::vector<int64_t>{out}});                // dL/db   [out]
  g.weight = b.op("aten.permute.default", {gwt, kT});           // through permute's backward: dL/dW   [out, in]
  return g;
}

}  // namespace

Result<Program> training(const SampleOptions& o) {
  const int64_t batch = o.batch ? o.batch : 8, in = 4, hidden = 16, out = 2;
  GraphBuilder b;

  // ---- forward ----
  b.enterModule("", "samples.TrainingNet");
  TensorRef x = b.input("input", F, {batch, in});
  TensorRef t = b.input("target", F, {batch, out});
  // Lifted by the joint trace for sigmoid_backward's 1 - y (see the header).
  TensorRef one = b.constant("lifted_tensor_0", F, {}, WeightInit{WeightInit::Kind::Constant, 1.0});

  b.enterModule("net", "samples.Net");
  LinearFwd l1 = linearForward(b, "net.linear", x, in, hidden);
  b.at(kPy, 17, "forward", "return self.linear2(F.sigmoid(self.linear(x)))");
  TensorRef h = b.op("aten.sigmoid.default", {l1.y});
  // Saved for the backward: autograd's detach of the output, twice (aten.alias after decomposition).
  TensorRef saved = b.op("aten.alias.default", {b.op("aten.alias.default", {h})});
  LinearFwd l2 = linearForward(b, "net.linear2", h, hidden, out);
  b.exitModule();

  b.enterModule("loss", "torch.nn.modules.loss.MSELoss");
  b.at("torch/nn/modules/loss.py", 610, "forward", "return F.mse_loss(input, target, reduction=self.reduction)");
  TensorRef diff = b.op("aten.sub.Tensor", {l2.y, t});                  // y - t
  TensorRef sq = b.op("aten.pow.Tensor_Scalar", {diff, int64_t(2)});    // (y - t)^2
  TensorRef loss = b.op("aten.mean.default", {sq});                     // L = mean((y - t)^2)
  b.exitModule();
  b.exitModule();

  // ---- backward (no module stack; source lines of the forward calls) ----
  b.at("torch/nn/modules/loss.py", 610, "forward", "return F.mse_loss(input, target, reduction=self.reduction)");
  // g = ones_like(L); torch writes full_like(L, 1); full() is the workaround (see the header).
  TensorRef seed = b.op("aten.full.default", {std::vector<int64_t>{}, 1.0, F});
  // mse_loss_backward: dL/dy = (2 / N) (y - t) g
  TensorRef diff2 = b.op("aten.sub.Tensor", {l2.y, t});
  TensorRef scaled = b.op("aten.mul.Tensor", {diff2, 2.0 / double(batch * out)});
  TensorRef dy = b.op("aten.mul.Tensor", {scaled, seed});               // [B, O]

  b.at("torch/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)");
  LinearGrads g2 = linearBackward(b, l2, h, dy, out, true);             // dL/dh, dL/dW2, dL/db2

  b.at(kPy, 17, "forward", "return self.linear2(F.sigmoid(self.linear(x)))");
  // sigmoid_backward: dL/dz1 = dL/dh * (y * (1 - y)), y the saved sigmoid output
  TensorRef y = b.op("aten.alias.default", {b.op("aten.alias.default", {saved})});
  TensorRef oneMinus = b.op("aten.sub.Tensor", {one, y});               // 1 - y
  TensorRef dsig = b.op("aten.mul.Tensor", {y, oneMinus});              // y (1 - y)
  TensorRef dz1 = b.op("aten.mul.Tensor", {g2.input, dsig});            // [B, H]

  b.at("torch/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)");
  LinearGrads g1 = linearBackward(b, l1, x, dz1, hidden, false);        // dL/dW1, dL/db1

  b.lossOutput(loss);
  b.gradientOutput(g1.weight, "net.linear.weight");
  b.gradientOutput(g1.bias, "net.linear.bias");
  b.gradientOutput(g2.weight, "net.linear2.weight");
  b.gradientOutput(g2.bias, "net.linear2.bias");
  return b.finish("training");
}

}  // namespace lstudio::samples
