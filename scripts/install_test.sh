#!/usr/bin/env bash
# Install test: build the Debian package from the install rules (cpack -G DEB), unpack it into an
# empty root WITHOUT touching the system (dpkg-deb -x), then use only that root, with a scrubbed
# environment (no STRATA_LIB, LD_LIBRARY_PATH, PYTHONPATH of the caller):
#   strata --version; a find_package(Strata) project and a pkg-config build linking the span API,
#   each run and its trace read by `strata info`; `import strata` from the package's dist-packages
#   recording a span with no STRATA_LIB; `strata record` of a PyTorch script at layer level (the
#   installed tool finds the installed libstrata, Python package and PyTorch tracer).
# usage: scripts/install_test.sh [BUILD_DIR]   (default build/; configured and built if needed)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$src/build}")
start=$(date +%s)
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
step() { echo "-- $*"; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
# Only what the package holds (a full build is not needed): the tool, libstrata, the Python package
# and whichever tracers and plugins this configuration builds.
targets=(strata_tool strata strata_python)
for t in strata_torch strata_onednn strata_cupti strata_nvtx strata_cudnn strata_lowerbound_cuda; do
  ninja -C "$build" -t query "$t" >/dev/null 2>&1 && targets+=("$t")
done
ninja -C "$build" -t query strata_man_pages >/dev/null 2>&1 && targets+=(strata_man_pages)
ninja -C "$build" -j "$(nproc)" -l 4 "${targets[@]}" >/dev/null
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || fail "no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt"
# The layout this build installs (GNUInstallDirs: lib, or lib/<multiarch> when configured for /usr).
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
pydir=$(sed -n 's/^STRATA_INSTALL_PYTHONDIR:STRING=//p' "$build/CMakeCache.txt")
[ -n "$libdir" ] && [ -n "$pydir" ] || fail "no CMAKE_INSTALL_LIBDIR / STRATA_INSTALL_PYTHONDIR in $build/CMakeCache.txt"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step "cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/pkg/strata_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "cpack wrote no strata_*.deb into $work/pkg"
[ "$(dpkg-deb -f "$deb" Package)" = strata ] || fail "package name is not strata"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version) != project $version"
depends=$(dpkg-deb -f "$deb" Depends)
for dep in libc6 libzstd1 python3; do
  [[ ",$depends" == *" $dep"* || ",$depends" == *",$dep"* ]] || fail "Depends lacks $dep: $depends"
done
echo "   $(basename "$deb"): $(stat -c %s "$deb") bytes; Depends: $depends"

root=$work/root
dpkg-deb -x "$deb" "$root"
usr=$root/usr
for f in bin/strata "$libdir/libstrata.so" include/strata/strata.h include/strata/strata.hpp \
         "$libdir/cmake/Strata/StrataConfig.cmake" "$libdir/cmake/Strata/StrataConfigVersion.cmake" \
         "$libdir/pkgconfig/strata.pc" "$pydir/strata/__init__.py"; do
  [ -e "$usr/$f" ] || fail "the package lacks /usr/$f"
done
for t in "${targets[@]}"; do
  case $t in strata_tool | strata | strata_python | strata_man_pages) continue ;; esac
  [ -e "$usr/$libdir/lib$t.so" ] || fail "$t is built but the package lacks /usr/$libdir/lib$t.so"
done
# No path into the build or source tree may leak into the package (RPATHs, CMake files, .pc).
if grep -rlF -e "$build" -e "$src/" "$root" >"$work/leaks"; then
  fail "the package refers to the build/source tree: $(tr '\n' ' ' <"$work/leaks")"
fi
while read -r elf; do
  rpath=$(readelf -d "$elf" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
  for entry in ${rpath//:/ }; do
    case $entry in '$ORIGIN'* | /usr/local/cuda*) ;; *) fail "$elf has a non-relocatable RPATH entry $entry" ;; esac
  done
done < <(find "$usr/bin" "$usr/$libdir" -maxdepth 1 -type f \( -name strata -o -name '*.so' -o -name '*.so.[0-9]*' \))

# Only the unpacked root from here on: no variable of the caller's reaches the programs.
clean=(env -i "PATH=/usr/bin:/bin" "HOME=$work" "TMPDIR=$work")
step "strata --version"
out=$("${clean[@]}" "$usr/bin/strata" --version)
[[ "$out" == "strata $version"* ]] || fail "strata --version printed '$out', expected 'strata $version...'"
echo "   $out"

