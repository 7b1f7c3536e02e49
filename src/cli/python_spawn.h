// Starting Strata's own Python code (the `strata analyze --dask` driver; any Python a command starts
// for itself): every such start goes through here, so that it runs isolated, whatever the folder the
// user typed the command in. `python3 -m MODULE` would put the working directory first on sys.path,
// and a file planted there (`argparse.py` in /tmp, a `strata/` folder) would run as the user who
// typed the command. The user's own program under `strata record` is not started here: it keeps its
// environment (PYTHONPATH, its script's folder on sys.path).
#pragma once

#include <string>
#include <vector>

namespace strata::cli {

// The folder that holds the `strata` Python package of this strata (strata/__init__.py in it): the
// installed tree's link folder (lib/strata/python), the build tree's lib/python, or a flat bundle's
// ../python; canonical; empty when there is none.
std::string find_python_package_dir();

// The interpreter Strata's own Python runs under: $STRATA_PYTHON when set, else /usr/bin/python3
// (Debian's, which has python3-distributed). Never looked up on PATH nor in the working directory: a
// STRATA_PYTHON that is not an absolute path is refused (empty result, `error` says so).
std::string strata_python_interpreter(std::string* error);

// What to run: `module` of the package in `package_dir`, as __main__, with `args`.
struct PythonModuleRun {
  std::string interpreter;
  std::string package_dir;
  std::string module;
  std::vector<std::string> args;
};

// The argument vector: `INTERPRETER -I -c BOOTSTRAP PACKAGE_DIR MODULE ARGS...`. -I (isolated mode):
// neither the working directory nor the script's folder is put on sys.path, PYTHON* variables
// (PYTHONPATH, PYTHONSTARTUP, PYTHONHOME) and the user's site-packages are ignored. The bootstrap
// puts `package_dir` alone in front of the interpreter's own paths and runs the module as `-m` would.
std::vector<std::string> isolated_python_argv(const PythonModuleRun& run);

// Replaces this process by that Python (standard output flushed first). Returns only when it cannot
// start: the errno of execv.
int exec_isolated_python(const PythonModuleRun& run);

}  // namespace strata::cli
