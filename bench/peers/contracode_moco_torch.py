#!/usr/bin/env python3
"""bench/peers/contracode_moco_torch.py — the MoCo pre-training step of bench/bench_contracode_train.c in PyTorch, the
framework ContraCode's authors used (nn.TransformerEncoder, nn.LSTM, the facebookresearch MoCo recipe); RESULTS §17.1.

   /usr/bin/python3 bench/peers/contracode_moco_torch.py [--encoder tiny-transformer|tiny-bilstm|bow|all]
                    [--threads 1,2] [--steps 20] [--warmup 2] [--runs 3] [--B 32] [--T 128] [--K 4096] [--vocab 8000]

Needs Debian's python3-torch (bench/peers/torch-install.sh). The encoders have ours' architecture and parameter count
(mlsys_contracode.h section 6, docs/contracode.md "Transformer body" / "BiLSTM body"):
  tiny-transformer: Embedding(V, 128)·√d + the PyTorch tutorial's sinusoidal PE, dropout 0.1,
                    nn.TransformerEncoder(post-LN, ReLU, d 128, 4 heads, ff 512, dropout 0.1, 2 layers,
                    norm=LayerNorm), mean over T;
  tiny-bilstm:      the same embedding + PE, dropout, nn.LSTM(128, 128, 2 layers, bidirectional, dropout 0.1), h_n
                    flattened [l0 fwd, l0 bwd, l1 fwd, l1 bwd];
  bow:              Embedding(V, 128), dropout, mean over T;
  then the head Linear(P, 128), ReLU, Linear(128, 64). One step: momentum update of the key encoder from the current
query encoder (m 0.999), keys in train mode under no_grad, both views L2-normalized, logits [q·k⁺, q·queue]/0.07,
cross-entropy with label 0, backward, Adam (β 0.9/0.98, ε 1e-6, linear warm-up over 10 steps), enqueue at the pointer.
Ids are seeded random, every row full length (T). Per run: a fresh model, W warm-up steps, then N timed steps (the
step calls only); the median of R runs is printed. torch.set_num_threads(n) for each n of --threads.
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal_pe(max_len, d):
    pe = torch.zeros(max_len, d)
    pos = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class Encoder(nn.Module):
    def __init__(self, kind, V, d=128, layers=2, heads=4, ff=512, d_rep=64, p=0.1, max_len=1024):
        super().__init__()
        self.kind, self.d = kind, d
        self.emb = nn.Embedding(V, d)
        self.drop = nn.Dropout(p)
        self.register_buffer("pe", sinusoidal_pe(max_len, d), persistent=False)
        if kind == "tiny-transformer":
            layer = nn.TransformerEncoderLayer(d, heads, ff, p, activation="relu", batch_first=True)
            self.body = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d))
            P = d
        elif kind == "tiny-bilstm":
            self.body = nn.LSTM(d, d, layers, batch_first=True, dropout=p, bidirectional=True)
            P = 2 * layers * d
        elif kind == "bow":
            self.body = None
            P = d
        else:
            raise SystemExit("unknown encoder " + kind)
        self.head = nn.Sequential(nn.Linear(P, d), nn.ReLU(), nn.Linear(d, d_rep))

    def forward(self, ids):
        B, T = ids.shape
        if self.kind == "bow":
            return self.head(self.drop(self.emb(ids)).mean(1))
        x = self.drop(self.emb(ids) * math.sqrt(self.d) + self.pe[:T])
        if self.kind == "tiny-transformer":
            return self.head(self.body(x).mean(1))
        _, (h, _) = self.body(x)                     # h: (layers·2, B, d), PyTorch's order l0 fwd, l0 bwd, …
        return self.head(h.transpose(0, 1).reshape(B, -1))


class MoCo:
    def __init__(self, kind, V, K, d_rep=64, m=0.999, T=0.07, lr=1e-4, warmup=10):
        self.q = Encoder(kind, V)
        self.k = Encoder(kind, V)
        self.k.load_state_dict(self.q.state_dict())
        for p in self.k.parameters():
            p.requires_grad_(False)
        self.q.train(), self.k.train()   # the repo computes keys in train mode (dropout on)
        self.queue = F.normalize(torch.randn(K, d_rep), dim=1)
        self.ptr, self.K, self.m, self.T, self.lr, self.warmup, self.steps = 0, K, m, T, lr, warmup, 0
        self.opt = torch.optim.Adam(self.q.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0)

    def step(self, iq, ik):
        with torch.no_grad():
            for pk, pq in zip(self.k.parameters(), self.q.parameters()):
                pk.mul_(self.m).add_(pq.detach(), alpha=1 - self.m)
            k = F.normalize(self.k(ik), dim=1)
        q = F.normalize(self.q(iq), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ self.queue.t()], 1) / self.T
        loss = F.cross_entropy(logits, torch.zeros(q.shape[0], dtype=torch.long))
        self.opt.zero_grad()
        loss.backward()
        for g in self.opt.param_groups:
            g["lr"] = self.lr * min(1.0, self.steps / self.warmup)
        self.opt.step()
        B = k.shape[0]
        self.queue[self.ptr:self.ptr + B] = k
        self.ptr = (self.ptr + B) % self.K
        self.steps += 1
        return loss.item()


def blas_threads(n):
    """Debian's torch is built against the generic libblas.so.3 (BLAS_INFO=generic), so set_num_threads does not reach
    an OpenBLAS that the alternatives system or LD_LIBRARY_PATH puts there: set its thread count too. Returns the
    BLAS's name."""
    try:
        import ctypes
        lib = ctypes.CDLL("libblas.so.3")
    except OSError:
        return "unknown"
    if hasattr(lib, "openblas_set_num_threads"):
        lib.openblas_set_num_threads(n)
        lib.openblas_get_config.restype = ctypes.c_char_p
        return "OpenBLAS " + lib.openblas_get_config().decode().split()[1]
    return "reference BLAS (netlib)"