step "man pages and bash completion"
if [[ " ${targets[*]} " == *" strata_man_pages "* ]]; then
  for page in strata strata-record strata-analyze strata-export; do
    f=$usr/share/man/man1/$page.1.gz
    [ -f "$f" ] || fail "the package lacks /usr/share/man/man1/$page.1.gz"
    if command -v man >/dev/null; then
      want=--quiet  # every command's page lists the common options; strata.1 lists the commands
      [ "$page" = strata ] && want=record
      MANPAGER=cat man -l "$f" 2>/dev/null | grep -q -- "$want" || fail "man -l $f does not render '$want'"
    fi
  done
  echo "   $(ls "$usr/share/man/man1" | wc -l) man pages"
else
  echo "   (help2man not found at configure time: no man pages to check)"
fi
completion=$usr/share/bash-completion/completions/strata
[ -f "$completion" ] || fail "the package lacks /usr/share/bash-completion/completions/strata"
got=$("${clean[@]}" bash -c "PATH=$usr/bin:\$PATH; source '$completion'; complete -p strata >/dev/null &&
  COMP_WORDS=(strata ana); COMP_CWORD=1; _strata; printf '%s ' \"\${COMPREPLY[@]}\"")
[ "$got" = "analyze " ] || fail "completing 'strata ana<TAB>' gave '$got', expected 'analyze'"
echo "   strata ana<TAB> -> $got"

mkdir -p "$work/consumer"
cat >"$work/consumer/main.cc" <<'EOF'
#include <strata/strata.hpp>
int main(int argc, char** argv) {
  if (argc < 2 || strata_start(argv[1], STRATA_LEVEL_LAYER) != 1) return 1;
  for (int i = 0; i < 3; ++i) {
    strata::Span step("consumer_step", STRATA_LEVEL_MODEL);
    step.set("index", i);
  }
  strata_stop();
  return 0;
}
EOF
cat >"$work/consumer/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(strata_consumer CXX)
find_package(Strata 0.1 REQUIRED)
add_executable(consumer main.cc)
target_link_libraries(consumer PRIVATE Strata::strata)
EOF
# Reads a consumer's trace back: `strata info` must see the three spans, the CSV their name.
check_trace() {
  local trace=$1 what=$2
  "${clean[@]}" "$usr/bin/strata" info "$trace" >"$work/info.txt" || fail "$what: strata info $trace failed"
  grep -q "^spans: 3 in 1 process" "$work/info.txt" || { cat "$work/info.txt"; fail "$what: expected 3 spans"; }
  "${clean[@]}" "$usr/bin/strata" export "$trace" --format csv >"$work/spans.csv"
  [ "$(grep -c consumer_step "$work/spans.csv")" = 3 ] || fail "$what: the CSV lacks the 3 consumer_step spans"
}
step "find_package(Strata) project (CMAKE_PREFIX_PATH=$usr)"
"${clean[@]}" cmake -S "$work/consumer" -B "$work/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$usr" \
  >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "configuring the find_package project failed"; }
"${clean[@]}" cmake --build "$work/consumer/build" >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "building the find_package project failed"; }
ldd "$work/consumer/build/consumer" >"$work/consumer.ldd" 2>&1 || true
grep -q "$usr/$libdir/libstrata.so.0" "$work/consumer.ldd" ||
  { cat "$work/consumer.ldd"; readelf -d "$work/consumer/build/consumer" | grep -iE "runpath|rpath|needed";
    fail "the consumer does not load the package's libstrata ($usr/$libdir/libstrata.so.0)"; }
"${clean[@]}" "$work/consumer/build/consumer" "$work/cmake.strata" || fail "the find_package consumer failed"
check_trace "$work/cmake.strata" "find_package consumer"

step "pkg-config build (PKG_CONFIG_PATH=$usr/$libdir/pkgconfig)"
cat >"$work/consumer/main.c" <<'EOF'
#include <strata/strata.h>
int main(int argc, char** argv) {
  if (argc < 2 || strata_start(argv[1], STRATA_LEVEL_LAYER) != 1) return 1;
  for (int i = 0; i < 3; ++i) strata_span_end(strata_span_begin("consumer_step", STRATA_LEVEL_MODEL));
  strata_stop();
  return 0;
}
EOF
pc=("${clean[@]}" "PKG_CONFIG_PATH=$usr/$libdir/pkgconfig" pkg-config)
[ "$("${pc[@]}" --modversion strata)" = "$version" ] || fail "pkg-config --modversion strata is not $version"
read -r -a flags <<<"$("${pc[@]}" --cflags --libs strata)"
# The unpacked root is not on the loader's path (a real install is, in /usr/lib): point an RPATH at it.
"${clean[@]}" cc -o "$work/consumer/consumer_c" "$work/consumer/main.c" "${flags[@]}" \
  "-Wl,-rpath,$("${pc[@]}" --variable=libdir strata)" || fail "the pkg-config build failed"
"${clean[@]}" "$work/consumer/consumer_c" "$work/pc.strata" || fail "the pkg-config consumer failed"
check_trace "$work/pc.strata" "pkg-config consumer"

