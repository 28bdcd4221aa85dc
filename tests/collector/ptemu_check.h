/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/ptemu_check.h - helpers of the PT emulator tests: a
 * memory sink that keeps what hwt_ptemu_run() delivers, a libipt decoder
 * over one captured stream with the process image rebuilt from the MMAP2
 * sideband, the emulator's ground-truth files, and symbol lookup with nm.
 * Header-only so that each test_ptemu*.c program stays self-contained.
 */
#ifndef HWT_TESTS_PTEMU_CHECK_H
#define HWT_TESTS_PTEMU_CHECK_H

#include <capstone/capstone.h>
#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <intel-pt.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "collector/ptemu_int.h"
#include "common/hwt.h"

#define CAP_STREAMS 64

struct cap_stream {
	uint32_t pid, tid;
	struct hwt_buf pt;
};

struct cap {
	struct hwt_buf recs;
	struct cap_stream s[CAP_STREAMS];
	size_t ns;
	size_t nmeta;
	bool emulated;
	char dir[256];
	struct hwt_ptemu_terms terms;
};

static inline int cap_meta_u64(void *ctx, const char *key, uint64_t v)
{
	struct cap *c = ctx;

	c->nmeta++;
	if (!strcmp(key, "pt.emulated") && v == 1)
		c->emulated = true;
	return 0;
}

static inline int cap_meta_str(void *ctx, const char *key, const char *v)
{
	struct cap *c = ctx;

	(void)key;
	(void)v;
	c->nmeta++;
	return 0;
}

static inline int cap_meta_bytes(void *ctx, const char *key, const void *v, size_t len)
{
	struct cap *c = ctx;

	(void)key;
	(void)v;
	(void)len;
	c->nmeta++;
	return 0;
}

static inline int cap_records(void *ctx, const void *buf, size_t len)
{
	struct cap *c = ctx;

	return hwt_buf_append(&c->recs, buf, len);
}

static inline int cap_stream_new(void *ctx, uint32_t pid, uint32_t tid)
{
	struct cap *c = ctx;

	if (c->ns == CAP_STREAMS)
		return -HWT_ETOOBIG;
	c->s[c->ns].pid = pid;
	c->s[c->ns].tid = tid;
	hwt_buf_init(&c->s[c->ns].pt);
	return (int)c->ns++;
}

static inline int cap_aux(void *ctx, int stream, uint64_t offset, const void *buf, size_t len)
{
	struct cap *c = ctx;
	struct cap_stream *s = &c->s[stream];

	if (offset != s->pt.len)
		return -HWT_EINTERNAL; /* AUX offsets must be contiguous */
	return hwt_buf_append(&s->pt, buf, len);
}

static inline void cap_fini(struct cap *c)
{
	hwt_buf_fini(&c->recs);
	for (size_t i = 0; i < c->ns; i++)
		hwt_buf_fini(&c->s[i].pt);
}

/* Runs a test program under the emulator with ground truth kept in a
 * temporary directory. Returns hwt_ptemu_run()'s result. */
