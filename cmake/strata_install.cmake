# What `cmake --install` adds beyond each module's install(TARGETS ...): headers, the Python package,
# the CMake package (find_package(Strata) -> Strata::strata) and strata.pc; then the Debian package
# (`cpack -G DEB`) made from the same rules. scripts/bundle.sh installs with these rules too.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/strata DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY python/strata DESTINATION ${STRATA_INSTALL_PYTHONDIR} PATTERN "__pycache__" EXCLUDE)
# Tells the installed package where the libraries are relative to it (no STRATA_LIB needed).
install(FILES ${STRATA_GENERATED_DIR}/_install_layout.py DESTINATION ${STRATA_INSTALL_PYTHONDIR}/strata)
# lib/strata/python/strata -> the package (relative link): what `strata record` adds to PYTHONPATH.
file(MAKE_DIRECTORY ${STRATA_GENERATED_DIR}/record_python)
file(CREATE_LINK ${STRATA_PACKAGE_FROM_RECORD_PYTHONDIR} ${STRATA_GENERATED_DIR}/record_python/strata SYMBOLIC)
install(DIRECTORY ${STRATA_GENERATED_DIR}/record_python/ DESTINATION ${STRATA_RECORD_PYTHONDIR})

set(strata_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION ${strata_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/StrataConfig.cmake.in
  ${STRATA_GENERATED_DIR}/StrataConfig.cmake INSTALL_DESTINATION ${strata_cmake_dir})
# 0.x: minor versions may break the API.
write_basic_package_version_file(${STRATA_GENERATED_DIR}/StrataConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${STRATA_GENERATED_DIR}/StrataConfig.cmake ${STRATA_GENERATED_DIR}/StrataConfigVersion.cmake
  DESTINATION ${strata_cmake_dir})
configure_file(${CMAKE_CURRENT_LIST_DIR}/strata.pc.in ${STRATA_GENERATED_DIR}/strata.pc @ONLY)
install(FILES ${STRATA_GENERATED_DIR}/strata.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Debian package: `cpack -G DEB` in the build directory -> strata_<version>_<arch>.deb, prefix /usr.
set(CPACK_PACKAGE_NAME strata)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Strata")
set(STRATA_PACKAGE_MAINTAINER "Strata maintainers <strata-maintainers@localhost>" CACHE STRING
    "Maintainer field of the .deb (Name <address>)")
set(CPACK_PACKAGE_CONTACT "${STRATA_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "across-stack profiler and analyzer for ML workloads")
# Lines under 80 columns (Debian's control-file convention).
set(CPACK_PACKAGE_DESCRIPTION "Strata records spans from the application down to GPU kernels (span
API, PyTorch layer tracer, oneDNN, cuDNN/cuBLAS, CUPTI and NVTX collectors)
and analyzes the traces (per-layer and per-kernel tables, rooflines,
lower-bound latency). Includes the strata tool, libstrata with its C/C++
span API, the CMake package and pkg-config file, and the Python package.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Dependencies: dpkg-shlibdeps reads every ELF file's needs. Libraries that no Debian package
# provides (CUDA's libcupti, libcudart, libcublas, libcudnn: the GPU machine's own) are left out by
# CPack's --ignore-missing-info; the CUDA collectors load only where they are present.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
# g++: the layer tracer compiles its PyTorch bridge for a torch other than Debian's (docs/torch.md).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, g++")
# strata.load (python/strata/_analysis.py) needs numpy and pandas; the span API and strata.profile do not.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-numpy, python3-pandas")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# ldconfig as a dpkg trigger, as Debian policy asks (CPack's postinst/postrm also call it directly).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/triggers)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
include(CPack)
