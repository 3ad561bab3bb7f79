#!/usr/bin/env python3
"""Keeps the library's surface deliberate: `pub` only for what code outside the library uses.

Run from the repository root after merging branches that add `pub` items:

    python3 .ci/surface.py            # narrow, fix up with the compiler, report
    python3 .ci/surface.py --report   # only count `pub` / `pub(crate)` and list dead code
    python3 .ci/surface.py --skip src/http   # leave a path alone (another branch owns it)

Steps (each re-runnable; the tree must build before you start):

1. Narrow by name. Every `pub` declaration under src/ (items, methods, associated consts,
   named struct fields, `pub mod` below the rooms, `pub use`) whose name does not occur in
   code outside the library becomes `pub(crate)`. "Outside" is tests/, benches/, examples/,
   fuzz/, src/main.rs, the facade in src/lib.rs and the Rust code blocks of doc comments
   (doctests); `--extra DIR` adds more places (for example another branch's tests before it
   merges). Names are compared as identifiers anywhere in that code, so a name that occurs
   keeps its `pub` even when the occurrence means something else: the pass errs on the wide
   side. The types the facade in src/lib.rs re-exports keep every `pub` method and field.
   src/lib.rs (the rooms and the facade) and `pub(super)`/`pub(in …)` are not touched, and
   nothing is ever widened by name.
2. Widen what the compiler asks for. `cargo check --all-targets` (and a stable `cargo check`
   of the fuzz targets, a package of their own) errors about private items,
   methods, fields and re-exports used outside (E0603, E0624, E0616, E0451, E0364, E0365) and
   `private_interfaces`/`private_bounds` warnings turn the `pub(crate)` at the definition the
   diagnostic names back into `pub`. Repeated until clean.
3. Narrow what is unreachable. `unreachable_pub` warnings (src/lib.rs enables the lint) are
   applied as rustc suggests (`pub` -> `pub(crate)`), and names of `pub(crate) use`
   re-exports that nothing uses any more are removed as rustc suggests. Repeated until clean,
   then step 2 once more.
4. Report: the `pub` and `pub(crate)` counts and every `dead_code` warning. Dead code is left
   for a person to delete (or to move under `#[cfg(test)]`/`#[cfg(feature = "testing")]` when
   only tests use it); the script never deletes code.
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ITEM = re.compile(
    r"^(?P<indent>\s*)pub(?:\(crate\))?(?P<sp>\s+)"
    r"(?P<kw>(?:(?:async|const|unsafe)\s+)*fn|struct|enum|trait|type|const|static|mod|use)\s+"
    r"(?P<rest>.*)$"
)
FIELD = re.compile(r"^(?P<indent>\s*)pub(?:\(crate\))?(?P<sp>\s+)(?P<name>(?:r#)?[a-z_][A-Za-z0-9_]*)\s*:(?!:)")
EXTERNAL_DIRS = ["tests", "benches", "examples", "fuzz"]


def rust_files(top):
    out = []
    for dirpath, dirnames, names in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in ("target", "node_modules", ".git")]
        out += [os.path.join(dirpath, n) for n in names if n.endswith(".rs")]
    return sorted(out)


def doc_code(text):
    """Identifiers of the Rust code blocks in doc comments (doctests)."""
    names, inside = set(), False
    for line in text.split("\n"):
        m = re.match(r"\s*//[/!]\s?(.*)$", line)
        if not m:
            inside = False
            continue
        body = m.group(1)
        if body.startswith("```"):
            lang = body[3:].strip()
            inside = not inside and lang in ("", "rust", "no_run", "ignore", "should_panic")
            continue
        if inside:
            names.update(IDENT.findall(body))
    return names


def external_names(extra):
    names = set()
    places = [os.path.join(ROOT, d) for d in EXTERNAL_DIRS] + list(extra)
    files = [os.path.join(ROOT, "src", "main.rs"), os.path.join(ROOT, "src", "lib.rs")]
    for p in places:
        if os.path.isdir(p):
            files += rust_files(p)
    for f in files:
        with open(f, encoding="utf-8") as fh:
            names.update(IDENT.findall(fh.read()))
    for f in rust_files(os.path.join(ROOT, "src")):
        with open(f, encoding="utf-8") as fh:
            names.update(doc_code(fh.read()))
    return names


def use_names(stmt):
    """The names a `use` statement binds (`a::{b, c as d}` -> b, d; `a::*` -> none)."""
    body = stmt.split("use", 1)[1].rstrip(";")
    body = re.sub(r"\s+", " ", body)
    out = []
    for part in re.split(r"[{},]", body):
        part = part.strip()
        if not part or part.endswith("*"):
            continue
        if " as " in part:
            out.append(part.split(" as ")[1].strip())
        else:
            last = part.split("::")[-1].strip()
            if last and last != "self":
                out.append(last)
            elif last == "self":
                segs = [s for s in part.split("::") if s.strip()]
                if len(segs) >= 2:
                    out.append(segs[-2].strip())
    return out


def declarations(path):
    """(line index, kind, names, statement end index) of each `pub` declaration in a file."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    decls = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = ITEM.match(line)
        if m:
            kw = m.group("kw").split()[-1]
            if kw == "use":
                j, stmt = i, line
                while not stmt.rstrip().endswith(";") and j + 1 < len(lines):
                    j += 1
                    stmt += " " + lines[j].strip()
                decls.append((i, "use", use_names(stmt)))
                i = j + 1
                continue
            name = IDENT.match(m.group("rest"))
            if name:
                decls.append((i, kw, [name.group(0)]))
        else:
            f = FIELD.match(line)
            if f and not line.lstrip().startswith("pub fn"):
                decls.append((i, "field", [f.group("name").removeprefix("r#")]))
        i += 1
    return lines, decls