static inline int cap_run(struct cap *c, struct hwt_ptemu_result *res, const char *terms,
			  const char *const *argv)
{
	struct hwt_ptemu_config cfg;
	struct hwt_ptemu_sink sink = {
	    .ctx = c,
	    .meta_u64 = cap_meta_u64,
	    .meta_str = cap_meta_str,
	    .meta_bytes = cap_meta_bytes,
	    .records = cap_records,
	    .stream = cap_stream_new,
	    .aux = cap_aux,
	};
	const char *base = getenv("TMPDIR");
	int err;

	memset(c, 0, sizeof(*c));
	hwt_buf_init(&c->recs);
	snprintf(c->dir, sizeof(c->dir), "%s/hwt-ptemu-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(c->dir))
		return -errno;
	hwt_ptemu_config_init(&cfg);
	if (terms) {
		err = hwt_ptemu_terms_parse(&cfg.terms, terms, NULL);
		if (err < 0)
			return err;
	}
	c->terms = cfg.terms;
	cfg.argv = argv;
	cfg.workdir = c->dir;
	cfg.truth = true;
	return hwt_ptemu_run(&cfg, &sink, res);
}

static inline void cap_remove_dir(struct cap *c)
{
	DIR *d = opendir(c->dir);
	struct dirent *de;
	char path[512];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(c->dir);
}

/* Records of a type, iterated: returns the next record at or after *off. */
static const uint8_t *cap_next_rec(const struct cap *c, size_t *off, uint32_t type)
{
	while (*off + 8 <= c->recs.len) {
		const uint8_t *r = c->recs.data + *off;
		uint16_t size = hwt_le16(r + 6);

		if (size < 8)
			return NULL;
		*off += size;
		if (hwt_le32(r) == type)
			return r;
	}
	return NULL;
}

/* The parent process of pid from FORK records (pid != ppid), or 0. */
static inline uint32_t cap_parent(const struct cap *c, uint32_t pid)
{
	size_t off = 0;
	const uint8_t *r;

	while ((r = cap_next_rec(c, &off, PERF_RECORD_FORK))) {
		if (hwt_le32(r + 8) == pid && hwt_le32(r + 12) != pid)
			return hwt_le32(r + 12);
	}
	return 0;
}

/* An image of every executable mapping of pid and its ancestors. */
static struct pt_image *cap_image(const struct cap *c, uint32_t pid)
{
	struct pt_image *img = pt_image_alloc("ptemu-test");

	for (uint32_t p = pid; p; p = cap_parent(c, p)) {
		size_t off = 0;
		const uint8_t *r;

		while ((r = cap_next_rec(c, &off, PERF_RECORD_MMAP2))) {
			if (hwt_le32(r + 8) != p)
				continue;
			/* A later mapping of the same range wins, as in the
			 * kernel: added images overlap earlier ones. */
			pt_image_add_file(img, (const char *)r + 72, hwt_le64(r + 32),
					  hwt_le64(r + 24), NULL, hwt_le64(r + 16));
		}
	}
	return img;
}

/* Load bias of a test program (bias = addr - pgoff of its MMAP2). */
static inline uint64_t cap_bias(const struct cap *c, const char *prog)
{
	size_t off = 0;
	const uint8_t *r;
	uint8_t eh[18];
	FILE *f = fopen(prog, "rb");

	/* A non-PIE executable (ET_EXEC) is mapped at its link addresses. */
	if (f && fread(eh, 1, sizeof(eh), f) == sizeof(eh) && hwt_le16(eh + 16) == 2) {
		fclose(f);
		return 0;
	}
	if (f)
		fclose(f);

	while ((r = cap_next_rec(c, &off, PERF_RECORD_MMAP2))) {
		if (!strcmp((const char *)r + 72, prog))
			return hwt_le64(r + 16) - hwt_le64(r + 32);
	}
	return 0;
}

/* Address of a symbol in a program file (nm), 0 if absent. */
static inline uint64_t sym_addr(const char *prog, const char *sym, uint64_t *size)
{
	char cmd[1024], line[512];
	uint64_t addr = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", prog);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, s = 0;
		char type, name[400];

		if (sscanf(line, "%llx %llx %c %399s", &a, &s, &type, name) == 4 ||
		    (s = 0, sscanf(line, "%llx %c %399s", &a, &type, name) == 3)) {
			if (!strcmp(name, sym)) {
				addr = a;
				if (size)
					*size = s;
			}
		}
	}
	pclose(f);
	return addr;
}

/* What decoding a stream gave. */
#define MAX_WATCH 8

struct dec_watch {
	uint64_t ip;	  /* instruction address to count */
	uint64_t lo, hi;  /* or a range [lo, hi) when hi != 0 */
	uint64_t count;	  /* executions (in range: instructions) */
	uint64_t taken;	  /* for a conditional branch */
	uint64_t targets; /* for a branch: transfers whose target != next */
};

struct dec_result {
	uint64_t insns;
	uint64_t errors; /* decode errors (other than the end) */
	int first_error;
	uint64_t disables, enables, overflows;
	uint64_t last_disable_ip; /* ip of the FUP/where tracing stopped */
	uint64_t last_ip;	  /* last decoded instruction */
	struct hwt_buf events;	  /* struct hwt_ptemu_truth: COND, INDIRECT, RET */
	uint64_t time_first, time_last;
	bool time_monotonic;
	uint64_t time_back_max; /* the largest step back in time */
	struct dec_watch w[MAX_WATCH];
	size_t nw;
};

