// Which libstdc++ a recorded program gets when Strata runs from a relocatable bundle.
//
// scripts/bundle.sh copies the build machine's libstdc++ next to libstrata.so (RUNPATH $ORIGIN), so
// the tree runs on a node whose libstdc++ is older. Preloaded into the user's program, that copy is
// found first and would also serve the program's framework, which may need a newer one (a PyTorch
// wheel built with a newer GCC): the loader takes the first libstdc++.so.6 it finds, whatever its
// version. So `strata record` preloads the node's own libstdc++ ahead of the runtime when it provides
// every GLIBCXX version the bundled copy does.
#pragma once

#include <string>
#include <vector>

namespace strata::cli {

// The highest N of the "GLIBCXX_3.4.N" version strings in the file (0 when none or unreadable).
int libstdcxx_version_level(const std::string& path);

// The node's libstdc++ to preload before the runtime `runtime_path`, or "" when there is no bundled
// copy next to it, no system one at least as new, or the bundle is of a sanitized build (its
// runtime must come first). `system_dirs` is searched in order.
std::string newer_system_libstdcxx(const std::string& runtime_path,
                                   const std::vector<std::string>& system_dirs);

// The usual multiarch and lib64 directories of this architecture.
std::vector<std::string> default_system_library_dirs();

}  // namespace strata::cli
