"""Conformance corpus: small PyTorch programs covering what users export with ExecuTorch.

Each Entry knows how to export itself (ATen dialect ExportedPrograms), what inputs to run the
lowered program with, and how upstream ExecuTorch turns it into an edge program.

Run directly for a self-check (export -> edge -> executorch -> .pte -> runtime vs eager):

    <oracle venv>/bin/python tests/conformance/corpus.py [entry names...]   (tools/dev.sh makes the venv)
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export


@dataclass
class Entry:
    name: str                      # short id, [a-z0-9_]+
    what: str                      # one line: what it covers
    # returns {method_name: torch.export.ExportedProgram} in ATen dialect
    export: Callable[[], Dict[str, "torch.export.ExportedProgram"]]
    # returns {method_name: tuple of input tensors} to run the LOWERED program with
    inputs: Callable[[], Dict[str, Tuple[Any, ...]]]
    lower: str = "edge"            # "edge" or "xnnpack"
    edge_config: dict = field(default_factory=dict)   # EdgeCompileConfig kwargs
    training: bool = False         # True for the joint-graph training program
    tags: Tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

# Eager references for the self-check: name -> callable returning {method: outputs}.
# Entries without one use a freshly exported program's .module() (fresh buffers).
_EAGER: Dict[str, Callable[[], Dict[str, Any]]] = {}


def _seeded(make: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    m = make()
    m.eval()
    return m


def _randn(*shape, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _single(name: str, what: str, make_model: Callable[[], nn.Module],
            make_inputs: Callable[[], Tuple[Any, ...]],
            example_inputs: Optional[Callable[[], Tuple[Any, ...]]] = None,
            dynamic_shapes: Any = None, lower: str = "edge", edge_config: Optional[dict] = None,
            tags: Tuple[str, ...] = (), strict: bool = False, no_grad: bool = False) -> Entry:
    """Entry for a single-method ("forward") float program. no_grad=True exports under
    torch.no_grad() as ExecuTorch's LLM export does (needed for in-place cache updates)."""

    def _export():
        m = _seeded(make_model)
        ex = (example_inputs or make_inputs)()
        with torch.set_grad_enabled(not no_grad):
            return {"forward": export(m, ex, dynamic_shapes=dynamic_shapes, strict=strict)}

    def _inputs():
        return {"forward": make_inputs()}

    def _eager():
        m = _seeded(make_model)
        with torch.no_grad():
            return {"forward": m(*make_inputs())}

    _EAGER[name] = _eager
    return Entry(name=name, what=what, export=_export, inputs=_inputs, lower=lower,
                 edge_config=dict(edge_config or {}), tags=tags)


def to_edge_program(entry: Entry, compile_config=None):
    """ExecuTorch's EdgeProgramManager for the entry (to_edge or to_edge_transform_and_lower),
    under compile_config (an EdgeCompileConfig) when given, else the entry's own."""
    from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower
    # registers the quantized_decomposed::*.out kernels that to_executorch() needs when
    # q/dq ops stay in the (non-delegated) graph
    import executorch.kernels.quantized  # noqa: F401

    programs = entry.export()
    cfg = compile_config if compile_config is not None else EdgeCompileConfig(**entry.edge_config)
    if entry.lower == "edge":
        return to_edge(programs, compile_config=cfg)
    if entry.lower == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        return to_edge_transform_and_lower(
            programs, partitioner=[XnnpackPartitioner()], compile_config=cfg)
    raise ValueError(f"unknown lower mode {entry.lower!r}")


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


# --- MobileNetV2 (torchvision structure) -----------------------------------------------------

def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # do not round down by more than 10%
        new_v += divisor
    return new_v


