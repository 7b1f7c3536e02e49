"""scripts/check_function_size.py: no file in src/ over 700 lines, no function over 120, exceptions
only as rows of docs/architecture.md's "Size limits" table.

Fake trees in a temporary folder show each failure it must report, that a listed exception passes,
and that what is not a function (a namespace, a class body, a table initializer) is not measured; the
last case runs it on this repository, which must obey its own limits.

The brace-matching cases build a file from pieces whose line counts are known by construction (a
piece is a whole definition, from its first token to its closing `}`), so the expected first line and
length of every definition come from the pieces, not from the checker; `--list` must report exactly
those definitions and nothing else."""
import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(REPO, "scripts", "check_function_size.py")


def doc(rows=""):
    return ("# Architecture\n\n## Size limits\n\ntext\n\n| file or function | reason |\n|---|---|\n" + rows +
            "\n## Next section\n\n| `src/ignored.cc` | a row of another table |\n")


def function(name, body_lines):
    body = "".join(f"  x += {k};\n" for k in range(body_lines))
    return f"int {name}(int x) {{\n{body}  return x;\n}}\n"


def run(tmp_path, files, rows=""):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "architecture.md").write_text(doc(rows))
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = subprocess.run([sys.executable, CHECKER, str(tmp_path)], capture_output=True, text=True)
    return result.returncode, result.stdout


def test_short_functions_and_non_functions_pass(tmp_path):
    code, out = run(tmp_path, {
        "src/a/ok.cc": "namespace strata {\n" + function("short_one", 100) + "}  // namespace strata\n",
        # A long class body and a long table are not functions.
        "src/a/table.h": "struct Big {\n" + "  int field;\n" * 200 + "};\n" +
                         "const int kTable[] = {\n" + "  1,\n" * 200 + "};\n",
    })
    assert code == 0, out
    assert "2 files, 0 over the limits" in out


def test_long_function_fails_with_its_line_and_name(tmp_path):
    code, out = run(tmp_path, {"src/a/long.cc": "// header\n\n" + function("too_long", 130)})
    assert code == 1
    assert "src/a/long.cc:3: function of 133 lines (limit 120)" in out
    assert "`src/a/long.cc:too_long`" in out


def test_long_file_fails(tmp_path):
    code, out = run(tmp_path, {"src/a/big.cc": "// line\n" * 701})
    assert code == 1
    assert "src/a/big.cc: 701 lines (limit 700)" in out


def test_listed_exceptions_pass_and_other_tables_do_not_count(tmp_path):
    files = {"src/a/long.cc": function("too_long", 130), "src/ignored.cc": "// line\n" * 701}
    code, out = run(tmp_path, files, rows="| `src/a/long.cc:too_long` | generated dispatch |\n")
    assert code == 1  # src/ignored.cc is listed only in another section's table
    assert "src/a/long.cc" not in out and "src/ignored.cc: 701 lines" in out
    code, out = run(tmp_path, files, rows="| `src/a/long.cc:too_long` | reason |\n| `src/ignored.cc` | reason |\n")
    assert code == 0, out


