// The llama sample: a Llama-style decoder with a KV cache, as torch.export
// (then run_decompositions() to core ATen) records ExecuTorch's export_llama
// model for one decode step (seqlen 1, static shapes, no custom ops).
//
// Modelled on ExecuTorch examples/models/llama/llama_transformer.py and
// rope.py at commit 289e84edde3e (2024-11-08): the module paths and types,
// the parameter and buffer names (freqs_cos / freqs_sin on the root, a
// causal mask and a KVCache per attention) and the source lines recorded on
// the nodes are those of that version. Nodes made by torch's own modules
// (nn.Linear, nn.Embedding) carry the model line that called the module.
//
// Graph of one layer (113 nodes), in execution order:
//   attention_norm   RMSNorm: mul(x, x), mean.dim(-1, keepdim), add(eps), rsqrt, mul, mul(weight)
//   wq, wk, wv       Linear without bias: permute(w, [1, 0]), view to 2-d, mm, view back   (3 x 4)
//   q, k, v views    view to [batch, seqlen, heads, head_dim]                               (3)
//   RoPE             real/imaginary pairs: view [.., head_dim/2, 2], select x2 per tensor,
//                    view of the cos/sin rows, 4 mul + sub + add per tensor,
//                    stack = unsqueeze x2 + cat, flatten = view                            (28)
//   SDPA             transpose = permute x3; KV cache: index_put x2 at [None, None, input_pos];
//                    mask[None, None, input_pos] = unsqueeze x2 + index.Tensor;
//                    repeat_interleave = unsqueeze, expand, clone, view (x2, for k and v);
//                    scaled_dot_product_attention's math path: mul.Scalar(q), permute(k),
//                    mul.Scalar(k^T), expand+view x2, bmm, view, add(mask), _softmax,
//                    expand+view x2, bmm, view; the flash-for-cpu wrapper's permute x2;
//                    transpose + view to [batch, seqlen, dim]                                 (37)
//   wo               Linear (4), residual add (1)
//   ffn_norm         RMSNorm (6)
//   feed_forward     w1 (4), silu = sigmoid + mul (2), w3 (4), mul (1), w2 (4), residual add (1)
// Around the layers: embedding, index.Tensor of freqs_cos and freqs_sin at
// input_pos, select of the last position (h[:, -1, :]), the final RMSNorm and
// the output head (permute + mm): 12 nodes. Total 113 * layers + 12.
//
// Simplifications (each also noted where it happens):
//  - The causal mask is a float additive mask (0 / -inf in a real model; the
//    builder has no triangular fill, so it holds zeros) that is added to the
//    scores. ExecuTorch registers a bool tril mask, which
//    scaled_dot_product_attention turns into an additive one with
//    logical_not / scalar_tensor / where; the builder has no shape inference
//    for logical_not and scalar_tensor. The first ExecuTorch llama
//    (examples/models/llama2, March 2024) held an additive float mask
//    (torch.full(-inf) + triu), as here.
//  - _softmax stands for the softmax; torch >= 2.5's math path calls
//    _safe_softmax, which decomposes into _softmax plus eq / logical_not /
//    any / full_like / where (no builder inference for eq, logical_not, any).
//  - unbind(-1) is recorded as select.int x2 (its C++ kernel); torch's Python
//    decomposition would give slice x2 + squeeze x2 instead.
//  - The RoPE tables hold a fixed pattern in [-1, 1], not cos/sin of
//    position * frequency; weights are deterministic patterns.
//  - One decode step: seqlen is 1, so every .contiguous() on a transposed
//    tensor is a no-op (no clone node); prefill (seqlen > 1) would add clones.
//
// --attention static: ExecuTorch's StaticAttention (attention_type "static",
// split_mha), the layout its Core ML and Qualcomm Llama exports use for NPUs:
// every head is its own nn.Linear (wqs.<h>, wks.<h>, wvs.<h>) and its own
// single-head attention; the KV caches are not buffers but inputs (the past
// cache_len = seq - 1 positions of each layer and KV head) and outputs (the
// new position's keys and values), which the runner shifts into the caches.
// Modelled on examples/models/llama/static_attention.py at commit cff6f4dd32e6
// (2026-08-22) with the default options (non-HF RoPE, no QK norm, no bias,
// caches not transposed, smart-mask style additive mask as an input).
// forward(tokens, attn_options) with attn_options = {"masks": {cache_len: mask},
// "freqs_cos_override", "freqs_sin_override", "in_cache_state": ({k caches},
// {v caches})}, returning (logits, {"out_cache_state": ({new k}, {new v})});
// the caches' dict keys are "l<layer>,h<head>", as in StaticKVCache.
// One layer with H heads and KV key/value heads has 34 + 32 H + 22 KV nodes:
//   attention_norm (6); per query head: linear (4), RoPE (12: slice x2 for
//   x[..., ::2] and x[..., 1::2], 4 mul + sub + add, stack = unsqueeze x2 + cat,
//   flatten = view), attention (16: permute for k^T, matmul = expand + view x2 +
//   bmm + view, mul by 1/sqrt(head_dim), add(mask), _softmax, matmul with v);
//   per KV head: wks and wvs linears (8), RoPE of k (12), cat of cache and new
//   k and v (2); cat of the heads (1), wo (4), residual (1), ffn_norm (6),
//   feed_forward (15), residual (1). Around the layers: embedding, final norm,
//   output head (4, full logits): 11. 32 layers of the default 8 heads and 2 KV
//   heads: 10,699 nodes.
// Simplifications of the static layout:
//  - generate_full_logits: the head sees every position (no
//    last_valid_token_pos input, which would add an index.Tensor).
//  - The root's RoPE tables (rope.freqs_cos / freqs_sin, unused once the
//    overrides are given) are not lifted.
//  - Placeholder names follow torch.export's key-path naming
//    ("attn_options_in_cache_state_0_l0_h0").
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/samples/Samples.h"

