#!/usr/bin/env python3
"""The house rules that a script can check (docs/architecture.md, "House rules"):

- no import cycle between source files: every `crate::...`, `super::...` and `self::...` path in
  src/ (and in the integration tests' crate, tests/it/) is resolved to the file that defines the
  module it names; the graph of file -> file must have no cycle (a file's own `mod tests` is the
  file itself);
- no file under src/ or tests/ over 600 lines;
- no test module of tests/it/ uses another one (what tests share is in tests/it/common/, which uses
  no test module either);
- the faces call the core, never each other: the core names no face (`crate::cli`, `crate::tui`,
  `crate::proxy`) and no terminal library (ratatui, crossterm); the wizard and the proxy never reach
  up into the CLI nor into each other (the CLI is the binary's entry and starts them);
- the core prints nothing: no `print!`, `println!`, `eprint!`, `eprintln!`, `dbg!`, `stdout()` or
  `stderr()` in src/core (comments and strings aside);
- only src/core/db/ names a backend (`Backend::` or `Pool::` elsewhere in src/core);
- a face (src/cli, src/tui) reads no `OS_*` / `BM2IRONIC_*` variable and builds no
  `ConnectionSettings` by hand (settings are resolved in src/core/settings/);
- a face does not decide an error's kind: no `Failure::usage(e.to_string())` or
  `Failure::runtime(e.to_string())` on an error (each core error says its kind once, beside it:
  src/core/kind.rs; `?` turns it into its exit code);
- every path docs/architecture.md names exists: any `src/...`, `tests/...`, `scripts/...`,
  `docs/...`, `benches/...`, `examples/...` or `assets/...` inside backquotes (inline or fenced; a
  pattern with `*`, `<...>` or `{...}` is skipped), and every relative link `[...](file.md)`.

Prints what it finds and exits 1 on any finding. Run by scripts/test.sh (and so by CI).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
TESTS = os.path.join(ROOT, "tests", "it")
MAX_LINES = 600
# the crate whose modules paths resolve in: src/ (lib.rs), then tests/it/ (main.rs)
CRATE = SRC


def module_of(path):
    rel = os.path.relpath(path, CRATE)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return []
    return rel


def file_of(mod):
    """The file that defines module path `mod` (a list), or None."""
    if not mod:
        cands = (os.path.join(CRATE, "lib.rs"), os.path.join(CRATE, "main.rs"))
    else:
        base = os.path.join(CRATE, *mod)
        cands = (base + ".rs", os.path.join(base, "mod.rs"))
    for cand in cands:
        if os.path.isfile(cand):
            return cand
    return None


REEXPORTS = {}  # file -> {item name: the file it is re-exported from}


def resolve(mod, segs):
    """The file that defines what `mod + segs` names: the deepest existing module file along the
    path, and through a `pub use` re-export of the item that follows it to where it is defined."""
    best = None
    cur = list(mod)
    f = file_of(cur)
    if f:
        best = f
    rest = list(segs)
    while rest:
        s = rest.pop(0)
        cur.append(s)
        f = file_of(cur)
        if not f:
            seen = set()
            while best in REEXPORTS and s in REEXPORTS[best] and best not in seen:
                seen.add(best)
                best = REEXPORTS[best][s]
            break
        best = f
    return best


def reexports(path):
    """`pub use child::{A, B};` / `pub use crate::x::A;` of a file: item -> defining file."""
    text = STRIP.sub("", open(path, encoding="utf-8").read())
    mod = module_of(path)
    out = {}
    for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);", text):
        body = m.group(1).strip()
        if "{" in body:
            head, items = body.split("{", 1)
            items = [i.strip() for i in items.rstrip("}").split(",")]
        else:
            head, items = (body.rsplit("::", 1)[0] + "::", [body.rsplit("::", 1)[1]]) if "::" in body else ("", [body])
        segs = [x for x in head.strip().rstrip(":").split("::") if x]
        if not segs:
            continue
        if segs[0] == "crate":
            base, segs = [], segs[1:]
        elif segs[0] == "super":
            base, segs = list(mod)[:-1], segs[1:]
        elif segs[0] == "self":
            base, segs = list(mod), segs[1:]
        else:
            base = list(mod)
        target = None
        cur = list(base)
        for x in segs:
            cur.append(x)
            f = file_of(cur)
            if f:
                target = f
        if not target:
            continue
        for i in items:
            name = i.split(" as ")[-1].strip()
            if name and name not in ("self", "*"):
                out[name] = os.path.abspath(target)
    return out


STRIP = re.compile(r'//[^\n]*|"(?:\\.|[^"\\])*"', re.S)
PATH = re.compile(r"\b(crate|super|self)((?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)")
GROUP = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*?)\};", re.S)


def deps(path):
    text = STRIP.sub("", open(path, encoding="utf-8").read())
    mod = module_of(path)
    # a file's own inline `mod tests { use super::* }` sees the file's module as `super`
    out = set()

    def add(kind, segs):
        segs = [s for s in segs if s]
        if kind == "crate":
            base = []
        else:
            base = list(mod)
            if kind == "super":
                base = base[:-1]
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
        f = resolve(base, segs)
        if f and os.path.abspath(f) != os.path.abspath(path):
            out.add(os.path.abspath(f))

    for m in GROUP.finditer(text):
        kind, head = m.group(1), m.group(2).split("::")[1:]
        for item in re.split(r",(?![^{]*\})", m.group(3)):
            item = item.strip().split(" as ")[0].strip()
            if not item or item == "self":
                add(kind, head)
                continue
            add(kind, head + [s for s in re.split(r"::|\{|\}|,", item) if s.strip()][:3])
    for m in PATH.finditer(text):
        add(m.group(1), m.group(2).split("::")[1:])
    # a path that starts with a child module's name (`use node::Cx;`, `conf_file::NovaConf`)
    children = set(re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", text, re.M))
    for name in children:
        for m in re.finditer(r"(?<![A-Za-z0-9_:])" + name + r"((?:::[A-Za-z_][A-Za-z0-9_]*)+|(?=::\{))(?:::\{([^;]*?)\})?", text, re.S):
            head = [name] + m.group(1).split("::")[1:]
            add("self", head)
            if m.group(2):
                for item in re.split(r",(?![^{]*\})", m.group(2)):
                    item = item.strip().split(" as ")[0].strip()
                    if item and item != "self":
                        add("self", head + [s for s in re.split(r"::|\{|\}|,", item) if s.strip()][:3])
    return out


def files(top=SRC):
    for d, _, fs in os.walk(top):
        for f in fs:
            if f.endswith(".rs"):
                yield os.path.abspath(os.path.join(d, f))


def cycles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            strong(v)
    return out


DOC_PATH = re.compile(r"(?<![A-Za-z0-9_./-])((?:src|tests|scripts|docs|benches|examples|assets)/[^\s`'\"(),;]*)")
DOC_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def doc_paths(doc):
    """Every path `doc` names that does not exist, as findings naming the path and its line: paths
    in backquotes (inline spans and fenced blocks), and relative links (`[x](mapping.md)`)."""
    text = open(doc, encoding="utf-8").read()
    name = os.path.relpath(doc, ROOT)
    line_of = lambda pos: text.count("\n", 0, pos) + 1
    spans = []  # (offset, text) of every piece of code
    fenced = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
    for m in fenced.finditer(text):
        spans.append((m.start(1), m.group(1)))
    rest = fenced.sub(lambda m: " " * len(m.group(0)), text)
    for m in re.finditer(r"(`+)(.+?)\1", rest, re.S):
        spans.append((m.start(2), m.group(2)))
    out, seen = [], set()
    for start, code in sorted(spans):
        for m in DOC_PATH.finditer(code):
            path = m.group(1).rstrip(".:")
            if re.search(r"[*<>{}$]", path) or path in seen:
                continue
            seen.add(path)
            if not os.path.exists(os.path.join(ROOT, path.rstrip("/"))):
                out.append(f"{name}:{line_of(start + m.start(1))}: names {path}, which does not exist")
    for m in DOC_LINK.finditer(rest):
        target = m.group(1)
        if re.match(r"[a-z]+:", target) or target in seen:
            continue
        seen.add(target)
        if not os.path.exists(os.path.join(os.path.dirname(doc), target)):
            out.append(f"{name}:{line_of(m.start(1))}: links to {target}, which does not exist")
    return out


# No function over MAX_FN_LINES lines in src/ (tests aside). The longer ones written before the rule
# are listed with their length at the time: each may only shrink (split it and lower or drop its entry).
MAX_FN_LINES = 80
LONG_FUNCTIONS = {
    ("src/cli/cmd/config.rs", "run"): 122,
    ("src/cli/cmd/proxy.rs", "run"): 110,
    ("src/cli/cmd/watch.rs", "run"): 166,
    ("src/cli/output.rs", "write_plan"): 102,
    ("src/core/config_gen/ironic.rs", "changes"): 132,
    ("src/core/config_gen/nova.rs", "juno"): 88,
    ("src/core/config_gen/render.rs", "render"): 119,
    ("src/core/db/pool.rs", "connect_with"): 118,
    ("src/core/db/url.rs", "parse"): 114,
    ("src/core/migrate/consequences.rs", "consequence"): 210,
    ("src/core/migrate/load_api/node.rs", "drive"): 101,
    ("src/core/migrate/load_api/rollback.rs", "rollback_api"): 83,
    ("src/core/migrate/next_steps.rs", "next_steps"): 117,
    ("src/core/migrate/plan/checks/engine.rs", "new"): 112,
    ("src/core/migrate/plan/checks/ports.rs", "interfaces"): 81,
    ("src/core/migrate/plan/properties.rs", "every_row_is_accounted_for_and_nothing_is_written_twice"): 100,
    ("src/core/migrate/plan/rows.rs", "build_node"): 119,
    ("src/core/migrate/report/markdown.rs", "markdown"): 141,
    ("src/core/migrate/report/mod.rs", "new"): 98,
    ("src/core/migrate/rollback.rs", "remove_run"): 135,
    ("src/core/migrate/verify.rs", "verify"): 82,
    ("src/core/settings/mod.rs", "resolve"): 87,
    ("src/proxy/policy.rs", "policy"): 82,
    ("src/tui/app.rs", "update"): 101,
    ("src/tui/runtime.rs", "effect"): 100,
    ("src/tui/screens/conflicts.rs", "draw"): 110,
    ("src/tui/screens/inventory.rs", "draw"): 129,
    ("src/tui/screens/inventory.rs", "render_detail"): 105,
    ("src/tui/screens/progress.rs", "draw"): 113,
    ("src/tui/screens/summary.rs", "draw"): 110,
    ("src/tui/walk.rs", "states"): 85
}

FN_START = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)")


def long_functions(path):
    """(name, line, length) of each function of `path` longer than MAX_FN_LINES (a `mod tests` ends the scan)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", lines[i]) and i + 1 < len(lines) and re.match(r"\s*mod tests", lines[i + 1]):
            break
        m = FN_START.match(lines[i])
        if not m or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            code = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j])
            code = re.sub(r"//.*", "", code)
            code = re.sub(r"'(\\.|[^'\\])'", "''", code)
            depth += code.count("{") - code.count("}")
            started = started or "{" in code
            if started and depth <= 0:
                break
            j += 1
        if j - i + 1 > MAX_FN_LINES:
            out.append((m.group(6), i + 1, j - i + 1))
        i = j + 1
    return out


