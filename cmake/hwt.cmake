# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Helpers shared by every module's CMakeLists.txt.

# hwt_module(<name> SOURCES ... [DEPS ...])
# A module is a static library hwt_<name>; DEPS are other modules (hwt_x)
# or imported dependencies (dep::x). Only the module's folder is private.
function(hwt_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT M_SOURCES)
    # A module that has no code yet is an interface placeholder, so that
    # dependents link the same way before and after it lands.
    add_library(hwt_${name} INTERFACE)
    target_link_libraries(hwt_${name} INTERFACE ${M_DEPS})
    return()
  endif()
  add_library(hwt_${name} STATIC ${M_SOURCES})
  target_link_libraries(hwt_${name} PUBLIC ${M_DEPS})
  set_target_properties(hwt_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# hwt_test(<name> SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# A cmocka test program, registered with ctest under <name>. Tests run from
# the build tree with HWT_SOURCE_DIR and HWT_TESTDATA (tests/data) set.
function(hwt_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} dep::cmocka)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    LABELS "${T_LABELS}"
    SKIP_RETURN_CODE 77
    ENVIRONMENT "HWT_SOURCE_DIR=${PROJECT_SOURCE_DIR};HWT_BINARY_DIR=${PROJECT_BINARY_DIR};HWT_TESTDATA=${HWT_TESTDATA};HWTRACE=$<TARGET_FILE:hwtrace>")
endfunction()

# tests/data: third-party PT reference data kept in the tree (each folder
# with its origin and licence), so that a fresh clone runs every case.
set(HWT_TESTDATA "${PROJECT_SOURCE_DIR}/tests/data")

# hwt_test_prog(<name> SOURCES ... [CFLAGS ...] [LDFLAGS ...])
# A program with known behaviour that tests trace. It is compiled by the
# system gcc with exactly the given flags (no sanitizers, no project flags),
# into ${PROJECT_BINARY_DIR}/progs/<name>, so its code is what a user's
# program would be.
function(hwt_test_prog name)
  cmake_parse_arguments(P "" "COMPILER" "SOURCES;CFLAGS;LDFLAGS;DEPENDS" ${ARGN})
  if(NOT P_COMPILER)
    set(P_COMPILER gcc)
  endif()
  set(srcs)
  foreach(s ${P_SOURCES})
    list(APPEND srcs ${CMAKE_CURRENT_SOURCE_DIR}/${s})
  endforeach()
  set(out ${PROJECT_BINARY_DIR}/progs/${name})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/progs
    COMMAND ${P_COMPILER} ${P_CFLAGS} -o ${out} ${srcs} ${P_LDFLAGS}
    DEPENDS ${srcs} ${P_DEPENDS}
    COMMENT "test program ${name}"
    VERBATIM)
  add_custom_target(prog_${name} ALL DEPENDS ${out})
endfunction()