class ConvBNReLU6(nn.Sequential):
    def __init__(self, cin, cout, kernel=3, stride=1, groups=1):
        pad = (kernel - 1) // 2
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, pad, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand_ratio):
        super().__init__()
        hidden = int(round(cin * expand_ratio))
        self.use_res_connect = stride == 1 and cin == cout
        layers: List[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU6(cin, hidden, kernel=1))
        layers += [
            ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),  # depthwise
            nn.Conv2d(hidden, cout, 1, 1, 0, bias=False),                # pointwise-linear
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=10, width_mult=0.25, round_nearest=8):
        super().__init__()
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        setting = [
            # t, c, n, s
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]
        features: List[nn.Module] = [ConvBNReLU6(3, input_channel, stride=2)]
        for t, c, n, s in setting:
            out_c = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, out_c, s if i == 0 else 1, t))
                input_channel = out_c
        features.append(ConvBNReLU6(input_channel, self.last_channel, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                # non-trivial running stats so BN folding/decomposition is exercised
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.uniform_(m.bias, -0.1, 0.1)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


# --- ResNet (torchvision BasicBlock structure) -----------------------------------------------

def _conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride, 1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1, downsample: Optional[nn.Module] = None):
        super().__init__()
        self.conv1 = _conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(cout, cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


def _downsample(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


def _init_bn_stats(model: nn.Module):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.1, 0.1)


class ResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), base=8, num_classes=10):
        super().__init__()
        self.inplanes = base
        self.conv1 = nn.Conv2d(3, base, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(base, layers[0])
        self.layer2 = self._make_layer(base * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(base * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(base * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(base * 8, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        _init_bn_stats(self)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = _downsample(self.inplanes, planes, stride)
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(planes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def _resnet_block():
    m = BasicBlock(8, 16, stride=2, downsample=_downsample(8, 16, 2))
    _init_bn_stats(m)
    return m


# --- ViT --------------------------------------------------------------------------------------

class ViTAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        o = F.scaled_dot_product_attention(q, k, v)
        return self.proj(o.transpose(1, 2).reshape(b, n, c))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=2):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = ViTAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * mlp_ratio), nn.GELU(),
                                 nn.Linear(dim * mlp_ratio, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViTTiny(nn.Module):
    def __init__(self, img=32, patch=8, dim=32, heads=2, depth=2, num_classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


# --- Transformer encoder with explicit ops and causal mask ------------------------------------

class CausalEncoderLayer(nn.Module):
    def __init__(self, dim=32, heads=4, seq=8):
        super().__init__()
        self.heads = heads
        self.ln1_w = nn.Parameter(1 + 0.1 * torch.randn(dim))
        self.ln1_b = nn.Parameter(0.1 * torch.randn(dim))
        self.ln2_w = nn.Parameter(1 + 0.1 * torch.randn(dim))
        self.ln2_b = nn.Parameter(0.1 * torch.randn(dim))
        self.wq = nn.Linear(dim, dim)
        self.wk = nn.Linear(dim, dim)
        self.wv = nn.Linear(dim, dim)
        self.wo = nn.Linear(dim, dim)
        self.ff1 = nn.Linear(dim, 4 * dim)
        self.ff2 = nn.Linear(4 * dim, dim)
        self.register_buffer("causal", torch.ones(seq, seq, dtype=torch.bool).tril())

    def forward(self, x):
        b, s, d = x.shape
        h = F.layer_norm(x, (d,), self.ln1_w, self.ln1_b, 1e-5)
        split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.wq(h)), split(self.wk(h)), split(self.wv(h))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=self.causal[:s, :s])
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, d))
        h = F.layer_norm(x, (d,), self.ln2_w, self.ln2_b, 1e-5)
        return x + self.ff2(F.gelu(self.ff1(h)))


class TransformerEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([CausalEncoderLayer() for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# --- Llama with KV cache (ExecuTorch's example model) ------------------------------------------

LLAMA_DIM, LLAMA_LAYERS, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_SEQ, LLAMA_VOCAB = 32, 2, 4, 2, 16, 64


def _example_llama(use_kv_cache: bool, enable_dynamic_shape: bool) -> nn.Module:
    """executorch.examples.models.llama's Transformer at the corpus's small size."""
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    args = ModelArgs(dim=LLAMA_DIM, n_layers=LLAMA_LAYERS, n_heads=LLAMA_HEADS,
                     n_kv_heads=LLAMA_KV_HEADS, vocab_size=LLAMA_VOCAB, hidden_dim=64,
                     max_seq_len=LLAMA_SEQ, max_context_len=LLAMA_SEQ, max_batch_size=1,
                     use_kv_cache=use_kv_cache, enable_dynamic_shape=enable_dynamic_shape)
    return construct_transformer(args)


class LlamaKV(nn.Module):
    """Wraps executorch.examples.models.llama's Transformer (RMSNorm, RoPE, SwiGLU, GQA, KV cache
    as registered buffers updated with index_put at tensor input_pos)."""

    def __init__(self, enable_dynamic_shape=False):
        super().__init__()
        self.model = _example_llama(use_kv_cache=True, enable_dynamic_shape=enable_dynamic_shape)

    def forward(self, tokens, input_pos):
        return self.model(tokens, {"input_pos": input_pos})


class LlamaPrefill(nn.Module):
    """The same example Llama without a cache, its sequence length dynamic
    (enable_dynamic_shape): a prefill over 1..15 tokens."""

    def __init__(self):
        super().__init__()
        self.model = _example_llama(use_kv_cache=False, enable_dynamic_shape=True)

    def forward(self, tokens):
        return self.model(tokens)


# --- Llama with static attention (caches in, new k/v out) --------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rope(x, cos, sin):
    # x: [B, H, S, D]; cos/sin: [S, D/2]; interleaved-pair rotation as in Llama
    xr = x.reshape(*x.shape[:-1], -1, 2)
    a, b = xr[..., 0], xr[..., 1]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


class StaticLayer(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.attn_norm = RMSNorm(dim)
        self.wq = nn.Linear(dim, heads * self.hd, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(heads * self.hd, dim, bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x, cos, sin, mask, k_cache, v_cache):
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        keys = torch.cat([k_cache, k], dim=2)
        vals = torch.cat([v_cache, v], dim=2)
        rep = self.heads // self.kv_heads
        keys = keys.repeat_interleave(rep, dim=1)
        vals = vals.repeat_interleave(rep, dim=1)
        att = (q @ keys.transpose(-1, -2)) / math.sqrt(self.hd) + mask
        o = (att.softmax(-1) @ vals).transpose(1, 2).reshape(b, s, -1)
        x = x + self.wo(o)
        h = self.ffn_norm(x)
        x = x + self.w2(F.silu(self.w1(h)) * self.w3(h))
        return x, k, v


class LlamaStatic(nn.Module):
    def __init__(self, dim=LLAMA_DIM, layers=LLAMA_LAYERS, heads=LLAMA_HEADS,
                 kv_heads=LLAMA_KV_HEADS, vocab=LLAMA_VOCAB, hidden=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([StaticLayer(dim, heads, kv_heads, hidden)
                                     for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.out = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, freqs_cos, freqs_sin, mask, k_caches, v_caches):
        # k_caches/v_caches: [L, B, Hkv, P, D]; mask: [S, P + S] additive
        x = self.emb(tokens)
        new_k, new_v = [], []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, freqs_cos, freqs_sin, mask, k_caches[i], v_caches[i])
            new_k.append(k)
            new_v.append(v)
        return self.out(self.norm(x)), torch.stack(new_k), torch.stack(new_v)


def _llama_static_inputs():
    hd = LLAMA_DIM // LLAMA_HEADS
    past = LLAMA_SEQ - 1
    pos = 5  # number of valid cache entries
    tokens = torch.tensor([[7]], dtype=torch.int64)
    inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    ang = torch.tensor([float(pos)])[:, None] * inv[None, :]
    mask = torch.full((1, past + 1), float("-inf"))
    mask[:, :pos] = 0.0
    mask[:, past:] = 0.0
    k = _randn(LLAMA_LAYERS, 1, LLAMA_KV_HEADS, past, hd, seed=1)
    v = _randn(LLAMA_LAYERS, 1, LLAMA_KV_HEADS, past, hd, seed=2)
    return (tokens, ang.cos(), ang.sin(), mask, k, v)


# --- Prefill / decode over shared KV-cache buffers ---------------------------------------------

class _Method(nn.Module):
    """Exposes one entry point of a shared core as `forward` so it can be exported."""

    def __init__(self, core: nn.Module, fn: str):
        super().__init__()
        self.core = core
        self.fn = fn

    def forward(self, *args):
        return getattr(self.core, self.fn)(*args)


class PrefillDecode(nn.Module):
    def __init__(self):
        super().__init__()
        self.llama = LlamaKV()

    def prefill(self, tokens, input_pos):
        return self.llama(tokens, input_pos)

    def decode(self, tokens, input_pos):
        logits = self.llama(tokens, input_pos)
        return logits, logits.argmax(-1)


# --- Quantization (PT2E + XNNPACKQuantizer) ----------------------------------------------------

def _quantize_pt2e(model: nn.Module, example: Tuple[Any, ...], calib: List[Tuple[Any, ...]],
                   dynamic: bool = False):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer()
    # dynamic: int8 weights per channel, activations quantized per token at run time.
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=dynamic, is_dynamic=dynamic))
    gm = export(model, example).module()
    prepared = prepare_pt2e(gm, quantizer)
    for c in calib:
        prepared(*c)
    return convert_pt2e(prepared)


class QLinearNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class QConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def _quant_entry(name, what, make_model, make_input, lower, tags, dynamic=False):
    def _calib():
        return [(_randn(*make_input().shape, seed=100 + i),) for i in range(4)]

    def _converted():
        m = _seeded(make_model)
        return _quantize_pt2e(m, (make_input(),), _calib(), dynamic)

    def _export():
        q = _converted()
        return {"forward": export(q, (make_input(),))}

    def _eager():
        q = _converted()
        with torch.no_grad():
            return {"forward": q(make_input())}

    _EAGER[name] = _eager
    return Entry(name=name, what=what, export=_export,
                 inputs=lambda: {"forward": (make_input(),)}, lower=lower, tags=tags)


# --- Training (joint forward/backward graph) ---------------------------------------------------

class TrainNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 16)
        self.l2 = nn.Linear(16, 3)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, label):
        pred = self.l2(torch.sigmoid(self.l1(x)))
        return self.loss(pred, label), pred.detach().argmax(dim=1)


def _training_inputs():
    return (_randn(2, 4, seed=3), torch.tensor([0, 2], dtype=torch.int64))


def _training_export():
    from torch.export.experimental import _export_forward_backward

    m = _seeded(TrainNet)
    ep = export(m, _training_inputs(), strict=True)
    return {"forward": _export_forward_backward(ep)}


def _training_eager():
    """Reference in the joint graph's output order: user outputs, then gradients, then params."""
    from torch.export.graph_signature import OutputKind

    m = _seeded(TrainNet)
    loss, pred = m(*_training_inputs())
    loss.backward()
    params = dict(m.named_parameters())
    ep = _training_export()["forward"]
    outs: List[Any] = [loss.detach(), pred]
    for spec in ep.graph_signature.output_specs:
        if spec.kind == OutputKind.GRADIENT_TO_PARAMETER:
            outs.append(params[spec.target].grad)
    # ExecuTorch's training emit appends the parameters after the gradients.
    outs += [p.detach() for p in params.values()]
    return {"forward": tuple(outs)}


_EAGER["training"] = _training_eager


# --- Control flow -----------------------------------------------------------------------------

class CondNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        def true_fn(t):
            return self.lin(t).sin()

        def false_fn(t):
            return t.cos() * 2.0

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


class MapNet(nn.Module):
    """torch's map over the rows of x: a Linear + relu per row, plus an operand y
    (the Linear's weights become operands of the body as well)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, y):
        from torch._higher_order_ops.map import map as map_rows

        def body(row, y):
            return self.lin(row).relu() + y

        return map_rows(body, x, y)


class ScanNet(nn.Module):
    """torch's scan as a recurrent cell: carry h, one step per row of xs; returns the
    last h and every step's h * 2 stacked (the Linear's weights are additional inputs)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, h, xs):
        from torch._higher_order_ops.scan import scan

        def step(h, x):
            h2 = torch.tanh(self.lin(x) + h * 0.5)
            return h2, h2 * 2.0

        return scan(step, h, xs)


# --- Small op-coverage modules -----------------------------------------------------------------

class EmbeddingMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)

    def forward(self, ids):
        return self.emb(ids).mean(dim=1)