static inline bool is_direct(csh cs, const struct pt_insn *in)
{
	cs_insn *ci = NULL;
	bool direct = false;

	if (cs_disasm(cs, in->raw, in->size, in->ip, 1, &ci) == 1) {
		direct =
		    ci->detail->x86.op_count > 0 && ci->detail->x86.operands[0].type == X86_OP_IMM;
		cs_free(ci, 1);
	}
	return direct;
}

static inline void dec_event(struct dec_result *r, uint64_t kind, uint64_t ip, uint64_t target)
{
	struct hwt_ptemu_truth t = {kind, ip, target};

	hwt_buf_append(&r->events, &t, sizeof(t));
}

/* The previous instruction was followed by the one at ip. */
static inline void dec_branch(struct dec_result *r, const struct pt_insn *prev, bool prev_direct,
			      uint64_t ip)
{
	uint64_t next = prev->ip + prev->size;

	if (prev->iclass == ptic_cond_jump)
		dec_event(r, HWT_PTEMU_T_COND, prev->ip, ip != next);
	else if (prev->iclass == ptic_return)
		dec_event(r, HWT_PTEMU_T_RET, prev->ip, ip);
	else if ((prev->iclass == ptic_jump || prev->iclass == ptic_call) && !prev_direct)
		dec_event(r, HWT_PTEMU_T_INDIRECT, prev->ip, ip);
	for (size_t w = 0; w < r->nw; w++) {
		if (!r->w[w].hi && r->w[w].ip == prev->ip && ip != next)
			r->w[w].taken++;
	}
}

/* Decodes one captured stream with libipt's instruction-flow decoder. */
static inline void cap_decode(const struct cap *c, size_t si, struct dec_result *r)
{
	const struct cap_stream *s = &c->s[si];
	struct hwt_ptemu_cpu cpu;
	struct pt_config cfg;
	struct pt_insn_decoder *dec;
	struct pt_image *img = cap_image(c, s->pid);
	struct pt_insn prev;
	bool have_prev = false, prev_direct = false;
	csh cs;
	int status;

	hwt_buf_init(&r->events);
	r->time_monotonic = true;
	cs_open(CS_ARCH_X86, CS_MODE_64, &cs);
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	hwt_ptemu_cpu_default(&cpu);
	hwt_ptemu_ptconfig(&cfg, &c->terms, &cpu);
	cfg.begin = s->pt.data;
	cfg.end = s->pt.data + s->pt.len;
	dec = pt_insn_alloc_decoder(&cfg);
	pt_insn_set_image(dec, img);
	status = pt_insn_sync_forward(dec);
	memset(&prev, 0, sizeof(prev));
	for (;;) {
		struct pt_insn in;

		while (status >= 0 && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_insn_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
			if (ev.type == ptev_disabled) {
				r->disables++;
				r->last_disable_ip = ev.variant.disabled.ip;
				have_prev = false;
			} else if (ev.type == ptev_async_disabled) {
				/* Tracing stopped before the instruction at `at`:
				 * that is where the previous branch went. */
				r->disables++;
				r->last_disable_ip = ev.variant.async_disabled.at;
				if (have_prev)
					dec_branch(r, &prev, prev_direct,
						   ev.variant.async_disabled.at);
				have_prev = false;
			} else if (ev.type == ptev_enabled) {
				r->enables++;
			} else if (ev.type == ptev_overflow) {
				r->overflows++;
				have_prev = false;
			}
		}
		if (status < 0) {
			if (status == -pte_eos)
				break;
			if (!r->errors++)
				r->first_error = status;
			status = pt_insn_sync_forward(dec);
			have_prev = false;
			if (status < 0)
				break;
			continue;
		}
		if (status & pts_eos)
			break;
		status = pt_insn_next(dec, &in, sizeof(in));
		if (in.iclass == ptic_error) {
			if (status >= 0)
				status = -pte_internal;
			continue;
		}
		if (have_prev)
			dec_branch(r, &prev, prev_direct, in.ip);
		r->insns++;
		r->last_ip = in.ip;
		for (size_t w = 0; w < r->nw; w++) {
			if (r->w[w].hi ? in.ip >= r->w[w].lo && in.ip < r->w[w].hi
				       : in.ip == r->w[w].ip)
				r->w[w].count++;
		}
		{
			uint64_t tsc;
			uint32_t lmtc, lcyc;

			if (pt_insn_time(dec, &tsc, &lmtc, &lcyc) >= 0) {
				if (!r->time_first)
					r->time_first = tsc;
				if (tsc < r->time_last) {
					r->time_monotonic = false;
					if (r->time_last - tsc > r->time_back_max)
						r->time_back_max = r->time_last - tsc;
				}
				r->time_last = tsc;
			}
		}
		prev = in;
		prev_direct =
		    (in.iclass == ptic_jump || in.iclass == ptic_call) && is_direct(cs, &in);
		have_prev = true;
	}
	pt_insn_free_decoder(dec);
	pt_image_free(img);
	cs_close(&cs);
}

