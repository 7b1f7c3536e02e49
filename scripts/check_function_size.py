#!/usr/bin/env python3
"""Fails when a source file in src/ is over 700 lines or a function in it is over 120 lines.

docs/architecture.md states both limits and lists any exception with its reason (the table under
"Size limits"); this script reads that table, so an exception is written down once.

How a function is found: a small tokenizer drops comments, string and character literals (raw
strings `R"x(...)x"` included), digit separators and preprocessor lines (with their `\\`
continuations), then the braces are matched. A `{` met at namespace, class or `extern "C"` scope
opens a function body when the tokens since the last `;`, `{`, `}` or access specifier (its
"head") hold a parenthesized parameter list at top level, no top-level `=`, and no `class`,
`struct`, `union` or `enum` before that list; so line breaks do not matter (multi-line
signatures, `) const {`, trailing return types, `Foo::Foo(...) : member_{x} {` constructors whose
member-initializer braces are skipped, functions in namespaces, members defined inside a class
body). Namespaces and class bodies are searched further; enum bodies and initializers
(`kTable[] = {`, `Type name{...}`) are not functions. Everything inside a body, lambdas and local
classes included, counts towards the function that holds it.

How it is measured: from the line of the definition's first token (its `template <...>` header,
return type or name, whichever comes first; comments above it do not count) to the line of its
closing `}`, both included, blank and comment lines inside included.

Usage: check_function_size.py [--list] [ROOT]; --list prints every function found with its length.
"""
import pathlib
import re
import sys

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
SOURCE_SUFFIXES = {".cc", ".h", ".c", ".cpp"}
CLASS_KEYS = {"class", "struct", "union"}
ACCESS_SPECIFIERS = {"public", "private", "protected"}
# Keywords whose parentheses are not a parameter list (`decltype(auto) f() {`).
NOT_A_NAME = {"decltype", "alignas", "__attribute__", "__declspec", "noexcept", "sizeof", "alignof",
              "requires"}
STRING_PREFIXES = {"L", "u", "U", "u8"}
RAW_STRING_PREFIXES = {"R", "LR", "uR", "UR", "u8R"}
# Longest first, so `::` is one token and a lone `:` (base clause, member-initializer list) another.
PUNCTUATION = ["::", "->", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "&&",
               "||", "++", "--"]


def exceptions(root: pathlib.Path) -> set[str]:
    """`path` or `path:function` names listed in architecture.md's size table."""
    doc = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    match = re.search(r"^## Size limits\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    if not match:
        return set()
    return set(re.findall(r"^\| `([^`]+)` \|", match.group(1), re.M))


def tokens(text: str):
    """Yields (token, line) for the code of a C or C++ file, without comments, literals or
    preprocessor lines: a literal is one token `""`, so a brace inside it is never seen."""
    i, line, n = 0, 1, len(text)
    at_line_start = True  # only whitespace since the last newline: a `#` here opens a directive

    def skip_to(end: str, start: int) -> int:
        """Index just past `end` searched from `start` (or the end of the text); counts newlines."""
        nonlocal line
        stop = text.find(end, start)
        stop = n if stop < 0 else stop + len(end)
        line += text.count("\n", start, stop)
        return stop

    def skip_quoted(start: int, quote: str) -> int:
        """Index just past the literal whose opening quote is at `start`, escapes honoured."""
        nonlocal line
        j = start + 1
        while j < n and text[j] != quote and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return min(j + 1, n)

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            i = skip_to("*/", i + 2)
            continue
        if c == "#" and at_line_start:
            # A directive runs to the end of its line, joined with the next by a trailing `\`.
            while i < n and text[i] != "\n":
                if text.startswith("/*", i):
                    i = skip_to("*/", i + 2)
                elif text.startswith("//", i):
                    while i < n and text[i] != "\n":
                        i += 1
                elif text[i] == "\\" and text.startswith("\n", i + 1):
                    line += 1
                    i += 2
                else:
                    i += 1
            continue
        at_line_start = False
        if c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in RAW_STRING_PREFIXES and text.startswith('"', j):
                open_paren = text.find("(", j)
                delimiter = text[j + 1:open_paren] if open_paren >= 0 else ""
                start_line = line
                i = skip_to(")" + delimiter + '"', max(open_paren, j))
                yield '""', start_line
                continue
            if word in STRING_PREFIXES and j < n and text[j] in "\"'":
                yield '""', line
                i = skip_quoted(j, text[j])
                continue
            if word == "operator":
                # `operator()`, `operator==`, `operator bool`: one token, so its `=` or `()` is not
                # taken for an initializer or a parameter list.
                k = j
                while k < n and text[k] in " \t\n":
                    k += 1
                if text.startswith("()", k):
                    k += 2
                else:
                    while k < n and text[k] not in "(;{\n":
                        k += 1
                symbol = re.sub(r"\s+", " ", text[j:k]).strip()
                yield "operator" + (" " if symbol[:1].isalpha() else "") + symbol, line
                line += text.count("\n", j, k)
                i = k
                continue
            yield word, line
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            # A number, with its digit separators (`1'000`) and exponent signs.
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "._" or
                             (text[j] == "'" and j + 1 < n and text[j + 1].isalnum()) or
                             (text[j] in "+-" and text[j - 1] in "eEpP")):
                j += 1
            yield "0", line
            i = j
            continue
        if c in "\"'":
            yield '""', line
            i = skip_quoted(i, c)
            continue
        for punctuation in PUNCTUATION:
            if text.startswith(punctuation, i):
                yield punctuation, line
                i += len(punctuation)
                break
        else:
            yield c, line
            i += 1


