# Install rules and the CMake package, so that an application outside this tree can
# find_package(tl) (examples/inline_app), plus a Debian package of the same files (CPack).
#
#   cmake --install build --prefix /opt/tl       include/tl/*.hpp, lib/libtl.so,
#                                                 lib/cmake/tl/tl{Config,ConfigVersion,Targets}.cmake,
#                                                 bin/tl-cache
#   (cd build && cpack -G DEB)                    tl_<version>_<arch>.deb, the same under /usr
#
# Both take what is built: `cmake --build build` (or `--target tl tl-cache`) first.
#
# Only libtl, its public headers and tl-cache are installed: tests, samples and benchmarks
# are for this tree.
include(GNUInstallDirs)
# `cmake --install` and cpack take the tree as built (build first): without this, cpack
# and the install target would first build every target of the tree, tests and
# benchmarks included, which the test suite's packaging check (tests/install) must not do.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CMakePackageConfigHelpers)

# The public headers: dsl/include in this tree, <prefix>/include once installed.
target_include_directories(tl PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/dsl/include>
                                     $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The installed libtl has no RUNPATH: libllvm22 puts libLLVM.so.22.1 in the loader's own
# directory (/usr/lib/<triplet>), and through llvm-22-dev's /usr/lib/llvm-22/lib symlink
# dpkg-shlibdeps would not find the package that owns it. tl-cache finds libtl beside it.
set_target_properties(tl-cache PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS tl EXPORT tlTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/dsl/include/tl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(TARGETS tl-cache RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(TL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tl)
install(EXPORT tlTargets NAMESPACE tl:: DESTINATION ${TL_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/tlConfig.cmake.in ${CMAKE_BINARY_DIR}/tlConfig.cmake
                              INSTALL_DESTINATION ${TL_CMAKE_DIR})
# 0.x: a new minor version may change the API (and the cache format), so only the same
# major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tlConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tlConfig.cmake ${CMAKE_BINARY_DIR}/tlConfigVersion.cmake DESTINATION ${TL_CMAKE_DIR})

# The Debian package: the same files under /usr. dpkg-shlibdeps (dpkg-dev, installed by
# tools/install-deps.sh) computes Depends from what libtl and tl-cache link (LLVM 22, fmt,
# xxhash, libstdc++); comgr, HIP and the CUDA driver are optional, loaded at run time.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "C++20 tile language with a runtime JIT for AMD GPUs, NVIDIA GPUs and the CPU")
set(CPACK_PACKAGE_CONTACT "tl developers <tl@invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libamd-comgr2")
include(CPack)
