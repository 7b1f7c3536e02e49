// `strata --version`: the CMake project version and, when built from a git checkout, `git describe`
// at build time. Defined in the generated strata_version.cc (cmake/write_version.cmake).
#ifndef STRATA_CLI_VERSION_H_
#define STRATA_CLI_VERSION_H_

namespace strata::cli {
const char* version_text();  // e.g. "0.1.0 (38280dd-dirty)"
}  // namespace strata::cli

#endif  // STRATA_CLI_VERSION_H_