def strip_template_headers(head: list) -> list:
    """The head without its leading `template <...>` clauses (their `class`/`=` are not the
    definition's)."""
    while len(head) >= 2 and head[0][0] == "template" and head[1][0] == "<":
        depth, k = 0, 1
        while k < len(head):
            depth += {"<": 1, ">": -1}.get(head[k][0], 0)
            k += 1
            if depth == 0:
                break
        head = head[k:]
    return head


def top_level(head: list):
    """(index, token) of the head's tokens outside parentheses, brackets and template arguments
    (`std::function<void(int)> f(...)`: the parameter list is the second `(`). The opening
    bracket itself is at top level."""
    depth, angles = 0, 0
    for index, (token, _) in enumerate(head):
        if token in ("(", "["):
            depth += 1
            if depth == 1 and angles == 0:
                yield index, token
            continue
        if token in (")", "]"):
            depth -= 1
        elif depth == 0 and token == "<":
            angles += 1
            continue
        elif depth == 0 and token == ">" and angles > 0:
            angles -= 1
            continue
        if depth == 0 and angles == 0:
            yield index, token


def parameter_list(head: list) -> int:
    """Index of the head's top-level `(` that opens a parameter list, or -1: the parentheses of
    `decltype(...)` or `__attribute__((...))` are not one."""
    for index, token in top_level(head):
        if token == "(" and index > 0 and head[index - 1][0] not in NOT_A_NAME:
            return index
    return -1


def function_name(head: list) -> str:
    """The (qualified) name before the parameter list: `Foo::bar`, `Foo::~Foo`, `operator==`."""
    index = parameter_list(head)
    if index < 0:
        return head[0][0] if head else "?"
    k = index - 1
    while k > 0 and (head[k - 1][0] in ("::", "~") or
                     (head[k][0] in ("::", "~") and re.match(r"\w", head[k - 1][0]))):
        k -= 1
    return "".join(token for token, _ in head[k:index])


def classify(head: list) -> str:
    """What a `{` met at namespace or class scope opens, from the tokens before it: `scope` (a
    namespace, class body or `extern "C"` block, searched further), `function`, or `other` (an
    enum body or an initializer: skipped)."""
    depth = 0
    for token, _ in head:
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(token, 0)
    if depth > 0:
        return "other"  # a brace inside parentheses: `kMap({{1, 2}})`
    head = strip_template_headers(head)
    if not head:
        return "other"  # a bare block or `= {` continuation
    words = [token for _, token in top_level(head)]
    if words[0] in ("namespace", "inline") and "namespace" in words[:2]:
        return "scope"
    if words[0] == "extern" and "(" not in words:
        return "scope"
    if "enum" in words or "=" in words:
        return "other"
    if any(word in CLASS_KEYS for word in words):
        return "scope"
    if parameter_list(head) < 0:
        return "other"
    # A constructor's member-initializer list: `) : a_(x), b_{y} {`. The body's brace follows a `)`
    # or `}`; a brace after a member or base name is that member's initializer.
    # (A lone top-level `:` in a function's head is only that list's: `::` is another token, a
    # bit-field has no body, an access specifier ended the head.)
    if ":" in words and words[-1] not in (")", "}"):
        return "other"
    return "function"


def functions(text: str):
    """Yields (first line, last line, name) of every function definition in the text."""
    stack = []  # one entry per open brace: "scope", "function", "other", "inner" (inside a body)
    head = []  # (token, line) at the innermost scope since its last statement boundary
    opened = []  # (first line, name) of the functions on the stack
    for token, line in tokens(text):
        inside_body = bool(stack) and stack[-1] in ("function", "other", "inner")
        if inside_body:
            if token == "{":
                stack.append("inner")
            elif token == "}":
                kind = stack.pop()
                if kind == "function":
                    first_line, name = opened.pop()
                    yield first_line, line, name
                    head = []
                elif kind == "other":
                    head.append(("}", line))  # an initializer ends; its declaration goes on
            continue
        if token == "{":
            kind = classify(head)
            stack.append(kind)
            if kind == "function":
                opened.append((head[0][1], function_name(strip_template_headers(head))))
            if kind != "other":
                head = []
        elif token == "}":
            if stack:
                stack.pop()
            head = []
        elif token == ";":
            head = []
        elif token == ":" and len(head) == 1 and head[0][0] in ACCESS_SPECIFIERS:
            head = []
        else:
            head.append((token, line))


def main() -> int:
    arguments = sys.argv[1:]
    listing = "--list" in arguments
    arguments = [argument for argument in arguments if argument != "--list"]
    root = pathlib.Path(arguments[0] if arguments else ".").resolve()
    allowed = exceptions(root)
    problems = []
    files = 0
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        files += 1
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        line_count = len(text.split("\n")) - 1
        if line_count > MAX_FILE_LINES and relative not in allowed:
            problems.append(f"{relative}: {line_count} lines (limit {MAX_FILE_LINES}): split it, or list it "
                            "with its reason under 'Size limits' in docs/architecture.md")
        for first_line, last_line, function in functions(text):
            length = last_line - first_line + 1
            if listing:
                print(f"{relative}:{first_line}: {function}: {length} lines")
            name = f"{relative}:{function}"
            if length <= MAX_FUNCTION_LINES or name in allowed:
                continue
            problems.append(f"{relative}:{first_line}: function of {length} lines (limit {MAX_FUNCTION_LINES}): "
                            f"{function}: split it into named steps, or list `{name}` with its reason "
                            "under 'Size limits' in docs/architecture.md")
    for problem in problems:
        print(problem)
    print(f"check_function_size: {files} files, {len(problems)} over the limits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
