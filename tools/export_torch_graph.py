#!/usr/bin/python3
"""export_torch_graph.py — export the unified forward + loss + backward training graph of a PyTorch model
as an mlsys-remat-graph JSON file (see mlsys_remat.h, GRAPH FORMATS) for the Checkmate solver.

    /usr/bin/python3 tools/export_torch_graph.py --model alexnet --batch 32 --out alexnet_b32.json
    /usr/bin/python3 tools/export_torch_graph.py --model vgg16 --batch 2 --cost time --out vgg16_b2_us.json
    /usr/bin/python3 tools/export_torch_graph.py --model resnet50 --batch 2 --check-counts     # no file
    /usr/bin/python3 tools/export_torch_graph.py --model unet --batch 2 --out unet_b2.json     # 416x608
    /usr/bin/python3 tools/export_torch_graph.py --model gpt2 --batch 4 --layers 4 --seq 128 --out gpt2_b4.json

Models: torchvision's alexnet vgg11 vgg16 vgg19 resnet18 resnet50 mobilenet_v2 googlenet, and built-ins: mlp, smallcnn
(the CNN a plain-C executor implements), unet (keras_segmentation's vgg_unet), gpt2 (a small GPT-2-style decoder).

Algorithm (docs: tools/README.md; spec: checkmate.md §2.4), VJP-node convention (§2.3):
  1. every module with an `inplace` attribute gets inplace=False; in-place calls left in the traced graph
     (x.relu_(), operator.iadd, F.relu(..., inplace=True)) are rewritten to their out-of-place forms;
  2. torch.fx.symbolic_trace; forward nodes = call_module/call_function/call_method nodes whose recorded output
     holds a tensor (pure-metadata nodes such as x.size(0), getattr, shape arithmetic are dropped);
  3. the traced module runs under an fx.Interpreter in train mode and every node's output is recorded;
  4. loss = cross-entropy (mean) against fixed labels (torch.manual_seed(0)): per sample, per output pixel (unet) or
     per next token (gpt2);
  5. the VJP of forward node v = the autograd nodes reachable from v's output grad_fn before reaching another fx
     node's grad_fn or a parameter's AccumulateGrad; their `_saved_*` tensors are mapped to producers by
     (data_ptr, shape, stride, dtype): parameters/buffers/the input are fixed memory, fx-node outputs become
     dependencies of bwd(v), anything else (max-pool indices, BatchNorm save_mean/invstd, dropout masks) is an
     auxiliary output of v and its bytes are added to mem(v);
  6. layout: forward nodes 0..L-1 in fx order, loss L, bwd(i) = 2L-i (fwd_of = i). Deps: F(v) <- F(inputs of v);
     loss <- F(model output); B(v) <- B(c) for every consumer c of v (the loss for the model output) and
     <- F(p) for every producer p of a tensor v's VJP saved.
Only the Python standard library, torch and torchvision are used. CPU only; nothing is downloaded.
"""
import argparse
import json
import operator
import os
import subprocess
import sys
import time

APT_PKGS = ["python3-torch", "python3-torchvision"]
APT_CMD = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq " + " ".join(APT_PKGS)

TORCHVISION_MODELS = ["alexnet", "vgg11", "vgg16", "vgg19", "resnet18", "resnet50", "mobilenet_v2", "googlenet"]
MODELS = TORCHVISION_MODELS + ["mlp", "smallcnn", "unet", "gpt2"]

DEFAULT_HW = {"smallcnn": (32, 32), "unet": (416, 608)}
DEFAULT_CLASSES = {"mlp": 10, "smallcnn": 10, "unet": 19}

# Counts measured by the spec's prototype at batch 2 (checkmate.md §2.4): L, n, |E|.
SPEC_COUNTS = {"vgg16": (40, 81, 116), "vgg19": (46, 93, 134), "resnet50": (175, 351, 539),
               "mobilenet_v2": (153, 307, 466)}


DEBIAN_PY = "/usr/bin/python3"


