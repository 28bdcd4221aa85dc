/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/script_parse.h - reads `hwtrace script` output back into
 * samples (header fields and the symbol of every frame) for the recording
 * tests. Header lines look like
 *
 *   comm  pid/tid [cpu] sec.usec: period event: ip sym+0xoff (object)
 *
 * and each frame of the call chain follows on a line that starts with a tab.
 */
#ifndef HWT_TESTS_COLLECTOR_SCRIPT_PARSE_H
#define HWT_TESTS_COLLECTOR_SCRIPT_PARSE_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SP_FRAMES 32

struct sp_sample {
	char comm[32];
	unsigned pid, tid, cpu;
	double time;
	unsigned long long period;
	char event[64];
	char sym[64]; /* symbol of the sampled ip ("[unknown]" when none) */
	char obj[256];
	int nframes;
	char frames[SP_FRAMES][64]; /* symbols of the chain, innermost first */
};

/* "hot_a+0x24" -> "hot_a" */
static inline void sp_strip(char *sym)
{
	char *plus = strrchr(sym, '+');

	if (plus && plus != sym)
		*plus = '\0';
}

/* Parses text into a malloc'd array of samples; returns the count. */
static inline size_t sp_parse(const char *text, struct sp_sample **out)
{
	size_t n = 0, cap = 256;
	struct sp_sample *v = calloc(cap, sizeof(*v));
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[1024];

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (buf[0] == '\t' && n) {
			struct sp_sample *s = &v[n - 1];
			unsigned long long ip;
			char sym[64];

			if (s->nframes < SP_FRAMES && sscanf(buf, " %llx %63s", &ip, sym) == 2) {
				sp_strip(sym);
				snprintf(s->frames[s->nframes++], 64, "%s", sym);
			}
		} else if (buf[0] && buf[0] != '\t') {
			struct sp_sample s;
			unsigned long long ip;
			int pos = 0;
			char *ev, *colon;

			memset(&s, 0, sizeof(s));
			/* The event name may hold colons (perf's "cpu-clock:ppp"): it
			 * ends at the first ": ". */
			if (sscanf(buf, " %31s %u/%u [%u] %lf: %llu %n", s.comm, &s.pid, &s.tid,
				   &s.cpu, &s.time, &s.period, &pos) == 6 &&
			    pos > 0 && (colon = strstr(buf + pos, ": ")) != NULL) {
				ev = buf + pos;
				*colon = '\0';
				snprintf(s.event, sizeof(s.event), "%s", ev);
				if (sscanf(colon + 2, "%llx %63s (%255[^)])", &ip, s.sym, s.obj) ==
				    3) {
					sp_strip(s.sym);
					if (n == cap) {
						cap *= 2;
						v = realloc(v, cap * sizeof(*v));
					}
					v[n++] = s;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	*out = v;
	return n;
}

/* True when the chain's first k symbols are the given ones. */
static inline int sp_chain_is(const struct sp_sample *s, const char *const *want, int k)
{
	if (s->nframes < k)
		return 0;
	for (int i = 0; i < k; i++) {
		if (strcmp(s->frames[i], want[i]))
			return 0;
	}
	return 1;
}

#endif