def set_vis(line, vis):
    """Replaces the leading `pub` / `pub(crate)` of a declaration line with `vis`."""
    return re.sub(r"^(\s*)pub(?:\(crate\))?(?=\s)", lambda m: m.group(1) + vis, line, count=1)


HEADER = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?"
    r"(?:impl(?:<[^>]*>)?\s+(?:[\w:<>, ]+\s+for\s+)?(?P<impl>\w+)|(?:struct|enum|union)\s+(?P<ty>\w+)|trait\s+\w+|mod\s+\w+)"
)


def enclosing_type(lines, i):
    """The type whose `impl` block or struct body holds line `i` (rustfmt layout), if any."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    if indent == 0:
        return None
    for k in range(i - 1, -1, -1):
        line = lines[k]
        if not line.strip():
            continue
        ind = len(line) - len(line.lstrip())
        if ind >= indent:
            continue
        if line.lstrip().startswith("}"):
            return None
        m = HEADER.match(line)
        if m:
            return m.group("impl") or m.group("ty")
    return None


def facade_names():
    """Names the library's facade (the `pub use` block of src/lib.rs) re-exports."""
    with open(os.path.join(ROOT, "src", "lib.rs"), encoding="utf-8") as fh:
        text = fh.read()
    names = set()
    for stmt in re.findall(r"^pub use [^;]*;", text, re.M | re.S):
        names.update(use_names(stmt))
    return names


SKIP = []


def skipped(rel):
    """True for a path (relative to the root) under one of the `--skip` prefixes."""
    return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in SKIP)


def narrow_by_name(required):
    facade = facade_names()
    changed = 0
    for path in rust_files(os.path.join(ROOT, "src")):
        rel = os.path.relpath(path, ROOT)
        if rel == os.path.join("src", "lib.rs") or skipped(rel):
            continue
        lines, decls = declarations(path)
        touched = False
        for i, kind, names in decls:
            if not re.match(r"^\s*pub\s", lines[i]):
                continue  # already pub(crate) / pub(super) / pub(in …)
            if kind == "mod":
                keep = names[0] in required
            else:
                # The facade's types keep their whole `pub` API (methods, fields).
                keep = any(n in required for n in names) or enclosing_type(lines, i) in facade
            if not keep:
                lines[i] = set_vis(lines[i], "pub(crate)")
                touched = True
                changed += 1
        if touched:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
    return changed