namespace lstudio::samples {
namespace {

using Ints = std::vector<int64_t>;

constexpr const char* kModelPy = "executorch/examples/models/llama/llama_transformer.py";
constexpr const char* kRopePy = "executorch/examples/models/llama/rope.py";
const std::string kPkg = "executorch.examples.models.llama.llama_transformer.";
constexpr const char* kStaticPy = "executorch/examples/models/llama/static_attention.py";
const std::string kStaticPkg = "executorch.examples.models.llama.static_attention.";
constexpr ScalarType I64 = ScalarType::Long;

/// Weights above this are refused (the builder fills them in memory).
constexpr uint64_t kMaxWeightBytes = uint64_t(64) << 30;
/// More layers than any released Llama (126 in Llama 3.1 405B), with room.
constexpr int64_t kMaxLayers = 256;

struct Config {
  int64_t layers = 2, dim = 256, heads = 8, kvHeads = 2, seq = 128, vocab = 512, batch = 1, ffn = 0;
  ScalarType dtype = ScalarType::Float;  ///< weights, buffers and activations (model.to(dtype))
  bool staticAttention = false;  ///< --attention static
  int64_t seqlen = 1;  ///< one decode step
  int64_t headDim = 0, hidden = 0, rep = 0;
  double eps = 1e-5;  ///< ModelArgs.norm_eps
};

struct LayerState {
  TensorRef wq, wk, wv, wo, w1, w2, w3, attentionNorm, ffnNorm;  // parameters
  TensorRef mask, kCache, vCache;                                // buffers
  // Static attention: a projection per head, and the caches as user inputs.
  std::vector<TensorRef> wqs, wks, wvs, kCaches, vCaches;
};

Error optionError(const std::string& what, const std::string& expected, const std::string& found) {
  return Error{ErrorCode::Invalid, {}, std::nullopt, "llama sample option " + what, expected, found};
}

/// The options with defaults filled in, checked.
/// Released models' shapes (their params.json), in bfloat16 as they ship:
/// rope_theta and ffn_dim_multiplier only change values, not shapes, so
/// the FFN size is given as it comes out. The output head is its own weight
/// (Llama 3.2 1B ties it to the embedding; torch.export would lift one).
struct Preset {
  const char* name;
  int64_t layers, dim, heads, kvHeads, ffn, vocab;
};
constexpr Preset kPresets[] = {
    {"llama3-8b", 32, 4096, 32, 8, 14336, 128256},
    {"llama3.2-1b", 16, 2048, 32, 8, 8192, 128256},
};

Result<Config> configure(const SampleOptions& o) {
  Config c;
  if (!o.preset.empty()) {
    const Preset* p = nullptr;
    for (const Preset& k : kPresets)
      if (o.preset == k.name) p = &k;
    if (!p) return optionError("--preset", "llama3-8b or llama3.2-1b", o.preset);
    c.layers = p->layers, c.dim = p->dim, c.heads = p->heads, c.kvHeads = p->kvHeads, c.ffn = p->ffn;
    c.vocab = p->vocab, c.dtype = ScalarType::BFloat16;
  }
  if (o.dtype == "bfloat16" || o.dtype == "bf16") c.dtype = ScalarType::BFloat16;
  else if (o.dtype == "float32" || o.dtype == "fp32") c.dtype = ScalarType::Float;
  else if (!o.dtype.empty()) return optionError("--dtype", "float32 or bfloat16", o.dtype);
  struct Opt {
    const char* name;
    int value;
    int64_t* into;
  };
  for (const Opt& p :
       {Opt{"--layers", o.layers, &c.layers}, Opt{"--dim", o.dim, &c.dim}, Opt{"--heads", o.heads, &c.heads},
        Opt{"--kv-heads", o.kvHeads, &c.kvHeads}, Opt{"--seq", o.seq, &c.seq}, Opt{"--vocab", o.vocab, &c.vocab},
        Opt{"--batch", o.batch, &c.batch}, Opt{"--ffn", o.ffn, &c.ffn}}) {
    if (p.value < 0)
      return optionError(p.name, "a positive number (0 or absent: the default)", std::to_string(p.value));
    if (p.value > 0) *p.into = p.value;
  }
  if (o.attention == "static") c.staticAttention = true;
  else if (!o.attention.empty() && o.attention != "mha")
    return optionError("--attention", "mha or static", o.attention);
  if (c.layers > kMaxLayers)
    return optionError("--layers", "at most " + std::to_string(kMaxLayers), std::to_string(c.layers));
  if (c.dim % c.heads != 0)
    return optionError("--dim", "a multiple of --heads (" + std::to_string(c.heads) + ")", std::to_string(c.dim));
  if (c.staticAttention && c.seq <= c.seqlen)
    return optionError("--seq", "more than " + std::to_string(c.seqlen) + " (the static caches hold seq - 1 positions)",
                       std::to_string(c.seq));
  if (c.heads % c.kvHeads != 0)
    return optionError("--heads", "a multiple of --kv-heads (" + std::to_string(c.kvHeads) + ")",
                       std::to_string(c.heads));
  c.headDim = c.dim / c.heads;
  if (c.headDim % 2 != 0)
    return optionError("--dim / --heads", "an even head dimension (RoPE rotates pairs)", std::to_string(c.headDim));
  c.rep = c.heads / c.kvHeads;
  // The Llama rule (ModelArgs.__post_init__): 2/3 of 4 * dim, rounded up to a multiple of 256.
  int64_t hidden = 4 * c.dim * 2 / 3;
  c.hidden = c.ffn > 0 ? c.ffn : (hidden + 255) / 256 * 256;
  // Weight bytes, checked before anything is allocated.
  const uint64_t d = c.dim, kv = c.kvHeads * c.headDim, h = c.hidden, f = elementSize(c.dtype);
  uint64_t perLayer = (2 * d * d + 2 * kv * d + 3 * h * d + 2 * d) * f;  // parameters
  if (!c.staticAttention)
    perLayer += uint64_t(c.seq) * c.seq * f                   // mask
                + 2 * uint64_t(c.batch) * kv * c.seq * f;     // k and v caches
  const uint64_t rest = (2 * uint64_t(c.vocab) * d + d) * f + 2 * uint64_t(c.seq) * (c.headDim / 2) * f;
  const double total = double(perLayer) * double(c.layers) + double(rest);
  if (total > double(kMaxWeightBytes))
    return optionError("sizes", "at most " + std::to_string(kMaxWeightBytes >> 30) + " GiB of weights",
                       std::to_string(uint64_t(total / double(1 << 20))) + " MiB");
  return c;
}

class Llama {
 public:
  explicit Llama(const Config& c) : c_(c), T(c.dtype) {}
  void spillWeightsTo(const std::string& dir) { b_.spillWeightsTo(dir); }