/* The emulator's ground truth for a thread, COND/INDIRECT/RET only. */
static inline void cap_truth(const struct cap *c, uint32_t tid, struct hwt_buf *out)
{
	char path[512];
	uint8_t *data;
	size_t len;
	FILE *f;

	hwt_buf_init(out);
	snprintf(path, sizeof(path), "%s/truth.%u.0", c->dir, tid);
	f = fopen(path, "rb");
	if (!f)
		return;
	data = malloc(1 << 20);
	while (data && (len = fread(data, 1, 1 << 20, f)) > 0) {
		for (size_t i = 0; i + sizeof(struct hwt_ptemu_truth) <= len;
		     i += sizeof(struct hwt_ptemu_truth)) {
			struct hwt_ptemu_truth t;

			memcpy(&t, data + i, sizeof(t));
			if (t.kind == HWT_PTEMU_T_COND || t.kind == HWT_PTEMU_T_INDIRECT ||
			    t.kind == HWT_PTEMU_T_RET)
				hwt_buf_append(out, &t, sizeof(t));
			/* An injected overflow begins right after a branch: a
			 * decoder meets the OVF before it sees where that
			 * branch went. */
			if (t.kind == HWT_PTEMU_T_OVF && out->len >= sizeof(t))
				out->len -= sizeof(t);
		}
	}
	free(data);
	fclose(f);
}

/* Index of the first difference between decoded events and truth, or -1
 * when equal. */
static inline long cap_compare(const struct hwt_buf *dec, const struct hwt_buf *truth)
{
	size_t n = dec->len < truth->len ? dec->len : truth->len;
	size_t es = sizeof(struct hwt_ptemu_truth);

	for (size_t i = 0; i < n; i += es) {
		if (memcmp(dec->data + i, truth->data + i, es)) {
			const struct hwt_ptemu_truth *a = (const void *)(dec->data + i);
			const struct hwt_ptemu_truth *b = (const void *)(truth->data + i);

			fprintf(stderr,
				"event %zu differs: decoded kind %llu ip %#llx target %#llx, "
				"truth kind %llu ip %#llx target %#llx\n",
				i / es, (unsigned long long)a->kind, (unsigned long long)a->ip,
				(unsigned long long)a->target, (unsigned long long)b->kind,
				(unsigned long long)b->ip, (unsigned long long)b->target);
			for (size_t j = i >= 8 * es ? i - 8 * es : 0; j < n && j < i + 4 * es;
			     j += es) {
				a = (const void *)(dec->data + j);
				b = (const void *)(truth->data + j);
				fprintf(
				    stderr,
				    "  %zu: decoded %llu %#llx %#llx   truth %llu %#llx %#llx\n",
				    j / es, (unsigned long long)a->kind, (unsigned long long)a->ip,
				    (unsigned long long)a->target, (unsigned long long)b->kind,
				    (unsigned long long)b->ip, (unsigned long long)b->target);
			}
			return (long)(i / es);
		}
	}
	if (dec->len != truth->len) {
		fprintf(stderr, "decoded %zu events, truth has %zu\n", dec->len / es,
			truth->len / es);
		return (long)(n / es);
	}
	return -1;
}

#endif
