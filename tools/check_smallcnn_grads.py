#!/usr/bin/python3
"""check_smallcnn_grads.py — the plain-C SmallCNN training step (examples/remat_cnn_layers.h) against PyTorch.

    ./build/examples/remat_cnn --dump /tmp/smallcnn.bin
    /usr/bin/python3 tools/check_smallcnn_grads.py /tmp/smallcnn.bin

Reads what the C example wrote (its weights, input, labels, loss and parameter gradients), builds the module the
graph was exported from (the same layers and names as SmallCNN in tools/export_torch_graph.py, written out here
so that this check does not depend on the exporter's internals), loads the C weights into it, runs
F.cross_entropy + backward in float32 and in float64, and prints the largest differences between the C gradients
and torch's, per parameter tensor. Exit 1 when a float32 gradient differs by more than --tol (absolute, scaled by
the tensor's largest gradient), so a wrong layer (not rounding) fails.

File layout (little-endian): int32 magic 0x4e4e4353 ("SCNN"), batch, classes, nparams; float32 params[nparams] in
state_dict order (conv1.weight, conv1.bias, conv2.weight, conv2.bias, fc1.weight, fc1.bias, fc2.weight,
fc2.bias); float32 input[batch*3*32*32]; int64 labels[batch]; float32 loss; float32 grads[nparams].
Needs Debian's python3-torch (see tools/README.md).
"""
import argparse
import struct
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump", help="file written by remat_cnn --dump")
    ap.add_argument("--tol", type=float, default=1e-4, help="max |C - torch| / max |torch| per tensor (float32)")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        sys.exit("check_smallcnn_grads: needs python3-torch (see tools/README.md)")
    import torch.nn as nn

    class SmallCNN(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.relu1 = nn.ReLU()
            self.pool1 = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
            self.relu2 = nn.ReLU()
            self.pool2 = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(16 * 8 * 8, 64)
            self.relu3 = nn.ReLU()
            self.fc2 = nn.Linear(64, num_classes)

        def forward(self, x):
            x = self.pool1(self.relu1(self.conv1(x)))
            x = self.pool2(self.relu2(self.conv2(x)))
            return self.fc2(self.relu3(self.fc1(torch.flatten(x, 1))))

    data = open(a.dump, "rb").read()
    magic, batch, classes, nparams = struct.unpack_from("<4i", data, 0)
    if magic != 0x4e4e4353:
        sys.exit("check_smallcnn_grads: %s is not a remat_cnn --dump file" % a.dump)
    off = 16

    def take(dtype, count):
        nonlocal off
        size = torch.empty(0, dtype=dtype).element_size()
        t = torch.frombuffer(bytearray(data[off:off + count * size]), dtype=dtype)
        off += count * size
        return t

    params = take(torch.float32, nparams)
    x = take(torch.float32, batch * 3 * 32 * 32).reshape(batch, 3, 32, 32)
    labels = take(torch.int64, batch)
    c_loss = take(torch.float32, 1)[0].item()
    c_grads = take(torch.float32, nparams)
    if off != len(data):
        sys.exit("check_smallcnn_grads: %s has %d bytes, expected %d" % (a.dump, len(data), off))

    worst = 0.0
    for dtype in (torch.float32, torch.float64):
        model = SmallCNN(classes).to(dtype)
        sd = model.state_dict()
        if sum(v.numel() for v in sd.values()) != nparams:
            sys.exit("check_smallcnn_grads: the module has %d parameters, the file %d"
                     % (sum(v.numel() for v in sd.values()), nparams))
        k = 0
        for name, v in sd.items():
            sd[name] = params[k:k + v.numel()].reshape(v.shape).to(dtype)
            k += v.numel()
        model.load_state_dict(sd)
        model.zero_grad()
        loss = F.cross_entropy(model(x.to(dtype)), labels)
        loss.backward()
        print("torch %s: loss %.9f (C %.9f, diff %.3g)" % (str(dtype).replace("torch.", ""), loss.item(), c_loss,
                                                          abs(loss.item() - c_loss)))
        k = 0
        for name, p in model.named_parameters():
            g = p.grad.double().flatten()
            cg = c_grads[k:k + g.numel()].double()
            k += g.numel()
            diff = (cg - g).abs().max().item()
            scale = g.abs().max().item() or 1.0
            print("  %-12s %6d values  max |C - torch| %.3e  (max |grad| %.3e, relative %.3e)"
                  % (name, g.numel(), diff, scale, diff / scale))
            if dtype == torch.float32:
                worst = max(worst, diff / scale)
    print("worst relative difference (float32): %.3e -> %s" % (worst, "ok" if worst <= a.tol else "TOO LARGE"))
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
