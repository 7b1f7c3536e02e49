#!/usr/bin/env python3
"""Namespaces follow folders (docs/architecture.md, "Namespaces follow folders").

A file under src/<a>/<b>/ declares its names in strata::<a>::<b> (or a namespace nested in it, as
strata::analysis::ranks). Fails, one line per namespace block, when a file of src/ puts a declaration
in another namespace. Free everywhere: anonymous namespaces (file-local), namespace aliases and
using-directives (they declare nothing there), and blocks that only forward-declare another
module's classes (`namespace strata::trace { class Trace; }`). Code outside any namespace (main(),
the C APIs) is not checked. The exceptions, each with its reason, are EXCEPTIONS below.

usage: check_namespaces.py REPO_ROOT
"""
import os
import re
import sys

# folder of src/ (this one and the folders below it) -> (namespace its files use, why)
FOLDER_NAMESPACE = {
    "core": ("strata", "the vocabulary every module speaks lives in strata:: itself"),
    "export": ("strata::exporter", "`export` is a C++ keyword"),
    "torch": ("strata::torch_tracer", "a strata::torch would hide PyTorch's ::torch inside Strata's code"),
    "lowerbound": ("strata::lowerbound", "the rooms of src/lowerbound/ are one module in rooms"),
}

# (folder prefix of src/, namespace also allowed there, why)
EXCEPTIONS = [
    ("collect/runtime.cc", "strata::detail",
     "definitions of the public span API's hot-path internals, declared in include/strata/"),
]

FORWARD_ONLY = re.compile(
    r"^(\s*((template\s*<[^;{}]*>\s*)?(class|struct|union)\s+\w+\s*;"
    r"|enum\s+(class|struct)?\s*\w+\s*(:\s*[\w:\s]+)?;))*\s*$")
TOKEN = re.compile(r"\binline\s+namespace\s+([\w:]*)\s*\{|\bnamespace\s+([\w:]*)\s*\{|[{}]")


def strip_code(text):
    """Comments, string and char literals and preprocessor lines blanked; newlines kept (line numbers)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":  # preprocessor line, with continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        at_line_start = c == "\n"
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^(\s]{0,16})\(', text[i:i + 24]) if c in 'uULR' else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum()))):  # not a digit separator
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def namespace_blocks(code):
    """(full name, line, direct text) of every named namespace block; anonymous ones are transparent."""
    blocks, stack = [], []  # stack entries: None (other brace), "" (anonymous ns) or a block index
    pos = 0

    def add_direct(chunk):
        for entry in reversed(stack):
            if entry is None:
                return  # inside a class, function or initializer: not the namespace's own text
            if entry != "":
                blocks[entry][2].append(chunk)
                return

    for m in TOKEN.finditer(code):
        add_direct(code[pos:m.start()])
        pos = m.end()
        name = m.group(1) if m.group(1) is not None else m.group(2)
        if name is not None:
            if name == "":
                stack.append("")
                continue
            outer = [blocks[e][0] for e in stack if e not in (None, "")]
            full = name if name.startswith("strata") or not outer else outer[-1] + "::" + name
            blocks.append([full, code.count("\n", 0, m.start()) + 1, []])
            stack.append(len(blocks) - 1)
        elif m.group(0) == "{":
            add_direct("{}")
            stack.append(None)
        elif stack:
            stack.pop()
    return [(full, line, "".join(text)) for full, line, text in blocks]


def expected_namespace(folder):
    top = folder.split("/")[0]
    if top in FOLDER_NAMESPACE:
        return FOLDER_NAMESPACE[top][0]
    return "strata::" + folder.replace("/", "::")


def allowed(rel, folder, name):
    want = expected_namespace(folder)
    if name == want or name.startswith(want + "::"):
        return True
    for prefix, namespace, _ in EXCEPTIONS:
        if rel.startswith(prefix) and (name == namespace or name.startswith(namespace + "::")):
            return True
    return False


def check(root):
    problems = []
    src = os.path.join(root, "src")
    for dirpath, _, names in sorted(os.walk(src)):
        for base in sorted(names):
            if not base.endswith((".h", ".cc", ".inc", ".cpp", ".cu")):
                continue
            path = os.path.join(dirpath, base)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            folder = os.path.dirname(rel)
            if not folder:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                code = strip_code(f.read())
            for name, line, direct in namespace_blocks(code):
                has_declarations = direct.strip() != ""
                if not has_declarations or FORWARD_ONLY.match(direct) or allowed(rel, folder, name):
                    continue
                problems.append(
                    f"src/{rel}:{line}: namespace {name} declares names, but src/{folder}/ is "
                    f"{expected_namespace(folder)}: rename the namespace to match the folder, or add "
                    f"an exception with its reason to EXCEPTIONS in scripts/check_namespaces.py")
    return problems


def main():
    if len(sys.argv) != 2:
        print("usage: check_namespaces.py REPO_ROOT", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(sys.argv[1], "src")):
        print(f"check_namespaces.py: {sys.argv[1]} has no src/ folder: give the repository root",
              file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"check_namespaces.py: {len(problems)} namespace(s) do not follow their folder",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