  Result<Program> build() {
    b_.enterModule("", kPkg + "Transformer");
    declareState();
    if (c_.staticAttention) return buildStatic();
    TensorRef tokens = b_.input("tokens", I64, {c_.batch, c_.seqlen});
    TensorRef inputPos = b_.input("input_pos", I64, {c_.seqlen});

    TensorRef h = embed(tokens);
    // Static shapes: the rows of the RoPE tables are picked with index.Tensor (not narrow).
    b_.at(kModelPy, 522, "forward", "freqs_cos = self.freqs_cos[input_pos]");
    TensorRef cos = b_.op("aten.index.Tensor", {freqsCos_, std::vector<TensorRef>{inputPos}});
    b_.at(kModelPy, 523, "forward", "freqs_sin = self.freqs_sin[input_pos]");
    TensorRef sin = b_.op("aten.index.Tensor", {freqsSin_, std::vector<TensorRef>{inputPos}});

    for (int64_t i = 0; i < c_.layers; ++i) h = block(i, h, cos, sin, inputPos);

    // generate_full_logits is False: only the last position goes to the head.
    b_.at(kModelPy, 540, "forward", "h = h[:, -1, :]");
    h = b_.op("aten.select.int", {h, 1, -1});
    b_.at(kModelPy, 542, "forward", "h = self.norm(h)");
    h = rmsNorm("norm", norm_, h);
    b_.at(kModelPy, 544, "forward", "logits = self.output(h)");
    b_.enterModule("output", kLinear);
    TensorRef wt = b_.op("aten.permute.default", {output_, Ints{1, 0}});
    TensorRef logits = b_.op("aten.mm.default", {h, wt});  // h is 2-d: no views around the mm
    b_.exitModule();
    b_.output(logits);
    b_.exitModule();
    return b_.finish("llama");
  }

 private:
  TensorRef embed(TensorRef tokens) {
    b_.at(kModelPy, 500, "forward", "h = self.tok_embeddings(tokens)");
    b_.enterModule("tok_embeddings", "torch.nn.modules.sparse.Embedding");
    TensorRef h = b_.op("aten.embedding.default", {tokEmbeddings_, tokens});
    b_.exitModule();
    return h;
  }

  /// The static-attention model: forward(tokens, attn_options) -> (logits, {"out_cache_state": ...}).
  Result<Program> buildStatic() {
    const int64_t B = c_.batch, S = c_.seqlen, D = c_.headDim, C = c_.seq - c_.seqlen;
    TensorRef tokens = b_.input("tokens", I64, {B, S});
    // Smart-mask style: 0 where attended, -inf elsewhere, over cache_len + input_len positions.
    mask_ = b_.input("attn_options_masks_" + std::to_string(C), T, {1, S, C + S});
    TensorRef cos = b_.input("attn_options_freqs_cos_override", T, {S, D / 2});
    TensorRef sin = b_.input("attn_options_freqs_sin_override", T, {S, D / 2});
    std::vector<std::string> cacheKeys;  // "l<layer>,h<head>" as JSON strings, in the runner's order
    for (int64_t i = 0; i < c_.layers; ++i)
      for (int64_t h = 0; h < c_.kvHeads; ++h) cacheKeys.push_back("\"l" + std::to_string(i) + ",h" + std::to_string(h) + "\"");
    for (int kv = 0; kv < 2; ++kv)
      for (int64_t i = 0; i < c_.layers; ++i)
        for (int64_t h = 0; h < c_.kvHeads; ++h) {
          TensorRef cache = b_.input("attn_options_in_cache_state_" + std::to_string(kv) + "_l" + std::to_string(i) +
                                         "_h" + std::to_string(h),
                                     T, {B, C, D});
          (kv == 0 ? layers_[i].kCaches : layers_[i].vCaches).push_back(cache);
        }

    TensorRef h = embed(tokens);
    for (int64_t i = 0; i < c_.layers; ++i) h = block(i, h, cos, sin, TensorRef{});
    b_.at(kModelPy, 542, "forward", "h = self.norm(h)");
    h = rmsNorm("norm", norm_, h);
    b_.at(kModelPy, 544, "forward", "logits = self.output(h)");
    b_.output(linear("output", output_, h, c_.dim, c_.vocab));
    for (TensorRef k : newKs_) b_.output(k);
    for (TensorRef v : newVs_) b_.output(v);
    b_.exitModule();

    auto dict = [](std::vector<std::string> keys, std::vector<PyTree> children) {
      return PyTree{PyTree::Kind::Dict, std::move(keys), std::move(children)};
    };
    const size_t n = cacheKeys.size();
    PyTree caches = PyTree::tuple({dict(cacheKeys, std::vector<PyTree>(n)), dict(cacheKeys, std::vector<PyTree>(n))});
    PyTree options = dict({"\"masks\"", "\"freqs_cos_override\"", "\"freqs_sin_override\"", "\"in_cache_state\""},
                          {dict({std::to_string(C)}, {PyTree{}}), PyTree{}, PyTree{}, caches});
    b_.callSpecs(PyTree::tuple({PyTree::tuple({PyTree{}, options}), dict({}, {})}),
                 PyTree::tuple({PyTree{}, dict({"\"out_cache_state\""}, {caches})}));
    return b_.finish("llama");
  }

