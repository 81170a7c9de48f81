// torchvision's MobileNetV2 (Sandler et al. 2018) as
//   torch.export.export(torchvision.models.mobilenet_v2().eval(), (x,)).run_decompositions()
// records it: every Conv2d is aten.convolution.default without bias, every
// BatchNorm2d in eval mode is aten._native_batch_norm_legit_no_training.default
// (weight/bias parameters, running_mean/running_var buffers and the unused
// int64 [] num_batches_tracked buffer that torch.export still lifts), ReLU6 is
// aten.hardtanh.default(x, 0.0, 6.0), adaptive_avg_pool2d(x, (1, 1)) is
// decomposed to aten.mean.dim(x, [-1, -2], True), torch.flatten(x, 1) is an
// aten.view, Dropout(0.2) is the identity in eval mode and leaves no node, and
// the classifier Linear is permute + addmm.
//
// Module paths and types are torchvision's ("features.3.conv.1.0" is the
// depthwise Conv2d of the third inverted residual block); parameter and buffer
// names are the state_dict keys. 3,504,872 parameters, as published.
//
// Simplifications:
//  - weights are deterministic stand-ins for torchvision's initialization
//    (kaiming-like uniform convolutions, BatchNorm weight 1 / bias 0, running
//    stats 0 / 1, classifier uniform with std 0.01), not trained weights;
//  - each node carries one source frame (the innermost: torch/nn/modules/... or
//    torchvision/models/mobilenetv2.py), where torch.export records the whole
//    user stack; file names and code are torch's and torchvision's, line
//    numbers approximate (they move between releases);
//  - the batch is static (torch.export without dynamic_shapes).
#include <cmath>

#include "engine/samples/Samples.h"