class IndexOps(nn.Module):
    def forward(self, x, idx, rows):
        y = x.clone()
        y.index_put_((rows,), torch.ones(rows.shape[0], x.shape[1]) * 3.0)
        y[idx, 1] = -1.0
        g = torch.gather(x, 1, idx.view(-1, 1).expand(-1, 2) % x.shape[1])
        s = torch.index_select(x, 0, rows)
        t = x[rows, :][:, idx % x.shape[1]]
        return y, g, s, t


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=1, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.fc(out[:, -1]), h, c


class ConstantBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.tensor([0.5, 1.0, 2.0, 4.0])             # plain tensor attribute
        self.register_buffer("offset", torch.arange(4, dtype=torch.float32), persistent=False)
        # Mutable buffers start at zero: ExecuTorch leaves mutable buffers uninitialized
        # (zero-filled by the runtime) unless InitializedMutableBufferPass marks them.
        self.register_buffer("counter", torch.zeros(1, dtype=torch.int64))
        self.register_buffer("running_mean", torch.zeros(4))
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.counter.add_(1)
        self.running_mean.copy_(0.9 * self.running_mean + 0.1 * x.mean(0))
        y = self.lin(x * self.scale + self.offset) - self.running_mean
        return y, self.counter * 2, self.running_mean + 0