  /// Parameters in named_parameters() order, then buffers in named_buffers()
  /// order (the root's own buffers first), as torch.export lifts them.
  void declareState() {
    const int64_t d = c_.dim, kv = c_.kvHeads * c_.headDim, q = c_.heads * c_.headDim, hid = c_.hidden;
    auto lin = [](int64_t in) { return WeightInit{WeightInit::Kind::Pattern, 0, 1.0 / std::sqrt(double(in))}; };
    const WeightInit ones{WeightInit::Kind::Constant, 1.0, 0};
    const WeightInit zeros{WeightInit::Kind::Zeros, 0, 0};
    tokEmbeddings_ =
        b_.parameter("tok_embeddings.weight", T, {c_.vocab, d}, WeightInit{WeightInit::Kind::Pattern, 0, 0.02});
    layers_.resize(c_.layers);
    for (int64_t i = 0; i < c_.layers; ++i) {
      const std::string p = "layers." + std::to_string(i) + ".";
      LayerState& l = layers_[i];
      if (c_.staticAttention) {
        auto heads = [&](const char* name, int64_t n, std::vector<TensorRef>& into) {
          for (int64_t h = 0; h < n; ++h)
            into.push_back(b_.parameter(p + "attention." + name + "." + std::to_string(h) + ".weight", F,
                                        {c_.headDim, d}, lin(d)));
        };
        heads("wqs", c_.heads, l.wqs);
        heads("wks", c_.kvHeads, l.wks);
        heads("wvs", c_.kvHeads, l.wvs);
      } else {
        l.wq = b_.parameter(p + "attention.wq.weight", T, {q, d}, lin(d));
        l.wk = b_.parameter(p + "attention.wk.weight", T, {kv, d}, lin(d));
        l.wv = b_.parameter(p + "attention.wv.weight", T, {kv, d}, lin(d));
      }
      l.wo = b_.parameter(p + "attention.wo.weight", T, {d, q}, lin(q));
      l.w1 = b_.parameter(p + "feed_forward.w1.weight", T, {hid, d}, lin(d));
      l.w2 = b_.parameter(p + "feed_forward.w2.weight", T, {d, hid}, lin(hid));
      l.w3 = b_.parameter(p + "feed_forward.w3.weight", T, {hid, d}, lin(d));
      l.attentionNorm = b_.parameter(p + "attention_norm.weight", T, {d}, ones);
      l.ffnNorm = b_.parameter(p + "ffn_norm.weight", T, {d}, ones);
    }
    norm_ = b_.parameter("norm.weight", T, {d}, ones);
    output_ = b_.parameter("output.weight", T, {c_.vocab, d}, lin(d));
    if (c_.staticAttention) return;  // no buffers: the caches and the mask are inputs

    // SIMPLIFICATION: a fixed pattern in [-1, 1] instead of cos/sin(position * frequency).
    const WeightInit unit{WeightInit::Kind::Pattern, 0, 1.0};
    freqsCos_ = b_.buffer("freqs_cos", T, {c_.seq, c_.headDim / 2}, unit, /*persistent=*/false);
    freqsSin_ = b_.buffer("freqs_sin", T, {c_.seq, c_.headDim / 2}, unit, /*persistent=*/false);
    for (int64_t i = 0; i < c_.layers; ++i) {
      const std::string p = "layers." + std::to_string(i) + ".attention.";
      LayerState& l = layers_[i];
      // SIMPLIFICATION: ExecuTorch registers torch.tril(torch.ones(seq, seq, dtype=bool)); here an
      // additive float mask (its values would be 0 on and below the diagonal, -inf above; zeros here).
      l.mask = b_.buffer(p + "mask", T, {c_.seq, c_.seq}, zeros, /*persistent=*/false);
      l.kCache = b_.buffer(p + "kv_cache.k_cache", T, {c_.batch, c_.kvHeads, c_.seq, c_.headDim}, zeros);
      l.vCache = b_.buffer(p + "kv_cache.v_cache", T, {c_.batch, c_.kvHeads, c_.seq, c_.headDim}, zeros);
    }
  }

  /// nn.Linear without bias on a [batch, seqlen, in] input, as linear -> matmul
  /// decomposes: permute the weight, fold the leading dimensions, mm, unfold.
  TensorRef linear(const std::string& fqn, TensorRef w, TensorRef x, int64_t in, int64_t out) {
    b_.enterModule(fqn, kLinear);
    TensorRef wt = b_.op("aten.permute.default", {w, Ints{1, 0}});
    TensorRef x2 = b_.op("aten.view.default", {x, Ints{c_.batch * c_.seqlen, in}});
    TensorRef y = b_.op("aten.mm.default", {x2, wt});
    y = b_.op("aten.view.default", {y, Ints{c_.batch, c_.seqlen, out}});
    b_.exitModule();
    return y;
  }