def run(kind, threads, a):
    torch.set_num_threads(threads)
    blas_threads(threads)
    torch.manual_seed(1)
    moco = MoCo(kind, a.vocab, a.K)
    g = torch.Generator().manual_seed(7)
    tsum, loss = 0.0, 0.0
    for i in range(a.warmup + a.steps):
        iq = torch.randint(1, a.vocab, (a.B, a.T), generator=g)
        ik = torch.randint(1, a.vocab, (a.B, a.T), generator=g)
        t0 = time.perf_counter()
        loss = moco.step(iq, ik)
        if i >= a.warmup:
            tsum += time.perf_counter() - t0
    return a.steps / tsum, loss, sum(p.numel() for p in moco.q.parameters())


def fwd_flops(kind, B, T, d=128, layers=2, ff=512, d_rep=64):
    """the C bench's count (bench/bench_contracode_train.c header comment)"""
    tok = B * T
    if kind == "tiny-transformer":
        f, P = layers * (2.0 * (4 * d * d + 2 * d * ff) * tok + 4.0 * T * d * tok), d
    elif kind == "tiny-bilstm":
        f, P = sum(2 * 2.0 * 4 * d * ((2 * d if l else d) + d) * tok for l in range(layers)), 2 * layers * d
    else:
        f, P = d * tok, d
    return f + 2.0 * B * (P * d + d * d_rep)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", default="all")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--vocab", type=int, default=8000)
    a = ap.parse_args()
    if a.K % a.B:
        raise SystemExit("--K must be a multiple of --B")
    kinds = ["tiny-transformer", "tiny-bilstm", "bow"] if a.encoder == "all" else [a.encoder]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"# contracode_moco_torch: torch {torch.__version__}, {blas_threads(1)}, load {load}; B {a.B}, T {a.T}, K {a.K}, V {a.vocab}; "
          f"{a.warmup} warm-up + {a.steps} timed steps, median of {a.runs} runs")
    print(f"{'encoder':17s} {'threads':>7s} {'params':>10s} {'steps/s':>9s} {'tokens/s':>11s} {'GFLOP/s':>9s} {'loss':>9s}")
    for kind in kinds:
        for th in [int(x) for x in a.threads.split(",")]:
            res = [run(kind, th, a) for _ in range(a.runs)]
            sps = sorted(r[0] for r in res)[a.runs // 2]
            gf = (4 * fwd_flops(kind, a.B, a.T) + 4.0 * a.B * (a.K + 1) * 64) * 1e-9
            print(f"{kind:17s} {th:7d} {res[0][2]:10d} {sps:9.3f} {sps * 2 * a.B * a.T:11.0f} {sps * gf:9.2f} "
                  f"{res[-1][1]:9.4f}", flush=True)


if __name__ == "__main__":
    main()
