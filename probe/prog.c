/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/prog.c - the program object: parse, compile, describe, free. The
 * parsed form stays with the compiled one because the runtime and the live
 * and offline drivers read probe descriptions, tracepoint formats and
 * aggregation signatures from it.
 */
#include "probe/probe_int.h"

#include <bpf/btf.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void hwt_probe_config_init(struct hwt_probe_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

void hwt_probe_prog_free(struct hwt_probe_prog *prog)
{
	if (!prog)
		return;
	for (size_t i = 0; i < prog->nprobes; i++) {
		struct prb_probe *p = &prog->probes[i];

		free(p->text);
		free(p->object);
		free(p->func);
		free(p->subsys);
		free(p->event);
		prb_tp_format_free(p->tp);
		free(p->field_map);
		free(p->clauses);
	}
	free(prog->probes);
	for (size_t i = 0; i < prog->nclauses; i++) {
		free(prog->clauses[i].probes);
		free(prog->clauses[i].stmts.v);
	}
	free(prog->clauses);
	for (size_t i = 0; i < prog->nself; i++)
		free(prog->self_vars[i].name);
	free(prog->self_vars);
	for (size_t i = 0; i < prog->nthis; i++)
		free(prog->this_vars[i].name);
	free(prog->this_vars);
	for (size_t i = 0; i < prog->naggs; i++) {
		free(prog->aggs[i].name);
		for (size_t k = 0; k < HWT_REP_MAX_KEYS; k++)
			free(prog->aggs[i].key_names[k]);
	}
	free(prog->aggs);
	for (size_t i = 0; i < prog->nfields; i++)
		free(prog->fields[i]);
	free(prog->fields);
	for (size_t i = 0; i < prog->nstrs; i++)
		free(prog->strs[i]);
	free(prog->strs);
	for (size_t i = 0; i < prog->nfmts; i++) {
		for (size_t k = 0; k < prog->fmts[i].npieces; k++)
			free(prog->fmts[i].pieces[k].spec);
		free(prog->fmts[i].pieces);
	}
	free(prog->fmts);
	free(prog->code);
	while (prog->nodes) {
		struct prb_node *n = prog->nodes;

		prog->nodes = n->next_alloc;
		free(n->args);
		free(n->name);
		free(n);
	}
	free(prog->text);
	btf__free(prog->btf);
	free(prog);
}

int hwt_probe_prog_alloc(struct hwt_probe_prog **out, const char *text,
			 const struct hwt_probe_config *cfg, struct hwt_probe_diag *diag)
{
	struct hwt_probe_config pcfg;
	struct hwt_probe_prog *prog = NULL;
	int err;

	if (diag)
		memset(diag, 0, sizeof(*diag));
	hwt_probe_config_init(&pcfg);
	if (!out || !text || (cfg && hwt_opts_copy(&pcfg, sizeof(pcfg), cfg) < 0)) {
		if (diag)
			hwt_probe_diag_at(diag, NULL, 0, "bad arguments");
		return -HWT_EINVAL;
	}
	*out = NULL;
	if (strlen(text) > PRB_MAX_TEXT) {
		if (diag)
			hwt_probe_diag_at(diag, NULL, 0, "the program is over 1 MiB");
		return -HWT_ETOOBIG;
	}
	prog = calloc(1, sizeof(*prog));
	if (!prog || !(prog->text = strdup(text))) {
		err = -ENOMEM;
		if (diag)
			hwt_probe_diag_at(diag, NULL, 0, "out of memory");
		goto error;
	}
	prog->len = strlen(text);
	prog->cfg = pcfg;
	if ((err = prb_parse(prog, diag)) < 0)
		goto error;
	if ((err = prb_compile(prog, diag)) < 0)
		goto error;
	*out = prog;
	return 0;
error:
	hwt_probe_prog_free(prog);
	return err;
}

size_t hwt_probe_prog_nprobes(const struct hwt_probe_prog *prog)
{
	return prog ? prog->nprobes : 0;
}

int hwt_probe_prog_probe(const struct hwt_probe_prog *prog, size_t i, struct hwt_probe_info *info)
{
	if (!prog || !info || i >= prog->nprobes)
		return -HWT_EINVAL;
	*info = prog->probes[i].info;
	return 0;
}

bool hwt_probe_prog_has_pt(const struct hwt_probe_prog *prog)
{
	return prog && prog->has_pt;
}

bool hwt_probe_prog_bpftrace_style(const struct hwt_probe_prog *prog)
{
	return prog && prog->bpftrace_style;
}