namespace lstudio::samples {
namespace {

constexpr const char* kModel = "torchvision.models.mobilenetv2.MobileNetV2";
constexpr const char* kInvertedResidual = "torchvision.models.mobilenetv2.InvertedResidual";
constexpr const char* kConvNormAct = "torchvision.ops.misc.Conv2dNormActivation";
constexpr const char* kSequential = "torch.nn.modules.container.Sequential";
constexpr const char* kConv2d = "torch.nn.modules.conv.Conv2d";
constexpr const char* kBatchNorm2d = "torch.nn.modules.batchnorm.BatchNorm2d";
constexpr const char* kReLU6 = "torch.nn.modules.activation.ReLU6";
constexpr const char* kMobileNetPy = "torchvision/models/mobilenetv2.py";

/// Conv2d(in, out, k, stride, padding=(k-1)/2, groups, bias=False) at `path`.
TensorRef conv2d(GraphBuilder& b, const std::string& path, TensorRef x, int64_t in, int64_t out, int64_t k,
                 int64_t stride, int64_t groups) {
  b.enterModule(path, kConv2d);
  // torchvision: nn.init.kaiming_normal_(m.weight, mode="fan_out"): std = sqrt(2 / fan_out);
  // a uniform pattern of the same standard deviation has bound std * sqrt(3).
  double fanOut = double(out / groups * k * k);
  TensorRef w = b.parameter(path + ".weight", F, {out, in / groups, k, k},
                            WeightInit{WeightInit::Kind::Pattern, 0, std::sqrt(2.0 / fanOut) * std::sqrt(3.0)});
  b.at("torch/nn/modules/conv.py", 549, "_conv_forward", "return F.conv2d(");
  int64_t pad = (k - 1) / 2;
  TensorRef y = b.op("aten.convolution.default",
                     {x, w, None{}, std::vector<int64_t>{stride, stride}, std::vector<int64_t>{pad, pad},
                      std::vector<int64_t>{1, 1}, false, std::vector<int64_t>{0, 0}, groups});
  b.exitModule();
  return y;
}

/// BatchNorm2d(channels) in eval mode at `path`.
TensorRef batchNorm(GraphBuilder& b, const std::string& path, TensorRef x, int64_t channels) {
  b.enterModule(path, kBatchNorm2d);
  TensorRef w = b.parameter(path + ".weight", F, {channels}, WeightInit{WeightInit::Kind::Constant, 1.0});
  TensorRef bias = b.parameter(path + ".bias", F, {channels}, WeightInit{WeightInit::Kind::Zeros});
  TensorRef mean = b.buffer(path + ".running_mean", F, {channels}, WeightInit{WeightInit::Kind::Zeros});
  TensorRef var = b.buffer(path + ".running_var", F, {channels}, WeightInit{WeightInit::Kind::Constant, 1.0});
  // Kept by torch.export as a buffer input although eval-mode batch norm never reads it.
  b.buffer(path + ".num_batches_tracked", ScalarType::Long, {}, WeightInit{WeightInit::Kind::Zeros});
  b.at("torch/nn/modules/batchnorm.py", 193, "forward", "return F.batch_norm(");
  // (output, save_mean [0], save_invstd [0]); only the output (getitem 0) is used.
  auto outs = b.call("aten._native_batch_norm_legit_no_training.default", {x, w, bias, mean, var, 0.1, 1e-5});
  b.exitModule();
  return outs.empty() ? TensorRef{} : outs.front();
}

TensorRef relu6(GraphBuilder& b, const std::string& path, TensorRef x) {
  b.enterModule(path, kReLU6);
  b.at("torch/nn/modules/activation.py", 281, "forward", "return F.hardtanh(input, self.min_val, self.max_val, self.inplace)");
  TensorRef y = b.op("aten.hardtanh.default", {x, 0.0, 6.0});
  b.exitModule();
  return y;
}

/// Conv2dNormActivation: Sequential(Conv2d, BatchNorm2d[, ReLU6]) at `path` (.0, .1, .2).
TensorRef convBnAct(GraphBuilder& b, const std::string& path, TensorRef x, int64_t in, int64_t out, int64_t k,
                    int64_t stride, int64_t groups) {
  b.enterModule(path, kConvNormAct);
  TensorRef y = conv2d(b, path + ".0", x, in, out, k, stride, groups);
  y = batchNorm(b, path + ".1", y, out);
  y = relu6(b, path + ".2", y);
  b.exitModule();
  return y;
}

/// InvertedResidual(in, out, stride, expand_ratio) at `path`: its `conv` Sequential is
/// [Conv2dNormActivation 1x1 expand (when t != 1)], Conv2dNormActivation 3x3 depthwise,
/// Conv2d 1x1 project, BatchNorm2d; x + conv(x) when stride is 1 and in == out.
TensorRef invertedResidual(GraphBuilder& b, const std::string& path, TensorRef x, int64_t in, int64_t out,
                           int64_t stride, int64_t t) {
  b.enterModule(path, kInvertedResidual);
  b.enterModule(path + ".conv", kSequential);
  int64_t hidden = in * t;
  int index = 0;
  TensorRef y = x;
  if (t != 1) y = convBnAct(b, path + ".conv." + std::to_string(index++), y, in, hidden, 1, 1, 1);
  y = convBnAct(b, path + ".conv." + std::to_string(index++), y, hidden, hidden, 3, stride, hidden);
  y = conv2d(b, path + ".conv." + std::to_string(index++), y, hidden, out, 1, 1, 1);
  y = batchNorm(b, path + ".conv." + std::to_string(index++), y, out);
  b.exitModule();
  if (stride == 1 && in == out) {
    b.at(kMobileNetPy, 64, "forward", "return x + self.conv(x)");
    y = b.op("aten.add.Tensor", {x, y});
  }
  b.exitModule();
  return y;
}

}  // namespace

Result<Program> mobilenetV2(const SampleOptions& o) {
  int64_t batch = o.batch ? o.batch : 1;
  GraphBuilder b;
  b.enterModule("", kModel);
  TensorRef x = b.input("x", F, {batch, 3, 224, 224});

  b.enterModule("features", kSequential);
  // features.0: Conv2dNormActivation(3, 32, stride=2)
  TensorRef y = convBnAct(b, "features.0", x, 3, 32, 3, 2, 1);
  // The inverted residual setting of torchvision (width_mult 1.0, round_nearest 8):
  // t expansion, c output channels, n repeats, s stride of the first repeat.
  struct Stage {
    int64_t t, c, n, s;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t channels = 32;
  int feature = 1;
  for (const Stage& st : stages) {
    for (int64_t i = 0; i < st.n; ++i) {
      y = invertedResidual(b, "features." + std::to_string(feature++), y, channels, st.c, i == 0 ? st.s : 1, st.t);
      channels = st.c;
    }
  }
  // features.18: Conv2dNormActivation(320, 1280, kernel_size=1)
  y = convBnAct(b, "features." + std::to_string(feature), y, channels, 1280, 1, 1, 1);
  b.exitModule();

  b.at(kMobileNetPy, 166, "_forward_impl", "x = nn.functional.adaptive_avg_pool2d(x, (1, 1))");
  y = b.op("aten.mean.dim", {y, std::vector<int64_t>{-1, -2}, true});
  b.at(kMobileNetPy, 167, "_forward_impl", "x = torch.flatten(x, 1)");
  y = b.op("aten.view.default", {y, std::vector<int64_t>{batch, 1280}});

  // classifier: Sequential(Dropout(p=0.2), Linear(1280, 1000)); the Dropout is gone in eval mode.
  b.enterModule("classifier", kSequential);
  b.enterModule("classifier.1", kLinear);
  // torchvision: nn.init.normal_(m.weight, 0, 0.01); nn.init.zeros_(m.bias)
  TensorRef w = b.parameter("classifier.1.weight", F, {1000, 1280},
                            WeightInit{WeightInit::Kind::Pattern, 0, 0.01 * std::sqrt(3.0)});
  TensorRef bias = b.parameter("classifier.1.bias", F, {1000}, WeightInit{WeightInit::Kind::Zeros});
  b.at("torch/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)");
  TensorRef wt = b.op("aten.permute.default", {w, std::vector<int64_t>{1, 0}});
  y = b.op("aten.addmm.default", {bias, y, wt});
  b.exitModule();
  b.exitModule();

  b.output(y);
  return b.finish("mobilenet_v2");
}

}  // namespace lstudio::samples
