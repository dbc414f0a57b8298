#!/usr/bin/python3
"""check_gpt2_torch.py — the C GPT-2 of mlsys_relm.h (forward logits, one training step's gradients) against a
GPT-2 written here in PyTorch (issue 24).

    make build/gpt2_dump build/mlsys
    build/mlsys relm train --text tests/data/relm/apache-2.0.txt --out /tmp/g.bin --layers 2 --width 64 \\
        --heads 4 --context 64 --batch 2 --steps 10
    build/gpt2_dump --ckpt /tmp/g.bin --text tests/data/relm/apache-2.0.txt --out /tmp/gdump
    /usr/bin/python3 tools/check_gpt2_torch.py /tmp/gdump [--json] [--json-out F] [--ckpt OTHER.bin]

DIR is what tools/gpt2_dump.c wrote (meta.json, seq.i32, logits.f32, inputs.i32, targets.i32, grads.f32). This
script shares no code with the C side: it parses the llm.c checkpoint (256 int32 header, version 3, float32
parameters in llm.c's order: wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw,
fcprojb, lnfw, lnfb; wte has padded_vocab_size rows) itself, builds GPT-2 from torch.nn (Embedding, LayerNorm
eps 1e-5, Linear, causal softmax attention, GELU with the tanh approximation, the output projection tied to wte's
first vocab_size rows), tokenizes nothing (it takes the ids the C driver used), and in float32 computes the logits
of seq.i32 and F.cross_entropy(inputs → targets) + backward().

Error measure, per tensor: max|C − torch| / max|torch| (the largest difference over the tensor's largest magnitude).
Elementwise relative error is not used: logits and gradients have elements near zero whose few-ulp float32
differences (different summation orders) would give arbitrary ratios; scaling by the tensor's largest element
measures the error at the scale the tensor works at, and a wrong formula still moves many elements by a sizeable
fraction of that scale. Pass: logits ≤ --tol-logits (1e-4), every gradient tensor ≤ --tol-grads (1e-3), loss
|C − torch| / |torch| ≤ --tol-loss (1e-5). The same model in float64 is run too and both float32 results are
reported against it (information: how much of the difference is float32 rounding on either side).
Exit 0 pass, 1 fail, 2 bad input / no torch. Needs Debian's python3-torch (/usr/bin/python3).
"""
import argparse
import json
import math
import os
import struct
import sys

NAMES = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb",
         "fcprojw", "fcprojb", "lnfw", "lnfb"]


def die(msg, code=2):
    print("check_gpt2_torch: " + msg, file=sys.stderr)
    sys.exit(code)


def shapes(maxT, Vp, L, C):
    return {"wte": (Vp, C), "wpe": (maxT, C), "ln1w": (L, C), "ln1b": (L, C), "qkvw": (L, 3 * C, C),
            "qkvb": (L, 3 * C), "attprojw": (L, C, C), "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C),
            "fcw": (L, 4 * C, C), "fcb": (L, 4 * C), "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
            "lnfw": (C,), "lnfb": (C,)}


def read_checkpoint(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 1024:
        die("%s: %d bytes, shorter than llm.c's 1024-byte header" % (path, len(data)))
    h = struct.unpack_from("<256i", data, 0)
    if h[0] != 20240326:
        die("%s: bad magic %d (llm.c's is 20240326)" % (path, h[0]))
    if h[1] != 3:
        die("%s: version %d; only version 3 (float32) is read" % (path, h[1]))
    cfg = {"max_seq_len": h[2], "vocab_size": h[3], "n_layer": h[4], "n_head": h[5], "n_embd": h[6],
           "padded_vocab_size": h[7]}
    shp = shapes(h[2], h[7], h[4], h[6])
    n = sum(math.prod(s) for s in shp.values())
    if len(data) != 1024 + 4 * n:
        die("%s: %d bytes, but the header's sizes need 1024 + 4 x %d = %d" % (path, len(data), n, 1024 + 4 * n))
    return cfg, shp, data[1024:]


def build(torch, cfg):
    nn = torch.nn
    F = torch.nn.functional
    C, NH, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    V, Vp, maxT = cfg["vocab_size"], cfg["padded_vocab_size"], cfg["max_seq_len"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(C, eps=1e-5)
            self.qkv = nn.Linear(C, 3 * C)
            self.attproj = nn.Linear(C, C)
            self.ln2 = nn.LayerNorm(C, eps=1e-5)
            self.fc = nn.Linear(C, 4 * C)
            self.gelu = nn.GELU(approximate="tanh")
            self.fcproj = nn.Linear(4 * C, C)

        def attention(self, x):
            B, T, _ = x.shape
            hs = C // NH
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))   # (B, NH, T, hs)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            mask = torch.ones(T, T, dtype=torch.bool).triu(1)                   # a position sees itself and before
            att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
            return self.attproj((att @ v).transpose(1, 2).reshape(B, T, C))

        def forward(self, x):
            x = x + self.attention(self.ln1(x))
            return x + self.fcproj(self.gelu(self.fc(self.ln2(x))))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(Vp, C)
            self.wpe = nn.Embedding(maxT, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C, eps=1e-5)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.blocks:
                x = b(x)
            return self.lnf(x) @ self.wte.weight[:V].t()   # tied output projection; padded rows unused

    return GPT2()


