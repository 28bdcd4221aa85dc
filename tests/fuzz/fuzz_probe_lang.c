/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_probe_lang.c - the one-liner language on arbitrary text:
 * lexer, parser, checker and code generator must accept or refuse every
 * input cleanly (a refusal has a message and a place inside the text); a
 * program that compiles is then run: BEGIN, one hit per probe with
 * registers taken from the input, END, and both printed forms. tracefs and
 * sysfs point at a missing folder so the harness is deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sink(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	(void)text;
	(void)len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_probe_config cfg;
	struct hwt_probe_prog *prog = NULL;
	struct hwt_probe_rt *rt = NULL;
	struct hwt_probe_diag diag;
	char *text;
	int err;

	if (size > 8192)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	hwt_probe_config_init(&cfg);
	cfg.sysfs_root = "/nonexistent-hwt-fuzz";
	cfg.tracefs_root = "/nonexistent-hwt-fuzz";
	cfg.proc_root = "/nonexistent-hwt-fuzz";
	cfg.output = sink;
	err = hwt_probe_prog_alloc(&prog, text, &cfg, &diag);
	if (err < 0) {
		if (prog || !diag.msg[0] || diag.line < 0 || diag.column < 0)
			abort();
		if (diag.line > 0 && (size_t)diag.line > size + 1)
			abort();
		free(text);
		return 0;
	}
	if (hwt_probe_rt_alloc(&rt, prog, &cfg) == 0) {
		struct hwt_probe_hit hit;
		struct hwt_buf out;

		memset(&hit, 0, sizeof(hit));
		hit.pid = hit.tid = 7;
		hit.time = 1000;
		hit.has_regs = true;
		for (size_t i = 0; i < HWT_PROBE_NREGS; i++)
			hit.regs[i] = size > i ? (uint64_t)(int8_t)data[size - 1 - i] : 0;
		hit.raw = data;
		hit.raw_size = (uint32_t)size;
		hwt_probe_rt_begin(rt);
		for (size_t p = 0; p < hwt_probe_prog_nprobes(prog); p++) {
			hwt_probe_rt_fire(rt, p, &hit);
			hit.time += 10;
			hwt_probe_rt_fire(rt, p, &hit);
		}
		hwt_probe_rt_end(rt);
		hwt_buf_init(&out);
		if (hwt_probe_rt_print(rt, HWT_REP_FMT_TEXT, &out) < 0 ||
		    hwt_probe_rt_print(rt, HWT_REP_FMT_JSON, &out) < 0)
			abort();
		hwt_buf_fini(&out);
		hwt_probe_rt_free(rt);
	}
	hwt_probe_prog_free(prog);
	free(text);
	return 0;
}