def test_this_repository_obeys_its_limits():
    result = subprocess.run([sys.executable, CHECKER, REPO], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def layout(pieces):
    """The file made of (text, name) pieces, and the (first line, name, length) of each piece
    with a name: a definition's length is its piece's line count."""
    text, expected = "", []
    for piece, name in pieces:
        if name:
            expected.append((text.count("\n") + 1, name, piece.count("\n")))
        text += piece
    return text, expected


def listed(tmp_path, text, path="src/a/file.cc"):
    """(exit code, [(first line, name, length)] that --list reports, output)."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "architecture.md").write_text(doc())
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(text)
    result = subprocess.run([sys.executable, CHECKER, "--list", str(tmp_path)], capture_output=True, text=True)
    found = [(int(line), name, int(length)) for line, name, length in
             re.findall(r"^" + re.escape(path) + r":(\d+): (.+): (\d+) lines$", result.stdout, re.M)]
    return result.returncode, found, result.stdout


def body(lines):
    return "".join(f"  x += {k};\n" for k in range(lines))


def three_line_signature(total_lines):
    """A definition of exactly `total_lines` lines whose signature takes 3 of them."""
    return ("std::vector<int> split_signature(\n    int x,\n    int y) {\n" + body(total_lines - 4) + "}\n",
            "split_signature")


def test_a_signature_over_three_lines_counts_from_its_first_line(tmp_path):
    text, expected = layout([("// header\n\n", None), three_line_signature(121)])
    assert expected == [(3, "split_signature", 121)]
    code, found, out = listed(tmp_path, text)
    assert code == 1 and found == expected, out
    assert "src/a/file.cc:3: function of 121 lines (limit 120)" in out

    text, expected = layout([("// header\n\n", None), three_line_signature(120)])
    code, found, out = listed(tmp_path, text)
    assert code == 0 and found == expected, out


def test_every_layout_of_a_definition_is_found(tmp_path):
    text, expected = layout([
        ("#include <vector>\n\nnamespace strata::a {\nnamespace {\n\n", None),
        ("  int indented_in_namespace(int x) {\n" + body(3) + "  return x;\n  }\n", "indented_in_namespace"),
        ("}  // namespace\n\n", None),
        ("int Widget::size()\n    const {\n" + body(2) + "  return 0;\n}\n", "Widget::size"),
        ("\n", None),
        ("auto trailing(int x)\n    -> std::pair<int, int> {\n  return {x, x};\n}\n", "trailing"),
        ("template <typename T,\n          typename = void>\nT templated(T x) {\n  return x;\n}\n", "templated"),
        ("Widget::Widget(int x)\n    : a_{x},\n      b_(x),\n      c_{std::vector<int>{1, 2}} {\n" + body(4) + "}\n",
         "Widget::Widget"),
        ("Widget::~Widget() {}\n", "Widget::~Widget"),
        ("bool Widget::operator==(const Widget& o) const { return a_ == o.a_; }\n", "Widget::operator=="),
        ("std::function<void(int)> make_callback(\n    int x) {\n  return [x](int y) { use(x, y); };\n}\n",
         "make_callback"),
        ("decltype(auto) forwarded(int& x) {\n  return (x);\n}\n", "forwarded"),
        ("}  // namespace strata::a\n", None),
    ])
    code, found, out = listed(tmp_path, text)
    assert code == 0 and found == expected, out


def test_braces_in_literals_comments_and_directives_are_not_counted(tmp_path):
    tricky = ("void tricky(int x) {\n"
              "  const char* open = \"{{{\";  // {\n"
              "  const char* close = \"}}\\\"}\";  /* } */\n"
              "  char brace = '}';\n"
              "  char quote = '\\'';\n"
              "  const char* raw = R\"json({\"a\": \"}\")\n"
              "}\n"
              ")\" }\n"
              ")json\";\n"
              "  const char* wide = u8\"}\";\n"
              "  long big = 1'000 + '{';  // a digit separator opens no character literal\n"
              "#define CLOSE }\n"
              "#define OPEN \\\n"
              "  {\n"
              "  /* a comment over lines\n"
              "}\n"
              "  */\n" + body(130) + "}\n")
    text, expected = layout([(tricky, "tricky"), ("\nint after() {\n  return 1;\n}\n", None)])
    expected.append((text.count("\n") - 2, "after", 3))
    code, found, out = listed(tmp_path, text)
    assert code == 1 and found == expected, out
    assert f"src/a/file.cc:1: function of {tricky.count(chr(10))} lines" in out


def test_classes_namespaces_enums_and_initializers_are_not_functions(tmp_path):
    many = 125  # each block over the function limit, the file under the file limit
    text, expected = layout([
        ("namespace strata {\n\nextern \"C\" {\n", None),
        ("int c_function(void) {\n  return 0;\n}\n", "c_function"),
        ("}\n", None),
        ("struct Fields {\n" + "  int field;\n" * many + "  std::vector<int> v{1, 2};\n", None),
        ("  int member(int x) const { return x; }\n", "member"),
        ("public:\n", None),
        ("  explicit Fields(int x)\n      : v{x} {}\n", "Fields"),
        ("};\n", None),
        ("enum class Kind : int {\n" + "".join(f"  k{k},\n" for k in range(many)) + "};\n", None),
        ("const int kTable[] = {\n" + "  1,\n" * many + "};\n", None),
        ("const std::map<int, int> kMap({\n" + "    {1, 2},\n" * many + "});\n", None),
        ("std::atomic<void (*)()> g_hook{nullptr};\n", None),
        ("__attribute__((visibility(\"default\"))) std::atomic<int> g_gate{0};\n", None),
        ("const auto kLambda = [](int x) {\n" + body(many) + "  return x;\n};\n", None),
        ("template <class T>\nstruct Holder : Base<T> {\n  T held{};\n};\n", None),
        ("}  // namespace strata\n", None),
    ])
    code, found, out = listed(tmp_path, text, path="src/a/file.h")
    assert code == 0 and found == expected, out


def test_a_member_defined_in_its_class_and_its_lambdas_are_measured(tmp_path):
    member = "  void draw() {\n    auto step = [this](int x) {\n" + body(130) + "    };\n    step(1);\n  }\n"
    text, expected = layout([("class Canvas {\n public:\n", None), (member, "draw"), ("};\n", None)])
    assert expected == [(3, "draw", 135)]
    code, found, out = listed(tmp_path, text, path="src/a/canvas.h")
    assert code == 1 and found == expected, out
    assert "src/a/canvas.h:3: function of 135 lines (limit 120)" in out
