"""scripts/check_env_vars.py: every STRATA_* variable is declared once, in src/core/env_vars.h.

Fake trees in a temporary folder: a variable's name written as a literal outside the table fails, the
table's constants and prose mentioning a name pass; python/strata may use only declared names; a
name declared twice fails. The last cases run it on this repository, which must pass, and check that
docs/environment.md holds the table it prints."""
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(REPO, "scripts", "check_env_vars.py")

TABLE = """#define STRATA_ENV_VARS(F) \\
  /* a comment */ \\
  F(kAlpha, "STRATA_ALPHA", "unset", "collector", \\
    "The first " \\
    "variable.") \\
  F(kBeta, "STRATA_BETA", "8", "tool, Python", "The second (in MiB).")
"""

CLEAN = {
    "src/core/env_vars.h": TABLE,
    "src/collect/start.cc": '#include "core/env_vars.h"\n'
                            'const char* a = getenv(env::kAlpha);\n'
                            '// getenv("STRATA_ALPHA") in a comment is not code\n'
                            '/* nor "STRATA_BETA" here */\n'
                            'const char* msg = "set STRATA_ALPHA=1 to try";\n'
                            'const char* other = "STRATA_ALPHA is prose";\n'
                            'char q = \'"\'; const char* after = "x";\n',
    "python/strata/mod.py": 'import os\nA = os.environ.get("STRATA_ALPHA")\n'
                            'VARS = ("STRATA_BETA", "CXX")\nMSG = f"set STRATA_GAMMA={A}"\n',
}


def run(tmp_path, files, *args):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return subprocess.run([sys.executable, CHECKER, str(tmp_path), *args], capture_output=True, text=True)


def test_a_clean_tree_passes(tmp_path):
    r = run(tmp_path, CLEAN)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 variables declared" in r.stdout


def test_a_name_literal_outside_the_table_fails(tmp_path):
    files = dict(CLEAN)
    files["src/sample/in_process.cc"] = 'int x;\nconst char* on = secure_getenv("STRATA_ALPHA");\n'
    r = run(tmp_path, files)
    assert r.returncode == 1
    assert 'src/sample/in_process.cc:2: "STRATA_ALPHA" written as a literal' in r.stdout


def test_an_undeclared_name_literal_in_src_fails(tmp_path):
    files = dict(CLEAN)
    files["src/cli/cmd.h"] = 'inline constexpr const char* kVar = "STRATA_NEW";\n'
    r = run(tmp_path, files)
    assert r.returncode == 1
    assert 'src/cli/cmd.h:1: "STRATA_NEW" written as a literal' in r.stdout


def test_python_using_an_undeclared_name_fails(tmp_path):
    files = dict(CLEAN)
    files["python/strata/sub/other.py"] = 'import os\n\nos.environ["STRATA_GAMMA"] = "1"\n'
    r = run(tmp_path, files)
    assert r.returncode == 1
    assert "python/strata/sub/other.py:3: STRATA_GAMMA is not declared in src/core/env_vars.h" in r.stdout


def test_a_name_declared_twice_fails(tmp_path):
    files = dict(CLEAN)
    files["src/core/env_vars.h"] = TABLE + '  F(kAgain, "STRATA_ALPHA", "1", "tool", "Again.")\n'
    r = run(tmp_path, files)
    assert r.returncode == 1
    assert "STRATA_ALPHA declared twice" in r.stdout


def test_doc_table_prints_the_entries(tmp_path):
    r = run(tmp_path, CLEAN, "--doc-table")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "| Variable | Default | Read by | Meaning |",
        "|---|---|---|---|",
        "| `STRATA_ALPHA` | unset | collector | The first variable. |",
        "| `STRATA_BETA` | 8 | tool, Python | The second (in MiB). |",
    ]


def test_this_repository_passes():
    r = subprocess.run([sys.executable, CHECKER, REPO], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_docs_environment_holds_the_printed_table():
    r = subprocess.run([sys.executable, CHECKER, REPO, "--doc-table"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(REPO, "docs", "environment.md"), encoding="utf-8") as f:
        doc = f.read()
    assert r.stdout.strip() in doc
