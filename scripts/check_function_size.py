#!/usr/bin/env python3
"""Fails when a source file in src/ is over 700 lines or a function in it is over 120 lines.

docs/architecture.md states both limits and lists any exception with its reason (the table under
"Size limits"); this script reads that table, so an exception is written down once.

What counts as a function: a definition that starts at column 0 (clang-format puts every
namespace-scope function and out-of-class member definition there) and ends at the first `}` in
column 0 after it; its lines are counted from the signature's last line to that `}`. Lambdas count
towards the function that holds them. Member functions defined inside a class body (indented) are
not measured: the project defines long members out of class. Usage: check_function_size.py [ROOT]
"""
import pathlib
import re
import sys

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
SOURCE_SUFFIXES = {".cc", ".h", ".c", ".cpp"}
# A column-0 line ending in `{` that opens something other than a function body.
NOT_A_FUNCTION = re.compile(
    r"(namespace|struct|class|enum|union|extern|typedef|template\s*<[^>]*>\s*(struct|class))\b")


def exceptions(root: pathlib.Path) -> set[str]:
    """`path` or `path:function-start-line`-free names listed in architecture.md's size table."""
    doc = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    match = re.search(r"^## Size limits\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    if not match:
        return set()
    return set(re.findall(r"^\| `([^`]+)` \|", match.group(1), re.M))


def long_functions(lines: list[str]):
    start = None
    for number, line in enumerate(lines):
        if start is None:
            if (line.endswith("{") and line[:1] not in (" ", "\t", "#", "/", "}", "")
                    and not NOT_A_FUNCTION.match(line)
                    and "(" in "".join(lines[max(0, number - 4):number + 1])
                    and "=" not in line.split("(")[0]):
                start = number
        elif line.startswith("}"):
            length = number - start + 1
            if length > MAX_FUNCTION_LINES:
                yield start + 1, length, lines[start].strip()
            start = None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    allowed = exceptions(root)
    problems = []
    files = 0
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        files += 1
        relative = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        if len(lines) - 1 > MAX_FILE_LINES and relative not in allowed:
            problems.append(f"{relative}: {len(lines) - 1} lines (limit {MAX_FILE_LINES}): split it, or list it "
                            "with its reason under 'Size limits' in docs/architecture.md")
        for line_number, length, signature in long_functions(lines):
            name = f"{relative}:{signature.split('(')[0].split()[-1]}"
            if name in allowed:
                continue
            problems.append(f"{relative}:{line_number}: function of {length} lines (limit {MAX_FUNCTION_LINES}): "
                            f"{signature[:80]}: split it into named steps, or list `{name}` with its reason "
                            "under 'Size limits' in docs/architecture.md")
    for problem in problems:
        print(problem)
    print(f"check_function_size: {files} files, {len(problems)} over the limits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
