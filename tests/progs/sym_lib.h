/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* tests/progs/sym_lib.h - the shared library of the symbolizer tests. */
#ifndef SYM_LIB_H
#define SYM_LIB_H
int lib_compute(int n);
#endif
