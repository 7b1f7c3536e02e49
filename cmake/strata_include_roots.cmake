# The module map of docs/architecture.md as include paths (docs/architecture.md, "The map in the
# build"). scripts/include_roots.py makes one include folder per row of the map; every target
# compiled from the repository gets the folder of the row its sources belong to, and nothing else
# from src/ or include/: a module's include of a module its row does not allow fails to compile
# ("No such file or directory"), as scripts/check_includes.py reports it.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(STRATA_INCLUDE_ROOTS ${CMAKE_BINARY_DIR}/include_roots)
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/include_roots.py ${PROJECT_SOURCE_DIR}
          ${STRATA_INCLUDE_ROOTS}
  RESULT_VARIABLE strata_roots_result ERROR_VARIABLE strata_roots_error)
if(NOT strata_roots_result EQUAL 0)
  message(FATAL_ERROR "include roots: docs/architecture.md's module map could not be read:\n"
                      "${strata_roots_error}fix the table (scripts/check_includes.py names each problem)")
endif()
include(${STRATA_INCLUDE_ROOTS}/rows.cmake)
# A changed table, or a header added to a module whose folder is linked entry by entry, reconfigures.
file(GLOB_RECURSE strata_roots_headers CONFIGURE_DEPENDS LIST_DIRECTORIES false
     ${PROJECT_SOURCE_DIR}/src/*.h ${PROJECT_SOURCE_DIR}/src/*.inc)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/docs/architecture.md ${PROJECT_SOURCE_DIR}/scripts/include_roots.py
  ${PROJECT_SOURCE_DIR}/scripts/check_includes.py)

# The deepest row holding repository-relative PATH, or "" when none does.
function(strata_row_of path out)
  foreach(folder ${STRATA_INCLUDE_ROW_FOLDERS})
    string(FIND "${path}" "${folder}/" position)
    if(position EQUAL 0)
      set(${out} ${folder} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# Gives TARGET the include folder of its row: the row of its sources in the repository (generated
# sources are not counted), or, when they span rows (a test compiling another area's helper), the
# row of the folder that defines the target.
function(strata_apply_include_root target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(rows "")
  foreach(source ${sources})
    if(source MATCHES "^\\$<")
      continue()  # a generator expression (not used for sources here)
    endif()
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${source_dir} NORMALIZE OUTPUT_VARIABLE absolute)
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR ${absolute} NORMALIZE inside)
    cmake_path(IS_PREFIX CMAKE_BINARY_DIR ${absolute} NORMALIZE generated)
    if(NOT inside OR generated)
      continue()
    endif()
    file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${absolute})
    strata_row_of(${relative} row)
    list(APPEND rows ${row})
  endforeach()
  list(REMOVE_DUPLICATES rows)
  list(LENGTH rows count)
  if(NOT count EQUAL 1)
    file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${source_dir})
    strata_row_of(${relative}/ rows)
  endif()
  if(rows STREQUAL "")
    message(FATAL_ERROR "include roots: target ${target} (${source_dir}) belongs to no row of "
                        "docs/architecture.md's module map or areas table; add its folder's row")
  endif()
  string(REPLACE "/" "." root ${rows})
  target_include_directories(${target} PRIVATE ${STRATA_INCLUDE_ROOTS}/${root})
  set_property(TARGET ${target} PROPERTY STRATA_INCLUDE_ROW ${rows})
endfunction()

# Every target of DIRECTORY and of the folders below it.
function(strata_apply_include_roots directory)
  get_property(targets DIRECTORY ${directory} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    strata_apply_include_root(${target})
  endforeach()
  get_property(subdirectories DIRECTORY ${directory} PROPERTY SUBDIRECTORIES)
  foreach(subdirectory ${subdirectories})
    strata_apply_include_roots(${subdirectory})
  endforeach()
endfunction()
