#!/usr/bin/env python3
"""Which files of a directory call which: a function defined in one .c
(universal-ctags) named at a call site in another (a word followed by
"("). Prints each file's callees and then the circles (strongly connected
components of more than one file). Static functions count too: a name is
a file's if it is defined there. Macros and function pointers are not
followed (a hook is not a call).

    scripts/callgraph.py [DIR]        (default sched)
"""
import os, re, subprocess, sys
from collections import defaultdict

d = sys.argv[1] if len(sys.argv) > 1 else "sched"
files = sorted(f for f in os.listdir(d) if f.endswith(".c"))
defs = defaultdict(set)  # name -> files defining it
for f in files:
    out = subprocess.run(["ctags", "-x", "--c-kinds=f", "--language-force=C", os.path.join(d, f)],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        defs[line.split()[0]].add(f)
edges = defaultdict(set)
for f in files:
    src = open(os.path.join(d, f)).read()
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)  # comments
    src = re.sub(r'"(\\.|[^"\\])*"', '""', src)       # strings
    for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", src)):
        owners = defs.get(name, set())
        if f in owners or len(owners) != 1:
            continue  # its own, or static in several files
        edges[f].update(owners)
for f in files:
    print(f"{f}: {' '.join(sorted(edges[f])) or '-'}")
# Tarjan's strongly connected components
index, low, stack, on, comps = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        comps.append(sorted(c))
sys.setrecursionlimit(10000)
for f in files:
    if f not in index:
        visit(f)
circles = [c for c in comps if len(c) > 1]
print("circles:" if circles else "circles: none")
for c in circles:
    print("  " + " ".join(c))
