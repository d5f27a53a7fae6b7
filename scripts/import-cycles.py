#!/usr/bin/env python3
"""Import circles between the files of each crate, read from their `use` lines.

A file's module imports another's when one of its `use crate::…`, `use super::…` or
`use self::…` lines names it. A name a `mod.rs` re-exports (`pub use child::Name`) is followed to
the file that defines it, so a child importing its parent's re-export is an edge to the sibling
that holds the item, not to the parent. A parent declaring its children (`mod child;`) is not an
import. Also checks the one-way rules of LAYERS (envrl-algos: the algorithms import neither the
LM runtime nor serving; the runtime does not import serving). Prints every circle (strongly connected set of more than one file) and exits 1 if one
is not among KNOWN, the circles recorded when the check was written (files that add methods to a
type defined in another file of the circle), to be taken apart, never added to.

    python3 scripts/import-cycles.py [CRATE_SRC_DIR ...]   (default: every crate's src/)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ["envrl/src", "envrl-algos/src", "envrl-envs/src", "envrl-examples/src", "envrl-python/src"]
KNOWN = [
    ["runtime/lm/acting.rs", "runtime/lm/config.rs", "runtime/lm/lora.rs", "runtime/lm/qwen2.rs"],
    ["alfworld/game.rs", "alfworld/goal.rs", "alfworld/state.rs"],
    ["alfworld/command.rs", "alfworld/engine.rs"],
]
# One-way rules between a crate's top-level modules: (crate folder, module, modules it must not import).
LAYERS = [
    ("envrl-algos/src", "algorithms", ["runtime", "serve", "recipe"]),
    ("envrl-algos/src", "runtime", ["serve", "recipe"]),
]
USE = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?use\s+([^;]+);", re.M)


def module_files(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    files = {}
    for path in src.rglob("*.rs"):
        rel = path.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        files[tuple(parts)] = path
    return files


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases and globs dropped)."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    out = []
    for item in filter(None, items):
        for path in expand(item):
            out.append(prefix + path if path != "self" else prefix.rstrip(":"))
    return out


def resolve(module, path, files, reexports):
    """The module (tuple) that `path`, written in `module`'s file, imports from (or None)."""
    parts = [p for p in path.split("::") if p]
    if not parts:
        return None
    if parts[0] == "crate":
        base, parts = (), parts[1:]
    elif parts[0] in ("super", "self"):
        base = module
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                base = base[:-1]
            parts = parts[1:]
    else:
        return None
    # The longest module prefix that is a file; then follow a re-export of the next name.
    target = base
    for p in parts:
        if tuple(target) + (p,) in files:
            target = tuple(target) + (p,)
        else:
            name = p
            seen = set()
            while (target, name) in reexports and (target, name) not in seen:
                seen.add((target, name))
                target = reexports[(target, name)]
            break
    return tuple(target)


def crate_graph(src):
    files = module_files(src)
    texts = {m: f.read_text() for m, f in files.items()}
    # Names a module re-exports from a child of its own: (module, name) -> child module.
    reexports = {}
    for module, text in texts.items():
        for m in USE.finditer(text):
            if not m.group(1):
                continue
            for path in expand(m.group(3)):
                parts = path.split("::")
                if len(parts) >= 2 and tuple(module) + (parts[0],) in files:
                    reexports[(tuple(module), parts[-1])] = tuple(module) + (parts[0],)
    edges = {m: set() for m in files}
    for module, text in texts.items():
        code = text.split("#[cfg(test)]")[0]
        for m in USE.finditer(code):
            if m.group(1):
                continue  # a re-export is the module's face, not a dependency of its code
            for path in expand(m.group(3)):
                target = resolve(module, path, files, reexports)
                if target is None or target == module or target not in files:
                    continue
                if module[: len(target)] == target:
                    continue  # a child using its ancestor's own items
                edges[module].add(target)
    return files, edges


def cycles(edges):
    """Strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main():
    dirs = [Path(d).resolve() for d in sys.argv[1:]] or [ROOT / c for c in CRATES]
    found = 0
    for src in dirs:
        files, edges = crate_graph(src)
        shown = src.relative_to(ROOT) if src.is_relative_to(ROOT) else src
        for group in cycles(edges):
            names = sorted(str(files[m].relative_to(src)) for m in group)
            known = names in KNOWN
            found += not known
            label = "known import circle" if known else "import circle"
            print(f"{label} in {shown}: " + " <-> ".join(names))
        for crate, layer, forbidden in LAYERS:
            if not str(src).rstrip("/").endswith(crate):
                continue
            for module, targets in edges.items():
                if module[:1] != (layer,):
                    continue
                for target in targets:
                    if target[:1] and target[0] in forbidden:
                        found += 1
                        print(f"{shown}: {files[module].relative_to(src)} ({layer}) imports "
                              f"{files[target].relative_to(src)} ({target[0]}), against the rule")
        print(f"{shown}: {len(files)} files, "
              f"{sum(len(e) for e in edges.values())} imports between them")
    if found:
        sys.exit(1)
    print("no import circle but the known ones")


if __name__ == "__main__":
    main()
