#!/usr/bin/env python3
"""The layout rules of the code base (issue 16), checked on the sources:

1. No import circle between the files of a crate, nor between the
   top-level modules of `src/`. A file depends on another when it names
   an item defined there (a `use`, or a path in code such as
   `crate::engine::Engine` or `super::Head`). A module root (`lib.rs`,
   `main.rs`, `mod.rs`) declaring its submodules and re-exporting their
   items (`mod x;`, `pub use x::Y;`) is the module's front door, not a
   dependency, and is not counted; anything else it names is. An item
   named through such a front door (`use crate::s::b::B` where `b/mod.rs`
   has `pub use inner::B`) is a dependency on the file that defines it
   (`b/inner.rs`), so a circle through a re-export is found. Test code
   (`#[cfg(test)]` modules, `tests.rs` files, `tests/`) is not checked.
2. No file over 800 lines of code outside tests (blank lines and comments
   not counted; generated files, named in GENERATED, excepted).

Prints every violation and exits 1 if there is one.

    python3 .ci/check-layout.py            # check
    python3 .ci/check-layout.py --graph    # also print each crate's file graph
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = {
    "hourglass": ("src", ["lib.rs", "main.rs"]),
    "hourglass-ingest": ("ingest/src", ["lib.rs"]),
    "hourglass-query": ("query/src", ["lib.rs"]),
    "hourglass-bench": ("bench/src", ["main.rs"]),
}
GENERATED = {"src/fb/hourglass_generated.rs"}
MAX_CODE_LINES = 800


def strip(text):
    """The code of a file without comments, string and char literals (kept
    as empty quotes, so paths inside them are never read as paths)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12]):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_tests(code):
    """Removes `#[cfg(test)]` items (a module or function with its body)."""
    out = []
    i = 0
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        if m.start() < i:
            continue
        out.append(code[i:m.start()])
        j = m.end()
        # The item ends at its matching closing brace, or a `;` before any brace.
        brace = code.find("{", j)
        semi = code.find(";", j)
        if semi != -1 and (brace == -1 or semi < brace):
            i = semi + 1
            continue
        depth, k = 0, brace
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        out.append("\n" * code.count("\n", m.start(), k + 1))
        i = k + 1
    out.append(code[i:])
    return "".join(out)


class Module:
    def __init__(self, path, file, is_root):
        self.path = path  # tuple of names from the crate root
        self.file = file  # repository-relative file
        self.is_root = is_root  # lib.rs / main.rs / mod.rs: may re-export children
        self.children = {}


def load_crate(src_dir, root_file):
    """The crate's file modules, by module path."""
    modules = {}

    def visit(path, file, is_root, test):
        code = strip(open(os.path.join(ROOT, file), encoding="utf-8").read())
        m = Module(path, file, is_root)
        m.test = test
        modules[path] = m
        base = os.path.dirname(file) if is_root else os.path.splitext(file)[0]
        # Only `mod x;` declarations name files; inline `mod x { … }` stays
        # in this file.
        for d in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code):
            attrs, name = d.group(1), d.group(2)
            child_test = test or "cfg(test)" in attrs.replace(" ", "")
            for cand, root in ((f"{base}/{name}.rs", False), (f"{base}/{name}/mod.rs", True)):
                if os.path.exists(os.path.join(ROOT, cand)):
                    m.children[name] = path + (name,)
                    visit(path + (name,), cand, root, child_test)
                    break

    visit((), f"{src_dir}/{root_file}", True, False)
    return modules


def use_paths(code):
    """Every path a `use` item names, expanded (`a::{b, c::d}` → a::b, a::c::d),
    with whether the `use` is `pub`."""
    for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
        pub = bool(m.group(1))
        for p in expand(m.group(2).replace("\n", " ")):
            yield p, pub


def expand(tree):
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def go(t):
        i = t.find("{")
        if i < 0:
            return [t]
        prefix, inner = t[:i], t[i + 1:t.rfind("}")]
        out = []
        for part in split_top(inner):
            for sub in go(part):
                out.append(prefix + sub if sub != "self" else prefix.rstrip(":"))
        return out

    return [p for p in go(tree) if p]


CODE_PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)")
CHILD_PATH = re.compile(r"(?<![\w:])([a-z_][a-z0-9_]*(?:::\w+)+)")


def resolve(modules, here, path):
    """The module path a Rust path names (the deepest file module along it),
    or None if it is outside the crate."""
    segs = path.split("::")
    if not segs:
        return None
    mod = here.path
    if segs[0] == "crate":
        mod, segs = (), segs[1:]
    elif segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                mod = mod[:-1]
            segs = segs[1:]
    elif segs[0] in here.children:
        pass  # a child module, named without `self::`
    else:
        return None
    target = mod
    for s in segs:
        if target + (s,) in modules:
            target = target + (s,)
        else:
            break
    return target


