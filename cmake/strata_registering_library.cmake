# strata_registering_library(NAME SOURCES...): a static library whose object files register
# themselves at startup (STRATA_REGISTER_ANALYSIS, src/analysis/analysis.h). Nothing calls into such
# an object file by name, so a plain static link would drop it and its analysis with it. NAME is an
# INTERFACE target that links the archive, NAME_archive, whole ($<LINK_LIBRARY:WHOLE_ARCHIVE>), in
# every program that links NAME, directly or through another library.
# Give NAME_archive the sources' own link libraries and definitions (PUBLIC ones reach NAME's users);
# link NAME, never NAME_archive: CMake refuses a link where one archive is taken both whole and plain.
function(strata_registering_library name)
  add_library(${name}_archive STATIC ${ARGN})
  # A registration names its source file (__FILE__) in registry errors: as a path in the project,
  # so that no build or source path is baked into the installed program (scripts/install_test.sh).
  target_compile_options(${name}_archive PRIVATE "-fmacro-prefix-map=${PROJECT_SOURCE_DIR}/=")
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${name}_archive>")
  get_property(registering GLOBAL PROPERTY STRATA_REGISTERING_LIBRARIES)
  if(NOT registering)
    cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL strata_check_registering_links)
  endif()
  set_property(GLOBAL APPEND PROPERTY STRATA_REGISTERING_LIBRARIES ${name})
endfunction()

# The targets TARGET links, directly or not (LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES, through
# $<LINK_LIBRARY:...> and $<LINK_ONLY:...>), into OUT.
function(strata_link_closure target out)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue current)
    if(current IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${current})
    get_target_property(type ${current} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${current} LINK_LIBRARIES)
    endif()
    get_target_property(interface_links ${current} INTERFACE_LINK_LIBRARIES)
    foreach(item IN LISTS links interface_links)
      string(REGEX REPLACE "^\\$<LINK_LIBRARY:[A-Z_]+,(.+)>$" "\\1" item "${item}")
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.+)>$" "\\1" item "${item}")
      if(TARGET "${item}")
        list(APPEND queue ${item})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# At the end of configuration: no registering library links, directly or not, a library that links
# it back (the link cycle analysis <-> iterations <-> lowerbound that the registry once needed).
function(strata_check_registering_links)
  get_property(registering GLOBAL PROPERTY STRATA_REGISTERING_LIBRARIES)
  foreach(name ${registering})
    strata_link_closure(${name}_archive closure)
    if(${name} IN_LIST closure)
      message(FATAL_ERROR "link cycle: ${name}_archive links, through one of ${closure}, a library that "
                          "links ${name} back; a module links only the modules below it (docs/architecture.md)")
    endif()
  endforeach()
endfunction()