  /// RMSNorm: x * rsqrt(mean(x * x, -1, keepdim) + eps) * weight (x.float() and
  /// type_as are no-ops in float32, so they leave no node).
  TensorRef rmsNorm(const std::string& fqn, TensorRef weight, TensorRef x) {
    b_.enterModule(fqn, kPkg + "RMSNorm");
    b_.at(kModelPy, 57, "_norm", "return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)");
    TensorRef sq = b_.op("aten.mul.Tensor", {x, x});  // ExecuTorch writes x * x, not x.pow(2)
    TensorRef mean = b_.op("aten.mean.dim", {sq, Ints{-1}, true});
    TensorRef eps = b_.op("aten.add.Tensor", {mean, c_.eps});
    TensorRef r = b_.op("aten.rsqrt.default", {eps});
    TensorRef n = b_.op("aten.mul.Tensor", {x, r});
    b_.at(kModelPy, 71, "forward", "return output * self.weight");
    TensorRef y = b_.op("aten.mul.Tensor", {n, weight});
    b_.exitModule();
    return y;
  }

  TensorRef block(int64_t i, TensorRef x, TensorRef cos, TensorRef sin, TensorRef inputPos) {
    const std::string p = "layers." + std::to_string(i);
    const LayerState& l = layers_[i];
    b_.enterModule(p, kPkg + "TransformerBlock");
    TensorRef normed = rmsNorm(p + ".attention_norm", l.attentionNorm, x);
    TensorRef a = c_.staticAttention ? staticAttention(p + ".attention", l, normed, cos, sin)
                                     : attention(p + ".attention", l, normed, cos, sin, inputPos);
    b_.at(kModelPy, 443, "forward", "h = x + h");
    TensorRef h = b_.op("aten.add.Tensor", {x, a});
    TensorRef f = feedForward(p + ".feed_forward", l, rmsNorm(p + ".ffn_norm", l.ffnNorm, h));
    b_.at(kModelPy, 447, "forward", "out = h + self.feed_forward(self.ffn_norm(h))");
    TensorRef out = b_.op("aten.add.Tensor", {h, f});
    b_.exitModule();
    return out;
  }

  TensorRef attention(const std::string& p, const LayerState& l, TensorRef x, TensorRef cos, TensorRef sin,
                      TensorRef inputPos) {
    const int64_t B = c_.batch, S = c_.seqlen, H = c_.heads, KV = c_.kvHeads, D = c_.headDim;
    b_.enterModule(p, kPkg + "Attention");
    b_.at(kModelPy, 329, "forward", "q, k, v = self.wq(x), self.wk(x), self.wv(x)");
    TensorRef q = linear(p + ".wq", l.wq, x, c_.dim, H * D);
    TensorRef k = linear(p + ".wk", l.wk, x, c_.dim, KV * D);
    TensorRef v = linear(p + ".wv", l.wv, x, c_.dim, KV * D);
    b_.at(kModelPy, 331, "forward", "q = q.view(bsz, seqlen, self.n_local_heads, self.head_dim)");
    q = b_.op("aten.view.default", {q, Ints{B, S, H, D}});
    b_.at(kModelPy, 332, "forward", "k = k.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)");
    k = b_.op("aten.view.default", {k, Ints{B, S, KV, D}});
    b_.at(kModelPy, 333, "forward", "v = v.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)");
    v = b_.op("aten.view.default", {v, Ints{B, S, KV, D}});
    std::tie(q, k) = rope(p + ".apply_rotary_emb", q, k, cos, sin);
    TensorRef y = sdpa(p + ".SDPA", l, q, k, v, inputPos);
    b_.at(kModelPy, 341, "forward", "return self.wo(output)");
    TensorRef out = linear(p + ".wo", l.wo, y, H * D, c_.dim);
    b_.exitModule();
    return out;
  }

  /// rope.apply_rotary_emb (the real/imaginary pair formulation, not use_hf_rope).
  std::pair<TensorRef, TensorRef> rope(const std::string& p, TensorRef xq, TensorRef xk, TensorRef cos, TensorRef sin) {
    const int64_t B = c_.batch, S = c_.seqlen, half = c_.headDim / 2;
    b_.enterModule(p, "executorch.examples.models.llama.rope.RotaryEmbedding");
    // SIMPLIFICATION: unbind(-1) as its C++ kernel does it, select.int per element.
    auto split = [&](TensorRef x, int64_t heads) {
      TensorRef pairs = b_.op("aten.view.default", {x, Ints{B, S, heads, half, 2}});
      return std::pair{b_.op("aten.select.int", {pairs, 4, 0}), b_.op("aten.select.int", {pairs, 4, 1})};
    };
    b_.at(kRopePy, 78, "apply_rotary_emb", "xq_r, xq_i = xq.float().reshape(xq.shape[:-1] + (-1, 2)).unbind(-1)");
    auto [qr, qi] = split(xq, c_.heads);
    b_.at(kRopePy, 79, "apply_rotary_emb", "xk_r, xk_i = xk.float().reshape(xk.shape[:-1] + (-1, 2)).unbind(-1)");
    auto [kr, ki] = split(xk, c_.kvHeads);
    b_.at(kRopePy, 72, "reshape_for_broadcast", "return freqs_cis.view(shape)");
    cos = b_.op("aten.view.default", {cos, Ints{1, S, 1, half}});
    sin = b_.op("aten.view.default", {sin, Ints{1, S, 1, half}});
    auto rotate = [&](TensorRef r, TensorRef im, int line, const char* name) {
      const std::string x = name;
      b_.at(kRopePy, line, "apply_rotary_emb", x + "_out_r = " + x + "_r * freqs_cos - " + x + "_i * freqs_sin");
      TensorRef a = b_.op("aten.mul.Tensor", {r, cos});
      TensorRef bb = b_.op("aten.mul.Tensor", {im, sin});
      TensorRef outR = b_.op("aten.sub.Tensor", {a, bb});
      b_.at(kRopePy, line + 1, "apply_rotary_emb", x + "_out_i = " + x + "_r * freqs_sin + " + x + "_i * freqs_cos");
      TensorRef c = b_.op("aten.mul.Tensor", {r, sin});
      TensorRef d = b_.op("aten.mul.Tensor", {im, cos});
      return std::pair{outR, b_.op("aten.add.Tensor", {c, d})};
    };
    auto [qor, qoi] = rotate(qr, qi, 84, "xq");
    auto [kor, koi] = rotate(kr, ki, 86, "xk");
    // torch.stack(dim=-1) decomposes to unsqueeze at the new last dimension + cat; flatten(3) to a view.
    auto stack = [&](TensorRef r, TensorRef im, int64_t heads) {
      TensorRef u = b_.op("aten.unsqueeze.default", {r, 4});
      TensorRef w = b_.op("aten.unsqueeze.default", {im, 4});
      TensorRef cat = b_.op("aten.cat.default", {std::vector<TensorRef>{u, w}, -1});
      return b_.op("aten.view.default", {cat, Ints{B, S, heads, c_.headDim}});
    };
    b_.at(kRopePy, 89, "apply_rotary_emb", "xq_out = torch.stack([xq_out_r, xq_out_i], dim=-1).flatten(3)");
    TensorRef qOut = stack(qor, qoi, c_.heads);
    b_.at(kRopePy, 90, "apply_rotary_emb", "xk_out = torch.stack([xk_out_r, xk_out_i], dim=-1).flatten(3)");
    TensorRef kOut = stack(kor, koi, c_.kvHeads);
    b_.exitModule();
    return {qOut, kOut};
  }

