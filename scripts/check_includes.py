#!/usr/bin/env python3
"""Check every `#include "..."` (and `#include <...>` naming a file of the repository) against
the module map in docs/architecture.md.

The map's table (under `## Module map`) has one row per folder:
| `src/<folder>/` | what it holds | may include |.
A file belongs to the deepest folder with a row (src/lowerbound/ir/ wins over src/lowerbound/).
It may include its own module and the modules its row lists, and, transitively, what those list:
a module that may include `trace` may include `core`, because trace's headers already do.
The third cell is a comma list of module names (`core`, `lowerbound/ir`, `include/strata`);
text in parentheses is a note and ignored; `—` means nothing; `everything above` means every row
above it in the table; `see the rooms` means the rows of its own sub-folders.

Checked: every file under src/, tests/, bench/ and fuzz/. Every folder of src/ must have a row,
and every row a folder. The second table (under `## Test, benchmark and fuzz areas`) has one row
per area folder (`tests/<area>/`, `bench/<area>/`, `fuzz/<area>/`), written and read the same way:
an area may include what its row lists (modules, transitively, and other areas' helpers), the
shared helpers directly in its top folder (tests/test_util.h), and its own folder. Every top
folder of tests/, bench/ and fuzz/ holding a source file must have a row.
Includes that resolve to no file in the repository (generated or third-party headers) are skipped;
an include climbing out with "../" inside src/ is an error (tests reach their helpers that way).

scripts/include_roots.py builds the same table into per-module include folders, so the compiler
enforces what this script checks (docs/architecture.md, "The map in the build").

Usage: check_includes.py [REPO_ROOT]   (default: the repository holding this script)
Exit 0 with a one-line summary when clean; 1 with one line per problem and a count otherwise.
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')
ROW_RE = re.compile(r"^\|\s*`((?:src|include|tests|bench|fuzz)/[^`]*)`\s*\|(.*)\|\s*$")
SECTION = "## Module map"
AREA_SECTION = "## Test, benchmark and fuzz areas"
AREA_TOPS = ("tests", "bench", "fuzz")


def skipped_folder(name):
    """Hidden folders and Python caches are no modules."""
    return name.startswith(".") or name == "__pycache__"


def module_name(folder):
    """`src/lowerbound/ir/` -> `lowerbound/ir`; `include/strata/` -> `include/strata`;
    `tests/trace/` -> `tests/trace`; `tests/` -> `tests` (the shared test helpers)."""
    folder = folder.strip("/")
    return folder[len("src/"):] if folder.startswith("src/") else folder


def folder_of(name):
    """Repository-relative folder of a row name (the inverse of module_name)."""
    if name in AREA_TOPS or name.startswith(("include/",) + tuple(top + "/" for top in AREA_TOPS)):
        return name
    return "src/" + name


def is_area(name):
    return name.split("/")[0] in AREA_TOPS


def split_list(cell):
    """Top-level comma items of a cell, with parenthesized notes removed."""
    depth, text = 0, []
    for ch in cell:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            text.append(ch)
    return [item.strip().strip("`").strip("/") for item in "".join(text).split(",")]


def parse_table(doc_path, shown, errors):
    """Returns (rows in table order, {module: set of directly allowed modules})."""
    rows = []  # (module, raw third cell, line number)
    in_section, in_fence, seen = False, False, {}
    with open(doc_path, encoding="utf-8") as doc:
        for number, line in enumerate(doc, 1):
            if line.startswith("```"):
                in_fence = not in_fence
            elif line.startswith("#") and not in_fence:
                in_section = line.strip() in (SECTION, AREA_SECTION)
            match = ROW_RE.match(line.rstrip("\n")) if in_section else None
            if not match:
                continue
            name = module_name(match.group(1))
            if name in seen:
                errors.append(f"{shown}:{number}: row `{match.group(1)}` is already at line "
                              f"{seen[name]}; keep one row per folder")
                continue
            seen[name] = number
            cells = match.group(2).split("|")
            if len(cells) < 2:
                errors.append(f"{shown}:{number}: module row has no 'may include' cell; "
                              "write | `src/<folder>/` | what it holds | may include |")
                continue
            rows.append((name, cells[-1].strip(), number))
    names = [name for name, _, _ in rows]
    direct = {}
    for index, (name, cell, number) in enumerate(rows):
        allowed = set()
        for item in split_list(cell):
            if item in ("", "—", "-", "none"):
                continue
            if item == "everything above":
                allowed.update(names[:index])
            elif item == "see the rooms":
                allowed.update(n for n in names if n.startswith(name + "/"))
            elif item in names:
                allowed.add(item)
            else:
                errors.append(f"{shown}:{number}: row `{name}` may include '{item}', which is "
                              "not a folder of the table; name a module (e.g. core, lowerbound/ir)")
        direct[name] = allowed
    return rows, direct


def closure(direct):
    allowed = {}
    for start in direct:
        seen, todo = set(), list(direct[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(direct.get(name, ()))
        allowed[start] = seen
    return allowed


def owner(path, modules):
    """Deepest module folder holding `path` (repository-relative), or None."""
    best = None
    for name in modules:
        folder = folder_of(name)
        if path.startswith(folder + "/") and (best is None or len(name) > len(best)):
            best = name
    return best


def resolve(root, including, target):
    """Repository-relative path the include names, as the compiler finds it (the including file's
    folder first for "...", then include/ and src/), or None when it is not a file of the
    repository. `including` is None for <...>."""
    bases = ("include", "src") if including is None else (os.path.dirname(including), "include", "src")
    for base in bases:
        candidate = os.path.normpath(os.path.join(base, target))
        if not candidate.startswith("..") and os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def source_files(root, top):
    for folder, subfolders, files in os.walk(os.path.join(root, top)):
        subfolders[:] = sorted(name for name in subfolders if not skipped_folder(name))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(folder, name), root)


def check_file(root, path, module, allowed, modules, problems):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
        for number, line in enumerate(source, 1):
            match = INCLUDE_RE.match(line)
            if not match:
                continue
            target = match.group(1) or match.group(2)
            quoted = match.group(1) is not None
            if path.startswith("src/") and ".." in target.split("/"):
                problems.append(f'{path}:{number}: includes "{target}": climbs out with "../"; '
                                "include it by its path under src/ or include/")
                continue
            # <...> skips the including file's folder, as the compiler does; a system header
            # (<vector>) names no file of the repository and is skipped below
            resolved = resolve(root, path if quoted else None, target)
            if resolved is None:
                continue
            target_module = owner(resolved, modules)
            if target_module is None or target_module == module or target_module in allowed:
                continue
            if target_module in AREA_TOPS and module.split("/")[0] == target_module:
                continue  # an area's shared helpers (tests/test_util.h)
            permitted = ", ".join(sorted(allowed)) or "nothing"
            problems.append(f'{path}:{number}: includes "{target}" ({target_module}), not allowed '
                            f"for {module} (allowed: {permitted})")


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    doc = os.path.join(root, "docs", "architecture.md")
    if not os.path.isfile(doc):
        print(f"check_includes: {doc}: not found; the module map is the spec", file=sys.stderr)
        return 1
    problems = []
    rows, direct = parse_table(doc, "docs/architecture.md", problems)
    modules = [name for name, _, _ in rows]
    if not modules:
        problems.append(f"docs/architecture.md: no module rows under '{SECTION}'; the map is the "
                        "spec: | `src/<folder>/` | what it holds | may include |")
    allowed = closure(direct)
    for name in modules:
        if name in allowed[name]:
            problems.append(f"docs/architecture.md: the table has a cycle through `{name}`: "
                            "dependencies must point one way")

    for folder, subfolders, _ in os.walk(os.path.join(root, "src")):
        subfolders[:] = sorted(name for name in subfolders if not skipped_folder(name))
        for sub in subfolders:
            relative = os.path.relpath(os.path.join(folder, sub), root)
            if module_name(relative) not in modules:
                problems.append(f"{relative}/: no row in docs/architecture.md's module map; add "
                                f"| `{relative}/` | what it holds | may include |")
    for top in AREA_TOPS:
        top_folder = os.path.join(root, top)
        for area in sorted(os.listdir(top_folder)) if os.path.isdir(top_folder) else ():
            if skipped_folder(area) or not os.path.isdir(os.path.join(top_folder, area)):
                continue
            if f"{top}/{area}" not in modules and any(source_files(root, f"{top}/{area}")):
                problems.append(f"{top}/{area}/: holds sources but has no row in docs/architecture.md's "
                                f"'{AREA_SECTION[3:]}' table; add | `{top}/{area}/` | what it tests | "
                                "may include |")
    for name in modules:
        folder = folder_of(name)
        if not os.path.isdir(os.path.join(root, folder)):
            problems.append(f"docs/architecture.md: row `{folder}/` names no folder; remove or "
                            "correct it")

    checked = 0
    for top in ("src",) + AREA_TOPS:
        for path in source_files(root, top):
            module = owner(path, modules)
            if module is None:
                continue  # a file directly in src/, or in a folder reported above
            check_file(root, path, module, allowed[module], modules, problems)
            checked += 1

    for problem in problems:
        print(problem)
    if problems:
        print(f"check_includes: {len(problems)} problem(s) in {checked} files "
              "(the module map is docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check_includes: {checked} files obey the module map of docs/architecture.md "
          f"({len(modules)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