def tensors_of(m):
    """The model's parameters as llm.c's 16 tensors (per-layer ones as lists of L tensors)."""
    b = m.blocks
    return {"wte": [m.wte.weight], "wpe": [m.wpe.weight],
            "ln1w": [x.ln1.weight for x in b], "ln1b": [x.ln1.bias for x in b],
            "qkvw": [x.qkv.weight for x in b], "qkvb": [x.qkv.bias for x in b],
            "attprojw": [x.attproj.weight for x in b], "attprojb": [x.attproj.bias for x in b],
            "ln2w": [x.ln2.weight for x in b], "ln2b": [x.ln2.bias for x in b],
            "fcw": [x.fc.weight for x in b], "fcb": [x.fc.bias for x in b],
            "fcprojw": [x.fcproj.weight for x in b], "fcprojb": [x.fcproj.bias for x in b],
            "lnfw": [m.lnf.weight], "lnfb": [m.lnf.bias]}


def run(torch, cfg, shp, flat, seq, inputs, targets, dtype):
    m = build(torch, cfg).to(dtype)
    ts = tensors_of(m)
    off = 0
    with torch.no_grad():
        for name in NAMES:
            n = math.prod(shp[name])
            src = flat[off:off + n].view(shp[name]).to(dtype)
            off += n
            parts = ts[name]
            if len(parts) == 1:
                parts[0].copy_(src)
            else:
                for i, p in enumerate(parts):
                    p.copy_(src[i])
    V = cfg["vocab_size"]
    with torch.no_grad():
        logits = m(seq.view(1, -1))[0]
    out = m(inputs)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, V), targets.reshape(-1))
    loss.backward()
    grads = {name: torch.stack([p.grad for p in ts[name]]).reshape(shp[name]) for name in NAMES}
    return logits, loss.item(), grads