  /// SDPA.forward with KVCache.update (transposed cache, static shapes).
  TensorRef sdpa(const std::string& p, const LayerState& l, TensorRef q, TensorRef k, TensorRef v, TensorRef inputPos) {
    const int64_t B = c_.batch, S = c_.seqlen, H = c_.heads, KV = c_.kvHeads, D = c_.headDim, L = c_.seq;
    const std::string cache = p.substr(0, p.size() - 5) + ".kv_cache.";  // "layers.<i>.attention.kv_cache."
    b_.enterModule(p, kPkg + "SDPA");
    b_.at(kModelPy, 242, "forward", "q = q.transpose(1, 2)  # (bs, n_local_heads, seqlen, head_dim)");
    q = b_.op("aten.permute.default", {q, Ints{0, 2, 1, 3}});
    b_.at(kModelPy, 243, "forward", "k = k.transpose(1, 2)");
    k = b_.op("aten.permute.default", {k, Ints{0, 2, 1, 3}});
    b_.at(kModelPy, 244, "forward", "v = v.transpose(1, 2)");
    v = b_.op("aten.permute.default", {v, Ints{0, 2, 1, 3}});

    // KVCache.update: k_out[:, :, input_pos] = k_val, functionalized to index_put; the new caches
    // are the buffers' new values (buffer mutations of the graph signature).
    const TensorRef none{};
    b_.at(kModelPy, 205, "update", "k_out[:, :, input_pos] = k_val");
    TensorRef kAll = b_.op("aten.index_put.default", {l.kCache, std::vector<TensorRef>{none, none, inputPos}, k});
    b_.at(kModelPy, 206, "update", "v_out[:, :, input_pos] = v_val");
    TensorRef vAll = b_.op("aten.index_put.default", {l.vCache, std::vector<TensorRef>{none, none, inputPos}, v});
    b_.bufferMutation(kAll, cache + "k_cache");
    b_.bufferMutation(vAll, cache + "v_cache");

    b_.at(kModelPy, 255, "forward", "attn_mask = mask[None, None, input_pos]");
    TensorRef mask = b_.op("aten.unsqueeze.default", {l.mask, 0});
    mask = b_.op("aten.unsqueeze.default", {mask, 1});
    mask = b_.op("aten.index.Tensor", {mask, std::vector<TensorRef>{none, none, inputPos}});  // [1, 1, S, L]

    // repeat_interleave(n_rep, dim=1): unsqueeze, expand, contiguous clone, flatten (grouped-query attention).
    auto repeat = [&](TensorRef x) {
      TensorRef u = b_.op("aten.unsqueeze.default", {x, 2});
      TensorRef e = b_.op("aten.expand.default", {u, Ints{B, KV, c_.rep, L, D}});
      TensorRef cl = b_.op("aten.clone.default", {e, int64_t(0)});  // memory_format=torch.contiguous_format
      return b_.op("aten.view.default", {cl, Ints{B, H, L, D}});
    };
    b_.at(kModelPy, 257, "forward", "k = k.repeat_interleave(self.n_rep, dim=1)");
    TensorRef kr = repeat(kAll);
    b_.at(kModelPy, 258, "forward", "v = v.repeat_interleave(self.n_rep, dim=1)");
    TensorRef vr = repeat(vAll);

    // scaled_dot_product_attention -> _scaled_dot_product_flash_attention_for_cpu, decomposed through
    // _scaled_dot_product_attention_math: q and k^T each scaled by sqrt(1 / sqrt(head_dim)), matmul as
    // expand + view + bmm + view, the mask added, softmax, matmul with v.
    b_.at(kModelPy, 259, "forward", "y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=0.0)");
    const double factor = std::sqrt(1.0 / std::sqrt(double(D)));
    // matmul of 4-d operands: expand both to the batch shape, fold to 3-d (views here), bmm, unfold.
    auto fold = [&](TensorRef x, Ints expanded, Ints folded) {
      TensorRef e = b_.op("aten.expand.default", {x, std::move(expanded)});
      return b_.op("aten.view.default", {e, std::move(folded)});
    };
    TensorRef qs = b_.op("aten.mul.Scalar", {q, factor});
    TensorRef kt = b_.op("aten.permute.default", {kr, Ints{0, 1, 3, 2}});
    TensorRef kts = b_.op("aten.mul.Scalar", {kt, factor});
    TensorRef q3 = fold(qs, {B, H, S, D}, {B * H, S, D});
    TensorRef k3 = fold(kts, {B, H, D, L}, {B * H, D, L});  // k^T folds its two leading dimensions as a view
    TensorRef scores = b_.op("aten.bmm.default", {q3, k3});
    scores = b_.op("aten.view.default", {scores, Ints{B, H, S, L}});
    scores = b_.op("aten.add.Tensor", {scores, mask});
    // SIMPLIFICATION: torch >= 2.5 uses _safe_softmax here (it adds eq / logical_not / any / where nodes).
    TensorRef probs = b_.op("aten._softmax.default", {scores, -1, false});
    TensorRef p3 = fold(probs, {B, H, S, L}, {B * H, S, L});
    TensorRef v3 = fold(vr, {B, H, L, D}, {B * H, L, D});
    TensorRef y = b_.op("aten.bmm.default", {p3, v3});
    y = b_.op("aten.view.default", {y, Ints{B, H, S, D}});
    // The flash-for-cpu decomposition keeps the flash layout: permute(2, 0, 1, 3).contiguous().permute(1, 2, 0, 3);
    // with seqlen 1 the permuted tensor is already contiguous, so no clone is recorded.
    y = b_.op("aten.permute.default", {y, Ints{2, 0, 1, 3}});
    y = b_.op("aten.permute.default", {y, Ints{1, 2, 0, 3}});
    b_.at(kModelPy, 261, "forward", "return y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)");
    y = b_.op("aten.permute.default", {y, Ints{0, 2, 1, 3}});  // .contiguous() is a no-op for seqlen 1
    y = b_.op("aten.view.default", {y, Ints{B, S, H * D}});
    b_.exitModule();
    return y;
  }

