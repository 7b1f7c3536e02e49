#!/usr/bin/env bash
# Relocatable Strata tree: `cmake --install` into a staging dir, then copy every non-system shared
# library the binaries need into lib/ (RUNPATH $ORIGIN, so they find each other wherever the tree is
# moved). CUDA libraries (libcuda, libcupti, libcudnn*, libcublas*, libcudart, libnvperf*, ...) are
# NOT bundled: they must come from the target machine, matching its driver; nor are PyTorch's own
# libraries (libtorch*, libc10*, libpython3*). glibc and the dynamic
# loader are not bundled either: the target needs glibc >= the build machine's.
#
# usage: scripts/bundle.sh BUILD_DIR OUT.tar.gz      -> OUT.tar.gz (top folder: strata/)
#        scripts/bundle.sh BUILD_DIR --dir DIR       -> the tree in DIR (no archive)
set -euo pipefail
usage() { echo "usage: $0 BUILD_DIR (OUT.tar.gz | --dir DIR)" >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$(realpath "$1")
[ -f "$build/CMakeCache.txt" ] || { echo "bundle.sh: $build is not a CMake build directory (no CMakeCache.txt)" >&2; exit 1; }
command -v patchelf >/dev/null || { echo "bundle.sh: patchelf not found: apt-get install patchelf (scripts/setup.sh lists it)" >&2; exit 1; }
archive=""
if [ "$2" = "--dir" ]; then
  [ $# -eq 3 ] || usage
  stage=$3
  rm -rf "$stage"
else
  archive=$(realpath -m "$2")
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  stage=$work/strata
fi
mkdir -p "$stage"
stage=$(realpath "$stage")
cmake --install "$build" --prefix "$stage" >/dev/null

# Left to the target machine: the C runtime and loader, everything CUDA / NVIDIA (must match the
# driver), and the ML framework's own libraries (the target's PyTorch, not this machine's).
is_left_to_target() {
  case "$1" in
    libtorch*|libc10*|libshm.so*|libpython3*) return 0 ;;
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*|libresolv.so*) return 0 ;;
    libcuda.so*|libcupti.so*|libcudnn*|libcublas*|libcudart.so*|libnvperf*|libnvrtc*|libnvidia*|libnvToolsExt*|libcufft*|libcurand*|libcusparse*|libcusolver*|libnccl*|libnvJitLink*) return 0 ;;
  esac
  return 1
}

bundled=0
declare -A seen=()
pending=$(find "$stage/bin" "$stage/lib" -maxdepth 1 -type f \( -perm -u+x -o -name '*.so*' \) )
# Walk DT_NEEDED entries (direct dependencies) rather than ldd's flattened list, so nothing is
# pulled in on behalf of a library that is itself left to the target (libtorch's own dependencies).
while [ -n "$pending" ]; do
  next=""
  for elf in $pending; do
    file -L "$elf" | grep -q ELF || continue
    declare -A where=()
    while read -r name path; do where[$name]=$path; done < <(ldd "$elf" 2>/dev/null | awk '/=>/ {print $1, $3}')
    for name in $(readelf -d "$elf" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}'); do
      is_left_to_target "$name" && continue
      [ -n "${seen[$name]:-}" ] && continue
      seen[$name]=1
      case "$name" in libstrata*) [ -e "$stage/lib/$name" ] && continue ;; esac
      path=${where[$name]:-}
      if [ -z "$path" ] || [ "$path" = "not" ]; then
        echo "bundle.sh: $elf needs $name, which this machine does not have either; install it and rerun" >&2
        exit 1
      fi
      [ -e "$stage/lib/$name" ] && continue
      cp -L "$path" "$stage/lib/$name"
      chmod u+w "$stage/lib/$name"
      patchelf --set-rpath '$ORIGIN' "$stage/lib/$name"
      bundled=$((bundled + 1))
      next="$next $stage/lib/$name"
    done
    unset where
  done
  pending=$next
done
echo "bundle.sh: $bundled libraries bundled into $stage/lib"
# Debug information stays with the build (a RelWithDebInfo build's is most of its size): the bundle
# carries code and symbols, as a release package does.
while read -r elf; do
  file -L "$elf" | grep -q ELF && strip --strip-debug "$elf"
done < <(find "$stage" -type f \( -name '*.so*' -o -perm -u+x \))

if [ -n "$archive" ]; then
  tar -C "$(dirname "$stage")" -czf "$archive" strata
  size=$(stat -c %s "$archive")
  echo "bundle.sh: $archive ($((size / 1024 / 1024)) MiB)"
  if [ "$size" -gt $((64 * 1024 * 1024)) ]; then
    echo "bundle.sh: $archive is over 64 MiB: too big to carry to the device machine" >&2
    exit 1
  fi
fi
