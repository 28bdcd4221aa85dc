/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef HWT_TESTS_PROGS_UNW_LIB_H
#define HWT_TESTS_PROGS_UNW_LIB_H

unsigned long unw_lib_outer(unsigned long n);

#endif
