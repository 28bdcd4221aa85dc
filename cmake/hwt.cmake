# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Helpers shared by every module's CMakeLists.txt.
#
# The build holds the layering DESIGN.md describes. A module sees its own
# headers and the public headers of the modules it links, nothing else: each
# source includes "<module>/<header>.h", and the include directories that
# resolve those names are folders of the build tree holding links to exactly
# the headers a target may use:
#   include/<m>/<m>/<m>.h     module m's public header (PUBLIC: whoever links
#                             hwt_<m> sees it, and only it)
#   internal/<m>/<m>/*.h      all of m's headers (PRIVATE to hwt_<m>; its own
#                             white-box tests reach them through
#                             hwt_<m>_internal)
# There is no global include directory: including another module's internal
# header, or the public header of a module not linked, fails to compile
# (tests/layering checks both).

# hwt_stage_headers(<root> <srcdir> <prefix> <file>...)
# Makes each file visible as <root>/<prefix>/<its path below srcdir> (a
# symbolic link to the source file), so that the include directory <root>
# resolves "<prefix>/<name>" to exactly these files (links left from
# headers since removed are removed).
function(hwt_stage_headers root srcdir prefix)
  file(GLOB_RECURSE old_links LIST_DIRECTORIES false ${root}/${prefix}/*)
  set(links)
  foreach(h ${ARGN})
    get_filename_component(h ${h} ABSOLUTE BASE_DIR ${srcdir})
    file(RELATIVE_PATH rel ${srcdir} ${h})
    set(link ${root}/${prefix}/${rel})
    list(APPEND links ${link})
    get_filename_component(dir ${link} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    if(IS_SYMLINK ${link})
      file(READ_SYMLINK ${link} old)
      if(old STREQUAL h)
        continue()
      endif()
      file(REMOVE ${link})
    endif()
    file(CREATE_LINK ${h} ${link} SYMBOLIC)
  endforeach()
  foreach(link ${old_links})
    if(NOT link IN_LIST links)
      file(REMOVE ${link})
    endif()
  endforeach()
endfunction()

# hwt_internal_headers(<target> <name> <srcdir> [INTERFACE])
# Gives <target> every header below <srcdir> as "<name>/...": a module's own
# sources (PRIVATE), its tests (through hwt_<name>_internal), the CLI's own
# headers, a test folder's helpers. Returns the include root in HWT_ROOT.
function(hwt_internal_headers target name srcdir)
  cmake_parse_arguments(I "INTERFACE" "" "" ${ARGN})
  string(REPLACE "/" "-" slot ${name})
  set(root ${PROJECT_BINARY_DIR}/internal/${slot})
  file(GLOB_RECURSE hdrs CONFIGURE_DEPENDS ${srcdir}/*.h)
  hwt_stage_headers(${root} ${srcdir} ${name} ${hdrs})
  if(I_INTERFACE)
    target_include_directories(${target} INTERFACE ${root})
  else()
    target_include_directories(${target} PRIVATE ${root})
  endif()
endfunction()

# hwt_module(<name> SOURCES ... [HEADERS ...] [PUBLIC_DEPS ...] [DEPS ...])
# A module is a static library hwt_<name>. HEADERS are its public headers
# (default <name>.h), the module's whole contract. PUBLIC_DEPS are the
# modules whose headers those public headers include (hwt_common always);
# DEPS what only its sources use: other modules (hwt_x) or imported
# dependencies (dep::x). hwt_<name>_internal is the module with its
# internal headers (and what they include), for its own tests.
function(hwt_module name)
  cmake_parse_arguments(M "" "" "SOURCES;HEADERS;PUBLIC_DEPS;DEPS" ${ARGN})
  if(NOT M_HEADERS)
    set(M_HEADERS ${name}.h)
  endif()
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  set(pub ${PROJECT_BINARY_DIR}/include/${name})
  hwt_stage_headers(${pub} ${dir} ${name} ${M_HEADERS})
  if(NOT name STREQUAL "common")
    list(APPEND M_PUBLIC_DEPS hwt_common)
  endif()
  add_library(hwt_${name}_internal INTERFACE)
  if(NOT M_SOURCES)
    # A module that has no code yet is an interface placeholder, so that
    # dependents link the same way before and after it lands.
    add_library(hwt_${name} INTERFACE)
    target_include_directories(hwt_${name} INTERFACE ${pub})
    target_link_libraries(hwt_${name} INTERFACE ${M_PUBLIC_DEPS} ${M_DEPS})
  else()
    add_library(hwt_${name} STATIC ${M_SOURCES})
    target_include_directories(hwt_${name} PUBLIC ${pub})
    hwt_internal_headers(hwt_${name} ${name} ${dir})
    target_link_libraries(hwt_${name} PUBLIC ${M_PUBLIC_DEPS} PRIVATE ${M_DEPS})
    set_target_properties(hwt_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
  # Internal headers may include what the module's sources use.
  target_link_libraries(hwt_${name}_internal INTERFACE hwt_${name} ${M_DEPS})
  hwt_internal_headers(hwt_${name}_internal ${name} ${dir} INTERFACE)
endfunction()

# hwt_test(<name> SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# A cmocka test program, registered with ctest under <name>. LIBS are what
# it tests and uses (hwt_<m>_internal for a white-box test of module m).
# Tests run from the build tree with HWT_SOURCE_DIR and HWT_TESTDATA
# (tests/data) set.
function(hwt_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} dep::cmocka)
  hwt_test_debug_info(${name})
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

# hwt_test_debug_info(<target>)
# Test code is built with debug info whatever the build type: tests look up
# their own functions' files and lines (tests/symbolize) and a failing test
# is read in a debugger.
function(hwt_test_debug_info target)
  target_compile_options(${target} PRIVATE -g)
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