def mod_rs_used_by_its_folder(path):
    """A mod.rs that defines items its own folder's files use (`super::NAME`): it should only declare."""
    code = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    items = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|const|static|type)\s+(\w+)", code, re.M))
    folder, found = os.path.dirname(path), []
    for f in sorted(os.listdir(folder)):
        if f == "mod.rs" or not f.endswith(".rs"):
            continue
        text = open(os.path.join(folder, f), encoding="utf-8").read().split("#[cfg(test)]")[0]
        for m in re.finditer(r"super::(\{[^}]*\}|\w+)", text):
            used = [n for n in re.findall(r"\w+", m.group(1)) if n in items]
            found += [f"{f} uses {n}" for n in used]
    return sorted(set(found))


def main():
    findings = []
    rel = lambda p: os.path.relpath(p, ROOT)
    global CRATE
    graph = {}
    for crate in (SRC, TESTS):
        CRATE = crate
        for f in files(crate):
            REEXPORTS[f] = reexports(f)
        graph.update({f: deps(f) for f in files(crate)})
    CRATE = SRC
    for comp in cycles(graph):
        edges = [f"{rel(a)} -> {rel(b)}" for a in comp for b in sorted(graph[a]) if b in comp]
        findings.append("import cycle: " + "; ".join(edges))
    for f in sorted(graph):
        r = rel(f)
        if r.startswith("src/"):
            for name, line, length in long_functions(f):
                allowed = LONG_FUNCTIONS.get((r, name), MAX_FN_LINES)
                if length > allowed:
                    findings.append(f"{r}:{line}: fn {name} is {length} lines (at most {allowed}: split it)")
            if os.path.basename(f) == "mod.rs":
                for use in mod_rs_used_by_its_folder(f):
                    findings.append(f"{r}: defines what its folder uses ({use}): a mod.rs only declares and re-exports")
        n = sum(1 for _ in open(f, encoding="utf-8"))
        if n > MAX_LINES:
            findings.append(f"{rel(f)}: {n} lines (at most {MAX_LINES})")
        text = open(f, encoding="utf-8").read()
        r = rel(f)
        if (r.startswith("src/core/") or r.startswith("src/tui/")) and "crate::cli" in text:
            findings.append(f"{r}: names crate::cli (the core and the wizard never reach up into the CLI)")
        # the faces call the core and never each other (the CLI, the binary's entry, starts the others)
        if r.startswith("src/core/"):
            for face in ("crate::tui", "crate::proxy"):
                if face in text:
                    findings.append(f"{r}: names {face} (the core never reaches up into a face)")
            for lib in ("ratatui", "crossterm"):
                if re.search(r"\b" + lib + r"::", text):
                    findings.append(f"{r}: names {lib} (the core draws nothing)")
            code = STRIP.sub("", text)
            for m in sorted(set(re.findall(r"(?<![A-Za-z0-9_])(e?println!|e?print!|dbg!|stdout\(\)|stderr\(\))", code))):
                findings.append(f"{r}: uses {m} (the core prints nothing: it returns, or sends events)")
        if r.startswith("src/proxy/") and "crate::cli" in text:
            findings.append(f"{r}: names crate::cli (the proxy never reaches up into the CLI)")
        if r.startswith("src/proxy/") and "crate::tui" in text:
            findings.append(f"{r}: names crate::tui (the faces never call each other)")
        if r.startswith("src/tui/") and "crate::proxy" in text:
            findings.append(f"{r}: names crate::proxy (the faces never call each other)")
        if r.startswith("src/core/") and not r.startswith("src/core/db/"):
            for name in ("Backend::", "Pool::"):
                if name in text:
                    findings.append(f"{r}: names {name} (only src/core/db/ knows the backends)")
        # settings are resolved once, in core/settings: a face (cli/, tui/) that reads an OS_* or
        # BM2IRONIC_* variable itself skips resolve's checks and drifts from the other face (test
        # hooks, BM2IRONIC_TEST_*, are not settings)
        if r.startswith("src/cli/") or r.startswith("src/tui/"):
            for var in re.findall(r'env::var(?:_os)?\(\s*"((?:OS_|BM2IRONIC_)[A-Z0-9_]*)"', text):
                if not var.startswith("BM2IRONIC_TEST_"):
                    findings.append(f"{r}: reads {var} itself (settings are resolved in src/core/settings/)")
            if re.search(r"ConnectionSettings\s*\{", text):
                findings.append(f"{r}: builds ConnectionSettings by hand (resolve it in src/core/settings/)")
            if r != "src/cli/failure.rs" and re.search(r"Failure::(usage|runtime)\(\s*e\.to_string\(\)\s*\)", text):
                findings.append(f"{r}: decides an error's exit code itself (give the error a kind: src/core/kind.rs)")
    # the integration tests: one module a test area, sharing only what is in tests/it/common/
    def area(f):
        rel = os.path.relpath(f, TESTS)[:-3].split(os.sep)
        return None if rel == ["main"] else rel[0]
    for f in sorted(x for x in graph if x.startswith(TESTS + os.sep)):
        for t in sorted(graph[f]):
            a, b = area(f), area(t)
            if b not in (None, "common", a):
                findings.append(f"{rel(f)} uses {rel(t)}: one test module uses another (shared things go in tests/it/common/)")
    for f in files(os.path.join(ROOT, "tests")):
        if f not in graph:
            n = sum(1 for _ in open(f, encoding="utf-8"))
            if n > MAX_LINES:
                findings.append(f"{rel(f)}: {n} lines (at most {MAX_LINES})")
    # every process a test starts is a Guard's (dropped, it stops the whole group: none outlives a
    # failing test): a `.spawn()` of a process anywhere else is refused
    guard = os.path.join(TESTS, "common", "process.rs")
    for f in files(os.path.join(ROOT, "tests")):
        if f == guard:
            continue
        for i, line in enumerate(open(f, encoding="utf-8"), 1):
            if re.search(r"\.spawn\(\)", line) and not re.search(r"(thread|tokio|task)::spawn|Builder", line):
                findings.append(f"{rel(f)}:{i}: spawns a process outside a Guard (tests/it/common/process.rs)")
    findings += doc_paths(os.path.join(ROOT, "docs", "architecture.md"))
    for f in findings:
        print(f)
    print(f"check-house: {len(graph)} files, {sum(len(v) for v in graph.values())} imports, {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