def reexec_debian_python():
    """Running under another python (pyenv, venv) that cannot see Debian's dist-packages: if /usr/bin/python3 can
    import torch and torchvision, rerun this script with it."""
    if os.path.realpath(sys.executable) == os.path.realpath(DEBIAN_PY) or not os.path.exists(DEBIAN_PY) \
            or os.environ.get("EXPORT_TORCH_GRAPH_REEXEC"):
        return
    if subprocess.call([DEBIAN_PY, "-c", "import torch, torchvision"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) == 0:
        os.environ["EXPORT_TORCH_GRAPH_REEXEC"] = "1"
        print("export_torch_graph: %s has no torch; rerunning with %s" % (sys.executable, DEBIAN_PY),
              file=sys.stderr)
        sys.stderr.flush()
        os.execv(DEBIAN_PY, [DEBIAN_PY, os.path.abspath(__file__)] + sys.argv[1:])


def ensure_torch(install):
    """Import torch and torchvision; on failure print (or, with --install, run) the apt-get command."""
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        return
    except ImportError as e:
        err = e
    reexec_debian_python()
    if install:
        print("export_torch_graph: installing %s (apt-get, needs root)" % " ".join(APT_PKGS), file=sys.stderr)
        cmd = APT_CMD if os.geteuid() == 0 else "sudo sh -c '%s'" % APT_CMD
        rc = subprocess.call(cmd, shell=True)
        if rc == 0:
            reexec_debian_python()
            try:
                import torch  # noqa: F401,F811
                import torchvision  # noqa: F401,F811
                return
            except ImportError as e2:
                err = e2
        print("export_torch_graph: torch/torchvision still do not import (apt-get exit %d): %s" % (rc, err),
              file=sys.stderr)
        sys.exit(2)
    print("export_torch_graph: cannot import torch/torchvision (%s).\n"
          "Install Debian's packages (about 100 MB, as root):\n    %s\n"
          "or rerun with --install. Run this script with /usr/bin/python3 (Debian's python), not a pyenv/venv "
          "python that cannot see Debian's packages." % (err, APT_CMD), file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------------------------
def build_model(name, cfg):
    """The model to export. cfg: dict with mlp_in, mlp_hidden, num_classes, height, width and the gpt2 options."""
    import torch.nn as nn
    import torchvision
    num_classes = cfg["num_classes"]
    if name == "mlp":                                  # (Linear, ReLU) x 3 + Linear
        from collections import OrderedDict
        layers = OrderedDict()
        width = cfg["mlp_in"]
        for i in range(1, 4):
            layers["fc%d" % i] = nn.Linear(width, cfg["mlp_hidden"])
            layers["relu%d" % i] = nn.ReLU()
            width = cfg["mlp_hidden"]
        layers["fc4"] = nn.Linear(width, num_classes)
        return nn.Sequential(layers)
    builtin = _builtin_models()
    if name == "smallcnn":
        return builtin["smallcnn"](num_classes, cfg["height"], cfg["width"])
    if name == "unet":
        return builtin["unet"](num_classes)
    if name == "gpt2":
        return builtin["gpt2"](cfg["vocab"], cfg["seq"], cfg["d_model"], cfg["heads"], cfg["layers"])
    ctor = getattr(torchvision.models, name)
    if name == "googlenet":  # MONeT's GoogLeNet (thesis Tab. 4.2): the main network, without the training-only
        # auxiliary classifiers (their losses are not part of the graph the thesis optimises); init_weights=False
        # skips scipy's truncated-normal init, which the graph does not depend on
        return ctor(weights=None, num_classes=num_classes, aux_logits=False, init_weights=False)
    return ctor(weights=None, num_classes=num_classes)


def _builtin_models():
    """Model classes defined here (torch is imported lazily: ensure_torch runs first)."""
    import math
    from collections import OrderedDict
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class SmallCNN(nn.Module):
        """[B,3,32,32] -> conv(3,8,3,p1) relu pool2 -> conv(8,16,3,p1) relu pool2 -> flatten -> fc(1024,64) relu
        -> fc(64,classes). The attribute names are the fx node names (a plain-C executor implements these layers)."""

        def __init__(self, num_classes, height, width):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.relu1 = nn.ReLU()
            self.pool1 = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
            self.relu2 = nn.ReLU()
            self.pool2 = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(16 * (height // 4) * (width // 4), 64)
            self.relu3 = nn.ReLU()
            self.fc2 = nn.Linear(64, num_classes)

        def forward(self, x):
            x = self.pool1(self.relu1(self.conv1(x)))
            x = self.pool2(self.relu2(self.conv2(x)))
            flatten = torch.flatten(x, 1)
            return self.fc2(self.relu3(self.fc1(flatten)))

    class VggUNet(nn.Module):
        """keras_segmentation's vgg_unet in PyTorch (the model of the Checkmate paper's U-Net runs). Encoder: VGG16
        blocks 1-4 (block 5 is not on vgg_unet's path), skips f1..f4 = the block pooling outputs (H/2..H/16).
        Decoder, as keras_segmentation's _unet: on f4 conv3x3(512)+ReLU+BN; then 3 x [nearest upsample x2, concat
        the skip f3/f2/f1, conv3x3(256/128/64)+ReLU+BN]; a 3x3 conv to n_classes. ZeroPadding2D + 'valid' conv is
        written as padding=1. Logits [B, n_classes, H/2, W/2] (vgg_unet predicts at half resolution)."""

        def __init__(self, num_classes):
            super().__init__()
            cfg = [(1, 2, 64), (2, 2, 128), (3, 3, 256), (4, 3, 512)]
            cin = 3
            for blk, nconv, cout in cfg:
                layers = OrderedDict()
                for j in range(1, nconv + 1):
                    layers["conv%d" % j] = nn.Conv2d(cin, cout, 3, padding=1)
                    layers["relu%d" % j] = nn.ReLU()
                    cin = cout
                layers["pool"] = nn.MaxPool2d(2, 2)
                setattr(self, "block%d" % blk, nn.Sequential(layers))
            self.dec4 = self._dec(512, 512)
            self.up3, self.dec3 = nn.Upsample(scale_factor=2, mode="nearest"), self._dec(512 + 256, 256)
            self.up2, self.dec2 = nn.Upsample(scale_factor=2, mode="nearest"), self._dec(256 + 128, 128)
            self.up1, self.dec1 = nn.Upsample(scale_factor=2, mode="nearest"), self._dec(128 + 64, 64)
            self.head = nn.Conv2d(64, num_classes, 3, padding=1)

        @staticmethod
        def _dec(cin, cout):
            return nn.Sequential(OrderedDict([("conv", nn.Conv2d(cin, cout, 3, padding=1)), ("relu", nn.ReLU()),
                                              ("bn", nn.BatchNorm2d(cout))]))

        def forward(self, x):
            f1 = self.block1(x)
            f2 = self.block2(f1)
            f3 = self.block3(f2)
            f4 = self.block4(f3)
            o = self.dec4(f4)
            o = self.dec3(torch.cat([self.up3(o), f3], 1))
            o = self.dec2(torch.cat([self.up2(o), f2], 1))
            o = self.dec1(torch.cat([self.up1(o), f1], 1))
            return self.head(o)

    class CausalSelfAttention(nn.Module):
        def __init__(self, d_model, heads, seq):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.scale = 1.0 / math.sqrt(d_model // heads)
            # True above the diagonal: position t attends to positions <= t (a buffer: fixed memory)
            self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1))

        def forward(self, x):
            b, t, c = x.size(0), x.size(1), x.size(2)     # (fx cannot unpack a Proxy)
            qkv = self.qkv(x).split(c, dim=2)
            q, k, v = qkv[0], qkv[1], qkv[2]
            q = q.reshape(b, t, self.heads, c // self.heads).permute(0, 2, 1, 3)   # [B, H, T, Dh]
            k = k.reshape(b, t, self.heads, c // self.heads).permute(0, 2, 1, 3)
            v = v.reshape(b, t, self.heads, c // self.heads).permute(0, 2, 1, 3)
            att = (q @ k.transpose(-2, -1)) * self.scale                            # [B, H, T, T]
            att = att.masked_fill(self.mask, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v                                                             # [B, H, T, Dh]
            y = y.permute(0, 2, 1, 3).reshape(b, t, c)                              # merge heads (a copy)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self, d_model, heads, seq):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d_model)
            self.attn = CausalSelfAttention(d_model, heads, seq)
            self.ln_2 = nn.LayerNorm(d_model)
            self.mlp = nn.Sequential(OrderedDict([("fc", nn.Linear(d_model, 4 * d_model)),
                                                  ("gelu", nn.GELU(approximate="tanh")),
                                                  ("proj", nn.Linear(4 * d_model, d_model))]))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT2(nn.Module):
        """GPT-2-style decoder-only transformer without dropout: token + position embedding, pre-LayerNorm blocks
        (causal self-attention, GELU MLP, residual adds), final LayerNorm, LM head tied to the token embedding."""

        def __init__(self, vocab, seq, d_model, heads, layers):
            super().__init__()
            if d_model % heads:
                raise SystemExit("export_torch_graph: --d-model must be a multiple of --heads")
            self.wte = nn.Embedding(vocab, d_model)
            self.wpe = nn.Embedding(seq, d_model)
            self.register_buffer("pos", torch.arange(seq))
            self.h = nn.Sequential(*[Block(d_model, heads, seq) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)
            self.lm_head.weight = self.wte.weight                                   # GPT-2 ties them

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(self.pos)
            return self.lm_head(self.ln_f(self.h(x)))                               # [B, T, vocab]

    return {"smallcnn": SmallCNN, "unet": VggUNet, "gpt2": GPT2}


def tensors_in(x):
    """Tensors inside a node's output (a tensor, or tuples/lists/dicts of them)."""
    import torch
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        r = []
        for e in x:
            r += tensors_in(e)
        return r
    if isinstance(x, dict):
        r = []
        for e in x.values():
            r += tensors_in(e)
        return r
    return []


def nbytes(t):
    return t.numel() * t.element_size()


def storage_ptr(t):
    try:
        return t.storage().data_ptr()
    except Exception:  # sparse / opaque tensors
        return t.data_ptr()


def tkey(t):
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)


INPLACE_FUNCS = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
                 operator.itruediv: operator.truediv}
VIEW_NAMES = ("view", "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "expand", "t",
              "narrow", "select", "unflatten", "view_as", "reshape_as", "expand_as", "contiguous", "getitem",
              "chunk", "split", "unbind")


def rewrite_inplace(model, gm):
    """inplace=False on modules and on calls left in the traced graph. Returns the number of rewrites."""
    import torch
    count = 0
    for mod in model.modules():
        if hasattr(mod, "inplace") and mod.inplace:
            mod.inplace = False
            count += 1
    for mod in gm.modules():
        if hasattr(mod, "inplace") and mod.inplace:
            mod.inplace = False
            count += 1
    for n in gm.graph.nodes:
        if n.op in ("call_function", "call_method") and n.kwargs.get("inplace", False) is True:
            kw = dict(n.kwargs)
            kw["inplace"] = False
            n.kwargs = kw
            count += 1
        if n.op == "call_function" and n.target in INPLACE_FUNCS:
            n.target = INPLACE_FUNCS[n.target]
            count += 1
        if n.op == "call_method" and isinstance(n.target, str) and n.target.endswith("_") \
                and not n.target.startswith("_") and hasattr(torch.Tensor, n.target[:-1]):
            n.target = n.target[:-1]
            count += 1
    gm.recompile()
    return count


def op_name(gm, n):
    if n.op == "call_module":
        return type(gm.get_submodule(n.target)).__name__
    if n.op == "call_method":
        return str(n.target)
    t = n.target
    return getattr(t, "__name__", str(t))


def is_rng(gm, n):
    name = op_name(gm, n).lower()
    return "dropout" in name or name in ("rrelu", "bernoulli", "rand", "randn", "randint", "normal",
                                         "rand_like", "randn_like", "multinomial")


SHAPE_MAX_DIMS = 6   # mlsys_remat_node_info holds up to 6 dims


def _pair(v):
    return [int(v[0]), int(v[1])] if isinstance(v, (tuple, list)) else [int(v), int(v)]


def shape_attrs(gm, n, out):
    """The optional per-node keys (mlsys_remat.h, GRAPH FORMATS): "shape" = the output tensor's shape when the node
    outputs exactly one tensor of at most 6 dims; "attrs" for Conv2d / MaxPool2d / AvgPool2d / Linear modules:
    in_shape (the first input's shape) and the kernel geometry. Added after the existing keys, so the files'
    other fields and their order are unchanged."""
    import torch
    r = {}
    o = out.get(n)
    if isinstance(o, torch.Tensor) and o.dim() <= SHAPE_MAX_DIMS:
        r["shape"] = [int(d) for d in o.shape]
    if n.op != "call_module":
        return r
    mod = gm.get_submodule(n.target)
    xin = out.get(n.args[0]) if n.args and isinstance(n.args[0], torch.fx.Node) else None   # the placeholder too
    in_shape = [int(d) for d in xin.shape] if isinstance(xin, torch.Tensor) and xin.dim() <= SHAPE_MAX_DIMS \
        else None
    a = None
    if isinstance(mod, torch.nn.Conv2d) and not isinstance(mod.padding, str):
        a = {"kernel": _pair(mod.kernel_size), "stride": _pair(mod.stride), "padding": _pair(mod.padding),
             "dilation": _pair(mod.dilation), "groups": int(mod.groups)}
    elif isinstance(mod, torch.nn.MaxPool2d):
        a = {"kernel": _pair(mod.kernel_size), "stride": _pair(mod.stride if mod.stride is not None
                                                                 else mod.kernel_size),
             "padding": _pair(mod.padding), "dilation": _pair(mod.dilation)}
    elif isinstance(mod, torch.nn.AvgPool2d):
        a = {"kernel": _pair(mod.kernel_size), "stride": _pair(mod.stride if mod.stride is not None
                                                                 else mod.kernel_size),
             "padding": _pair(mod.padding)}
    elif isinstance(mod, torch.nn.Linear):
        a = {}
    if a is not None and in_shape is not None:
        r["attrs"] = dict({"in_shape": in_shape}, **a)
    return r


def fwd_flops(gm, n, args, outs):
    """Spec FLOP model: conv 2*kh*kw*Cin/groups*numel(out); linear 2*in*numel(out); others numel(out).
    Added here: matmul/bmm 2*K*numel(out); softmax, log_softmax, layer_norm 5*numel(out) (several passes per
    element). Everything else (ReLU, GELU, add, mul, masked_fill, BatchNorm, pooling, cat, upsample, embedding
    gather, a reshape that copies) stays numel(out), the spec's rule."""
    import torch
    numel = sum(t.numel() for t in outs)
    weight = None
    kind = None
    if n.op == "call_module":
        mod = gm.get_submodule(n.target)
        if isinstance(mod, torch.nn.modules.conv._ConvNd):
            weight, kind = mod.weight, ("convT" if mod.transposed else "conv")
        elif isinstance(mod, torch.nn.Linear):
            weight, kind = mod.weight, "linear"
        elif isinstance(mod, (torch.nn.Softmax, torch.nn.LogSoftmax, torch.nn.LayerNorm)):
            return 5.0 * numel                                  # see the call_function case
    elif n.op == "call_function":
        import torch.nn.functional as F
        if n.target in (F.conv1d, F.conv2d, F.conv3d, torch.conv1d, torch.conv2d, torch.conv3d):
            weight, kind = (args[1] if len(args) > 1 else None), "conv"
        elif n.target in (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d):
            weight, kind = (args[1] if len(args) > 1 else None), "convT"
        elif n.target is F.linear:
            weight, kind = (args[1] if len(args) > 1 else None), "linear"
        elif n.target in (torch.matmul, torch.mm, torch.bmm, operator.matmul) and len(args) > 1 \
                and isinstance(args[0], torch.Tensor) and args[0].dim() >= 1:
            return 2.0 * args[0].shape[-1] * numel              # K multiply-adds per output element
        elif n.target in (F.softmax, F.log_softmax, torch.softmax, torch.log_softmax):
            return 5.0 * numel                                  # max, subtract, exp, sum, divide (or log)
        elif n.target is F.layer_norm:
            return 5.0 * numel                                  # mean, var, normalize, scale, shift
    elif n.op == "call_method":
        if n.target in ("matmul", "mm", "bmm") and args and isinstance(args[0], torch.Tensor):
            return 2.0 * args[0].shape[-1] * numel
        if n.target in ("softmax", "log_softmax"):
            return 5.0 * numel
    if kind == "conv" and isinstance(weight, torch.Tensor):
        return 2.0 * weight[0].numel() * numel                  # weight: [Cout, Cin/groups, k...]
    if kind == "convT" and isinstance(weight, torch.Tensor):    # weight: [Cin, Cout/groups, k...]
        inp = args[0] if args and isinstance(args[0], torch.Tensor) else None
        return 2.0 * weight.numel() * (inp[0, 0].numel() * inp.shape[0] if inp is not None else 1)
    if kind == "linear" and isinstance(weight, torch.Tensor):
        return 2.0 * weight.shape[1] * numel
    return float(numel)


# ---------------------------------------------------------------------------------------------------------------
def export(model_name, batch, cost_mode, alias_mem, aux_mem, cfg, verbose, aux_dep=False):
    """cfg: dict with num_classes, height, width, mlp_in, mlp_hidden, vocab, seq, d_model, heads, layers."""
    import torch
    import torch.fx as fx
    torch.manual_seed(0)
    model = build_model(model_name, cfg)
    gm = fx.symbolic_trace(model)
    n_rewrites = rewrite_inplace(model, gm)
    gm.train()
    num_classes = cfg["num_classes"]

    torch.manual_seed(0)
    if model_name == "gpt2":                           # next-token prediction on fixed random token ids
        tokens = torch.randint(0, cfg["vocab"], (batch, cfg["seq"] + 1))
        x, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    elif model_name == "mlp":
        x = torch.randn(batch, cfg["mlp_in"])
    else:
        x = torch.randn(batch, 3, cfg["height"], cfg["width"])
    if model_name != "gpt2":
        labels = torch.randint(0, num_classes, (batch,))

    def loss_fn(logits, target):
        """cross-entropy, mean over the batch (and over the pixels / token positions)"""
        if model_name == "gpt2":                       # [B, T, V] logits, [B, T] next tokens
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        return torch.nn.functional.cross_entropy(logits, target)   # [B, C] or [B, C, H, W] with [B, H, W]

    out, version = {}, {}

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            out[n] = r
            version[n] = [t._version for t in tensors_in(r)]
            return r

    interp = Recorder(gm, garbage_collect_values=False)
    t0 = time.perf_counter()
    y = interp.run(x)
    t_fwd = time.perf_counter() - t0
    if isinstance(y, dict):
        y = y["out"] if "out" in y else next(iter(y.values()))
    elif isinstance(y, (tuple, list)):
        y = tensors_in(y)[0]
    if model_name != "gpt2" and y.dim() > 2:         # segmentation: one label per output pixel
        labels = torch.randint(0, num_classes, (y.shape[0],) + tuple(y.shape[2:]),
                               generator=torch.Generator().manual_seed(1))
    loss = loss_fn(y, labels)

    # ---- forward nodes ----
    fnodes = []
    for n in gm.graph.nodes:
        if n.op not in ("call_module", "call_function", "call_method"):
            continue
        if not tensors_in(out.get(n)):
            continue                                   # metadata: size(), getattr, shape arithmetic
        fnodes.append(n)
    L = len(fnodes)
    idx = {n: i for i, n in enumerate(fnodes)}
    for n in fnodes:                                   # in-place damage check (after the rewrite there is none)
        now = [t._version for t in tensors_in(out[n])]
        if now != version[n]:
            print("export_torch_graph: warning: output of %s was modified in place after it was produced "
                  "(saved-tensor mapping may be wrong)" % n.name, file=sys.stderr)

    params = list(model.parameters())
    buffers = list(model.buffers())
    fixed_storage = {storage_ptr(p) for p in params} | {storage_ptr(b) for b in buffers}
    input_storage = {storage_ptr(x), storage_ptr(labels)}
    # fx placeholders / get_attr outputs are fixed memory too
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            for t in tensors_in(out.get(n)):
                (input_storage if n.op == "placeholder" else fixed_storage).add(storage_ptr(t))

    by_key, by_storage = {}, {}
    for n in fnodes:
        for t in tensors_in(out[n]):
            by_key.setdefault(tkey(t), []).append(n)
            by_storage.setdefault(storage_ptr(t), []).append(n)

    # owner of each grad_fn: the first fx node whose output carries it
    owner = {}
    for n in fnodes:
        for t in tensors_in(out[n]):
            gf = t.grad_fn
            if gf is not None and gf not in owner:
                owner[gf] = n

    def fx_inputs(n):
        r = []
        for a in n.all_input_nodes:
            if a in idx and a not in r:
                r.append(a)
        return r

    consumers = {n: [] for n in fnodes}
    for n in fnodes:
        for a in fx_inputs(n):
            consumers[a].append(n)
    y_node = None
    for n in reversed(fnodes):
        if any(t is y for t in tensors_in(out[n])):
            y_node = n
            break
    if y_node is None:
        raise SystemExit("export_torch_graph: cannot find the fx node that produces the model output")

    def grad_owner(n):
        for t in tensors_in(out[n]):
            if t.grad_fn is not None:
                return owner.get(t.grad_fn, n)
        return n

    def requires_grad(n):
        return any(t.requires_grad for t in tensors_in(out[n]))

    info = {}
    stats = {"fixed_saved": 0, "aux_saved": 0, "act_saved": 0}
    for n in fnodes:
        outs = tensors_in(out[n])
        in_tensors = []
        for a in fx_inputs(n):
            in_tensors += tensors_in(out[a])
        # alias: every output shares storage with an input (view, reshape of contiguous, getitem of a tuple...)
        in_st = {storage_ptr(t) for t in in_tensors}
        alias = bool(in_st) and all(storage_ptr(t) in in_st for t in outs) and \
            (op_name(gm, n) in VIEW_NAMES or all(t._base is not None or any(t is u for u in in_tensors)
                                                 for t in outs))
        args = interp.fetch_args_kwargs_from_env(n)[0]
        cost = 0.0 if alias else fwd_flops(gm, n, args, outs)
        mem = sum(nbytes(t) for t in outs)
        if alias and alias_mem == "zero":
            mem = 0
        # ---- the VJP subgraph of n and its saved tensors ----
        saved_deps, aux, seen_keys, grad_to = [], 0, set(), set()
        stack = [t.grad_fn for t in outs if t.grad_fn is not None and owner.get(t.grad_fn) is n]
        visited = set()
        while stack:
            gf = stack.pop()
            if gf in visited:
                continue
            visited.add(gf)
            saved = []
            for a in dir(gf):
                if a.startswith("_saved_"):
                    try:
                        v = getattr(gf, a)
                    except Exception:
                        continue
                    saved += [(a, s) for s in tensors_in(v)]
            try:                                       # custom autograd.Function
                if hasattr(gf, "saved_tensors"):
                    saved += [("saved_tensors", s) for s in tensors_in(gf.saved_tensors)]
            except Exception:
                pass
            for a, s in saved:
                if s.numel() == 0 and s.dim() == 0:
                    continue
                k = tkey(s)
                if k in seen_keys:
                    continue
                seen_keys.add(k)
                sp = storage_ptr(s)
                if sp in fixed_storage or sp in input_storage:
                    stats["fixed_saved"] += 1
                    continue
                cands = by_key.get(k) or by_storage.get(sp)
                if cands:
                    # prefer n itself or its fx inputs; else the latest producer not after n
                    pref = [c for c in cands if c is n or c in fx_inputs(n)]
                    prior = [c for c in cands if idx[c] <= idx[n]]
                    p = (pref or prior or cands)[-1]
                    if idx[p] > idx[n]:
                        raise SystemExit("export_torch_graph: %s saved a tensor produced later by %s"
                                         % (n.name, p.name))
                    if p not in saved_deps:
                        saved_deps.append(p)
                    stats["act_saved"] += 1
                elif s.dim() == 0:
                    continue                           # a wrapped Python scalar (x * 0.125 saves it): no activation
                else:
                    aux += nbytes(s)
                    stats["aux_saved"] += 1
                    if verbose:
                        print("  aux %-24s %-32s %-18s %s %s" % (n.name, type(gf).__name__, a, tuple(s.shape),
                                                                  s.dtype), file=sys.stderr)
            for nf, _ in gf.next_functions:
                if nf is None:
                    continue
                o = owner.get(nf)
                if o is not None and o is not n:
                    grad_to.add(o)
                    continue
                if type(nf).__name__ == "AccumulateGrad":
                    continue
                stack.append(nf)
        # a pass-through input (getitem of a tuple, identity) carries its producer's grad_fn
        allowed = set(fx_inputs(n)) | {grad_owner(a) for a in fx_inputs(n)}
        missing = [p for p in grad_to if p not in allowed]
        if missing:
            raise SystemExit("export_torch_graph: autograd sends a gradient from %s to %s, which fx does not list as "
                             "an input" % (n.name, ", ".join(p.name for p in missing)))
        grad_inputs = [a for a in fx_inputs(n) if requires_grad(a)]
        bmem = sum(nbytes(t) for a in grad_inputs for t in tensors_in(out[a]) if t.requires_grad)
        if alias and any(isinstance(out[a], (tuple, list)) for a in grad_inputs):
            bmem = sum(nbytes(t) for t in outs)        # getitem of a tuple: the gradient of its own slot
        # the backward of a single-output view with one consumer is a view of the incoming gradient; with
        # several consumers the gradient is a fresh sum, and a multi-output view (chunk, split) concatenates
        cons_rg = [c for c in consumers[n] if requires_grad(c)] + ([y_node] if n is y_node else [])
        balias = alias and len(outs) == 1 and len(cons_rg) == 1 and n is not y_node
        if balias and alias_mem == "zero":
            bmem = 0
        info[n] = dict(cost=cost, mem=mem + (aux if aux_mem == "add" else 0), aux=aux, alias=alias, balias=balias,
                       saved=saved_deps, bmem=bmem, rg=requires_grad(n), rng=is_rng(gm, n))

    if cost_mode == "time":
        import statistics
        for n in fnodes:
            args, kwargs = interp.fetch_args_kwargs_from_env(n)
            times = []
            for rep in range(6):
                t0 = time.perf_counter_ns()
                getattr(interp, n.op)(n.target, args, kwargs)
                times.append((time.perf_counter_ns() - t0) / 1000.0)
            info[n]["cost"] = round(statistics.median(times[1:]), 3)   # first run is a warm-up

    # ---- assemble the graph ----
    nodes = []
    for i, n in enumerate(fnodes):
        f = info[n]
        flags = []
        if f["alias"]:
            flags.append("alias")
        if f["rng"]:
            flags.append("rng")
        nd = {"id": i, "kind": "F", "name": n.name, "op": op_name(gm, n), "cost": f["cost"],
              "mem": f["mem"], "deps": [idx[a] for a in fx_inputs(n)], "fwd_of": None, "flags": flags}
        nd.update(shape_attrs(gm, n, out))
        nodes.append(nd)
    logits_bytes = nbytes(y)
    loss_cost = float(y.numel())
    if cost_mode == "time":
        times = []
        for rep in range(6):
            yy = y.detach().requires_grad_()
            t0 = time.perf_counter_ns()
            loss_fn(yy, labels).backward()
            times.append((time.perf_counter_ns() - t0) / 1000.0)
        import statistics
        loss_cost = round(statistics.median(times[1:]), 3)
    nodes.append({"id": L, "kind": "L", "name": "loss", "op": "CrossEntropyLoss", "cost": loss_cost,
                  "mem": nbytes(loss) + logits_bytes, "deps": [idx[y_node]], "fwd_of": None, "flags": []})
    for i in range(L - 1, -1, -1):
        n = fnodes[i]
        f = info[n]
        bid = 2 * L - i
        deps = []
        if f["rg"]:
            cons = [c for c in consumers[n] if info[c]["rg"]]
            deps += [2 * L - idx[c] for c in sorted(cons, key=lambda c: idx[c])]
            if n is y_node:
                deps.append(L)
            deps += [idx[p] for p in f["saved"]]
            if aux_dep and f["aux"] and aux_mem == "add" and n not in f["saved"]:
                deps.append(i)                         # the auxiliary tensors live in F(v)'s memory
        cost = 2.0 * f["cost"] if f["rg"] else 0.0
        if cost_mode == "time":
            cost = round(cost, 3)
        flags = []
        if f["balias"] and f["rg"]:
            flags.append("alias")
        nodes.append({"id": bid, "kind": "B", "name": "grad_" + n.name, "op": nodes[i]["op"] + "Backward",
                      "cost": cost, "mem": f["bmem"] if f["rg"] else 0, "deps": deps, "fwd_of": i, "flags": flags})
    # ---- checks: topological ids, no duplicate deps ----
    for nd in nodes:
        if len(set(nd["deps"])) != len(nd["deps"]):
            raise SystemExit("export_torch_graph: node %d has duplicate deps %s" % (nd["id"], nd["deps"]))
        for d in nd["deps"]:
            if not (0 <= d < nd["id"]):
                raise SystemExit("export_torch_graph: node %d (%s) depends on %d: not topological"
                                 % (nd["id"], nd["name"], d))
    assert [nd["id"] for nd in nodes] == list(range(2 * L + 1))

    pbytes = sum(nbytes(p) for p in params)
    bbytes = sum(nbytes(b) for b in buffers)
    fixed = {"params": pbytes, "param_grads": pbytes, "inputs": nbytes(x), "labels": nbytes(labels)}
    if bbytes:
        fixed["buffers"] = bbytes
    graph = {"format": "mlsys-remat-graph", "version": 1, "name": model_name, "batch": batch,
             "units": {"mem": "byte", "cost": "flop" if cost_mode == "flops" else "us"},
             "fixed": fixed, "loss": L,
             "source": {"tool": "tools/export_torch_graph.py", "torch": torch.__version__,
                        "model": model_name, "input": list(x.shape), "cost": cost_mode, "alias_mem": alias_mem,
                        "aux_mem": aux_mem, **({"aux_dep": True} if aux_dep else {}),
                        "convention": "VJP node (checkmate.md 2.3)", "inplace_rewrites": n_rewrites,
                        **({"config": {k: cfg[k] for k in ("layers", "d_model", "heads", "seq", "vocab")}}
                           if model_name == "gpt2" else {})},
             "nodes": nodes}
    summary = dict(L=L, n=len(nodes), edges=sum(len(nd["deps"]) for nd in nodes),
                   cost=sum(nd["cost"] for nd in nodes), fwd_cost=sum(nd["cost"] for nd in nodes[:L]),
                   act_bytes=sum(nd["mem"] for nd in nodes[:L]), all_bytes=sum(nd["mem"] for nd in nodes),
                   aux_bytes=sum(info[n]["aux"] for n in fnodes), fixed=sum(fixed.values()),
                   t_fwd=t_fwd, **stats)
    return graph, summary


def write_json(graph, path):
    """Compact JSON with one node per line (small files, readable diffs)."""
    head = {k: v for k, v in graph.items() if k != "nodes"}
    parts = ["{" + ", ".join("%s: %s" % (json.dumps(k), json.dumps(v)) for k, v in head.items()) + ',\n "nodes": [']
    lines = []
    for nd in graph["nodes"]:
        c = nd["cost"]
        nd = dict(nd)
        if isinstance(c, float) and c.is_integer() and abs(c) < 2 ** 53:
            nd["cost"] = int(c)
        lines.append("  " + json.dumps(nd, separators=(", ", ": ")))
    text = parts[0] + "\n" + ",\n".join(lines) + "\n]}\n"
    json.loads(text)  # self-check
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return len(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=MODELS)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--height", type=int, default=None, help="input height: 224 (torchvision), 32 (smallcnn), "
                    "416 (unet)")
    ap.add_argument("--width", type=int, default=None, help="input width: 224 (torchvision), 32 (smallcnn), "
                    "608 (unet)")
    ap.add_argument("--cost", choices=["flops", "time"], default="flops",
                    help="flops (default): the spec's FLOP model; time: measured CPU microseconds per forward "
                         "op (median of 5 after a warm-up), backward = 2x forward")
    ap.add_argument("--alias-mem", choices=["zero", "bytes"], default="zero",
                    help="mem of view nodes (flag alias) and of their backward: zero (default; they share "
                         "storage) or their full output bytes (conservative: the solver does not extend the "
                         "base's lifetime)")
    ap.add_argument("--aux-mem", choices=["add", "ignore"], default="add",
                    help="saved tensors that are no fx node's output (max-pool indices, BatchNorm mean/invstd, "
                         "dropout masks): add their bytes to the saving node's mem (default), or ignore them "
                         "(reproduces the spec prototype's VGG16 checkpoint-all peak)")
    ap.add_argument("--aux-dep", action="store_true",
                    help="bwd(v) also depends on F(v) when v saved auxiliary tensors, so that their bytes (counted "
                         "in mem(v)) stay resident until bwd(v) runs; off by default (the spec's |E| counts and the "
                         "committed files do not have these edges)")
    ap.add_argument("--num-classes", type=int, default=None,
                    help="default 1000 (torchvision), 10 (mlp, smallcnn), 19 (unet); gpt2 uses --vocab")
    ap.add_argument("--mlp-in", type=int, default=784)
    ap.add_argument("--mlp-hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4, help="gpt2: transformer blocks (default 4)")
    ap.add_argument("--d-model", type=int, default=256, help="gpt2: model width (default 256)")
    ap.add_argument("--heads", type=int, default=4, help="gpt2: attention heads (default 4)")
    ap.add_argument("--seq", type=int, default=128, help="gpt2: sequence length (default 128)")
    ap.add_argument("--vocab", type=int, default=1024, help="gpt2: vocabulary size = classes (default 1024)")
    ap.add_argument("--out", help="output JSON file ('-' = stdout); omitted: only the summary is printed")
    ap.add_argument("--check-counts", action="store_true",
                    help="compare L, n, |E| with the spec's measured counts (batch-independent); exit 1 on mismatch")
    ap.add_argument("--install", action="store_true", help="apt-get install " + " ".join(APT_PKGS) + " if missing")
    ap.add_argument("--verbose", "-v", action="store_true", help="list the auxiliary saved tensors")
    a = ap.parse_args()
    dh, dw = DEFAULT_HW.get(a.model, (224, 224))
    a.height = dh if a.height is None else a.height
    a.width = dw if a.width is None else a.width
    if a.batch < 1 or a.height < 1 or a.width < 1:
        ap.error("--batch, --height and --width must be positive")
    if a.model == "unet" and (a.height % 16 or a.width % 16):
        ap.error("unet: --height and --width must be multiples of 16 (four 2x2 poolings)")
    if a.model == "smallcnn" and (a.height % 4 or a.width % 4):
        ap.error("smallcnn: --height and --width must be multiples of 4 (two 2x2 poolings)")
    ensure_torch(a.install)
    import torch
    torch.set_num_threads(max(1, torch.get_num_threads()))
    nc = a.num_classes or DEFAULT_CLASSES.get(a.model, 1000)
    if a.model == "gpt2":
        nc = a.vocab
    for k in ("vocab", "seq", "d_model", "heads", "layers", "mlp_in", "mlp_hidden"):
        if getattr(a, k) < 1:
            ap.error("--%s must be positive" % k.replace("_", "-"))
    cfg = dict(num_classes=nc, height=a.height, width=a.width, mlp_in=a.mlp_in, mlp_hidden=a.mlp_hidden,
               vocab=a.vocab, seq=a.seq, d_model=a.d_model, heads=a.heads, layers=a.layers)
    t0 = time.perf_counter()
    graph, s = export(a.model, a.batch, a.cost, a.alias_mem, a.aux_mem, cfg, a.verbose, a.aux_dep)
    size = write_json(graph, a.out) if a.out else 0
    dt = time.perf_counter() - t0
    unit = graph["units"]["cost"]
    print("%s batch %d: L=%d n=%d edges=%d cost=%.6g %s (fwd %.6g) activations=%d B (aux %d B%s; all nodes %d B) "
          "fixed=%d B saved[act %d aux %d fixed %d] %.1fs%s"
          % (a.model, a.batch, s["L"], s["n"], s["edges"], s["cost"], unit, s["fwd_cost"], s["act_bytes"],
             s["aux_bytes"], "" if a.aux_mem == "add" else " not counted", s["all_bytes"], s["fixed"],
             s["act_saved"], s["aux_saved"], s["fixed_saved"], dt,
             (" -> %s (%d bytes)" % (a.out, size)) if a.out and a.out != "-" else ""),
          file=sys.stderr if a.out == "-" else sys.stdout)
    if a.check_counts and a.model not in SPEC_COUNTS:
        print("the spec has no counts for %s (it has them for %s)" % (a.model, ", ".join(sorted(SPEC_COUNTS))),
              file=sys.stderr)
    if a.check_counts and a.model in SPEC_COUNTS:
        want = SPEC_COUNTS[a.model]
        got = (s["L"], s["n"], s["edges"])
        if got != want:
            print("counts differ from the spec's (L, n, |E|) = %s: got %s" % (want, got), file=sys.stderr)
            sys.exit(1)
        print("counts match the spec's (L, n, |E|) = %s" % (want,), file=sys.stderr)


if __name__ == "__main__":
    main()
