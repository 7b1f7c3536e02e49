"""scripts/check_function_size.py: no file in src/ over 700 lines, no function over 120, exceptions
only as rows of docs/architecture.md's "Size limits" table.

Fake trees in a temporary folder show each failure it must report, that a listed exception passes,
and that what is not a function (a namespace, a class body, a table initializer) is not measured; the
last case runs it on this repository, which must obey its own limits."""
import os
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