def kept_use_names(external):
    """Names re-exported by `pub use` statements that stay `pub`: their items must stay `pub`."""
    out = set()
    for path in rust_files(os.path.join(ROOT, "src")):
        _, decls = declarations(path)
        for _, kind, names in decls:
            if kind == "use" and any(n in external for n in names):
                out.update(names)
    return out


def cargo_messages(args):
    cmd = ["cargo", "check", "--message-format=json", "--quiet"] + args
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    msgs = []
    for line in proc.stdout.splitlines():
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        if m.get("reason") == "compiler-message":
            msgs.append(m["message"])
    return msgs


def fuzz_messages():
    """Compiler messages of a stable `cargo check` of the fuzz targets: fuzz/ is a package of its
    own (own lockfile and workspace) that names library items, so `cargo check --all-targets`
    never sees its uses. Library file names are made relative to the root, as in the main
    package's messages. Empty without fuzz/."""
    fuzz = os.path.join(ROOT, "fuzz")
    if not os.path.isfile(os.path.join(fuzz, "Cargo.toml")):
        return []
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target", "fuzz-check"))
    cmd = ["cargo", "check", "--bins", "--locked", "--message-format=json", "--quiet"]
    proc = subprocess.run(cmd, cwd=fuzz, capture_output=True, text=True, env=env)
    prefix = ROOT.rstrip("/") + "/"
    msgs = []
    for line in proc.stdout.splitlines():
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        if m.get("reason") != "compiler-message":
            continue
        stack = [m["message"]]
        while stack:
            part = stack.pop()
            for sp in part.get("spans", []):
                if sp["file_name"].startswith(prefix):
                    sp["file_name"] = sp["file_name"][len(prefix):]
            stack += part.get("children", [])
        msgs.append(m["message"])
    return msgs


def spans_in_src(msg):
    out = []
    stack = [msg]
    while stack:
        m = stack.pop()
        for s in m.get("spans", []):
            if s["file_name"].startswith("src/"):
                out.append(s)
        stack += m.get("children", [])
    return out


WIDEN_CODES = {"E0603", "E0624", "E0616", "E0451", "E0364", "E0365"}
# Diagnostics whose spans point at the use, not the definition: widen by the quoted name.
BY_NAME_CODES = {"E0364", "E0365", "E0616", "E0451"}
WIDEN_LINTS = {"private_interfaces", "private_bounds"}


def widen_round():
    """Turns `pub(crate)` back into `pub` where the compiler says something outside needs it."""
    targets = set()
    by_name = set()
    for m in cargo_messages(["--all-targets"]) + fuzz_messages():
        code = (m.get("code") or {}).get("code", "")
        if code in WIDEN_CODES or code in WIDEN_LINTS:
            spans = [s for s in spans_in_src(m) if s["file_name"] != "src/main.rs"]
            if code in BY_NAME_CODES:
                spans = []
            for s in spans:
                targets.add((s["file_name"], s["line_start"]))
            if not spans:
                # No definition span (private fields): widen every `pub(crate)` declaration of
                # the first name the message quotes.
                named = re.search(r"`([A-Za-z_][A-Za-z0-9_]*)`", m["message"])
                if named:
                    by_name.add(named.group(1))
    changed = widen_by_name(by_name)
    for rel, line_no in sorted(targets):
        path = os.path.join(ROOT, rel)
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        # The span names the item; its `pub(crate)` is on that line or a line above it
        # (attributes, doc comments and multi-line signatures in between).
        for k in range(line_no - 1, max(line_no - 12, -1), -1):
            if re.match(r"^\s*pub\(crate\)\s", lines[k]):
                lines[k] = set_vis(lines[k], "pub")
                changed += 1
                break
            if k != line_no - 1 and re.match(r"^\s*(pub\b|fn |impl\b|}|;)", lines[k]):
                break
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))
    return changed


