#!/usr/bin/env bash
# tl as a library other programs use (cmake/install.cmake), tested from the outside:
#
#   install_test.sh app SRC BUILD   `cmake --install` into a fresh prefix; the files an
#                                   application needs are there and nothing of the tree's
#                                   private code; examples/inline_app configured with
#                                   find_package(tl) against that prefix alone, built, run
#                                   on the detected device; the installed tl-cache lists
#                                   the kernel it compiled; the package version file.
#   install_test.sh deb SRC BUILD   the Debian package (cpack -G DEB): its exact file list
#                                   under /usr, its Depends (dpkg-shlibdeps ran), and the
#                                   example configured against the unpacked package.
#
# Uses the build tree as built (no rebuild): CI runs it from ctest after tools/build.sh.
set -euo pipefail
mode=$1 SRC=$2 BUILD=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test ($mode): $*" >&2; exit 1; }
# The example compiles in a few seconds; ccache (when the tree uses it) makes reruns instant.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# Configures examples/inline_app against the tl package under $1 (and nothing else: no
# system prefix could supply tl by accident, find_package must take this one).
configure_app() {
  cmake -S "$SRC/examples/inline_app" -B "$2" -DCMAKE_PREFIX_PATH="$1" -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
        -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; fail "examples/inline_app does not configure against $1"; }
  local found
  found=$(sed -n 's/^tl_DIR:PATH=//p' "$2/CMakeCache.txt")
  [[ $found == "$1"/* ]] || fail "find_package(tl) found '$found', not the package under $1"
}

case $mode in
app)
  prefix=$work/prefix
  cmake --install "$BUILD" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install failed"; }
  config=$(find "$prefix" -name tlConfig.cmake)
  [[ -n $config ]] || fail "no tlConfig.cmake under $prefix"
  cmakedir=$(dirname "$config")
  libdir=$(dirname "$(dirname "$cmakedir")")
  for f in "$prefix/include/tl/tl.hpp" "$libdir/libtl.so" "$cmakedir/tlConfigVersion.cmake" "$cmakedir/tlTargets.cmake" \
           "$prefix/bin/tl-cache"; do
    [[ -e $f ]] || fail "missing $f"
  done
  # The public headers, all of them and only them: the tree's private headers (codegen,
  # runtime, the tracer's) include LLVM or are not an interface.
  diff <(cd "$SRC/dsl/include/tl" && ls *.hpp) <(cd "$prefix/include/tl" && ls) ||
    fail "installed headers differ from dsl/include/tl"
  [[ -z $(find "$prefix" -name '*.hpp' -not -path "$prefix/include/tl/*") ]] || fail "headers outside include/tl"

  configure_app "$prefix" "$work/app"
  cmake --build "$work/app" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "examples/inline_app does not build"; }
  out=$(TL_CACHE_DIR=$work/cache "$work/app/inline_app") || fail "inline_app failed: $out"
  echo "$out"
  [[ $out == *", ok" ]] || fail "inline_app: $out"
  list=$("$prefix/bin/tl-cache" --dir "$work/cache" list) || fail "installed tl-cache failed"
  echo "$list"
  grep -q ' softmax ' <<<"$list" || fail "installed tl-cache does not list the app's kernel"

  # tlConfigVersion.cmake: this major.minor (any patch) and nothing else.
  version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$cmakedir/tlConfigVersion.cmake")
  IFS=. read -r major minor _ <<<"$version"
  # (What find_package(tl X.Y) sets before it reads the file.)
  printf 'include(${F})\nmessage("${PACKAGE_VERSION_COMPATIBLE}")\n' >"$work/version.cmake"
  compatible() {
    cmake -DPACKAGE_FIND_VERSION="$1" -DPACKAGE_FIND_VERSION_MAJOR="${1%%.*}" -DPACKAGE_FIND_VERSION_MINOR="${1#*.}" \
          -DF="$cmakedir/tlConfigVersion.cmake" -P "$work/version.cmake" 2>&1
  }
  [[ $(compatible "$major.$minor") == TRUE ]] || fail "version $version does not satisfy find_package(tl $major.$minor)"
  [[ $(compatible "$major.$((minor + 1))") == FALSE ]] || fail "version $version satisfies a newer minor version"
  [[ $(compatible "$((major + 1)).0") == FALSE ]] || fail "version $version satisfies a newer major version"
  echo "install_test: installed tl $version into a fresh prefix; inline_app built with find_package(tl) and ran"
  ;;
deb)
  (cd "$work" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$work/deb") >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
  deb=$(ls "$work"/deb/*.deb)
  [[ $(wc -l <<<"$deb") == 1 ]] || fail "expected one .deb, got: $deb"
  echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
  # Exactly these files (directories aside), under /usr.
  actual=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort)
  expected=$( (cd "$SRC/dsl/include/tl" && ls *.hpp | sed 's|^|/usr/include/tl/|'
               echo /usr/bin/tl-cache
               echo /usr/lib/libtl.so
               for f in tlConfig.cmake tlConfigVersion.cmake tlTargets.cmake; do echo "/usr/lib/cmake/tl/$f"; done) | sort)
  # The per-configuration targets file is named after the build type (tlTargets-release.cmake).
  actual_no_config=$(grep -v '^/usr/lib/cmake/tl/tlTargets-[a-z]*\.cmake$' <<<"$actual" || true)
  [[ $(grep -c '^/usr/lib/cmake/tl/tlTargets-[a-z]*\.cmake$' <<<"$actual") == 1 ]] || fail "no per-configuration targets file"
  # (A multiarch libdir, when the tree was configured for prefix /usr, is lib/<triplet>.)
  actual_no_config=$(sed -E 's|^/usr/lib/[a-z0-9_]+-linux-gnu/|/usr/lib/|' <<<"$actual_no_config")
  diff <(echo "$expected") <(echo "$actual_no_config") || fail "the package's file list differs (< expected, > packaged)"
  [[ $(dpkg-deb -f "$deb" Package) == tl ]] || fail "package name"
  depends=$(dpkg-deb -f "$deb" Depends)
  echo "Depends: $depends"
  for lib in libc6 libstdc++6 libfmt; do [[ $depends == *$lib* ]] || fail "Depends lacks $lib (dpkg-shlibdeps)"; done
  if readelf -d "$BUILD/libtl.so" | grep -q 'NEEDED.*libLLVM'; then
    [[ $depends == *libllvm* ]] || fail "libtl links libLLVM but Depends lacks libllvm"
  fi
  # The unpacked package is a complete, relocatable prefix: find_package(tl) resolves every
  # file tlTargets.cmake names.
  dpkg-deb -x "$deb" "$work/root"
  configure_app "$work/root/usr" "$work/app"
  echo "install_test: $(basename "$deb") holds the expected files; inline_app configures against it"
  ;;
*) fail "unknown mode (app or deb)" ;;
esac