class Views(nn.Module):
    def forward(self, x):
        # x: [2, 3, 4, 5]
        a = x.view(2, 12, 5)
        b = a.permute(2, 0, 1).reshape(5, 24)
        c = x.transpose(1, 3)[:, 1:4, :, ::2]
        d = x[:, 0].unsqueeze(1).expand(2, 3, 4, 5)
        e = x[:, :1, :, :1].squeeze(3).squeeze(1)
        f = (c.contiguous().sum(-1) + b.sum()).unsqueeze(-1)
        return x.view(6, 20), b, d * 2, e, f, x.narrow(2, 1, 2) + 1


class SoftmaxOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(10)

    def forward(self, x):
        a = torch.softmax(x, dim=-1)
        b = torch.log_softmax(x, dim=1)
        c = self.ln(x)
        m = x.mean(dim=-1, keepdim=True)
        v = x.var(dim=-1, keepdim=True)
        v2 = torch.var(x, dim=(0, 1), unbiased=False)
        return a, b, c, (x - m) / torch.sqrt(v + 1e-5), v2, x.amax(-1), x.sum(0)


class Conv1dPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 3, padding=1)
        self.c2 = nn.Conv2d(2, 4, 3, padding=1)

    def forward(self, x1, x2):
        # x1: [1, 4, 16]; x2: [1, 2, 8, 8]
        y = F.relu(self.c1(x1))
        y1 = F.max_pool1d(y, 2)
        y2 = F.avg_pool1d(y, 4, stride=2)
        y3 = F.adaptive_avg_pool1d(y, 3)
        z = self.c2(x2)
        z1 = F.max_pool2d(z, 2, stride=2)
        z2 = F.avg_pool2d(z, 2)
        z3 = F.adaptive_avg_pool2d(z, (1, 1))
        u1 = F.interpolate(z1, scale_factor=2, mode="nearest")
        u2 = F.interpolate(z2, size=(6, 6), mode="bilinear", align_corners=False)
        p1 = F.pad(x2, (1, 2, 0, 1))
        p2 = F.pad(x1, (2, 2), mode="constant", value=-1.0)
        return y1, y2, y3, z3, u1, u2, p1, p2


