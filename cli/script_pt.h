/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_pt.h - what the raw-PT script mode's files share: its options
 * and the perf-event sideband (--pevent:*) that maps code and switches
 * threads over time (cli/script_sb.c).
 */
#ifndef HWT_CLI_SCRIPT_PT_H
#define HWT_CLI_SCRIPT_PT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/decoder.h"

struct script_sb;

struct script_opts {
	struct hwt_dec_config cfg;
	bool ptxed;   /* --format=ptxed */
	bool records; /* --format=records */
	bool no_inst, quiet, offset, time, raw_insn, event_time, event_ip, show_blocks;
	bool insn_decoder;
	bool stat;
	unsigned int stat_flags; /* 1 insn, 2 blocks */
	bool view_insn, view_branch, view_call, view_return, view_error, view_events;
	bool flow;
	struct script_sb *sb;
};

/* Maps an ELF file's loadable segments into img (ptxed's --elf). */
int hwt_script_load_elf(struct hwt_dec_image *img, const char *path, uint64_t base, bool has_base);

/* Sideband: allocated before option parsing, fed --pevent:* and --sb:*
 * options, set up once the code and configuration are known. */
int script_sb_alloc(struct script_sb **sb, struct hwt_dec_icache *ic,
		    const struct script_opts *opts);
void script_sb_free(struct script_sb *sb);
/* One option (name without the leading dashes). Prints its own error.
 * Returns 0, -HWT_EINVAL (usage) or another negative error. */
int script_sb_option(struct script_sb *sb, const char *name, const char *arg);
/* Loads the sideband files and installs the context hook into cfg. img is
 * the image of --raw/--elf code, which every process sees. */
int script_sb_setup(struct script_sb *sb, struct hwt_dec_image *img, struct hwt_dec_config *cfg);
/* True when sideband files were given. */
bool script_sb_active(const struct script_sb *sb);
/* Prints the sideband output of a HWT_DEC_REC_NOTE record (what the
 * sideband printed where the decoder asked for the context); other
 * records are ignored. */
void script_sb_note(struct script_sb *sb, const struct hwt_dec_rec *rec, FILE *out);
/* Called at the end. */
void script_sb_finish(struct script_sb *sb);

#endif
