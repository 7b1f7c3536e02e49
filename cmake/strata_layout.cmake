# Install layout (GNUInstallDirs), decided before any target exists: the RPATHs and the paths the
# strata executable and the Python package use to find the libraries are relative to where each one
# is installed, so the tree works under any prefix (/usr from the .deb, /usr/local, a bundle dir).
include(GNUInstallDirs)
# Where Debian's /usr/bin/python3 finds packages under /usr. (Under /usr/local it looks in
# lib/python3.X/dist-packages instead: pass that here to install there.)
set(STRATA_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
    "Python package directory, relative to the install prefix")

function(strata_relative_install_path out from to)
  # Relative paths in the install tree, whatever the prefix is (absolute dirs are taken as given).
  foreach(var from to)
    if(NOT IS_ABSOLUTE "${${var}}")
      set(${var} "/strata_prefix/${${var}}")
    endif()
  endforeach()
  file(RELATIVE_PATH rel "${from}" "${to}")
  if(rel STREQUAL "")
    set(rel ".")
  endif()
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()
strata_relative_install_path(STRATA_LIBDIR_FROM_BINDIR ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_LIBDIR})
# What `strata record` puts on the recorded program's PYTHONPATH: a private folder holding only a link
# to the package, never dist-packages itself (that would put the system's packages, e.g. Debian's
# torch, ahead of the program's own virtualenv or pip packages).
set(STRATA_RECORD_PYTHONDIR ${CMAKE_INSTALL_LIBDIR}/strata/python)
strata_relative_install_path(STRATA_PYTHONDIR_FROM_BINDIR ${CMAKE_INSTALL_BINDIR} ${STRATA_RECORD_PYTHONDIR})
strata_relative_install_path(STRATA_PACKAGE_FROM_RECORD_PYTHONDIR ${STRATA_RECORD_PYTHONDIR} ${STRATA_INSTALL_PYTHONDIR}/strata)
strata_relative_install_path(STRATA_LIBDIR_FROM_PYTHON_PACKAGE ${STRATA_INSTALL_PYTHONDIR}/strata ${CMAKE_INSTALL_LIBDIR})
strata_relative_install_path(STRATA_PC_PREFIX_FROM_PCDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig .)

# Relocatable: binaries find libstrata next to them (bin/../lib), wherever the tree is copied.
set(CMAKE_INSTALL_RPATH "$ORIGIN/${STRATA_LIBDIR_FROM_BINDIR};$ORIGIN")
set(CMAKE_BUILD_RPATH_USE_ORIGIN ON)

set(STRATA_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
configure_file(${CMAKE_CURRENT_LIST_DIR}/install_layout.h.in ${STRATA_GENERATED_DIR}/strata_install_layout.h @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/install_layout.py.in ${STRATA_GENERATED_DIR}/_install_layout.py @ONLY)

# `strata --version`: the project version, plus `git describe` taken at build time (every build
# reruns the step; the file changes only when the description does).
add_custom_target(strata_version_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DVERSION=${PROJECT_VERSION}
          -DTEMPLATE=${CMAKE_CURRENT_LIST_DIR}/version.cc.in -DOUT=${STRATA_GENERATED_DIR}/strata_version.cc
          -P ${CMAKE_CURRENT_LIST_DIR}/write_version.cmake
  BYPRODUCTS ${STRATA_GENERATED_DIR}/strata_version.cc
  COMMENT "Strata version (git describe)")