def code_of(m):
    return drop_tests(strip(open(os.path.join(ROOT, m.file), encoding="utf-8").read()))


def front_doors(modules):
    """For each module root, the items it re-exports from its own
    submodules (`pub use inner::B;`): item name → the submodule defining it."""
    doors = {}
    for path, m in modules.items():
        if not m.is_root or m.test:
            continue
        for p, pub in use_paths(code_of(m)):
            t = resolve(modules, m, p)
            if pub and t is not None and t != path and t[:len(path)] == path:
                doors.setdefault(path, {})[p.split("::")[-1]] = t
    return doors


def through_doors(doors, target, path):
    """The module an item path really names: a root's re-export is followed
    to the submodule that defines the item (repeatedly, for nested roots)."""
    item = path.split("::")[-1]
    seen = set()
    while target in doors and item in doors[target] and target not in seen:
        seen.add(target)
        target = doors[target][item]
    return target


def edges_of(modules):
    edges = {}
    doors = front_doors(modules)
    for path, m in modules.items():
        if m.test or m.file.endswith("/tests.rs"):
            continue
        code = code_of(m)
        deps = set()
        for p, pub in use_paths(code):
            t = resolve(modules, m, p)
            if t is None or t == path:
                continue
            # A module root re-exporting from its own submodules: its front door.
            if m.is_root and pub and t[:len(path)] == path:
                continue
            # An item taken through another module's front door comes from
            # the submodule behind it.
            t = through_doors(doors, t, p)
            if t == path:
                continue
            deps.add(t)
        body = re.sub(r"\b(pub(?:\([^)]*\))?\s+)?use\s+[^;]+;", "", code)
        for p in CODE_PATH.findall(body):
            t = resolve(modules, m, p)
            if t is not None and t != path:
                deps.add(t)
        # A path into a child module written without `self::` (`tcp::run(..)`).
        for p in CHILD_PATH.findall(body):
            if p.split("::")[0] in m.children:
                t = resolve(modules, m, p)
                if t is not None and t != path:
                    deps.add(t)
        edges[path] = {d for d in deps if d in modules and not modules[d].test}
    return edges


def cycles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)
    return out


def code_lines(file):
    code = drop_tests(strip(open(os.path.join(ROOT, file), encoding="utf-8").read()))
    return sum(1 for line in code.splitlines() if line.strip())


def main():
    show = "--graph" in sys.argv
    problems = []
    for crate, (src, roots) in CRATES.items():
        for root in roots:
            if not os.path.exists(os.path.join(ROOT, src, root)):
                # A crate root named here must exist: a renamed one would
                # otherwise go unchecked.
                if root == roots[0]:
                    problems.append(f"{crate}: {src}/{root} is missing")
                continue
            modules = load_crate(src, root)
            edges = edges_of(modules)
            name = lambda p: "::".join(p) or root  # noqa: E731
            for comp in cycles(list(modules), edges):
                files = sorted(modules[p].file for p in comp)
                ring = [p for p in comp]
                detail = "; ".join(
                    f"{name(a)} -> {name(b)}" for a in ring for b in edges.get(a, ()) if b in comp
                )
                problems.append(f"{crate}: import circle between {', '.join(files)} ({detail})")
            if crate == "hourglass" and root == "lib.rs":
                # Top-level modules of src/.
                top = {}
                for a, deps in edges.items():
                    for b in deps:
                        if a and b and a[0] != b[0]:
                            top.setdefault(a[0], set()).add(b[0])
                for comp in cycles(sorted({p[0] for p in modules if p}), top):
                    detail = "; ".join(f"{a} -> {b}" for a in comp for b in top.get(a, ()) if b in comp)
                    problems.append(f"hourglass: import circle between top-level modules {', '.join(sorted(comp))} ({detail})")
            if show:
                print(f"== {crate} ({root})")
                for p in sorted(edges):
                    print(f"  {name(p)} -> {', '.join(sorted(name(d) for d in edges[p]))}")
            for p, m in modules.items():
                if m.test or m.file in GENERATED or m.file.endswith("/tests.rs"):
                    continue
                n = code_lines(m.file)
                if n > MAX_CODE_LINES:
                    problems.append(f"{m.file}: {n} lines of code (at most {MAX_CODE_LINES} outside tests)")
    for p in sorted(set(problems)):
        print(p)
    if problems:
        print(f"{len(set(problems))} layout problem(s)")
        sys.exit(1)
    print("layout: no import circles, no file over 800 lines of code")


if __name__ == "__main__":
    main()
