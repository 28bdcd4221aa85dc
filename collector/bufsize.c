/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/bufsize.c - how big the ring buffers and AUX areas may be for
 * this caller. The kernel charges every perf mmap to the user's locked
 * memory (kernel/events/core.c, perf_mmap): the data area plus its control
 * page, and the AUX area, up to kernel.perf_event_mlock_kb per online CPU;
 * beyond that to RLIMIT_MEMLOCK ('ulimit -l'), which it enforces unless the
 * caller has CAP_IPC_LOCK or perf_event_paranoid is -1 (then -EPERM). perf
 * picks its Intel PT sizes by privilege (tools/perf/arch/x86/util/
 * intel-pt.c): 4 MiB of AUX when privileged (CAP_PERFMON, CAP_SYS_ADMIN or
 * perf_event_paranoid -1), else 128 KiB of AUX and 256 KiB of data, which
 * fit the default 516 KiB per CPU. We choose the same, lower defaults that
 * still do not fit, and refuse sizes the kernel would refuse with the
 * numbers and the three ways to raise them.
 */
#include "collector/rec_int.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pmc/pmc.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* Whether the effective capability set holds cap (capget, no libcap). */
static bool have_cap(unsigned cap)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0 || cap / 32 >= _LINUX_CAPABILITY_U32S_3)
		return false;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

int hwt_coll_memlock_read(const char *paranoid_path, const char *mlock_path, unsigned ncpus,
			  struct hwt_coll_memlock *ml)
{
	struct rlimit rl;
	unsigned long long kb = 0;
	FILE *f;
	int level;

	memset(ml, 0, sizeof(*ml));
	ml->page = (size_t)sysconf(_SC_PAGESIZE);
	ml->ncpus = ncpus ? ncpus : 1;
	ml->paranoid = hwt_pmc_paranoid_read(paranoid_path, &level) == 0 ? level : 2;
	f = fopen(mlock_path ? mlock_path : "/proc/sys/kernel/perf_event_mlock_kb", "r");
	if (f) {
		if (fscanf(f, "%llu", &kb) != 1)
			kb = 0;
		fclose(f);
	}
	ml->mlock_kb = kb ? kb : 516; /* the kernel's default */
	ml->memlock = UINT64_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		ml->memlock = (uint64_t)rl.rlim_cur;
	/* CAP_PERFMON (38) or CAP_SYS_ADMIN: perf_event_paranoid_check(-1). */
	ml->privileged = ml->paranoid < 0 || have_cap(38) || have_cap(CAP_SYS_ADMIN);
	ml->unlimited = ml->paranoid < 0 || have_cap(CAP_IPC_LOCK);
	return 0;
}

static size_t round_pages(size_t bytes, size_t page)
{
	size_t p = 1;

	while (p * page < bytes && p < (1u << 20))
		p <<= 1;
	return p * page;
}

/* Locked pages the kernel charges for nbuf buffers of these sizes. */
static uint64_t charged(const struct hwt_coll_memlock *ml, size_t nbuf, size_t data, size_t aux)
{
	return (uint64_t)nbuf * ((data + aux) / ml->page + 1);
}

/* Pages this caller may lock: perf_event_mlock_kb per CPU, then 'ulimit
 * -l' (UINT64_MAX: no limit). */
static uint64_t allowed(const struct hwt_coll_memlock *ml)
{
	uint64_t per = ml->mlock_kb * KIB / ml->page * ml->ncpus;

	if (ml->unlimited || ml->memlock == UINT64_MAX)
		return UINT64_MAX;
	return per + ml->memlock / ml->page;
}

static void kib(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= MIB && !(bytes % MIB))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes / MIB));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes / KIB));
}

int hwt_coll_buf_explain(const struct hwt_coll_memlock *ml, size_t nbuf, size_t data, size_t aux,
			 char *errmsg, size_t errlen)
{
	char d[32], a[32], need[32], lim[32];
	uint64_t pages = charged(ml, nbuf, data, aux);

	kib(d, sizeof(d), data);
	kib(a, sizeof(a), aux);
	kib(need, sizeof(need), pages * ml->page);
	if (ml->memlock == UINT64_MAX)
		snprintf(lim, sizeof(lim), "unlimited");
	else
		kib(lim, sizeof(lim), ml->memlock);
	if (errmsg && errlen)
		snprintf(
		    errmsg, errlen,
		    "%zu buffer%s of %s data%s%s%s need %s of locked memory, more than this user "
		    "may lock: kernel.perf_event_mlock_kb is %llu per CPU x %u CPU%s, then "
		    "'ulimit -l' %s (perf_event_paranoid %d, no CAP_IPC_LOCK); raise them "
		    "('sysctl -w kernel.perf_event_mlock_kb=N', 'ulimit -l N'), run with "
		    "CAP_IPC_LOCK, or choose smaller buffers with -m DATA,AUX",
		    nbuf, nbuf == 1 ? "" : "s", d, aux ? " + " : "", aux ? a : "",
		    aux ? " AUX" : "", need, (unsigned long long)ml->mlock_kb, ml->ncpus,
		    ml->ncpus == 1 ? "" : "s", lim, ml->paranoid);
	return -EPERM;
}

int hwt_coll_buf_plan(const struct hwt_coll_memlock *ml, size_t nbuf, bool pt, size_t data_req,
		      size_t aux_req, struct hwt_coll_bufplan *plan, char *errmsg, size_t errlen)
{
	const size_t min_data = 16 * ml->page, min_aux = 4 * ml->page;
	size_t data, aux = 0;

	memset(plan, 0, sizeof(*plan));
	if (!nbuf)
		nbuf = 1;
	if (data_req)
		data = round_pages(data_req, ml->page);
	else if (pt && !ml->privileged)
		data = 256 * KIB;
	else
		data = MIB;
	if (pt) {
		if (aux_req)
			aux = round_pages(aux_req, ml->page);
		else
			aux = ml->privileged ? 4 * MIB : 128 * KIB;
	}
	/* Defaults shrink to fit (data first: sideband needs less than the
	 * trace); sizes the user gave are kept or refused. */
	while (charged(ml, nbuf, data, aux) > allowed(ml)) {
		if (!data_req && data > min_data)
			data /= 2;
		else if (pt && !aux_req && aux > min_aux)
			aux /= 2;
		else
			return hwt_coll_buf_explain(ml, nbuf, data, aux, errmsg, errlen);
		plan->shrunk = true;
	}
	plan->data = data;
	plan->aux = aux;
	return 0;
}