# PYTHONPATH stands in for the system path the real install lands in (/usr/lib/python3/dist-packages);
# the package must find libstrata.so on its own (no STRATA_LIB).
step "/usr/bin/python3 -c 'import strata' from the package"
"${clean[@]}" "PYTHONPATH=$usr/$pydir" /usr/bin/python3 - "$usr/$libdir" "$work/py.strata" <<'EOF'
import os, sys
import strata
libdir, out = sys.argv[1], sys.argv[2]
assert strata._lib is not None, "the installed package did not find libstrata.so"
lib = os.path.realpath(strata._lib._name)
assert os.path.dirname(lib) == os.path.realpath(libdir), f"libstrata loaded from {lib}, not from {libdir}"
assert strata.start(out, "model"), "strata.start failed"
for i in range(3):
    with strata.span("consumer_step", level="model", index=i):
        pass
strata.stop()
EOF
check_trace "$work/py.strata" "import strata"
if /usr/bin/python3 -c "import pandas" 2>/dev/null; then
  step "strata.load from the package (libstrata_analysis_capi.so found without variables)"
  "${clean[@]}" "PYTHONPATH=$usr/$pydir" /usr/bin/python3 - "$work/py.strata" <<'EOF' || fail "strata.load from the package failed"
import sys
import strata
spans = strata.load(sys.argv[1]).spans
assert (spans["name"] == "consumer_step").sum() == 3, spans
EOF
fi

if [ -e "$usr/$libdir/libstrata_torch.so" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  step "strata record --level layer of a PyTorch script"
  cat >"$work/torch_script.py" <<'EOF'
import os, sys
# strata record must not put the package's dist-packages on PYTHONPATH: on a real install that is
# /usr/lib/python3/dist-packages, whose packages (Debian's torch) would shadow a virtualenv's.
for entry in filter(None, os.environ.get("PYTHONPATH", "").split(":")):
    assert os.path.realpath(entry) != os.path.realpath(sys.argv[1]), f"PYTHONPATH has {entry}"
    names = set(os.listdir(entry)) - {"__pycache__"}
    assert names <= {"strata", "sitecustomize.py"}, f"PYTHONPATH entry {entry} holds {sorted(names)}"
import torch
import strata
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
for i in range(3):
    with strata.span("consumer_step", level="model"):
        model(torch.randn(4, 32))
EOF
  (cd "$work" && "${clean[@]}" "$usr/bin/strata" record --quiet -o "$work/rec.strata" --level layer -- \
    /usr/bin/python3 "$work/torch_script.py" "$usr/$pydir" 2>"$work/rec.err") || {
    cat "$work/rec.err" >&2; fail "strata record of the PyTorch script failed"; }
  grep -q "layer tracer: prebuilt bridge" "$work/rec.err" || { cat "$work/rec.err" >&2; fail "installed tree: not the prebuilt bridge"; }
  # The bridge compiled at first use from the sources installed with the package (docs/torch.md).
  if command -v c++ >/dev/null; then
    (cd "$work" && "${clean[@]}" XDG_CACHE_HOME="$work/cache" STRATA_TORCH_BRIDGE=compile "$usr/bin/strata" record \
      --quiet -o "$work/rec-compiled.strata" --level layer -- /usr/bin/python3 "$work/torch_script.py" "$usr/$pydir" \
      2>"$work/rec-compiled.err") || { cat "$work/rec-compiled.err" >&2; fail "strata record with the compiled bridge failed"; }
    grep -q "layer tracer: compiled bridge (compiled in" "$work/rec-compiled.err" ||
      { cat "$work/rec-compiled.err" >&2; fail "installed tree: the bridge was not compiled at first use"; }
    # Through a file: under pipefail, grep -q closing the pipe early would fail the export (SIGPIPE).
    "${clean[@]}" "$usr/bin/strata" export "$work/rec-compiled.strata" --format csv -o "$work/rec-compiled.csv"
    grep -q "aten::addmm" "$work/rec-compiled.csv" || fail "compiled bridge: no PyTorch op spans"
    echo "   bridge compiled at first use from the installed sources"
  fi
  "${clean[@]}" "$usr/bin/strata" export "$work/rec.strata" --format csv >"$work/rec.csv"
  [ "$(grep -c consumer_step "$work/rec.csv")" = 3 ] || fail "strata record: the 3 consumer_step spans are missing"
  grep -q "aten::linear\|aten::addmm" "$work/rec.csv" || fail "strata record: no PyTorch op spans (layer tracer not loaded?)"
  echo "   $(grep -c . "$work/rec.csv") CSV lines, PyTorch ops traced"
else
  echo "-- strata record of a PyTorch script: skipped (no PyTorch tracer built or no torch)"
fi
echo "install_test: OK ($(($(date +%s) - start)) s)"
