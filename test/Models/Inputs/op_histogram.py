"""Prints 'OP COUNT' for every op of an MLIR file (sorted by op name), then
the signature of each func.func. Used by the model tests."""
import collections
import re
import sys

counts = collections.Counter()
signatures = []
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith("{-#"):
            break  # the resource section
        m = re.match(r"\s*(?:%[^=]+=\s*)?([a-z_]+\.[a-z_.]+)\b", line)
        if m:
            counts[m.group(1)] += 1
        if "func.func" in line:
            signatures.append(line.strip().rstrip("{").strip())
for op in sorted(counts):
    print(op, counts[op])
for sig in signatures:
    print(sig)