class ElementwiseMixed(nn.Module):
    def forward(self, x, n):
        # x float [4, 5], n int64 [4, 5]
        a = x * n + 1                      # int * float -> float
        b = n * 3 - 7                      # stays int64
        c = n // 2 + n % 3
        w = torch.where(x > 0, x, n.to(torch.float32))
        cl = torch.clamp(x, -0.5, 0.5)
        mf = x.masked_fill(n > 2, -100.0)
        gt = (x >= 0.1) & (n != 1)         # bool output
        cs = torch.cumsum(n, dim=1)
        csf = torch.cumsum(x, dim=0)
        h = (x.half() * 2).float()
        return a, b, c, w, cl, mf, gt, cs, csf, h, x.abs().sqrt() + x.exp().log1p()


class CatStackSplit(nn.Module):
    def forward(self, x, y):
        # x [4, 6], y [4, 6]
        c = torch.cat([x, y], dim=0)
        s = torch.stack([x, y], dim=1)
        a, b, d = torch.split(c, [2, 3, 3], dim=0)
        e = torch.chunk(x, 3, dim=1)
        u = torch.unbind(y, dim=0)
        return c, s, a, b * 2, d, e[0], e[2] + 1, u[1], u[3]


class CatEmpty(nn.Module):
    def forward(self, x, y):
        # x [5, 6], y [2, 6]: empty tensors in a cat are left out (PruneEmptyTensorsPass); a cat
        # of empty ones only becomes a full of zeros.
        e = torch.empty((0, 6))
        return torch.cat([e, x, e, y, e]), torch.cat([e, e]) + 1


class BatchMatmul(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(5))

    def forward(self, a, b, c, m):
        # a [2,3,4], b [2,4,5], c [4,5], m [3,4]
        r1 = torch.bmm(a, b)
        r2 = torch.matmul(a, c)                 # broadcast batch
        r3 = torch.addmm(self.bias, m, c)
        r4 = torch.baddbmm(r1, a, b, beta=0.5, alpha=2.0)
        r5 = torch.einsum("bij,bjk->bik", a, b)
        r6 = torch.einsum("ij,kj->ik", m, m)
        return r1, r2, r3, r4, r5, r6, m @ c


class DynamicCat(nn.Module):
    def forward(self, x, y):
        # x [s, 4], y [s + 1, 4]
        return torch.cat([x, y], dim=0), x * 2 + y[1:], y[:-1] - x


# ---------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------