def rel(a, b):
    """max|a − b| / max|b| (absolute max|a − b| when b is all zeros)."""
    d = (a.double() - b.double()).abs().max().item()
    s = b.double().abs().max().item()
    return d / s if s > 0 else d, d, s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump", help="directory written by build/gpt2_dump")
    ap.add_argument("--ckpt", help="checkpoint to load (default: meta.json's, the one the C side ran)")
    ap.add_argument("--tol-logits", type=float, default=1e-4)
    ap.add_argument("--tol-grads", type=float, default=1e-3)
    ap.add_argument("--tol-loss", type=float, default=1e-5)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--json-out", metavar="FILE", help="also write the JSON object to FILE")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        die("needs python3-torch for /usr/bin/python3 (Debian: apt-get install python3-torch)")
    torch.set_num_threads(max(1, a.threads))

    try:
        with open(os.path.join(a.dump, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        die("%s/meta.json: %s" % (a.dump, e))
    ckpt = a.ckpt or meta["checkpoint"]
    cfg, shp, raw = read_checkpoint(ckpt)
    for k in cfg:
        if meta.get(k) != cfg[k]:
            die("%s says %s = %s but meta.json says %s" % (ckpt, k, cfg[k], meta.get(k)))
    V, N, B, T = cfg["vocab_size"], meta["seq"], meta["batch"], meta["seq_len"]

    def load(name, dtype, count):
        p = os.path.join(a.dump, name)
        with open(p, "rb") as f:
            data = f.read()
        if len(data) != 4 * count:
            die("%s: %d bytes, expected %d" % (p, len(data), 4 * count))
        return torch.frombuffer(bytearray(data), dtype=dtype)

    flat = torch.frombuffer(bytearray(raw), dtype=torch.float32)
    seq = load("seq.i32", torch.int32, N).long()
    inputs = load("inputs.i32", torch.int32, B * T).long().view(B, T)
    targets = load("targets.i32", torch.int32, B * T).long().view(B, T)
    c_logits = load("logits.f32", torch.float32, N * V).view(N, V)
    c_grads_flat = load("grads.f32", torch.float32, flat.numel())
    c_loss = meta["loss"]

    t_logits, t_loss, t_grads = run(torch, cfg, shp, flat, seq, inputs, targets, torch.float32)
    d_logits, d_loss, d_grads = run(torch, cfg, shp, flat, seq, inputs, targets, torch.float64)

    rows = []
    r, d, s = rel(c_logits, t_logits)
    rows.append({"name": "logits", "shape": [N, V], "max_abs_diff": d, "max_abs_torch": s, "rel": r,
                 "rel_c_vs_fp64": rel(c_logits, d_logits)[0], "rel_torch_vs_fp64": rel(t_logits, d_logits)[0],
                 "tol": a.tol_logits, "ok": r <= a.tol_logits})
    loss_rel = abs(c_loss - t_loss) / abs(t_loss)
    rows.append({"name": "loss", "shape": [], "max_abs_diff": abs(c_loss - t_loss), "max_abs_torch": abs(t_loss),
                 "rel": loss_rel, "rel_c_vs_fp64": abs(c_loss - d_loss) / abs(d_loss),
                 "rel_torch_vs_fp64": abs(t_loss - d_loss) / abs(d_loss), "tol": a.tol_loss,
                 "ok": loss_rel <= a.tol_loss})
    off = 0
    worst = 0.0
    for name in NAMES:
        n = math.prod(shp[name])
        cg = c_grads_flat[off:off + n].view(shp[name])
        off += n
        r, d, s = rel(cg, t_grads[name])
        worst = max(worst, r)
        rows.append({"name": "grad " + name, "shape": list(shp[name]), "max_abs_diff": d, "max_abs_torch": s,
                     "rel": r, "rel_c_vs_fp64": rel(cg, d_grads[name])[0],
                     "rel_torch_vs_fp64": rel(t_grads[name], d_grads[name])[0], "tol": a.tol_grads,
                     "ok": r <= a.tol_grads})
    ok = all(x["ok"] for x in rows)
    report = {"torch": torch.__version__, "checkpoint": ckpt, "config": cfg, "seq": N, "batch": B, "seq_len": T,
              "loss_c": c_loss, "loss_torch": t_loss, "loss_fp64": d_loss, "logits_rel": rows[0]["rel"],
              "grads_max_rel": worst, "loss_rel": loss_rel, "rows": rows, "pass": ok}
    if a.json_out:
        with open(a.json_out, "w") as f:
            f.write(json.dumps(report) + "\n")
    if a.json:
        print(json.dumps(report))
    else:
        print("C GPT-2 vs torch %s: %s (L %d, C %d, heads %d, V %d), logits of %d tokens, loss + gradients of "
              "%d x %d" % (torch.__version__, ckpt, cfg["n_layer"], cfg["n_embd"], cfg["n_head"], V, N, B, T))
        print("error = max|C - torch| / max|torch| per tensor; the fp64 columns: each float32 side vs torch float64")
        print("%-15s %-16s %11s %11s %10s %10s %12s %8s %s" % ("tensor", "shape", "max|diff|", "max|torch|", "error",
                                                              "C vs fp64", "torch vs fp64", "tol", ""))
        for x in rows:
            print("%-15s %-16s %11.3g %11.3g %10.3g %10.3g %12.3g %8.0e %s" % (
                x["name"], "x".join(map(str, x["shape"])) or "-", x["max_abs_diff"], x["max_abs_torch"], x["rel"],
                x["rel_c_vs_fp64"], x["rel_torch_vs_fp64"], x["tol"], "ok" if x["ok"] else "FAIL"))
        print("loss C %.7f, torch %.7f, fp64 %.7f; logits error %.3g, worst gradient error %.3g: %s" % (
            c_loss, t_loss, d_loss, rows[0]["rel"], worst, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
