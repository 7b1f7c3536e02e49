"""scripts/check_namespaces.py: a file of src/ declares its names in its folder's namespace.

Fake trees in a temporary folder show each thing it must report and each thing it must let pass
(anonymous namespaces, forward declarations, nested namespaces, the exceptions table, namespaces
inside comments and strings); the last case runs it on this repository, which must follow its rule."""
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(REPO, "scripts", "check_namespaces.py")

CLEAN_SOURCES = {
    "src/core/level.h": "namespace strata {\nenum class Level { kModel };\n}  // namespace strata\n",
    "src/trace/trace.h": "namespace strata::trace {\nstruct Trace {};\n}  // namespace strata::trace\n",
    # nested form, a sub-namespace, an anonymous namespace, an alias and a using-directive
    "src/analysis/stats.cc": "namespace strata {\nnamespace analysis {\nnamespace {\n"
                             "int helper() { return 1; }\n}  // namespace\nnamespace ranks {\nint x = 0;\n}\n"
                             "}  // namespace analysis\n"
                             "}  // namespace strata\nnamespace fs = std::filesystem;\n"
                             "using namespace strata::analysis;\n",
    # another module's class forward-declared: free
    "src/analysis/deep/miner.h": "namespace strata::trace {\nclass Trace;\nstruct SpanTree;\n}\n"
                                 "namespace strata::analysis::deep {\nint mine(const trace::Trace&);\n}\n",
    # the exceptions: the public span API's internals in strata::detail; export is strata::exporter
    "src/collect/runtime.cc": "namespace strata::detail {\nint site() { return 0; }\n}\n",
    "src/export/csv.cc": "namespace strata::exporter {\nvoid write() {}\n}  // namespace strata::exporter\n",
    # namespaces named only in comments, strings and raw strings are not namespaces
    "src/cli/main.cc": "// namespace strata::wrong { int x; }\n/* namespace strata::wrong { */\n"
                       "const char* a = \"namespace strata::wrong { int y; }\";\n"
                       "const char* b = R\"(namespace strata::wrong { int z; })\";\n"
                       "namespace strata::cli {\nint main_impl() { return 0; }\n}\n"
                       "int main() { return strata::cli::main_impl(); }\n",
}


def make_tree(tmp_path, extra=None):
    for rel, text in {**CLEAN_SOURCES, **(extra or {})}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def run_checker(root):
    return subprocess.run([sys.executable, CHECKER, str(root)], capture_output=True, text=True, timeout=120)


def test_clean_tree_passes(tmp_path):
    result = run_checker(make_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_a_namespace_of_another_folder_is_reported_with_file_line_and_what_to_do(tmp_path):
    bad = {"src/analysis/deep/miner.cc":
           "#include \"x.h\"\nnamespace strata::deep {\nint mine() { return 0; }\n}\n"}
    result = run_checker(make_tree(tmp_path, bad))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "src/analysis/deep/miner.cc:2: namespace strata::deep declares names, but src/analysis/deep/ is "
        "strata::analysis::deep: rename the namespace to match the folder, or add an exception with its "
        "reason to EXCEPTIONS in scripts/check_namespaces.py"]
    assert "1 namespace(s)" in result.stderr


def test_nested_form_and_sub_namespace_of_the_wrong_module_are_reported(tmp_path):
    bad = {"src/trace/loader.cc":
           "namespace strata {\nnamespace model {\nnamespace detail {\nint n;\n}\n}\n}\n"}
    result = run_checker(make_tree(tmp_path, bad))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("src/trace/loader.cc:3: namespace strata::model::detail ")


def test_a_definition_in_a_foreign_namespace_is_not_a_forward_declaration(tmp_path):
    bad = {"src/analysis/deep/miner.h": "namespace strata::trace {\nclass Trace {};\n}\n"}
    result = run_checker(make_tree(tmp_path, bad))
    assert result.returncode == 1
    assert result.stdout.startswith("src/analysis/deep/miner.h:1: namespace strata::trace declares names")


def test_code_in_the_root_namespace_outside_core_is_reported(tmp_path):
    bad = {"src/cli/util.cc": "namespace strata {\nint util() { return 0; }\n}\n"}
    result = run_checker(make_tree(tmp_path, bad))
    assert result.returncode == 1
    assert "src/cli/util.cc:1: namespace strata declares names, but src/cli/ is strata::cli" in result.stdout


def test_without_a_src_folder_it_says_what_to_give(tmp_path):
    result = run_checker(tmp_path)
    assert result.returncode == 2
    assert "has no src/ folder: give the repository root" in result.stderr


def test_this_repository_follows_its_own_rule():
    result = run_checker(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
