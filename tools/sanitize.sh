#!/usr/bin/env bash
# The sanitizer job (.ci/run runs it after tools/test.sh): tl and its tests built with
# AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ (the whole test suite)
# and with ThreadSanitizer into build-tsan/ (the concurrency tests), next to build/.
# Any report fails the job (halt_on_error); the suppression files in tests/sanitizers/ say what may be
# suppressed (only false positives from uninstrumented code, never tl's own).
#
#   tools/sanitize.sh            both
#   tools/sanitize.sh address    ASan + UBSan only
#   tools/sanitize.sh thread     TSan only (the tests labelled `concurrency`)
#
# Left out under the sanitizers: fuzz.bounded (the fuzzers are built with ASan + UBSan by
# clang already, and run in the normal suite) and compile_fail.* (they only run the
# compiler on files that must not compile). libLLVM is not instrumented; JIT-compiled
# kernels run uninstrumented on tl's (instrumented) thread pool.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUPP=$ROOT/tests/sanitizers
JOBS=$(nproc)
EXCLUDE='^(fuzz|compile_fail)\.'
# The executables whose tests carry the ctest label `concurrency` (tests/CMakeLists.txt).
CONCURRENCY_TESTS=$(sed -n 's/^set(TL_CONCURRENCY_TESTS \(.*\))$/\1/p' "$ROOT/tests/CMakeLists.txt")
[[ -n $CONCURRENCY_TESTS ]] || { echo "sanitize.sh: no TL_CONCURRENCY_TESTS in tests/CMakeLists.txt" >&2; exit 2; }

"$ROOT/tools/install-deps.sh"

# A private cache per run, so tests never see another run's (or another build's) entries.
export TL_CACHE_DIR=${TL_CACHE_DIR:-$(mktemp -d)/tl-cache}

kinds=("$@")
((${#kinds[@]})) || kinds=(address thread)

status=0
for kind in "${kinds[@]}"; do
  case $kind in
    address) dir=$ROOT/build-asan ;;
    thread) dir=$ROOT/build-tsan ;;
    *) echo "sanitize.sh: unknown sanitizer '$kind' (address or thread)" >&2; exit 2 ;;
  esac
  start=$SECONDS
  echo "== tl: building with TL_SANITIZE=$kind into $dir"
  # TSan covers the concurrency tests (ctest label `concurrency`, tests/CMakeLists.txt):
  # only those are built. -O1: the instrumented builds are compiled for the tests only.
  targets=""
  [[ $kind == thread ]] && targets="tl tl-cache $CONCURRENCY_TESTS"
  # ASan with clang 22: its runtime locks its allocator around fork(), GCC 12's does not.
  # A GPU compile runs in a fork of the launching process (codegen/compile_worker.hpp); with
  # GCC's libasan, a fork taken while another thread was inside malloc left the child
  # waiting for ever on the allocator's lock (the CI run of 2afa8af: three tests that
  # compile from several threads hit TL_COMPILE_TIMEOUT_S). glibc's malloc, which users
  # run, is fork-safe.
  # (libclang-rt-22-dev, tools/install-deps.sh, holds its runtime.) A build directory
  # configured by another compiler is made afresh: CMake cannot switch one in place.
  compiler=()
  if [[ $kind == address ]]; then
    compiler=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
    if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-22' "$dir/CMakeCache.txt"; then
      rm -rf "$dir"
    fi
  fi
  if ! TL_BUILD_DIR=$dir TL_BUILD_TARGETS=$targets "$ROOT/tools/build.sh" "${compiler[@]}" -DTL_SANITIZE="$kind" -DTL_BUILD_TESTS=ON \
       -DTL_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"; then
    echo "== tl: the $kind build failed"
    status=1
    continue
  fi
  built=$SECONDS
  echo "== tl: running the tests under $kind sanitizers"
  if [[ $kind == address ]]; then
    # strict_init_order: a static initializer may not touch another file's globals at all
    # (whatever the link order happens to be today).
    # Debian's comgr (ROCm 5.2) leaves threads behind whose stacks LeakSanitizer's
    # stop-the-world tracer crashes on at exit under ctest ("Tracer caught signal 11": a
    # crash of the sanitizer, not a leak; the same test passes run by hand). So the suite
    # links AMD code objects with the in-process lld (tests of the linker choice set
    # TL_AMDGPU_LINKER themselves), and the tests of comgr itself (Comgr.*) run apart,
    # still under ASan and UBSan, without the leak check.
    # use_sigaltstack=0: libLLVM gives the first thread that registers its signal
    # handlers (lld's RemoveFileOnSignal, in whichever thread links first: a tuner's
    # compile thread, say) an alternate signal stack of its own, malloc'd; ASan, at that
    # thread's exit, then munmaps what it takes for its own stack and dies ("failed to
    # deallocate ... unable to unmap", CHECK failed in UnsetAlternateSignalStack). ASan's
    # stacks only serve to report stack overflows, which the tests do not cause.
    asan="halt_on_error=1:use_sigaltstack=0:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:suppressions=$SUPP/asan.supp"
    ubsan="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
    env ASAN_OPTIONS="detect_leaks=1:$asan" LSAN_OPTIONS="suppressions=$SUPP/lsan.supp" UBSAN_OPTIONS="$ubsan" \
        TL_AMDGPU_LINKER=lld \
        ctest --test-dir "$dir" --output-on-failure -j"$JOBS" -E "^Comgr\.${EXCLUDE:+|$EXCLUDE}" || status=1
    env ASAN_OPTIONS="detect_leaks=0:$asan" UBSAN_OPTIONS="$ubsan" \
        ctest --test-dir "$dir" --output-on-failure -j"$JOBS" -R "^Comgr\." ${EXCLUDE:+-E "$EXCLUDE"} || status=1
  else
    env TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp" \
        ctest --test-dir "$dir" --output-on-failure -j"$JOBS" -L concurrency -E "$EXCLUDE" || status=1
  fi
  echo "== tl: $kind: build $((built - start)) s, tests $((SECONDS - built)) s"
done
exit $status
