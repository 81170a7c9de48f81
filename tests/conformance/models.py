"""The model corpus: architectures as users take them from torchvision, timm, transformers and
torchaudio, each lowered by ExecuTorch itself and by the studio, compared as harness.py compares.

The registries are enumerated, not hand-picked:
  tv:NAME          every model of torchvision.models.list_models() for classification,
                   segmentation, detection and video (weights=None);
  timm:NAME        timm at the smallest variant (parameter count, pretrained=False) of every model
                   family (a module of timm.models: timm.list_modules());
  hf:TYPE:TASK     transformers, every model type of the auto-mappings for causal LMs (`causal`,
                   and `cache`: the same LM through transformers' own ExecuTorch recipe with its
                   static KV cache), masked-LM encoders (`encoder`), encoder-decoders (`seq2seq`),
                   image classification (`vision`), CTC and speech encoder-decoders (`ctc`,
                   `speech2seq`); a tiny config built from the library's own config class (few
                   layers, small widths), the model from that config (no hub), the attention
                   mask and positions computed by the library's own code;
  ta:NAME          torchaudio's model factories that build without arguments.
Random weights from a seed (nothing is downloaded), batch-norm running statistics randomised,
eval mode, small inputs.

For each model:
  export     torch.export.export, torch.export.save to model.pt2 (a failure: export-fails, and
             the model is skipped);
  upstream   torch.export.load(model.pt2), ExecuTorch's to_edge + to_executorch under each config
             (harness.upstream_config: the studio's Copy as Python of the JSON), the .pte run by
             executorch.runtime on the model's inputs;
  studio     `lowering-cli export model.pt2 --config C.json`, compared with upstream's files by
             harness.compare_files (bytes; the program field by field; outputs bit-identical in
             executorch.runtime; arenas never larger where the studio plans with its own planners;
             the alignment_rounding rule).
Each row is one model x config, one of
  identical        the .pte/.ptd are upstream's byte for byte;
  same-program     the program is upstream's field for field (with the studio's planners: arenas
                   no larger), outputs bit-identical;
  runs-equal       the program differs from upstream's, the outputs are bit-identical;
  refused          the studio's export refuses the model (the pass and the operator of its error);
  differ           written wrong: outputs differ, the runtime refuses the studio's file, or the
                   same program laid out in other bytes (the first difference);
  upstream-refuses ExecuTorch's to_edge/to_executorch refuses the model;
  export-fails     torch.export itself fails (recorded and skipped);
  skipped          bounded out: too many parameters, no input recipe, or the per-model timeout.

  models.py                 the whole sweep: a table per library, every row in models.json
  models.py --tier ci       the fixed CI list (CI_TIER) under default and et_greedy: every row must
                            be identical or same-program unless models_expected.txt lists it with
                            its result and reason, and a listed row must give that result (a row
                            that starts to pass fails until its line is removed)
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SEED = 0
CORPUS_VERSION = 1            # raise when a change here changes the models, their inputs or upstream's files
PARAM_LIMIT = 40_000_000      # larger models are skipped in the sweep (their files alone are ~160 MB)
TIMEOUT = 900                 # seconds per model (export, upstream under every config, studio, runs)
SWEEP_CONFIGS = ["default", "external_constants", "et_greedy"]
CI_CONFIGS = ["default", "et_greedy"]
PASS = ("identical", "same-program")

# ---------------------------------------------------------------------------------------------
# The libraries, without their compiled parts.

_TORCHVISION_OPS = None


def import_libraries() -> None:
    """Makes torchvision and torchaudio importable with the CPU torch 2.13.0 (see the comment in
    requirements.txt): their wheels' compiled ops are CUDA builds that do not load here.

    torchvision registers fake (meta) kernels for torchvision::nms and ::qnms at import, which
    needs the operators to exist: their schemas are defined here (the meta kernels of the other
    ops are registered only when the extension loaded, so they are skipped). Models that call
    the ops themselves (detection's nms and roi_align) fail in eager mode and are recorded so.

    torchaudio loads _torchaudio.so at import and raises when it cannot: a stand-in module
    `torchaudio._extension` says the extension is absent (what a build without it says), so
    its pure-Python models import."""
    global _TORCHVISION_OPS
    import torch

    if _TORCHVISION_OPS is None and "torchvision" not in sys.modules:
        try:
            torch.ops.torchvision.nms  # noqa: B018  (defined when the extension did load)
        except (AttributeError, RuntimeError):
            _TORCHVISION_OPS = torch.library.Library("torchvision", "DEF")
            _TORCHVISION_OPS.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _TORCHVISION_OPS.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    if "torchaudio" not in sys.modules:
        ext = types.ModuleType("torchaudio._extension")
        ext._IS_TORCHAUDIO_EXT_AVAILABLE = False
        ext._IS_ALIGN_AVAILABLE = False
        ext.fail_if_no_align = lambda f: f
        ext._load_lib = lambda name: False
        sys.modules["torchaudio._extension"] = ext
    import torchvision  # noqa: F401


# ---------------------------------------------------------------------------------------------
# Weights and inputs.

def randomise(model):
    """Eval mode; batch-norm running statistics random (from the seed); parameters that are all
    zero (zero-initialised heads, gates) random too, so no output is trivially zero."""
    import torch

    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in model.modules():
            rm, rv = getattr(m, "running_mean", None), getattr(m, "running_var", None)
            if isinstance(rm, torch.Tensor) and isinstance(rv, torch.Tensor) and rm.is_floating_point():
                rm.copy_(torch.randn(rm.shape, generator=g) * 0.1)
                rv.copy_(torch.rand(rv.shape, generator=g) + 0.5)
        for p in model.parameters():
            if p.is_floating_point() and p.numel() > 1 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return model.eval()


def image(size: int, channels: int = 3, batch: int = 1):
    import torch

    return torch.randn(batch, channels, size, size, generator=torch.Generator().manual_seed(SEED))


def count_params(build) -> int:
    """Parameters of the model `build()` makes, built on the meta device (no memory)."""
    import torch

    try:
        with torch.device("meta"):
            m = build()
    except Exception:  # noqa: BLE001  (a builder that reads tensor values, e.g. regnet's widths: built for real)
        m = build()
    return sum(p.numel() for p in m.parameters())


class Positional:
    """An nn.Module calling `model(**dict(zip(names, tensors)))` and returning its first output:
    the exported program takes plain positional tensors (the runtime's inputs) and the model's
    own code (masks, positions) runs unchanged."""

    @staticmethod
    def wrap(model, names, first=True, **fixed):
        import torch

        class _Positional(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *xs):
                out = self.model(**dict(zip(names, xs)), **fixed)
                if first:
                    if isinstance(out, dict):
                        return next(v for v in out.values() if isinstance(v, torch.Tensor))
                    if isinstance(out, (tuple, list)):
                        return out[0]
                return out

        return _Positional().eval()


# ---------------------------------------------------------------------------------------------
# torchvision

def torchvision_names() -> list[str]:
    import torchvision.models as tvm

    names = []
    for module in (tvm, tvm.segmentation, tvm.detection, tvm.video):
        names += ["tv:" + n for n in tvm.list_models(module=module)]
    return names


def torchvision_build(name: str):
    import torch
    import torchvision.models as tvm

    kind = "classification"
    for k, module in (("segmentation", tvm.segmentation), ("detection", tvm.detection), ("video", tvm.video)):
        if name in tvm.list_models(module=module):
            kind = k
    kwargs = {"weights": None}
    if kind == "classification":
        kwargs["num_classes"] = 10
    elif kind == "segmentation":
        kwargs.update(num_classes=4, weights_backbone=None, aux_loss=False)
    elif kind == "detection":
        kwargs.update(num_classes=3, weights_backbone=None)
    elif kind == "video":
        kwargs["num_classes"] = 10
    sizes = {"classification": [64, 224], "segmentation": [64], "detection": [128], "video": [32, 112]}[kind]
    size_kw = None
    if name.startswith("vit_"):
        size_kw = "image_size"
    elif name.startswith("maxvit"):
        size_kw = "input_size"
    n = count_params(lambda: tvm.get_model(name, **kwargs))
    if n > PARAM_LIMIT:
        return Skip(f"{n / 1e6:.0f}M parameters (the sweep's bound is {PARAM_LIMIT / 1e6:.0f}M)")
    last = None
    for size in sizes:
        torch.manual_seed(SEED)
        kw = dict(kwargs, **({size_kw: size} if size_kw else {}))
        try:
            model = randomise(tvm.get_model(name, **kw))
        except Exception as e:  # noqa: BLE001  (this size is not one the builder takes)
            last = e
            continue
        if kind == "video":
            x = torch.randn(1, 3, 4, size, size, generator=torch.Generator().manual_seed(SEED))
            if name.startswith(("mvit", "s3d", "swin3d")):
                x = torch.randn(1, 3, 16 if name.startswith("mvit") else 8, size, size,
                                generator=torch.Generator().manual_seed(SEED))
        else:
            x = image(size)
        if kind == "detection":
            x = x[0]
            model = Positional.wrap(model, ["images"], first=False)
            wrapped = _DetectionInput(model)
            try:
                with torch.no_grad():
                    wrapped(x)
            except Exception as e:  # noqa: BLE001
                last = e
                continue
            return wrapped, (x,)
        if kind == "segmentation":  # the forward's own argument name (x, or input for LRASPP)
            model = Positional.wrap(model, [next(iter(inspect.signature(model.forward).parameters))])
        try:
            with torch.no_grad():
                model(x)
        except Exception as e:  # noqa: BLE001  (too small an input for this model)
            last = e
            continue
        return model, (x,)
    raise ExportFails(f"no input size works in eager mode: {first_line(last)}")


def _DetectionInput(model):
    """Detection models take a list of images: one image, its outputs flattened to tensors."""
    import torch

    class D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            out = self.model.model([x])
            if isinstance(out, tuple):  # (losses, detections) in scripting mode
                out = out[1]
            return tuple(v for d in out for v in d.values())

    return D().eval()


# ---------------------------------------------------------------------------------------------
# timm

def timm_families(cache: Path) -> dict:
    """{module: smallest model name} over timm.list_modules(), by parameter count on the meta
    device; cached in `cache` per timm version (counting builds ~1,300 models)."""
    import timm

    if cache.exists():
        data = json.loads(cache.read_text())
        if data.get("timm") == timm.__version__:
            return data["families"]
    families = {}
    for module in timm.list_modules():
        best = None
        for name in timm.list_models(module=module):
            try:
                n = count_params(lambda: timm.create_model(name, pretrained=False))
            except Exception:  # noqa: BLE001  (a model that does not build on meta)
                continue
            if best is None or n < best[0]:
                best = (n, name)
        if best:
            families[module] = best[1]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"timm": timm.__version__, "families": families}, indent=1, sort_keys=True))
    return families


def timm_build(name: str):
    import timm
    import torch

    n = count_params(lambda: timm.create_model(name, pretrained=False))
    if n > PARAM_LIMIT:
        return Skip(f"{n / 1e6:.0f}M parameters (the sweep's bound is {PARAM_LIMIT / 1e6:.0f}M)")
    default = timm.create_model(name, pretrained=False, num_classes=10).pretrained_cfg.get("input_size", (3, 224, 224))
    last = None
    for size in (64, 96, default[-1]):
        for kw in ({"img_size": size}, {}):
            torch.manual_seed(SEED)
            try:
                model = randomise(timm.create_model(name, pretrained=False, num_classes=10, **kw))
                x = image(size, default[0])
                with torch.no_grad():
                    model(x)
                return model, (x,)
            except Exception as e:  # noqa: BLE001  (not this size, or no img_size argument)
                last = e
    raise ExportFails(f"no input size works in eager mode: {first_line(last)}")


# ---------------------------------------------------------------------------------------------
# transformers

HF_TASKS = {  # task: the auto-mapping enumerated
    "causal": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "encoder": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "vision": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "ctc": "MODEL_FOR_CTC_MAPPING_NAMES",
    "speech2seq": "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
}

# Tiny sizes, set on every config that has the attribute (constructor arguments: derived fields
# such as layer_types follow them).
HF_SMALL = {
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 128, "head_dim": 16, "max_position_embeddings": 128, "vocab_size": 512,
    "d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_layers": 2,
    "num_decoder_layers": 2, "num_heads": 4, "d_ff": 128, "d_kv": 16, "n_embd": 64, "n_layer": 2,
    "n_head": 4, "n_positions": 128, "n_inner": 128, "n_ctx": 128, "embed_dim": 64, "ffn_dim": 128,
    "num_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
    "shared_expert_intermediate_size": 64, "kv_lora_rank": 16, "q_lora_rank": 32, "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8, "v_head_dim": 16, "first_k_dense_replace": 1, "num_mel_bins": 16,
    "max_source_positions": 64, "max_target_positions": 64, "encoder_hidden_size": 64,
    "conv_dim": [32, 32], "conv_kernel": [10, 3], "conv_stride": [5, 2], "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4, "image_size": 32, "patch_size": 8, "sliding_window": 64,
    "rope_scaling": None, "tie_word_embeddings": False, "use_cache": True, "layer_types": None,
}


def hf_names() -> list[str]:
    import transformers.models.auto.modeling_auto as ma

    names = []
    for task, mapping in HF_TASKS.items():
        for model_type in getattr(ma, mapping):
            names.append(f"hf:{model_type}:{task}")
            if task == "causal":
                names.append(f"hf:{model_type}:cache")
    return names


def hf_config(model_type: str):
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    default = cls()
    params = inspect.signature(cls.__init__).parameters
    small = {k: v for k, v in HF_SMALL.items() if k in params or hasattr(default, k)}
    small = {k: v for k, v in small.items() if k != "layer_types" or "layer_types" in params}
    for k, v in list(small.items()):  # lists keep their lengths' meaning: only scalars where a scalar was
        d = getattr(default, k, None)
        if isinstance(v, list) and not isinstance(d, list) or isinstance(d, list) and not isinstance(v, list):
            small.pop(k)
        elif isinstance(v, (int, float)) and isinstance(d, (int, float)) and not isinstance(d, bool) and d and v > d:
            small[k] = d
    if "hidden_size" in small and getattr(default, "head_dim", None) and "head_dim" not in small:
        small["head_dim"] = 16
    vocab = small.get("vocab_size", getattr(default, "vocab_size", None))
    for k, v in vars(default).items():  # special token ids inside the small vocabulary
        if k.endswith("_token_id") and isinstance(v, int) and vocab and v >= vocab:
            small[k] = 1
    # The library's default attention (sdpa where the model has it), as users get it.
    return cls(**small)


def hf_build(name: str):
    import torch
    import transformers

    _, model_type, task = name.split(":")
    cfg = hf_config(model_type)
    auto = {"causal": transformers.AutoModelForCausalLM, "cache": transformers.AutoModelForCausalLM,
            "encoder": transformers.AutoModel, "seq2seq": transformers.AutoModelForSeq2SeqLM,
            "vision": transformers.AutoModelForImageClassification, "ctc": transformers.AutoModelForCTC,
            "speech2seq": transformers.AutoModelForSpeechSeq2Seq}[task]
    if task == "vision" and hasattr(cfg, "num_labels"):
        cfg.num_labels = 10
    n = count_params(lambda: auto.from_config(cfg))
    if n > PARAM_LIMIT:
        return Skip(f"{n / 1e6:.0f}M parameters with the tiny config (bound {PARAM_LIMIT / 1e6:.0f}M)")
    torch.manual_seed(SEED)
    model = randomise(auto.from_config(cfg))
    g = torch.Generator().manual_seed(SEED)
    vocab = min(getattr(cfg, "vocab_size", None) or 100, 100)
    ids = torch.randint(2, max(vocab, 3), (1, 8), generator=g)
    fwd = inspect.signature(model.forward).parameters
    if task == "cache":
        from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

        # What transformers' recipe asks of the model (and optimum-executorch sets): a static cache.
        model.generation_config.use_cache = True
        model.generation_config.cache_implementation = "static"
        model.generation_config.cache_config = {"batch_size": 1, "max_cache_len": 16}
        recipe = TorchExportableModuleForDecoderOnlyLM(model, batch_size=1, max_cache_len=16).model
        wrapped = Positional.wrap(recipe, ["input_ids", "cache_position"], first=False)
        inputs = (ids[:, :4], torch.arange(4))
    elif task in ("causal", "encoder"):
        names = ["input_ids"] + (["attention_mask"] if "attention_mask" in fwd else [])
        inputs = (ids, torch.ones_like(ids))[:len(names)]
        extra = {"use_cache": False} if "use_cache" in fwd else {}
        wrapped = Positional.wrap(model, names, **extra)
    elif task == "seq2seq":
        names = ["input_ids", "attention_mask", "decoder_input_ids"]
        inputs = (ids, torch.ones_like(ids), ids[:, :4])
        wrapped = Positional.wrap(model, names, use_cache=False)
    elif task == "vision":
        channels = getattr(cfg, "num_channels", 3)
        size = getattr(cfg, "image_size", 32)
        size = size[0] if isinstance(size, (list, tuple)) else size
        inputs = (torch.randn(1, channels, size, size, generator=g),)
        wrapped = Positional.wrap(model, ["pixel_values"])
    elif task == "ctc":
        inputs = (torch.randn(1, 1600, generator=g),)
        wrapped = Positional.wrap(model, [model.main_input_name])
    else:  # speech2seq
        main = model.main_input_name
        if main == "input_features":
            bins = getattr(cfg, "num_mel_bins", None) or getattr(cfg, "input_feat_per_channel", 80)
            frames = 2 * (getattr(cfg, "max_source_positions", 64) or 64)
            x = torch.randn(1, bins, frames, generator=g)
            if "speech_to_text" in model_type:
                x = torch.randn(1, 32, getattr(cfg, "input_feat_per_channel", 80), generator=g)
        else:
            x = torch.randn(1, 1600, generator=g)
        inputs = (x, ids[:, :4])
        extra = {"use_cache": False} if "use_cache" in fwd else {}
        wrapped = Positional.wrap(model, [main, "decoder_input_ids"], **extra)
    with torch.no_grad():
        wrapped(*inputs)
    return wrapped, inputs


# ---------------------------------------------------------------------------------------------
# torchaudio

def torchaudio_names() -> list[str]:
    import torchaudio.models as tam

    names = []
    for n in sorted(getattr(tam, "__all__", dir(tam))):
        f = getattr(tam, n, None)
        if not (inspect.isfunction(f) or inspect.isclass(f) and issubclass(f, __import__("torch").nn.Module)) \
                or n.startswith("_"):
            continue
        required = [p for p in inspect.signature(f).parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        names.append("ta:" + n + ("" if not required else "?"))
    return names


def torchaudio_build(name: str):
    import torch
    import torchaudio.models as tam

    fname = name.split(":", 1)[1]
    if fname.endswith("?"):
        return Skip("the factory needs arguments the library gives no default for")
    factory = getattr(tam, fname)
    n = count_params(factory)
    if n > PARAM_LIMIT:
        return Skip(f"{n / 1e6:.0f}M parameters (the sweep's bound is {PARAM_LIMIT / 1e6:.0f}M)")
    torch.manual_seed(SEED)
    model = randomise(factory())
    g = torch.Generator().manual_seed(SEED)
    cls = type(model).__name__
    if cls in ("Wav2Vec2Model",):
        x = (torch.randn(1, 1600, generator=g),)
        model = Positional.wrap(model, ["waveforms"])
    elif cls == "Wav2Letter":
        first_conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv1d))
        x = (torch.randn(1, first_conv.in_channels, 1600, generator=g),)
    elif cls == "ConvTasNet":
        x = (torch.randn(1, 1, 1600, generator=g),)
    elif cls == "HDemucs":
        x = (torch.randn(1, 2, 4096, generator=g),)
    elif cls in ("SquimObjective",):
        x = (torch.randn(1, 1600, generator=g),)
    elif cls in ("SquimSubjective",):
        x = (torch.randn(1, 1600, generator=g), torch.randn(1, 1600, generator=g))
    else:
        return Skip(f"no input recipe for {cls}")
    with torch.no_grad():
        model(*x)
    return model, x


# ---------------------------------------------------------------------------------------------
# One model: export, upstream, studio.

class Skip:
    def __init__(self, reason: str):
        self.reason = reason


class ExportFails(Exception):
    pass


def first_line(e) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def build(name: str):
    import_libraries()
    lib = name.split(":", 1)[0]
    return {"tv": torchvision_build, "timm": lambda n: timm_build(n.split(":", 1)[1]), "hf": hf_build,
            "ta": torchaudio_build}[lib](name if lib != "tv" else name.split(":", 1)[1])


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def cache_key() -> str:
    """What the exported programs and upstream's files depend on: the pinned packages, the
    configs and how this script builds the models (CORPUS_VERSION)."""
    h = hashlib.sha256(str(CORPUS_VERSION).encode())
    for p in [HERE / "requirements.txt", HERE / "models.py", HERE / "harness.py"] + sorted((HERE / "configs").glob("*.json")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def default_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path(os.environ.get("HOME", "/tmp")) / ".cache")
    return base / "lowering-studio" / f"models-{cache_key()}"


STUDIO_OPERATOR = re.compile(r"\b(?:aten|prim|quantized_decomposed|torchvision|torchaudio|dim_order_ops|"
                             r"executorch_prim|higher_order)::[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?")
STUDIO_PASS = re.compile(r"lowering failed in (?P<pass>\S+)")
STUDIO_NODE = re.compile(r"\(node '(?P<node>[^']*)' \((?P<target>[^)]*)\)")


def studio_refusal(message: str) -> dict:
    """The pass, the operator and the node a studio error names, its message without the path
    of the file, and its class: the pass and the message with node names, sizes and source
    lines taken out (rows of one class group together)."""
    lines = [x for x in message.strip().splitlines() if x.strip()]
    ps = STUDIO_PASS.search(message)
    body = " ".join(x.strip() for x in lines[1:]) if ps and len(lines) > 1 else message.strip()
    op = STUDIO_OPERATOR.search(body)
    node = STUDIO_NODE.search(body)
    klass = re.sub(r"\(node '.*", "", body)
    klass = re.sub(r"'[^']*'|\[[^\]]*\]|\d+", "#", klass).strip(" :.")
    return {"operator": op.group(0) if op else "", "pass": ps.group("pass") if ps else "",
            "node": node.group("node") if node else "", "target": node.group("target") if node else "",
            "message": body, "class": f"{ps.group('pass') if ps else '?'}: {klass[:200]}"}


def run_model(name: str, configs: list[str], work: Path, cache: Path | None = None) -> list[dict]:
    """Every row of one model (one per config; one row with config '-' when it never gets there).
    The exported program and upstream's files are kept in `cache` (default: the work directory),
    keyed by cache_key(); the studio's files are made anew in the work directory."""
    import harness
    import torch

    d = (cache or work) / safe(name)
    d.mkdir(parents=True, exist_ok=True)
    wd = work / safe(name)
    wd.mkdir(parents=True, exist_ok=True)
    rows = []

    def row(cfg, result, detail="", **extra):
        rows.append({"model": name, "library": name.split(":", 1)[0], "config": cfg, "result": result,
                     "detail": detail, **extra})

    # 1. torch.export, once per model (kept while the requirements are unchanged).
    pt2, inputs_file, stamp = d / "model.pt2", d / "inputs.pt", d / "export.json"
    t0 = time.time()
    info = json.loads(stamp.read_text()) if stamp.exists() else {}
    if info.get("key") != cache_key():
        for p in d.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        info = {"key": cache_key()}
        try:
            built = build(name)
            if isinstance(built, Skip):
                info.update(status="skipped", detail=built.reason)
            else:
                model, inputs = built
                try:
                    ep = torch.export.export(model, inputs)
                    torch.export.save(ep, str(pt2))
                    torch.save(inputs, inputs_file)
                    info.update(status="ok", params=sum(p.numel() for p in model.parameters()))
                except Exception as e:  # noqa: BLE001
                    info.update(status="export-fails", detail=f"torch.export: {first_line(e)}")
        except Exception as e:  # noqa: BLE001  (the model does not build or run in eager mode)
            info.update(status="export-fails", detail=f"eager: {first_line(e)}")
        info["export_seconds"] = round(time.time() - t0, 1)
        stamp.write_text(json.dumps(info))
    if info["status"] != "ok":
        row("-", info["status"], info.get("detail", ""))
        return rows
    if not configs:  # --export-only
        row("-", "exported", f"{info.get('params', 0)} parameters")
        return rows
    inputs = torch.load(inputs_file)
    run_inputs = {"forward": tuple(inputs)}

    # 2. Upstream: to_edge once (each config's own when it has an EdgeCompileConfig), to_executorch per config.
    from executorch.exir import EdgeCompileConfig, to_edge
    import copy

    base_edge, edge_error = None, None
    for cfg in configs:
        cfg_path = HERE / "configs" / f"{cfg}.json"
        udir = d / "upstream" / cfg
        t1 = time.time()
        up_stamp = udir / "run.pt"
        if not up_stamp.exists():
            shutil.rmtree(udir, ignore_errors=True)
            udir.mkdir(parents=True)
            try:
                if base_edge is None and edge_error is None:
                    try:
                        base_edge = to_edge(torch.export.load(str(pt2)))
                    except Exception as e:  # noqa: BLE001
                        edge_error = f"to_edge: {first_line(e)}"
                if edge_error:
                    raise RuntimeError(edge_error)
                ecc = harness.upstream_config(cfg_path, base_edge, "edge_compile_config")
                edge = to_edge(torch.export.load(str(pt2)), compile_config=ecc) if ecc != EdgeCompileConfig() \
                    else copy.deepcopy(base_edge)
                et = edge.to_executorch(harness.upstream_config(cfg_path, edge))
                (udir / "model.pte").write_bytes(et.buffer)
                et.write_tensor_data_to_file(str(udir))
                try:
                    up_run = ("ok", harness.run_pte(udir / "model.pte", sorted(udir.glob("*.ptd")), run_inputs))
                except Exception as e:  # noqa: BLE001
                    up_run = ("error", harness.runtime_error(e))
                torch.save({"up_run": up_run, "seconds": time.time() - t1}, up_stamp)
            except harness.StudioError as e:
                row(cfg, "failed", f"lowering-cli config: {e}")
                continue
            except Exception as e:  # noqa: BLE001
                torch.save({"refused": f"{first_line(e)}", "seconds": time.time() - t1}, up_stamp)
        up = torch.load(up_stamp, weights_only=False)
        t_up = up["seconds"]
        if "refused" in up:
            # What the studio does with a model upstream refuses, for the table.
            st = studio_export(pt2, cfg_path, wd / "studio" / cfg)
            row(cfg, "upstream-refuses", up["refused"], studio="refused" if st else "exports",
                studio_error=st["message"][:400] if st else "", upstream_seconds=round(t_up, 1))
            continue
        up_run = up["up_run"]
        # 3. The studio.
        sdir = wd / "studio" / cfg
        t2 = time.time()
        err = studio_export(pt2, cfg_path, sdir)
        if err:
            row(cfg, "refused", err["message"][:600], operator=err["operator"], pass_=err["pass"], node=err["node"],
                target=err["target"], klass=err["class"],
                upstream_seconds=round(t_up, 1), studio_seconds=round(time.time() - t2, 1))
            continue
        algorithms = json.loads(cfg_path.read_text()).get("memory_planning_pass", {}).get("algorithms")
        try:
            result, detail = harness.compare_files(udir / "model.pte", sorted(udir.glob("*.ptd")), sdir / "model.pte",
                                                   sorted(sdir.glob("*.ptd")), run_inputs, sdir, up_run,
                                                   algorithms == ["et-greedy"])
        except Exception as e:  # noqa: BLE001
            result, detail = "differ", f"harness: {type(e).__name__}: {first_line(e)}"
        result, klass = classify(result, detail)
        row(cfg, result, detail[:600], klass=klass, upstream_runs=up_run[0] == "ok",
            upstream_seconds=round(t_up, 1), studio_seconds=round(time.time() - t2, 1))
    return rows


NUMERICS = ("runtime refused the studio's file", "output ", "outputs vs", "methods [", "the interpreter",
            "runs where ExecuTorch's own")


def classify(result: str, detail: str) -> tuple[str, str]:
    """harness.compare_files' (identical | same-shape | differ) as this corpus's rows, with the
    class of a difference: `runtime-refuses`, `outputs`, `layout` (the same program in other
    bytes) or `program` (another program, outputs bit-identical: runs-equal)."""
    if result == "identical":
        return "identical", ""
    if result == "same-shape":
        return "same-program", ""
    if detail.startswith("the same program laid out differently"):
        return "differ", "layout"
    if "runtime refused the studio's file" in detail:
        return "differ", "runtime-refuses"
    if any(m in detail for m in NUMERICS[1:]):
        return "differ", "outputs"
    if detail.startswith("ptd"):
        return "differ", "ptd"
    return "runs-equal", "program"


def studio_export(pt2: Path, cfg_path: Path, sdir: Path) -> dict | None:
    """None when `lowering-cli export` writes the files, else its refusal."""
    import harness

    shutil.rmtree(sdir, ignore_errors=True)
    sdir.mkdir(parents=True)
    r = harness.cli("export", str(pt2), "--config", str(cfg_path), "-o", str(sdir / "model.pte"),
                    "--ptd-dir", str(sdir), check=False)
    if r.returncode == 0:
        return None
    msg = (r.stderr or r.stdout).strip()
    out = studio_refusal(msg)
    out["exit"] = r.returncode
    return out


# ---------------------------------------------------------------------------------------------
# The corpus and its tiers.

def enumerate_models(work: Path, libraries=("tv", "timm", "hf", "ta")) -> list[str]:
    """Every model name of the libraries, the libraries interleaved (a partial sweep covers
    each)."""
    import_libraries()
    per_lib = [torchvision_names() if "tv" in libraries else [],
               ["timm:" + n for _, n in sorted(timm_families(work / "timm_families.json").items())]
               if "timm" in libraries else [],
               hf_names() if "hf" in libraries else [], torchaudio_names() if "ta" in libraries else []]
    out = []
    for i in range(max(len(x) for x in per_lib)):
        out += [x[i] for x in per_lib if i < len(x)]
    return out


# The CI tier: a fixed list drawn from the sweep (models.json), covering the four libraries and
# the studio's present refusals and differences; run under CI_CONFIGS.
CI_TIER: list[str] = [
    # torchvision: classification, segmentation
    "tv:mobilenet_v3_small", "tv:squeezenet1_1", "tv:shufflenet_v2_x0_5", "tv:mnasnet0_5", "tv:resnet18",
    "tv:regnet_x_400mf", "tv:efficientnet_b0", "tv:lraspp_mobilenet_v3_large",
    # timm: convnets, efficientnets, convnexts, vits, mlp-mixers, hybrids, nfnets, levit, xcit
    "timm:test_resnet", "timm:test_convnext", "timm:test_efficientnet", "timm:test_vit", "timm:test_byobnet",
    "timm:test_nfnet", "timm:test_mambaout", "timm:mixer_s32_224", "timm:deit_tiny_patch16_224",
    "timm:levit_128s", "timm:mobilevit_xxs", "timm:ghostnet_050", "timm:mobilenetv3_small_050",
    "timm:edgenext_xx_small", "timm:hgnetv2_b0", "timm:fasternet_t0", "timm:pvt_v2_b0", "timm:tiny_vit_5m_224",
    "timm:repghostnet_050", "timm:starnet_s050", "timm:xcit_nano_12_p8_224", "timm:dla46x_c",
    # transformers: encoders, decoder-only, encoder-decoders, vision (vit, convnext), speech
    "hf:bert:encoder", "hf:distilbert:encoder", "hf:roberta:encoder", "hf:albert:encoder", "hf:gpt2:causal",
    "hf:llama:causal", "hf:qwen2:causal", "hf:t5:seq2seq", "hf:bart:seq2seq", "hf:vit:vision",
    "hf:convnext:vision", "hf:wav2vec2:ctc", "hf:hubert:ctc", "hf:whisper:speech2seq",
    # torchaudio
    "ta:Wav2Letter",
]


class Expected:
    """models_expected.txt: `model config result  reason` (globs allowed): the result a row
    that is not identical or same-program gives today, and why."""

    def __init__(self, path: Path):
        self.rules = []
        for line in path.read_text().splitlines() if path.exists() else []:
            line = line.strip()
            if line and not line.startswith("#"):
                model, cfg, result, reason = line.split(None, 3)
                self.rules.append((model, cfg, result, reason))
        self.used = set()

    def rule(self, model: str, cfg: str):
        for i, (m, c, result, reason) in enumerate(self.rules):
            if fnmatch.fnmatchcase(model, m) and fnmatch.fnmatchcase(cfg, c):
                self.used.add(i)
                return result, reason
        return None


def check_row(r: dict, expected: Expected) -> str | None:
    """Why the row fails the tier (None: it passes)."""
    rule = expected.rule(r["model"], r["config"])
    if rule is None:
        return None if r["result"] in PASS else f"{r['result']} and not listed in models_expected.txt"
    want, _ = rule
    if r["result"] == want:
        return None
    if r["result"] in PASS:
        return f"now {r['result']}: remove its line ({want}) from models_expected.txt"
    return f"{r['result']} where models_expected.txt says {want}"


class Worker:
    """run_model in a child process that imports the libraries once and takes one model after
    another (`--worker`: a name per line on its stdin, `done` on the result pipe when the model's
    rows.json is written). A model that passes `timeout` seconds, or a child that stops (a crash
    in a library's native code), ends that child with everything it started; the row is recorded
    and the next model gets a new child. executorch.runtime runs in a child of the child
    (harness.Runner), so a runtime abort costs a row, not the worker."""

    def __init__(self, configs: list[str], work: Path, cache: Path | None, timeout: int, fresh: bool = False):
        self.configs, self.work, self.cache, self.timeout, self.fresh = configs, work, cache, timeout, fresh
        self.proc = None
        self.results = None

    def start(self) -> None:
        r, w = os.pipe()
        cmd = [sys.executable, __file__, "--work", str(self.work), "--worker", str(w), "--configs", *self.configs] + \
            (["--cache", str(self.cache)] if self.cache else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(w,), start_new_session=True, text=True)
        os.close(w)
        self.results = os.fdopen(r, "r")

    def stop(self) -> None:
        if self.proc is None:
            return
        import signal
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the child's session: its runner and CLI runs too
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.results.close()
        self.proc = self.results = None

    def run(self, name: str) -> tuple[list[dict], float]:
        import select
        t0 = time.time()
        wd = self.work / safe(name)
        if self.fresh:  # nothing from an earlier run: exported anew, upstream lowered anew
            shutil.rmtree(wd, ignore_errors=True)
        wd.mkdir(parents=True, exist_ok=True)
        out, log = wd / "rows.json", wd / "log.txt"
        out.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.start()
        lib = name.split(":", 1)[0]
        try:
            self.proc.stdin.write(name + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.results], [], [], self.timeout)
            line = self.results.readline() if ready else None
        except (BrokenPipeError, OSError):
            line = ""
        if line is None:
            self.stop()
            return [{"model": name, "library": lib, "config": "-", "result": "skipped",
                     "detail": f"timeout: more than {self.timeout} s"}], time.time() - t0
        if line.strip() == "done" and out.exists():
            return json.loads(out.read_text()), time.time() - t0
        code = self.proc.wait() if self.proc else None
        self.stop()
        text = log.read_text(errors="replace") if log.exists() else ""
        tail = [x for x in text.strip().splitlines() if x.strip()][-1:] or ["no output"]
        return [{"model": name, "library": lib, "config": "-", "result": "failed",
                 "detail": f"the model's process stopped (exit {code}): {tail[0][:300]}"}], time.time() - t0


def worker_main(fd: int, configs: list[str], work: Path, cache: Path | None) -> int:
    """--worker FD: the models named on stdin, one after another in this process; each one's
    output goes to its log.txt, its rows to its rows.json, then `done` to FD."""
    import torch

    results = os.fdopen(fd, "w")
    import_libraries()
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        wd = work / safe(name)
        wd.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        log = os.open(wd / "log.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        try:
            rows = run_model(name, configs, work, cache)
        except Exception as e:  # noqa: BLE001  (a bug here: the row says so, the next model runs)
            traceback.print_exc()
            rows = [{"model": name, "library": name.split(":", 1)[0], "config": "-", "result": "failed",
                     "detail": f"models.py: {type(e).__name__}: {first_line(e)}"}]
        (wd / "rows.json").write_text(json.dumps(rows, indent=1))
        sys.stdout.flush()
        sys.stderr.flush()
        torch._dynamo.reset()  # nothing one model's export compiled is seen by the next
        results.write("done\n")
        results.flush()
    return 0


LIBRARIES = {"tv": "torchvision", "timm": "timm", "hf": "transformers", "ta": "torchaudio"}


def tables(rows: list[dict]) -> str:
    """A table per library: models, and per result the number of model x config rows."""
    lines = []
    for lib, title in LIBRARIES.items():
        lrows = [r for r in rows if r["library"] == lib]
        if not lrows:
            continue
        models = sorted({r["model"] for r in lrows})
        lowered = [r for r in lrows if r["config"] != "-" and r["result"] != "upstream-refuses"]
        count = lambda rs, res: sum(r["result"] == res for r in rs)  # noqa: E731
        lines.append(f"## {title}: {len(models)} models, {len(lowered)} rows upstream lowers")
        lines.append("| config | rows | identical | same-program | runs-equal | refused | differ |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- |")
        for cfg in sorted({r["config"] for r in lowered}):
            rs = [r for r in lowered if r["config"] == cfg]
            lines.append(f"| {cfg} | {len(rs)} | {count(rs, 'identical')} | {count(rs, 'same-program')} | "
                         f"{count(rs, 'runs-equal')} | {count(rs, 'refused')} | {count(rs, 'differ')} |")
        ops = {}
        for r in lowered:
            if r["result"] == "refused":
                ops.setdefault(r.get("operator") or r.get("pass_") or "?", set()).add(r["model"])
        if ops:
            lines.append("refused (operator: models): " + "; ".join(
                f"{op or '?'}: {len(ms)}" for op, ms in sorted(ops.items(), key=lambda x: -len(x[1]))))
        ur = [r for r in lrows if r["result"] == "upstream-refuses"]
        if ur:
            lines.append(f"upstream refuses: {len({r['model'] for r in ur})} models, {len(ur)} rows; the studio "
                         f"refuses {sum(r.get('studio') == 'refused' for r in ur)} of those rows, exports "
                         f"{sum(r.get('studio') == 'exports' for r in ur)}")
        other = {}
        for r in lrows:
            if r["config"] == "-":
                other.setdefault(r["result"], 0)
                other[r["result"]] += 1
        if other:
            lines.append("not lowered: " + ", ".join(f"{k} {v}" for k, v in sorted(other.items())))
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(HERE.parents[1] / "build" / "models"))
    ap.add_argument("--tier", choices=["ci", "all"], default="all")
    ap.add_argument("--only", nargs="*", help="model names (globs)")
    ap.add_argument("--libraries", nargs="*", default=list(LIBRARIES), choices=list(LIBRARIES),
                    help="the libraries to enumerate (default all)")
    ap.add_argument("--configs", nargs="*", help="config names")
    ap.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds per model")
    ap.add_argument("--json", help="write the rows here (default: WORK/models.json)")
    ap.add_argument("--list", action="store_true", help="print the model names and stop")
    ap.add_argument("--export-only", action="store_true", help="only torch.export the models (no CLI needed)")
    ap.add_argument("--cache", nargs="?", const="default",
                    help="keep the exported programs and upstream's files here between runs (no value: "
                         "~/.cache/lowering-studio/models-KEY, KEY from the requirements, the configs and CORPUS_VERSION)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one model, rows to WORK/NAME/rows.json
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # internal: see Worker
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cache = None if not args.cache else default_cache() if args.cache == "default" else Path(args.cache)
    if args.one:
        rows = run_model(args.one, args.configs, work, cache)
        (work / safe(args.one) / "rows.json").write_text(json.dumps(rows, indent=1))
        return 0
    if args.worker is not None:
        return worker_main(args.worker, args.configs or [], work, cache)

    configs = [] if args.export_only else args.configs or (CI_CONFIGS if args.tier == "ci" else SWEEP_CONFIGS)
    names = CI_TIER if args.tier == "ci" else enumerate_models(work, args.libraries)
    if args.only:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in args.only)]
    if args.list:
        print("\n".join(names))
        return 0
    expected = Expected(HERE / "models_expected.txt")
    t0 = time.time()
    rows, bad = [], []
    json_path = Path(args.json) if args.json else work / ("models-ci.json" if args.tier == "ci" else "models.json")
    # The CI tier without --cache starts from nothing (a fresh machine's run), its work directory included.
    worker = Worker(configs, work, cache, args.timeout, fresh=args.tier == "ci" and cache is None)
    for i, name in enumerate(names):
        mrows, secs = worker.run(name)
        for r in mrows:
            r["model_seconds"] = round(secs, 1)
            why = check_row(r, expected) if args.tier == "ci" else None
            if why:
                bad.append(f"{r['model']} [{r['config']}]: {why}: {r['detail'][:200]}")
            extra = f" ({r.get('operator')})" if r.get("operator") else ""
            print(f"[{i + 1}/{len(names)}] {r['model']:<44} {r['config']:<19} {r['result']:<16}{extra} "
                  f"{r['detail'][:220]}{'  [FAIL: ' + why + ']' if why else ''}", flush=True)
        rows += mrows
        json_path.write_text(json.dumps(rows, indent=1))
    worker.stop()
    print()
    print(tables(rows))
    print(f"time: {time.time() - t0:.0f} s for {len(names)} models x {len(configs)} configs")
    if args.tier == "ci":
        for i, rule in enumerate(expected.rules):
            if i not in expected.used and not args.only:
                bad.append(f"models_expected.txt line matches no row: {' '.join(rule[:3])}")
        for b in bad:
            print("  " + b, file=sys.stderr)
        n = len(rows)
        print(f"models: {n - len(bad)} passed, {len(bad)} failed")
        return 1 if bad or not rows else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
