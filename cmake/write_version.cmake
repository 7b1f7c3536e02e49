# Build-time step (cmake -P): writes OUT with the project version and, where the source is a git
# checkout, `git describe`. configure_file rewrites OUT only when the text changes, so a build after
# a new commit recompiles one file, and a build without one recompiles nothing.
set(describe "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} describe --always --dirty --tags
                  OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    set(describe "")
  endif()
endif()
if(describe STREQUAL "")
  set(STRATA_VERSION_TEXT "${VERSION}")
else()
  set(STRATA_VERSION_TEXT "${VERSION} (${describe})")
endif()
configure_file(${TEMPLATE} ${OUT} @ONLY)
