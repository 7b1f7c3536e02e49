#include "cli/python_spawn.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/cli_util.h"
#include "core/env_vars.h"
#include "export/text_escape.h"
#include "strata_install_layout.h"

namespace strata::cli {

namespace {

// Run as `python -I -c BOOTSTRAP PACKAGE_DIR MODULE ARGS...`: sys.argv is then
// ['-c', PACKAGE_DIR, MODULE, ARGS...]; the module sees [its file, ARGS...] as under -m.
constexpr const char* kBootstrap =
    "import runpy, sys\n"
    "package_dir, module = sys.argv[1], sys.argv[2]\n"
    "del sys.argv[1:3]\n"
    "sys.path.insert(0, package_dir)\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n";

}  // namespace

std::string find_python_package_dir() {
  const std::string dir = executable_dir();
  // Installed tree (a folder holding only a link to the package in dist-packages: the recorded
  // program's PYTHONPATH gets nothing else), then the build tree's lib/python.
  for (const std::string& candidate :
       {dir + "/" STRATA_PYTHONDIR_FROM_BINDIR, dir + "/../lib/python", dir + "/../python"})
    if (access((candidate + "/strata/__init__.py").c_str(), R_OK) == 0)
      return std::filesystem::weakly_canonical(candidate).string();
  return "";
}

std::string strata_python_interpreter(std::string* error) {
  const char* python = std::getenv(env::kPython);
  if (python == nullptr || *python == '\0') return "/usr/bin/python3";
  if (*python != '/') {
    *error = "STRATA_PYTHON=" + exporter::escape_terminal(python) +
             " is not an absolute path (it would be looked up in the working directory): name the "
             "interpreter by its full path";
    return "";
  }
  return python;
}

std::vector<std::string> isolated_python_argv(const PythonModuleRun& run) {
  std::vector<std::string> argv = {run.interpreter, "-I", "-c", kBootstrap, run.package_dir, run.module};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  return argv;
}

int exec_isolated_python(const PythonModuleRun& run) {
  std::vector<std::string> args = isolated_python_argv(run);
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(run.interpreter.c_str(), argv.data());
  return errno;
}

}  // namespace strata::cli