def _build_corpus() -> List[Entry]:
    C: List[Entry] = []

    C.append(_single("mlp", "Linear-ReLU-Linear", lambda: MLP(), lambda: (_randn(4, 16),)))
    C.append(_single("mobilenet_v2",
                     "torchvision MobileNetV2 (inverted residuals, ReLU6, BN, depthwise), width 0.25, 64x64",
                     lambda: MobileNetV2(width_mult=0.25), lambda: (_randn(1, 3, 64, 64),)))
    C.append(_single("resnet18", "torchvision ResNet-18 BasicBlock layout, base width 8, 32x32",
                     lambda: ResNet(base=8), lambda: (_randn(1, 3, 32, 32),)))
    C.append(_single("resnet_block", "single BasicBlock with stride-2 1x1 conv+BN downsample",
                     _resnet_block, lambda: (_randn(1, 8, 16, 16),)))
    C.append(_single("vit_tiny",
                     "ViT: conv patch embed, cls token, pos embed, 2 pre-LN blocks, GELU MLP, SDPA",
                     lambda: ViTTiny(), lambda: (_randn(1, 3, 32, 32),)))
    C.append(_single("transformer_encoder",
                     "2 encoder layers: F.layer_norm, gelu, SDPA with a causal bool mask buffer",
                     lambda: TransformerEncoder(), lambda: (_randn(2, 8, 32),)))

    # llama_kv
    def _llama_kv_inputs():
        return (torch.tensor([[5]], dtype=torch.int64), torch.tensor([2], dtype=torch.int64))

    C.append(_single("llama_kv",
                     "executorch.examples Llama (RMSNorm, RoPE, SwiGLU, GQA), KV cache buffers "
                     "updated via index_put at tensor input_pos",
                     LlamaKV, _llama_kv_inputs, tags=("mutable",), no_grad=True))
    C.append(_single("llama_dynamic",
                     "the example Llama without cache, sequence length Dim('seq', 1..15): sym_size, "
                     "symbolic views, repeat_interleave (GQA); exported at 5 tokens, run at 3",
                     LlamaPrefill, lambda: (torch.tensor([[7, 3, 9]], dtype=torch.int64),),
                     example_inputs=lambda: (torch.tensor([[1, 2, 3, 4, 5]], dtype=torch.int64),),
                     dynamic_shapes=({1: Dim("seq", min=1, max=LLAMA_SEQ - 1)},), tags=("dynamic",),
                     no_grad=True))
    C.append(_single("llama_kv_dynamic",
                     "the example Llama as ExecuTorch's LLM export makes it: KV cache and "
                     "enable_dynamic_shape, tokens Dim('seq', 1..15), input_pos[-1].item() as the "
                     "cache position (narrow, index_copy_); exported at 5 tokens from 0, run at 3 from 4",
                     lambda: LlamaKV(enable_dynamic_shape=True),
                     lambda: (torch.tensor([[7, 3, 9]], dtype=torch.int64), torch.tensor([4], dtype=torch.int64)),
                     example_inputs=lambda: (torch.tensor([[1, 2, 3, 4, 5]], dtype=torch.int64),
                                             torch.tensor([0], dtype=torch.int64)),
                     dynamic_shapes=({1: Dim("seq", min=1, max=LLAMA_SEQ - 1)}, None),
                     tags=("mutable", "dynamic"), no_grad=True))
    C.append(_single("llama_static",
                     "Llama with static attention: KV caches, RoPE freqs and mask as inputs, new k/v "
                     "returned as outputs",
                     LlamaStatic, _llama_static_inputs))

    # prefill_decode
    def _pd_inputs():
        return {
            "prefill": (torch.tensor([[3, 9, 1, 4]], dtype=torch.int64),
                        torch.arange(4, dtype=torch.int64)),
            "decode": (torch.tensor([[11]], dtype=torch.int64), torch.tensor([4], dtype=torch.int64)),
        }

    def _pd_export():
        core = _seeded(PrefillDecode)
        ins = _pd_inputs()
        with torch.no_grad():
            return {fn: export(_Method(core, fn), ins[fn]) for fn in ("prefill", "decode")}

    def _pd_eager():
        # One model, methods called in order (prefill then decode) so decode sees the cache
        # prefill wrote. The ExecuTorch Python runtime behaves the same when both methods are
        # loaded from one Program (observed with executorch 1.5.1: the methods' mutable
        # buffers share state).
        ins = _pd_inputs()
        core = _seeded(PrefillDecode)
        with torch.no_grad():
            return {fn: getattr(core, fn)(*ins[fn]) for fn in ("prefill", "decode")}

    _EAGER["prefill_decode"] = _pd_eager
    C.append(Entry("prefill_decode",
                   "two methods (prefill seq=4, decode seq=1) of one Llama reading/writing the same "
                   "KV-cache buffers; run prefill then decode (decode reads the prefilled cache)",
                   _pd_export, _pd_inputs,
                   tags=("mutable", "multi_method")))

    qlin_in = lambda: _randn(4, 16)
    C.append(_quant_entry("quantized_linear_pt2e",
                          "PT2E XNNPACKQuantizer symmetric int8 linear, q/dq ops kept (portable)",
                          QLinearNet, qlin_in, "edge", ("quantized",)))
    C.append(_quant_entry("dynamic_quant_pt2e",
                          "PT2E dynamic int8 linear (per-channel weights, activations quantized at run time "
                          "by choose_qparams), q/dq ops kept (portable)",
                          QLinearNet, qlin_in, "edge", ("quantized",), dynamic=True))
    C.append(_quant_entry("quantized_linear_xnnpack",
                          "PT2E XNNPACKQuantizer int8 linear delegated to XNNPACK",
                          QLinearNet, qlin_in, "xnnpack", ("quantized", "delegate")))
    C.append(_quant_entry("quantized_conv_xnnpack",
                          "PT2E int8 conv+BN+relu net delegated to XNNPACK",
                          QConvNet, lambda: _randn(1, 3, 16, 16), "xnnpack", ("quantized", "delegate")))
    C.append(_quant_entry("dynamic_quant_xnnpack",
                          "PT2E dynamic int8 linear (per-channel weights, per-token activations) on XNNPACK",
                          QLinearNet, qlin_in, "xnnpack", ("quantized", "delegate"), dynamic=True))
    C.append(_single("mlp_xnnpack", "float MLP fully delegated to XNNPACK",
                     lambda: MLP(), lambda: (_randn(4, 16),), lower="xnnpack", tags=("delegate",)))
    C.append(_single("conv_xnnpack", "float conv/BN/relu/pool net delegated to XNNPACK",
                     QConvNet, lambda: (_randn(1, 3, 16, 16),), lower="xnnpack", tags=("delegate",)))

    C.append(_single("dynamic_batch", "MLP with Dim('batch', 1..8); exported at 4, run at 3",
                     lambda: MLP(), lambda: (_randn(3, 16),), example_inputs=lambda: (_randn(4, 16),),
                     dynamic_shapes=({0: Dim("batch", min=1, max=8)},), tags=("dynamic",)))

    s0 = Dim("s0", min=2, max=8)
    C.append(_single("dynamic_derived", "derived dim: x [s0,4], y [s0+1,4]; cat and slicing",
                     DynamicCat, lambda: (_randn(3, 4), _randn(4, 4, seed=1)),
                     example_inputs=lambda: (_randn(5, 4), _randn(6, 4, seed=1)),
                     dynamic_shapes=({0: s0}, {0: s0 + 1}), tags=("dynamic",)))

    C.append(Entry("training",
                   "joint forward/backward graph (_export_forward_backward) of MLP + CrossEntropyLoss;"
                   " outputs loss, argmax, grads, params",
                   _training_export, lambda: {"forward": _training_inputs()},
                   training=True, tags=("training",)))

    C.append(_single("cond", "torch.cond on x.sum() > 0 with linear+sin / cos branches",
                     CondNet, lambda: (_randn(4, 8),), tags=("control_flow",)))
    C.append(_single("map", "torch map over the rows of x: Linear + relu + operand y",
                     MapNet, lambda: (_randn(4, 8), _randn(8, seed=1)), tags=("control_flow",)))
    C.append(_single("scan", "torch scan, a tanh recurrent cell: final carry and stacked outputs",
                     ScanNet, lambda: (_randn(8), _randn(5, 8, seed=1)), tags=("control_flow",)))
    C.append(_single("embedding", "nn.Embedding + mean", EmbeddingMean,
                     lambda: (torch.tensor([[1, 4, 9, 49], [0, 0, 7, 3]], dtype=torch.int64),)))
    C.append(_single("index_put", "index_put_, tensor-index assignment, gather, index_select, "
                     "advanced indexing", IndexOps,
                     lambda: (_randn(5, 4), torch.tensor([0, 3, 4], dtype=torch.int64),
                              torch.tensor([1, 2], dtype=torch.int64))))
    C.append(_single("lstm", "nn.LSTM single layer, batch_first, + Linear on last step", LSTMNet,
                     lambda: (_randn(2, 5, 8),)))
    C.append(_single("constant_buffers",
                     "constant tensor attribute, non-persistent buffer, in-place mutated counter and "
                     "running mean (zero initial state)", ConstantBuffers, lambda: (_randn(3, 4),), tags=("mutable",)))
    C.append(_single("views", "view/reshape/permute/transpose/slice/unsqueeze/squeeze/expand/narrow,"
                     " a view as graph output", Views, lambda: (_randn(2, 3, 4, 5),)))
    C.append(_single("softmax_logsoftmax", "softmax, log_softmax, LayerNorm, mean/var, amax, sum",
                     SoftmaxOps, lambda: (_randn(3, 4, 10),)))
    C.append(_single("conv1d_pool", "conv1d/2d, max/avg/adaptive pool, nearest+bilinear upsample, pad",
                     Conv1dPool, lambda: (_randn(1, 4, 16), _randn(1, 2, 8, 8, seed=1))))
    C.append(_single("elementwise_mixed",
                     "int/float arithmetic and promotion, where, clamp, masked_fill, comparisons, "
                     "bool output, cumsum, half cast", ElementwiseMixed,
                     lambda: (_randn(4, 5), torch.arange(20, dtype=torch.int64).view(4, 5) % 5)))
    C.append(_single("cat_stack_split", "cat, stack, split, chunk, unbind", CatStackSplit,
                     lambda: (_randn(4, 6), _randn(4, 6, seed=1))))
    C.append(_single("cat_empty", "cat with empty tensors: pruned, and all-empty made a full", CatEmpty,
                     lambda: (_randn(5, 6), _randn(2, 6, seed=1))))
    C.append(_single("batch_matmul", "bmm, broadcast matmul, addmm, baddbmm, einsum", BatchMatmul,
                     lambda: (_randn(2, 3, 4), _randn(2, 4, 5, seed=1), _randn(4, 5, seed=2),
                              _randn(3, 4, seed=3))))
    return C


