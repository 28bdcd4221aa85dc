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
	struct script_sb *sb;
};

/* Maps an ELF file's loadable segments into img (ptxed's --elf). */
int hwt_script_load_elf(struct hwt_dec_image *img, const char *path, uint64_t base, bool has_base);

/* The perf-event sideband (--pevent:* and --sb:* options, cli/script_sb.c):
 * allocated before option parsing, fed those options (the files are read
 * as they are given), set up once the configuration is known: it hooks
 * ptsession's sideband (hwt_pts_pevent) into cfg and prints what setting
 * it up reported. */
int script_sb_alloc(struct script_sb **sb, struct hwt_dec_icache *ic);
void script_sb_free(struct script_sb *sb);
/* One option (name without the leading dashes). Prints its own error.
 * Returns 0, -HWT_EINVAL (usage) or another negative error. */
int script_sb_option(struct script_sb *sb, const char *name, const char *arg);
/* quiet: --quiet (no records printed). Returns 0 or a negative error
 * (printed). */
int script_sb_setup(struct script_sb *sb, struct hwt_dec_config *cfg, bool quiet);
/* True when sideband files were given. */
bool script_sb_active(const struct script_sb *sb);
/* Appends the sideband output of the HWT_DEC_REC_NOTE record with this
 * cookie (what the sideband printed where the decoder asked for the
 * context) to out, once. Returns 0 or -ENOMEM. */
int script_sb_note_text(struct script_sb *sb, uint64_t cookie, struct hwt_buf *out);

#endif
