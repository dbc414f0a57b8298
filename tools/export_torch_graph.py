#!/usr/bin/python3
"""export_torch_graph.py — export the unified forward + loss + backward training graph of a PyTorch model
as an mlsys-remat-graph JSON file (see mlsys_remat.h, GRAPH FORMATS) for the Checkmate solver.

    /usr/bin/python3 tools/export_torch_graph.py --model alexnet --batch 32 --out alexnet_b32.json
    /usr/bin/python3 tools/export_torch_graph.py --model vgg16 --batch 2 --cost time --out vgg16_b2_us.json
    /usr/bin/python3 tools/export_torch_graph.py --model resnet50 --batch 2 --check-counts     # no file

Algorithm (docs: tools/README.md; spec: checkmate.md §2.4), VJP-node convention (§2.3):
  1. every module with an `inplace` attribute gets inplace=False; in-place calls left in the traced graph
     (x.relu_(), operator.iadd, F.relu(..., inplace=True)) are rewritten to their out-of-place forms;
  2. torch.fx.symbolic_trace; forward nodes = call_module/call_function/call_method nodes whose recorded output
     holds a tensor (pure-metadata nodes such as x.size(0), getattr, shape arithmetic are dropped);
  3. the traced module runs under an fx.Interpreter in train mode and every node's output is recorded;
  4. loss = cross-entropy against fixed labels (torch.manual_seed(0));
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

TORCHVISION_MODELS = ["alexnet", "vgg11", "vgg16", "vgg19", "resnet18", "resnet50", "mobilenet_v2"]
MODELS = TORCHVISION_MODELS + ["mlp"]

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
def build_model(name, mlp_in, mlp_hidden, num_classes):
    import torch.nn as nn
    import torchvision
    if name == "mlp":                                  # (Linear, ReLU) x 3 + Linear
        from collections import OrderedDict
        layers = OrderedDict()
        width = mlp_in
        for i in range(1, 4):
            layers["fc%d" % i] = nn.Linear(width, mlp_hidden)
            layers["relu%d" % i] = nn.ReLU()
            width = mlp_hidden
        layers["fc4"] = nn.Linear(width, num_classes)
        return nn.Sequential(layers)
    ctor = getattr(torchvision.models, name)
    return ctor(weights=None, num_classes=num_classes)


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


def fwd_flops(gm, n, args, outs):
    """Spec FLOP model: conv 2*kh*kw*Cin/groups*numel(out); linear 2*in*numel(out); others numel(out)."""
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
            return 2.0 * args[0].shape[-1] * numel
    if kind == "conv" and isinstance(weight, torch.Tensor):
        return 2.0 * weight[0].numel() * numel                  # weight: [Cout, Cin/groups, k...]
    if kind == "convT" and isinstance(weight, torch.Tensor):    # weight: [Cin, Cout/groups, k...]
        inp = args[0] if args and isinstance(args[0], torch.Tensor) else None
        return 2.0 * weight.numel() * (inp[0, 0].numel() * inp.shape[0] if inp is not None else 1)
    if kind == "linear" and isinstance(weight, torch.Tensor):
        return 2.0 * weight.shape[1] * numel
    return float(numel)


# ---------------------------------------------------------------------------------------------------------------
def export(model_name, batch, height, width, cost_mode, alias_mem, aux_mem, num_classes, mlp_in, mlp_hidden,
           verbose):
    import torch
    import torch.fx as fx
    torch.manual_seed(0)
    model = build_model(model_name, mlp_in, mlp_hidden, num_classes)
    gm = fx.symbolic_trace(model)
    n_rewrites = rewrite_inplace(model, gm)
    gm.train()

    torch.manual_seed(0)
    if model_name == "mlp":
        x = torch.randn(batch, mlp_in)
    else:
        x = torch.randn(batch, 3, height, width)
    labels = torch.randint(0, num_classes, (batch,))

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
    loss = torch.nn.functional.cross_entropy(y, labels)

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
        nodes.append({"id": i, "kind": "F", "name": n.name, "op": op_name(gm, n), "cost": f["cost"],
                      "mem": f["mem"], "deps": [idx[a] for a in fx_inputs(n)], "fwd_of": None, "flags": flags})
    logits_bytes = nbytes(y)
    loss_cost = float(y.numel())
    if cost_mode == "time":
        times = []
        for rep in range(6):
            yy = y.detach().requires_grad_()
            t0 = time.perf_counter_ns()
            torch.nn.functional.cross_entropy(yy, labels).backward()
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
                        "aux_mem": aux_mem,
                        "convention": "VJP node (checkmate.md 2.3)", "inplace_rewrites": n_rewrites},
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
    ap.add_argument("--height", type=int, default=224)
    ap.add_argument("--width", type=int, default=224)
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
    ap.add_argument("--num-classes", type=int, default=None, help="default 1000 (torchvision), 10 (mlp)")
    ap.add_argument("--mlp-in", type=int, default=784)
    ap.add_argument("--mlp-hidden", type=int, default=256)
    ap.add_argument("--out", help="output JSON file ('-' = stdout); omitted: only the summary is printed")
    ap.add_argument("--check-counts", action="store_true",
                    help="compare L, n, |E| with the spec's measured counts (batch-independent); exit 1 on mismatch")
    ap.add_argument("--install", action="store_true", help="apt-get install " + " ".join(APT_PKGS) + " if missing")
    ap.add_argument("--verbose", "-v", action="store_true", help="list the auxiliary saved tensors")
    a = ap.parse_args()
    if a.batch < 1 or a.height < 1 or a.width < 1:
        ap.error("--batch, --height and --width must be positive")
    ensure_torch(a.install)
    import torch
    torch.set_num_threads(max(1, torch.get_num_threads()))
    nc = a.num_classes or (10 if a.model == "mlp" else 1000)
    t0 = time.perf_counter()
    graph, s = export(a.model, a.batch, a.height, a.width, a.cost, a.alias_mem, a.aux_mem, nc, a.mlp_in, a.mlp_hidden,
                      a.verbose)
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
    if a.check_counts and a.model in SPEC_COUNTS:
        want = SPEC_COUNTS[a.model]
        got = (s["L"], s["n"], s["edges"])
        if got != want:
            print("counts differ from the spec's (L, n, |E|) = %s: got %s" % (want, got), file=sys.stderr)
            sys.exit(1)
        print("counts match the spec's (L, n, |E|) = %s" % (want,), file=sys.stderr)


if __name__ == "__main__":
    main()