CORPUS: List[Entry] = _build_corpus()


# ---------------------------------------------------------------------------------------------
# Self-check
# ---------------------------------------------------------------------------------------------

def _flatten(x) -> List[Any]:
    if isinstance(x, (list, tuple)):
        out: List[Any] = []
        for e in x:
            out += _flatten(e)
        return out
    if isinstance(x, dict):
        out = []
        for k in x:
            out += _flatten(x[k])
        return out
    return [x]


def _eager_outputs(entry: Entry) -> Dict[str, Any]:
    if entry.name in _EAGER:
        return _EAGER[entry.name]()
    eps = entry.export()
    ins = entry.inputs()
    with torch.no_grad():
        return {k: ep.module()(*ins[k]) for k, ep in eps.items()}


def _compare(name: str, got: List[Any], want: List[Any], quantized: bool) -> Optional[str]:
    if len(got) != len(want):
        return f"{name}: {len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, torch.Tensor):
            w = torch.tensor(w)
        if not isinstance(g, torch.Tensor):
            g = torch.tensor(g)
        if tuple(g.shape) != tuple(w.shape):
            return f"{name}[{i}]: shape {tuple(g.shape)} != {tuple(w.shape)}"
        if g.dtype != w.dtype:
            return f"{name}[{i}]: dtype {g.dtype} != {w.dtype}"
        if w.dtype.is_floating_point:
            tol = dict(rtol=5e-2, atol=5e-2) if quantized else dict(rtol=1e-3, atol=1e-3)
            if quantized:
                # compare loosely relative to the output range: int8 rounding may flip a step
                scale = float(w.abs().max()) + 1e-6
                err = float((g.float() - w.float()).abs().max())
                if err > 0.1 * scale:
                    return f"{name}[{i}]: max err {err:.4g} > 10% of range {scale:.4g}"
            elif not torch.allclose(g.float(), w.float(), **tol):
                err = float((g.float() - w.float()).abs().max())
                return f"{name}[{i}]: max abs err {err:.4g}"
        elif not torch.equal(g, w):
            return f"{name}[{i}]: values differ"
    return None


