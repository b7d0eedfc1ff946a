# Writes strider.pc from the link graph of the strider::strider target, so the pkg-config link
# line names exactly what the CMake package links: every layer library in dependency order, and
# each external dependency (oneDNN, MPI when built, zlib, OpenMP) with the paths and flags this
# configure step found for it. Relocatable: the prefix is taken from the .pc file's location.

# Collects what `item` contributes in global properties: link inputs in post-order (a library
# after everything it needs; reversed at the end for static linking order) and compile flags.
function(_strider_pc_walk item)
  if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
    set(item "${CMAKE_MATCH_1}")
  endif()
  if(item MATCHES "^\\$<")  # other generator expressions (build/install interface) carry no link input
    return()
  endif()
  get_property(seen GLOBAL PROPERTY _strider_pc_seen)
  if(item IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _strider_pc_seen "${item}")
  if(TARGET ${item})
    get_target_property(real ${item} ALIASED_TARGET)
    if(real)
      set(item ${real})
    endif()
    get_target_property(type ${item} TYPE)
    get_target_property(imported ${item} IMPORTED)
    set(deps "")
    foreach(prop INTERFACE_LINK_LIBRARIES LINK_LIBRARIES)
      if(NOT (prop STREQUAL "LINK_LIBRARIES" AND (imported OR type STREQUAL "INTERFACE_LIBRARY")))
        get_target_property(more ${item} ${prop})
        if(more)
          list(APPEND deps ${more})
        endif()
      endif()
    endforeach()
    foreach(d IN LISTS deps)
      _strider_pc_walk("${d}")
    endforeach()
    if(type STREQUAL "INTERFACE_LIBRARY")
    elseif(NOT imported)
      set_property(GLOBAL APPEND PROPERTY _strider_pc_libs "-l$<TARGET_PROPERTY:${item},OUTPUT_NAME>")
    else()
      set_property(GLOBAL APPEND PROPERTY _strider_pc_libs "$<TARGET_LINKER_FILE:${item}>")
    endif()
    if(imported)
      foreach(prop INTERFACE_COMPILE_OPTIONS INTERFACE_INCLUDE_DIRECTORIES INTERFACE_COMPILE_DEFINITIONS
                   INTERFACE_LINK_OPTIONS)
        get_target_property(vals ${item} ${prop})
        if(NOT vals)
          continue()
        endif()
        foreach(v IN LISTS vals)
          string(REGEX REPLACE "^\\$<\\$<COMPILE_LANGUAGE:CXX>:(.*)>$" "\\1" v "${v}")
          string(REGEX REPLACE "^SHELL:" "" v "${v}")
          if(v MATCHES "^\\$<")
            continue()
          endif()
          if(prop STREQUAL "INTERFACE_INCLUDE_DIRECTORIES")
            if(v STREQUAL "/usr/include")  # the compiler's own search path
              continue()
            endif()
            set_property(GLOBAL APPEND PROPERTY _strider_pc_cflags "-I${v}")
          elseif(prop STREQUAL "INTERFACE_COMPILE_DEFINITIONS")
            set_property(GLOBAL APPEND PROPERTY _strider_pc_cflags "-D${v}")
          elseif(prop STREQUAL "INTERFACE_LINK_OPTIONS")
            set_property(GLOBAL APPEND PROPERTY _strider_pc_libs "${v}")
          else()
            set_property(GLOBAL APPEND PROPERTY _strider_pc_cflags "${v}")
          endif()
        endforeach()
      endforeach()
    endif()
  elseif(item MATCHES "^-" OR IS_ABSOLUTE "${item}")  # a flag, or a full path to a library
    set_property(GLOBAL APPEND PROPERTY _strider_pc_libs "${item}")
  elseif(item MATCHES "::")
    message(FATAL_ERROR "strider.pc: target ${item} is not visible here; find its package in the top CMakeLists.txt")
  elseif(item)
    set_property(GLOBAL APPEND PROPERTY _strider_pc_libs "-l${item}")  # a plain library name (dl, m)
  endif()
endfunction()

set_property(GLOBAL PROPERTY _strider_pc_seen "")
set_property(GLOBAL PROPERTY _strider_pc_libs "")
set_property(GLOBAL PROPERTY _strider_pc_cflags "")
_strider_pc_walk(strider)
get_property(_pc_libs GLOBAL PROPERTY _strider_pc_libs)
get_property(_pc_cflags GLOBAL PROPERTY _strider_pc_cflags)
list(REMOVE_DUPLICATES _pc_cflags)
list(REVERSE _pc_libs)
list(JOIN _pc_libs " " STRIDER_PC_LIBS)
list(JOIN _pc_cflags " " STRIDER_PC_CFLAGS)
file(RELATIVE_PATH STRIDER_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/strider.pc CONTENT "\
prefix=\${pcfiledir}/${STRIDER_PC_TO_PREFIX}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: strider
Description: C++20 deep learning with PyTorch-exact memory formats and FSDP
Version: ${PROJECT_VERSION}
Cflags: -I\${includedir} -std=c++20 ${STRIDER_PC_CFLAGS}
Libs: -L\${libdir} ${STRIDER_PC_LIBS}
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/strider.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
