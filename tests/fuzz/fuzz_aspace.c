/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_aspace.c - the process map (hwt_sym_aspace) fed any
 * sequence of sideband events and lookups, decoded from the input: 1 byte
 * of opcode, then the event's fields. Mappings that overlap, wrap or are
 * empty, forks that form loops, exec and pid reuse in any order, lookups at
 * any time. No crash, no hang; every answer lies inside the mapping it
 * names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "symbolize/symbolize.h"

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->n; i++, in->p++, in->n--)
		v |= (uint64_t)in->p[0] << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {
	    "/a", "/b", "[vdso]", "//anon", "[kernel.kallsyms]_text", "/lib/x.so"};
	struct hwt_sym_aspace *as;
	struct in in = {data, size};
	int ops = 0;

	if (hwt_sym_aspace_alloc(NULL, &as) < 0)
		return 0;
	while (in.n && ops++ < 4096) {
		unsigned op = (unsigned)take(&in, 1) % 6;
		uint32_t pid = (uint32_t)take(&in, 1) % 8, other = (uint32_t)take(&in, 1) % 8;
		uint64_t time = take(&in, 2);

		if (pid == 7)
			pid = UINT32_MAX; /* the kernel */
		switch (op) {
		case 0: {
			struct hwt_sym_mmap_event ev = {
			    .pid = pid,
			    .tid = pid,
			    .time = time,
			    .start =
				take(&in, 2) << 12 | (take(&in, 1) ? 0xffff800000000000ull : 0),
			    .len = take(&in, 2),
			    .pgoff = take(&in, 2) << 12,
			    .prot = take(&in, 1) & 1 ? PROT_EXEC : PROT_READ,
			    .filename = names[take(&in, 1) % 6],
			};

			if (take(&in, 1) & 1)
				ev.len = UINT64_MAX - ev.start + 1 + take(&in, 1); /* wraps */
			hwt_sym_aspace_mmap(as, &ev);
			break;
		}
		case 1: {
			struct hwt_sym_comm_event ev = {pid, other, time, names[other % 6],
							take(&in, 1) & 1};

			hwt_sym_aspace_comm(as, &ev);
			break;
		}
		case 2:
		case 3: {
			struct hwt_sym_task_event ev = {pid, other, (uint32_t)take(&in, 1) % 8,
							(uint32_t)take(&in, 1) % 8, time};

			if (op == 2)
				hwt_sym_aspace_fork(as, &ev);
			else
				hwt_sym_aspace_exit(as, &ev);
			break;
		}
		case 4: {
			struct hwt_sym_loc loc;
			uint64_t ip =
			    take(&in, 3) << 4 | (take(&in, 1) ? 0xffff800000000000ull : 0);

			if (hwt_sym_aspace_lookup(as, pid, time, ip, &loc) == 0 && !loc.kernel &&
			    (ip < loc.map_start || ip >= loc.map_end || !loc.path))
				abort();
			break;
		}
		default:
			hwt_sym_aspace_comm_of(as, pid, time);
			break;
		}
	}
	for (uint32_t i = 0; i < hwt_sym_aspace_nobjects(as); i++) {
		struct hwt_sym_aspace_object o;

		if (hwt_sym_aspace_object(as, i, &o) < 0 || !o.path)
			abort();
	}
	hwt_sym_aspace_free(as);
	return 0;
}
