# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Third-party dependencies, all from Debian 12 packages
# (scripts/install-deps.sh installs them). Each becomes an IMPORTED target
# named dep::<name>, so modules say what they use and nothing more.
find_package(PkgConfig REQUIRED)

pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
add_library(dep::zstd ALIAS PkgConfig::ZSTD)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
add_library(dep::elf ALIAS PkgConfig::LIBELF)
pkg_check_modules(CAPSTONE REQUIRED IMPORTED_TARGET capstone)
add_library(dep::capstone ALIAS PkgConfig::CAPSTONE)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)
add_library(dep::bpf ALIAS PkgConfig::LIBBPF)
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
add_library(dep::protobufc ALIAS PkgConfig::PROTOBUFC)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)

# Libraries without a pkg-config file on Debian 12.
function(hwt_find_plain name header lib)
  find_path(${name}_INCLUDE_DIR ${header} PATH_SUFFIXES ${ARGN})
  find_library(${name}_LIBRARY ${lib})
  if(NOT ${name}_INCLUDE_DIR OR NOT ${name}_LIBRARY)
    message(FATAL_ERROR "${lib} not found: run scripts/install-deps.sh")
  endif()
  string(TOLOWER ${name} lname)
  add_library(dep::${lname} UNKNOWN IMPORTED)
  set_target_properties(dep::${lname} PROPERTIES
    IMPORTED_LOCATION ${${name}_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${${name}_INCLUDE_DIR})
endfunction()

hwt_find_plain(IPT intel-pt.h ipt)
hwt_find_plain(PFM perfmon/pfmlib_perf_event.h pfm)

# Capstone and libpfm4 are loaded on first use (dlopen) by the modules that
# call them (decoder/ild.c, pmc/pfm.c), not linked into hwtrace: their
# 77,000 and 41,000 relocations cost every process that links them about
# 11 ms of CPU and 700 page faults at start, and most runs never call them.
# dep::<name>_dl gives their headers and the soname to load; dep::<name>
# still links them (tests that compare with them, the qemu plugin).
function(hwt_dl_dep name lib include_dirs)
  get_filename_component(real ${lib} REALPATH)
  execute_process(COMMAND readelf -d ${real} OUTPUT_VARIABLE dyn ERROR_QUIET)
  if(NOT dyn MATCHES "Library soname: \\[([^]]+)\\]")
    message(FATAL_ERROR "cannot read the soname of ${real} (readelf -d)")
  endif()
  string(TOUPPER ${name} uname)
  add_library(dep_${name}_dl INTERFACE)
  target_include_directories(dep_${name}_dl INTERFACE ${include_dirs})
  target_compile_definitions(dep_${name}_dl INTERFACE HWT_${uname}_SONAME="${CMAKE_MATCH_1}")
  target_link_libraries(dep_${name}_dl INTERFACE ${CMAKE_DL_LIBS})
  add_library(dep::${name}_dl ALIAS dep_${name}_dl)
endfunction()
find_library(CAPSTONE_LIBRARY capstone HINTS ${CAPSTONE_LIBRARY_DIRS})
hwt_dl_dep(capstone ${CAPSTONE_LIBRARY} "${CAPSTONE_INCLUDE_DIRS}")
hwt_dl_dep(pfm ${PFM_LIBRARY} ${PFM_INCLUDE_DIR})
hwt_find_plain(DWARF libdwarf.h dwarf libdwarf)
hwt_find_plain(IBERTY demangle.h iberty libiberty)

# elfutils' unwinder, only for bench/bench_unwind (the engine comparison).
if(HWT_BENCH)
  pkg_check_modules(LIBDW IMPORTED_TARGET libdw)
  if(LIBDW_FOUND)
    add_library(dep::dw ALIAS PkgConfig::LIBDW)
  endif()
endif()

if(HWT_TESTS)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
  add_library(dep::cmocka ALIAS PkgConfig::CMOCKA)
endif()
