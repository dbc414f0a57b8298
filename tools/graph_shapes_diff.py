#!/usr/bin/python3
"""graph_shapes_diff.py — check that a re-exported remat graph differs from the committed one only in the optional
per-node keys "shape", "attrs" and "impls" (mlsys_remat.h, GRAPH FORMATS): every other value (header, ids, names,
ops, cost, mem, deps, fwd_of, flags, key order) must be identical, and so must every line's text once those keys
are removed.

    /usr/bin/python3 tools/graph_shapes_diff.py tests/data/graphs/vgg16_b2.json /tmp/vgg16_b2.json

Exit 0 when they agree (prints how many nodes gained shapes/attrs), 1 with the first differences otherwise."""
import json
import sys

NEW_KEYS = ("shape", "attrs", "impls")


def strip(d):
    return {k: v for k, v in d.items() if k not in NEW_KEYS}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old_path, new_path = sys.argv[1], sys.argv[2]
    old, new = json.load(open(old_path)), json.load(open(new_path))
    bad = []
    ho, hn = {k: v for k, v in old.items() if k != "nodes"}, {k: v for k, v in new.items() if k != "nodes"}
    if json.dumps(ho) != json.dumps(hn):
        bad.append("header differs: %s vs %s" % (json.dumps(ho)[:300], json.dumps(hn)[:300]))
    if len(old["nodes"]) != len(new["nodes"]):
        bad.append("node count %d vs %d" % (len(old["nodes"]), len(new["nodes"])))
    for a, b in zip(old["nodes"], new["nodes"]):
        if json.dumps(strip(a)) != json.dumps(strip(b)):   # values and key order, compared as text
            bad.append("node %s: %s\n    vs %s" % (a.get("id"), json.dumps(strip(a)), json.dumps(strip(b))))
    # the files' own text: each node line, with the new keys cut off the end, is the committed line
    ol = open(old_path).read().split("\n")
    nl = open(new_path).read().split("\n")
    for i, (x, y) in enumerate(zip(ol, nl)):
        if x == y:
            continue
        cut = y.find(', "shape": ')
        if cut < 0:
            cut = y.find(', "attrs": ')
        z = y[:cut] + ("}," if y.endswith("},") else "}") if cut >= 0 else y
        if x != z:
            bad.append("line %d text differs:\n    %s\n    %s" % (i + 1, x[:200], z[:200]))
    if len(ol) != len(nl):
        bad.append("line count %d vs %d" % (len(ol), len(nl)))
    if bad:
        print("%s vs %s: %d difference(s)" % (old_path, new_path, len(bad)))
        for x in bad[:10]:
            print("  " + x)
        sys.exit(1)
    ns = sum("shape" in nd for nd in new["nodes"])
    na = sum("attrs" in nd for nd in new["nodes"])
    print("%s: identical except the new keys (%d nodes with shape, %d with attrs)" % (old_path, ns, na))


if __name__ == "__main__":
    main()
