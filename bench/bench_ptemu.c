/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_ptemu.c - the PT emulator's throughput and the compression of
 * the PT it makes.
 *
 *   bench_ptemu [MB] [CMD...]
 *
 * Runs CMD (default: gzip -c over MB megabytes of generated text, default
 * 5, about 10^9 instructions) natively and under the emulator, and prints:
 *   1. emulator throughput: instructions/s, PT MB/s, slowdown vs native;
 *   2. the raw PT compressed with libzstd at several levels (ratio, MB/s)
 *      against the `zstd` command line on the same raw PT file, measured
 *      in the same run, with the command lines used.
 * Timings are wall-clock on this machine; rerun to compare.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "collector/collector.h"
#include "common/hwt.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Keeps the largest thread's PT in memory. */
struct keep {
	struct hwt_buf pt[64];
	int n;
};

static int k_stream(void *ctx, uint32_t pid, uint32_t tid)
{
	struct keep *k = ctx;

	(void)pid;
	(void)tid;
	if (k->n == 64)
		return -HWT_ETOOBIG;
	hwt_buf_init(&k->pt[k->n]);
	return k->n++;
}

static int k_aux(void *ctx, int s, uint64_t off, const void *buf, size_t len)
{
	struct keep *k = ctx;

	(void)off;
	return hwt_buf_append(&k->pt[s], buf, len);
}

static int run_cmd(const char *const *argv, const char *out)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (out) {
			if (!freopen(out, "w", stdout))
				_exit(127);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	static const int levels[] = {1, 3, 6, 9};
	const char *tmp = getenv("TMPDIR");
	char input[512], rawpt[512], cmdline[2048] = "";
	const char *defcmd[] = {"gzip", "-c", input, NULL};
	const char *const *cmd = defcmd;
	struct hwt_ptemu_config cfg;
	struct hwt_ptemu_result res;
	struct keep k = {.n = 0};
	struct hwt_ptemu_sink sink = {.ctx = &k, .stream = k_stream, .aux = k_aux};
	struct hwt_buf *pt;
	double t0, native, mb = argc > 1 ? atof(argv[1]) : 5;
	FILE *f;
	int err, big = 0;

	snprintf(input, sizeof(input), "%s/bench_ptemu_in.txt", tmp && *tmp ? tmp : "/tmp");
	snprintf(rawpt, sizeof(rawpt), "%s/bench_ptemu.pt", tmp && *tmp ? tmp : "/tmp");
	if (argc > 2) {
		cmd = (const char *const *)(argv + 2);
	} else {
		/* Deterministic, compressible-but-not-trivial text. */
		uint64_t x = 88172645463325252ull;

		f = fopen(input, "w");
		if (!f)
			return 1;
		for (size_t i = 0; i < (size_t)(mb * 1e6); i += 64) {
			char line[65];

			for (int j = 0; j < 63; j++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				line[j] = "etaoinshrdlu cmfwypvbgkqjxz,.\n"[x % 30];
			}
			line[63] = '\n';
			fwrite(line, 1, 64, f);
		}
		fclose(f);
	}
	for (int i = 0; cmd[i]; i++)
		snprintf(cmdline + strlen(cmdline), sizeof(cmdline) - strlen(cmdline), "%s%s",
			 i ? " " : "", cmd[i]);

	t0 = now();
	run_cmd(cmd, "/dev/null");
	native = now() - t0;

	hwt_ptemu_config_init(&cfg);
	cfg.argv = cmd;
	{
		/* The traced command's output goes to /dev/null too. */
		int saved = dup(1);

		if (!freopen("/dev/null", "w", stdout))
			return 1;
		t0 = now();
		err = hwt_ptemu_run(&cfg, &sink, &res);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
		stdout = fdopen(1, "w");
	}
	if (err < 0) {
		fprintf(stderr, "bench_ptemu: emulator failed: %s\n", hwt_strerror(err));
		return 1;
	}
	for (int i = 1; i < k.n; i++)
		if (k.pt[i].len > k.pt[big].len)
			big = i;
	pt = &k.pt[big];

	printf("PT emulator throughput (hwtrace record --pt=emulate -- %s)\n", cmdline);
	printf("  %-34s %12.2f s\n", "native wall time", native);
	printf("  %-34s %12.2f s (%.0fx native)\n", "emulated run (qemu + plugin)", res.seconds,
	       res.seconds / native);
	printf("  %-34s %12llu\n", "instructions traced", (unsigned long long)res.insns);
	printf("  %-34s %12.1f M/s\n", "emulator throughput",
	       (double)res.insns / res.seconds / 1e6);
	printf("  %-34s %12.1f MB (%.3f bytes/insn)\n", "PT produced", (double)res.bytes / 1e6,
	       (double)res.bytes / (double)res.insns);
	printf("  %-34s %12.1f MB/s\n", "PT rate", (double)res.bytes / res.seconds / 1e6);
	printf("  %-34s %12.1f s\n", "projected time for 10^9 insns",
	       1e9 / ((double)res.insns / res.seconds));

	f = fopen(rawpt, "w");
	if (!f || fwrite(pt->data, 1, pt->len, f) != pt->len)
		return 1;
	fclose(f);
	printf("\nCompression of the raw PT (%.1f MB, largest thread): libzstd vs zstd CLI\n",
	       (double)pt->len / 1e6);
	printf("  %-6s %10s %12s   %10s %12s   %s\n", "level", "ratio", "libzstd MB/s", "CLI ratio",
	       "CLI MB/s", "CLI command");
	for (size_t i = 0; i < HWT_ARRAY_SIZE(levels); i++) {
		size_t cap = ZSTD_compressBound(pt->len), n;
		void *dst = malloc(cap);
		char lv[16], cout[600];
		const char *zargv[] = {"zstd", "-q", "-f", lv, "-T1", rawpt, "-o", cout, NULL};
		double lib_t, cli_t;
		long csize = 0;

		if (!dst)
			return 1;
		t0 = now();
		n = ZSTD_compress(dst, cap, pt->data, pt->len, levels[i]);
		lib_t = now() - t0;
		free(dst);
		if (ZSTD_isError(n))
			return 1;
		snprintf(lv, sizeof(lv), "-%d", levels[i]);
		snprintf(cout, sizeof(cout), "%s.zst", rawpt);
		t0 = now();
		run_cmd(zargv, NULL);
		cli_t = now() - t0;
		f = fopen(cout, "r");
		if (f) {
			fseek(f, 0, SEEK_END);
			csize = ftell(f);
			fclose(f);
		}
		unlink(cout);
		printf("  %-6d %10.2f %12.1f   %10.2f %12.1f   zstd -q -f -%d -T1 RAW -o OUT\n",
		       levels[i], (double)pt->len / (double)n, (double)pt->len / lib_t / 1e6,
		       csize ? (double)pt->len / (double)csize : 0.0, (double)pt->len / cli_t / 1e6,
		       levels[i]);
	}
	unlink(rawpt);
	if (cmd == defcmd)
		unlink(input);
	for (int i = 0; i < k.n; i++)
		hwt_buf_fini(&k.pt[i]);
	hwt_ptemu_result_fini(&res);
	return 0;
}
