#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""include-cycles.py - find include and call circles between library files.

The graph has one node per file of the library folders (core shard timer
net fs numa) and two kinds of edge:

  - an include: file -> the header its `#include "dir/name.h"` names;
  - a definition: header -> the .c file defining a function the header
    declares (so "A.c includes B.h" also reaches B.c, the code it calls).

A circle in this graph is a set of files that include or call each
other. The script prints every strongly connected component of more than
one .c file, first for the whole graph, then with the crossings that
docs/architecture.md allows (its include-rules block: which module may
include which internal header of another) taken out. It fails (exit 1)
when a file includes another module's internal header that the rules do
not allow, or when a circle crossing module folders is left once the
allowed crossings are taken out.

Usage: scripts/include-cycles.py [--quiet] (from the source tree's root)
"""
import os
import re
import sys

MODULES = ("core", "shard", "timer", "net", "fs", "numa")
RULES_DOC = "docs/architecture.md"

INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A prototype or definition at column 0: "type name(" with the name last.
DECL = re.compile(r"^[A-Za-z_][^;{}()#=]*?\b(pw_\w+)\s*\(", re.M)


def module(path):
    return path.split("/", 1)[0]


def files():
    out = []
    for m in MODULES:
        for name in sorted(os.listdir(m)):
            if name.endswith((".c", ".h")):
                out.append(m + "/" + name)
    return out


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda x: "\n" * x.group(0).count("\n"),
                  text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse(paths):
    inc, decls, defs = {}, {}, {}
    for p in paths:
        text = strip_comments(open(p, encoding="utf-8").read())
        inc[p] = [h for h in INC.findall(text) if module(h) in MODULES]
        names = set()
        for m in DECL.finditer(text):
            rest = text[m.start():]
            head = rest[: rest.find(")") + 1] if ")" in rest else rest
            if head.lstrip().startswith("static"):
                continue
            names.add(m.group(1))
            if p.endswith(".c"):
                # A definition: the prototype is followed by a body.
                after = rest[len(head):].lstrip()
                if after.startswith("{") or after.startswith("\n{"):
                    defs.setdefault(m.group(1), p)
        if p.endswith(".h"):
            decls[p] = names
    return inc, decls, defs


def graph(paths, inc, decls, defs):
    g = {p: set() for p in paths}
    for p, hs in inc.items():
        for h in hs:
            if h in g:
                g[p].add(h)
    for h, names in decls.items():
        for n in names:
            c = defs.get(n)
            if c and c != h:
                g[h].add(c)
    return g


def sccs(g):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        # Iterative Tarjan: (node, iterator over successors).
        work = [(v, iter(sorted(g[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    # A .c file and the header declaring its functions always form a
    # circle: only circles of two .c files or more are reported.
    return [c for c in out if sum(p.endswith(".c") for p in c) > 1]


def rules():
    """module -> set of other modules' headers it may include."""
    allowed = {}
    try:
        text = open(RULES_DOC, encoding="utf-8").read()
    except OSError:
        return allowed
    m = re.search(r"<!-- include-rules -->(.*?)<!-- /include-rules -->",
                  text, re.S)
    if not m:
        return allowed
    for line in m.group(1).splitlines():
        line = line.strip().strip("`")
        if ":" not in line or line.startswith("#"):
            continue
        mod, hdrs = line.split(":", 1)
        allowed.setdefault(mod.strip(), set()).update(hdrs.split())
    return allowed


def report(title, comps, quiet):
    crossing = [c for c in comps if len({module(p) for p in c}) > 1]
    print("%s: %d circle(s), %d crossing module folders" %
          (title, len(comps), len(crossing)))
    if not quiet:
        for c in comps:
            mods = sorted({module(p) for p in c})
            print("  [%d files; %s] %s" % (len(c), " ".join(mods),
                                          " ".join(c)))
    return crossing


def main():
    quiet = "--quiet" in sys.argv
    paths = files()
    inc, decls, defs = parse(paths)
    g = graph(paths, inc, decls, defs)
    report("whole graph (includes + definitions)", sccs(g), quiet)

    allowed = rules()
    bad = []
    cut = {p: set(s) for p, s in g.items()}
    for p, hs in inc.items():
        for h in hs:
            if module(h) == module(p) or h not in g:
                continue
            if h in allowed.get(module(p), set()):
                cut[p].discard(h)
            else:
                bad.append("%s includes %s" % (p, h))
    for b in bad:
        print("not allowed by %s: %s" % (RULES_DOC, b))
    left = report("allowed crossings taken out", sccs(cut), quiet)
    return 1 if bad or left else 0


if __name__ == "__main__":
    sys.exit(main())