def check_entry(entry: Entry, outdir: str) -> Optional[str]:
    from executorch.exir import ExecutorchBackendConfig
    from executorch.runtime import Runtime

    edge = to_edge_program(entry)
    et = edge.to_executorch(ExecutorchBackendConfig())
    path = os.path.join(outdir, entry.name + ".pte")
    with open(path, "wb") as f:
        f.write(et.buffer)
    want = _eager_outputs(entry)
    ins = entry.inputs()
    program = Runtime.get().load_program(path)
    missing = set(ins) - set(program.method_names)
    if missing:
        return f"methods missing in .pte: {sorted(missing)}"
    quantized = "quantized" in entry.tags
    # Methods run in the order entry.inputs() lists them, on one loaded Program.
    for meth, args in ins.items():
        got = list(program.load_method(meth).execute(list(args)))
        err = _compare(meth, got, _flatten(want[meth]), quantized)
        if err:
            return err
    return None


def main(argv: List[str]) -> int:
    names = argv[1:]
    known = {e.name for e in CORPUS}
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown entries: {unknown}")
        return 2
    entries = [e for e in CORPUS if not names or e.name in names]
    failures = 0
    t_all = time.time()
    with tempfile.TemporaryDirectory() as outdir:
        for e in entries:
            t0 = time.time()
            try:
                err = check_entry(e, outdir)
            except Exception as ex:  # report, never hide
                msg = str(ex).strip().splitlines()
                frame = traceback.extract_tb(ex.__traceback__)[-1]
                err = (f"{type(ex).__name__}: {msg[0] if msg else ''} "
                       f"(at {os.path.basename(frame.filename)}:{frame.lineno})")
            dt = time.time() - t0
            status = "ok" if err is None else "FAIL"
            failures += err is not None
            print(f"{e.name:28s} {status:4s} {dt:6.2f}s" + ("" if err is None else f"  {err}"),
                  flush=True)
    print(f"{len(entries) - failures}/{len(entries)} ok in {time.time() - t_all:.1f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