  /// StaticAttention.forward with split_mha: one projection and one attention per head.
  TensorRef staticAttention(const std::string& p, const LayerState& l, TensorRef x, TensorRef cos, TensorRef sin) {
    const int64_t H = c_.heads, KV = c_.kvHeads, D = c_.headDim;
    b_.enterModule(p, kStaticPkg + "StaticAttention");
    std::vector<TensorRef> qs, ks, vs;
    b_.at(kStaticPy, 1101, "forward", "new_qs = [lora_call(wq, x, _lora_blob) for wq in self.wqs]");
    for (int64_t h = 0; h < H; ++h) qs.push_back(linear(p + ".wqs." + std::to_string(h), l.wqs[h], x, c_.dim, D));
    b_.at(kStaticPy, 1111, "forward", "new_ks = [lora_call(wk, x, _lora_blob) for wk in self.wks]");
    for (int64_t h = 0; h < KV; ++h) ks.push_back(linear(p + ".wks." + std::to_string(h), l.wks[h], x, c_.dim, D));
    b_.at(kStaticPy, 1112, "forward", "new_vs = [lora_call(wv, x, _lora_blob) for wv in self.wvs]");
    for (int64_t h = 0; h < KV; ++h) vs.push_back(linear(p + ".wvs." + std::to_string(h), l.wvs[h], x, c_.dim, D));
    // _apply_rope: every query head, then every key head, through the one rope module.
    for (TensorRef& q : qs) q = staticRope(p + ".rope", q, cos, sin);
    for (TensorRef& k : ks) k = staticRope(p + ".rope", k, cos, sin);
    // _update_kv_cache: past and new positions concatenated; the new ones are outputs (out_cache_state).
    std::vector<TensorRef> allK, allV;
    for (int64_t h = 0; h < KV; ++h) {
      b_.enterModule(p + ".k_caches." + std::to_string(h), kStaticPkg + "StaticKCache");
      b_.at(kStaticPy, 147, "update", "all_data = torch.cat([cache, new_data], dim=seq_dim)");
      allK.push_back(b_.op("aten.cat.default", {std::vector<TensorRef>{l.kCaches[h], ks[h]}, -2}));
      b_.exitModule();
      b_.enterModule(p + ".v_caches." + std::to_string(h), kStaticPkg + "StaticVCache");
      b_.at(kStaticPy, 168, "update", "all_data = torch.cat([cache, new_data], dim=-2)");
      allV.push_back(b_.op("aten.cat.default", {std::vector<TensorRef>{l.vCaches[h], vs[h]}, -2}));
      b_.exitModule();
      newKs_.push_back(ks[h]);
      newVs_.push_back(vs[h]);
    }
    std::vector<TensorRef> heads;
    for (int64_t h = 0; h < H; ++h) heads.push_back(singleHead(qs[h], allK[h / c_.rep], allV[h / c_.rep]));
    b_.at(kStaticPy, 1334, "_process_normal_kv", "return torch.cat(heads, dim=-1), out_cache_state, kv_to_share");
    TensorRef y = b_.op("aten.cat.default", {heads, -1});
    b_.at(kStaticPy, 1158, "forward", "y = lora_call(self.wo, y, _lora_blob)");
    TensorRef out = linear(p + ".wo", l.wo, y, H * D, c_.dim);
    b_.exitModule();
    return out;
  }

