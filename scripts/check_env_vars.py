#!/usr/bin/env python3
"""Every STRATA_* environment variable is declared once, in src/core/env_vars.h (docs/environment.md).

Fails, one line per problem, when
- a C or C++ string literal under src/ is a variable's name ("STRATA_SAMPLE") anywhere but
  src/core/env_vars.h: the code reads and sets variables through the table's constants
  (env::kSample), so a name is written once. Messages that mention a variable inside longer text
  ("set STRATA_JOBS=1") are prose and are not checked;
- python/strata uses a string that is a variable's name (os.environ.get("STRATA_X"), a tuple of
  names) that the table does not declare;
- the table declares a name twice, or a name that is not STRATA_[A-Z0-9_]+.

usage: check_env_vars.py REPO_ROOT            check
       check_env_vars.py REPO_ROOT --doc-table  print docs/environment.md's table from env_vars.h
Exit 0 with a one-line summary when clean; 1 with one line per problem and a count otherwise.
"""
import ast
import os
import re
import sys

TABLE_FILE = "src/core/env_vars.h"
NAME = re.compile(r"STRATA_[A-Z0-9_]+")
# Comments, string literals and char literals of C/C++, in source order (raw strings are not used
# for variable names in this tree; a name inside one would be missed, not misreported).
C_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
C_SUFFIXES = (".h", ".hh", ".hpp", ".c", ".cc", ".cpp", ".cxx")
STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')


def parse_table(text):
    """The X-macro's entries as (constant, name, default, read_by, meaning, line), in order."""
    entries = []
    for m in re.finditer(r"\bF\(\s*(k\w+)\s*,", text):
        pos, args = m.end(), []
        current = None
        while pos < len(text):
            rest = text[pos:]
            ws = re.match(r"(?:\s|\\\n|/\*.*?\*/)+", rest, re.S)
            if ws:
                pos += ws.end()
                continue
            s = STRING.match(rest)
            if s:
                current = (current or "") + bytes(s.group(1), "utf-8").decode("unicode_escape")
                pos += s.end()
                continue
            if rest[0] in ",)":
                args.append(current)
                current = None
                pos += 1
                if rest[0] == ")":
                    break
                continue
            args.append(None)  # not a string literal: reported below
            break
        line = text.count("\n", 0, m.start()) + 1
        entries.append((m.group(1), *(args + [None] * 4)[:4], line))
    return entries


def table_problems(entries, path):
    problems, seen = [], {}
    for constant, name, default, read_by, meaning, line in entries:
        where = f"{path}:{line}"
        if None in (name, default, read_by, meaning):
            problems.append(f"{where}: {constant}: every field must be a string literal")
            continue
        if not NAME.fullmatch(name):
            problems.append(f"{where}: {name!r} is not a STRATA_[A-Z0-9_]+ name")
        if name in seen:
            problems.append(f"{where}: {name} declared twice (first at line {seen[name]})")
        seen.setdefault(name, line)
    return problems


def c_literal_problems(root, table_path):
    problems = []
    src = os.path.join(root, "src")
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for filename in sorted(filenames):
            if not filename.endswith(C_SUFFIXES):
                continue
            path = os.path.join(dirpath, filename)
            rel = os.path.relpath(path, root)
            if rel == table_path:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for tok in C_TOKEN.finditer(text):
                literal = tok.group(0)
                if literal.startswith('"') and NAME.fullmatch(literal[1:-1]):
                    line = text.count("\n", 0, tok.start()) + 1
                    problems.append(f"{rel}:{line}: {literal} written as a literal: use its constant from "
                                    f"{table_path} (strata::env)")
    return problems


def python_problems(root, names):
    problems = []
    package = os.path.join(root, "python", "strata")
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames.sort()
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            path = os.path.join(dirpath, filename)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                try:
                    tree = ast.parse(f.read(), filename=rel)
                except SyntaxError as exc:
                    problems.append(f"{rel}:{exc.lineno}: does not parse ({exc.msg})")
                    continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        NAME.fullmatch(node.value) and node.value not in names:
                    problems.append(f"{rel}:{node.lineno}: {node.value} is not declared in {TABLE_FILE}")
    return problems


def doc_table(entries):
    rows = ["| Variable | Default | Read by | Meaning |", "|---|---|---|---|"]
    for _constant, name, default, read_by, meaning, _line in entries:
        rows.append(f"| `{name}` | {default} | {read_by} | {meaning} |")
    return "\n".join(rows)


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--doc-table"):
        print("usage: check_env_vars.py REPO_ROOT [--doc-table]", file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    table = os.path.join(root, TABLE_FILE)
    try:
        with open(table, encoding="utf-8") as f:
            entries = parse_table(f.read())
    except OSError as exc:
        print(f"check_env_vars: {TABLE_FILE}: {exc.strerror}", file=sys.stderr)
        return 1
    if len(argv) == 3:
        print(doc_table(entries))
        return 0
    problems = table_problems(entries, TABLE_FILE)
    if not entries:
        problems.append(f"{TABLE_FILE}: no F(kName, \"STRATA_...\", ...) entries found")
    names = {e[1] for e in entries if e[1]}
    problems += c_literal_problems(root, TABLE_FILE)
    problems += python_problems(root, names)
    for p in problems:
        print(p)
    if problems:
        print(f"check_env_vars: {len(problems)} problem(s)")
        return 1
    print(f"check_env_vars: {len(entries)} variables declared in {TABLE_FILE}; src/ and python/strata use "
          "only those")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