def widen_by_name(names):
    changed = 0
    if not names:
        return 0
    for path in rust_files(os.path.join(ROOT, "src")):
        lines, decls = declarations(path)
        touched = False
        for i, _, decl_names in decls:
            if re.match(r"^\s*pub\(crate\)\s", lines[i]) and any(n in names for n in decl_names):
                lines[i] = set_vis(lines[i], "pub")
                touched = True
                changed += 1
        if touched:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
    return changed


def apply_suggestions(codes, only_line=None):
    """Applies rustc's suggested replacements for warnings with these lint codes (outside
    `--skip` paths). `only_line`: a regex the edited line must match."""
    edits = {}
    for m in cargo_messages(["--all-targets"]):
        if (m.get("code") or {}).get("code") not in codes:
            continue
        for child in m.get("children", []):
            for s in child.get("spans", []):
                f = s["file_name"]
                if s.get("suggested_replacement") is None or not f.startswith("src/") or skipped(f):
                    continue
                if only_line:
                    text = (s.get("text") or [{}])[0].get("text", "")
                    if not re.match(only_line, text):
                        continue
                edits[(f, s["byte_start"], s["byte_end"])] = s["suggested_replacement"]
    by_file = {}
    for (f, b0, b1), rep in edits.items():
        by_file.setdefault(f, []).append((b0, b1, rep))
    for f, items in by_file.items():
        path = os.path.join(ROOT, f)
        with open(path, "rb") as fh:
            data = fh.read()
        for b0, b1, rep in sorted(items, reverse=True):
            data = data[:b0] + rep.encode("utf-8") + data[b1:]
        with open(path, "wb") as fh:
            fh.write(data)
    return len(edits)


def narrow_unreachable_round():
    """Applies rustc's `unreachable_pub` suggestions, and drops the names of `pub(crate) use`
    re-exports that nothing in the crate uses any more."""
    n = apply_suggestions({"unreachable_pub"})
    return n + apply_suggestions({"unused_imports"}, only_line=r"^\s*pub\(crate\) use ")


def counts():
    pub = crate = 0
    for path in rust_files(os.path.join(ROOT, "src")):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if re.match(r"^\s*pub\(crate\)\s", line):
                    crate += 1
                elif re.match(r"^\s*pub\s", line):
                    pub += 1
    return pub, crate


def dead_code():
    out = []
    for m in cargo_messages(["--all-targets"]) + cargo_messages([]):
        if (m.get("code") or {}).get("code") == "dead_code":
            s = (m.get("spans") or [{}])[0]
            out.append(f"{s.get('file_name')}:{s.get('line_start')}: {m['message']}")
    return sorted(set(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--report", action="store_true", help="count and list dead code only")
    ap.add_argument("--extra", action="append", default=[], help="more places whose names count as outside uses")
    ap.add_argument("--skip", action="append", default=[], help="leave files under this path (from the root) as they are")
    args = ap.parse_args()
    SKIP.extend(args.skip)
    print("before: pub %d, pub(crate) %d" % counts())
    if not args.report:
        required = external_names(args.extra)
        while True:  # a kept `pub use` keeps what it re-exports, transitively
            wider = required | kept_use_names(required)
            if wider == required:
                break
            required = wider
        print(f"step 1: narrowed {narrow_by_name(required)} declarations by name")
        for step, fn in (("2", widen_round), ("3", narrow_unreachable_round), ("2", widen_round)):
            for _ in range(12):
                n = fn()
                print(f"step {step}: {n} changes")
                if n == 0:
                    break
        subprocess.run(["cargo", "fmt"], cwd=ROOT, check=False)
    print("after: pub %d, pub(crate) %d" % counts())
    dead = dead_code()
    print(f"dead_code warnings: {len(dead)}")
    for d in dead:
        print("  " + d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