  /// _Rope.forward without HF RoPE: even and odd elements rotated as pairs.
  TensorRef staticRope(const std::string& p, TensorRef x, TensorRef cos, TensorRef sin) {
    const int64_t B = c_.batch, S = c_.seqlen;
    constexpr int64_t kEnd = INT64_MAX;  // torch.export records an open slice end as sys.maxsize
    b_.enterModule(p, kStaticPkg + "_Rope");
    b_.at(kStaticPy, 824, "forward", "x_r, x_i = x[..., ::2], x[..., 1::2]");
    TensorRef r = b_.op("aten.slice.Tensor", {x, -1, int64_t(0), kEnd, int64_t(2)});
    TensorRef i = b_.op("aten.slice.Tensor", {x, -1, int64_t(1), kEnd, int64_t(2)});
    b_.at(kStaticPy, 825, "forward", "x_out_r = x_r * freqs_cos - x_i * freqs_sin");
    TensorRef a = b_.op("aten.mul.Tensor", {r, cos});
    TensorRef bb = b_.op("aten.mul.Tensor", {i, sin});
    TensorRef outR = b_.op("aten.sub.Tensor", {a, bb});
    b_.at(kStaticPy, 826, "forward", "x_out_i = x_r * freqs_sin + x_i * freqs_cos");
    TensorRef c = b_.op("aten.mul.Tensor", {r, sin});
    TensorRef d = b_.op("aten.mul.Tensor", {i, cos});
    TensorRef outI = b_.op("aten.add.Tensor", {c, d});
    b_.at(kStaticPy, 827, "forward", "x_out = torch.stack([x_out_r, x_out_i], dim=-1).flatten(-2)");
    TensorRef u = b_.op("aten.unsqueeze.default", {outR, 3});
    TensorRef w = b_.op("aten.unsqueeze.default", {outI, 3});
    TensorRef cat = b_.op("aten.cat.default", {std::vector<TensorRef>{u, w}, -1});
    TensorRef y = b_.op("aten.view.default", {cat, Ints{B, S, c_.headDim}});
    b_.exitModule();
    return y;
  }

  /// matmul of two 3-d tensors [B, n, k] @ [B, k, m] as torch decomposes it:
  /// expand both to the batch shape, fold them (views), bmm, unfold.
  TensorRef matmul3(TensorRef a, TensorRef b, int64_t n, int64_t k, int64_t m) {
    const int64_t B = c_.batch;
    TensorRef a3 = b_.op("aten.view.default", {b_.op("aten.expand.default", {a, Ints{B, n, k}}), Ints{B, n, k}});
    TensorRef b3 = b_.op("aten.view.default", {b_.op("aten.expand.default", {b, Ints{B, k, m}}), Ints{B, k, m}});
    return b_.op("aten.view.default", {b_.op("aten.bmm.default", {a3, b3}), Ints{B, n, m}});
  }

  /// StaticAttention._compute_attention for one query head (the additive mask path).
  TensorRef singleHead(TensorRef q, TensorRef k, TensorRef v) {
    const int64_t S = c_.seqlen, L = c_.seq, D = c_.headDim;  // L = cache_len + input_len
    b_.at(kStaticPy, 1225, "_compute_attention", "attn = q @ k.transpose(-2, -1)");
    TensorRef kt = b_.op("aten.permute.default", {k, Ints{0, 2, 1}});
    TensorRef attn = matmul3(q, kt, S, D, L);
    b_.at(kStaticPy, 1226, "_compute_attention", "attn = attn * self.inv_scale");
    attn = b_.op("aten.mul.Tensor", {attn, 1.0 / std::sqrt(double(D))});
    b_.at(kStaticPy, 1232, "_compute_attention", "attn = attn + mask");
    attn = b_.op("aten.add.Tensor", {attn, mask_});
    // SIMPLIFICATION: as in the MHA path, _softmax for torch's softmax (no _safe_softmax nodes).
    b_.at(kStaticPy, 1233, "_compute_attention", "attn = F.softmax(attn, dim=-1)");
    attn = b_.op("aten._softmax.default", {attn, -1, false});
    b_.at(kStaticPy, 1234, "_compute_attention", "return attn @ v");
    return matmul3(attn, v, S, L, D);
  }

  /// FeedForward: w2(silu(w1(x)) * w3(x)); silu is not core ATen and decomposes to x * sigmoid(x).
  TensorRef feedForward(const std::string& p, const LayerState& l, TensorRef x) {
    b_.enterModule(p, kPkg + "FeedForward");
    b_.at(kModelPy, 374, "forward", "return self.w2(F.silu(self.w1(x)) * self.w3(x))");
    TensorRef a = linear(p + ".w1", l.w1, x, c_.dim, c_.hidden);
    TensorRef s = b_.op("aten.sigmoid.default", {a});
    s = b_.op("aten.mul.Tensor", {a, s});
    TensorRef g = linear(p + ".w3", l.w3, x, c_.dim, c_.hidden);
    TensorRef m = b_.op("aten.mul.Tensor", {s, g});
    TensorRef out = linear(p + ".w2", l.w2, m, c_.hidden, c_.dim);
    b_.exitModule();
    return out;
  }

  Config c_;
  const ScalarType T;  ///< the model's floating dtype
  GraphBuilder b_;
  TensorRef tokEmbeddings_, norm_, output_, freqsCos_, freqsSin_;
  TensorRef mask_;                       ///< static attention: the mask input
  std::vector<TensorRef> newKs_, newVs_;  ///< static attention: out_cache_state, in the runner's order
  std::vector<LayerState> layers_;
};

}  // namespace

/// A Llama-style decoder with a KV cache (ExecuTorch export_llama, one decode step).
/// Defaults: 2 layers, dim 256, 8 heads, 2 KV heads, cache length 128,
/// vocabulary 512, batch 1; MLP hidden size by the Llama rule; attention
/// with a KV cache in buffers ("mha"), or split per head ("static").
Result<Program> llama(const SampleOptions& o) {
  auto c = configure(o);
  if (!c) return c.error();
  Llama model(c.value());
  if (!o.weightsDir.empty()) model.spillWeightsTo(o.weightsDir);
  return model.build();
}

}  // namespace lstudio::samples
