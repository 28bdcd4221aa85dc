/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_format.c - container write throughput and compression ratio
 * against the zstd command-line tool, on the same bytes, in the same run:
 *
 *   records  perf records from a perf.data this program records with the
 *            installed perf (cpu-clock every 10 us with call graphs, on 3 s
 *            of `find` over /usr), or from a perf.data given as argument;
 *   pt       real Intel PT bytes: the four quipper-*.pt AUX streams of the
 *            third-party testdata ($HWT_TESTDATA, default the tree's tests/data).
 *
 * For zstd levels 1, 3 and 9 it times hwt_fmt_writer (open, write in 64 KiB
 * batches as a ring-buffer reader would, close: compression, file writes,
 * index) and `zstd -L -q -f -o OUT IN` (compression and file I/O), and runs
 * `zstd -bL -i1 IN` (zstd's in-memory benchmark: its best case, no I/O).
 * MB = 10^6 bytes, as zstd prints. Throughput is of input bytes.
 *
 *   usage: bench_format [PERF.DATA]
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "format/format.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* snprintf that refuses to truncate (paths here are short; a long TMPDIR
 * or testdata path is an error, not a silently wrong command). */
static void fmt(char *buf, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));

static void fmt(char *buf, size_t cap, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, cap, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap) {
		fprintf(stderr, "bench_format: path or command too long\n");
		exit(1);
	}
}

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int write_file(const char *path, const struct hwt_buf *b)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(b->data, 1, b->len, f) == b->len;

	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

static int append_file(struct hwt_buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	char tmp[65536];
	size_t n;

	if (!f)
		return -1;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		if (hwt_buf_append(b, tmp, n) < 0)
			break;
	fclose(f);
	return 0;
}

/* All records of a perf.data, in the order the session delivers them. */
static int load_records(const char *path, struct hwt_buf *out, size_t *nrec)
{
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	uint64_t off;
	int err = hwt_fmt_session_open(&s, path, NULL, &off);

	if (err) {
		fprintf(stderr, "bench_format: %s: %s at offset %llu\n", path, hwt_strerror(err),
			(unsigned long long)off);
		return -1;
	}
	*nrec = 0;
	while (hwt_fmt_session_next(s, &rec, &off) == 0) {
		if (rec.type >= 64)
			continue; /* AUXTRACE: its data is not a record */
		hwt_buf_append(out, rec.raw, rec.size);
		(*nrec)++;
	}
	hwt_fmt_session_close(s);
	return 0;
}

static const char *testdata_dir(void)
{
	const char *env = getenv("HWT_TESTDATA");

	if (env && *env)
		return env;
	return HWT_TESTDATA_DIR; /* tests/data of the source tree (bench/CMakeLists.txt) */
}

struct result {
	double mbps, ratio;
	long long out;
};

/* The container writer: records in 64 KiB batches of whole records, or AUX
 * bytes in 64 KiB pieces at increasing AUX offsets. */
static int bench_ours(const struct hwt_buf *in, bool aux, int level, unsigned int threads,
		      const char *out, int reps, struct result *r)
{
	double t0 = now();

	for (int rep = 0; rep < reps; rep++) {
		struct hwt_fmt_writer_config cfg;
		struct hwt_fmt_writer *w;
		size_t pos = 0;
		int err;

		hwt_fmt_writer_config_init(&cfg);
		cfg.level = level;
		cfg.threads = threads;
		err = hwt_fmt_writer_open(&w, out, &cfg);
		if (err)
			return err;
		hwt_fmt_writer_add_stream(w, aux ? HWT_FMT_STREAM_AUX : HWT_FMT_STREAM_RECORDS, 0,
					  -1, aux ? "pt.cpu0" : "sideband.cpu0");
		while (pos < in->len && !err) {
			size_t n = 0;

			if (aux) {
				n = in->len - pos < 65536 ? in->len - pos : 65536;
				err = hwt_fmt_writer_aux(w, 0, pos, in->data + pos, n);
			} else {
				while (pos + n < in->len && n < 65536)
					n += hwt_le16(in->data + pos + n + 6);
				err = hwt_fmt_writer_records(w, 0, in->data + pos, n);
			}
			pos += n;
		}
		err = hwt_fmt_writer_close(w) ? -1 : err;
		if (err)
			return err;
	}
	r->mbps = (double)in->len * reps / 1e6 / (now() - t0);
	r->out = file_size(out);
	r->ratio = (double)in->len / (double)r->out;
	return 0;
}

static int bench_zstd_cli(const char *in, size_t in_len, int level, const char *out, int reps,
			  struct result *r, char *cmd, size_t cap)
{
	double t0;

	fmt(cmd, cap, "zstd -%d -q -f -o %s %s", level, out, in);
	t0 = now();
	for (int rep = 0; rep < reps; rep++)
		if (run(cmd) != 0)
			return -1;
	r->mbps = (double)in_len * reps / 1e6 / (now() - t0);
	r->out = file_size(out);
	r->ratio = (double)in_len / (double)r->out;
	return 0;
}

/* zstd -b prints "-1  2036468 (1.327) 127.57 MB/s  448.3 MB/s  name". */
static int bench_zstd_b(const char *in, int level, struct result *r, char *cmd, size_t cap)
{
	char line[512], full[1024];
	FILE *p;
	int ok = 0;

	fmt(cmd, cap, "zstd -b%d -i1 -q %s", level, in);
	fmt(full, sizeof(full), "%s 2>&1", cmd);
	p = popen(full, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		/* The result line may follow progress output on the same line. */
		char *s = strrchr(line, '\r');
		int lv;

		s = s ? s + 1 : line;
		while (*s == ' ')
			s++;
		if (sscanf(s, "-%d %lld (%lf) %lf MB/s", &lv, &r->out, &r->ratio, &r->mbps) == 4 ||
		    sscanf(s, "%d#%*s : %*d -> %lld (x%lf), %lf MB/s", &lv, &r->out, &r->ratio,
			   &r->mbps) == 4)
			ok = 1;
	}
	pclose(p);
	return ok ? 0 : -1;
}

static void row(const char *input, const char *tool, int level, size_t in_len,
		const struct result *r)
{
	printf("%-8s %-26s %5d %10.2f %10.2f %7.2f %9.1f\n", input, tool, level, in_len / 1e6,
	       r->out / 1e6, r->ratio, r->mbps);
}

int main(int argc, char **argv)
{
	static const int levels[] = {1, 3, 9};
	char dir[] = "/tmp/hwt-bench-XXXXXX", path[PATH_MAX], in_path[PATH_MAX], out[PATH_MAX];
	char cmd[2 * PATH_MAX], cmds[8][2 * PATH_MAX];
	const char *td = testdata_dir();
	struct hwt_buf inputs[2];
	const char *names[2] = {"records", "pt"};
	size_t nrec = 0;
	int ncmds = 0;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	hwt_buf_init(&inputs[0]);
	hwt_buf_init(&inputs[1]);
	if (argc > 1) {
		fmt(path, sizeof(path), "%s", argv[1]);
	} else {
		fmt(path, sizeof(path), "%s/bench.data", dir);
		fmt(cmd, sizeof(cmd),
		    "perf record -q --no-bpf-event -g -e cpu-clock -c 10000 -o %s -- "
		    "sh -c 'timeout 3 find /usr -type f -size +1k; true'",
		    path);
		fmt(cmds[ncmds++], sizeof(cmds[0]), "%s", cmd);
		fmt(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " > /dev/null");
		if (run(cmd) != 0) {
			fprintf(stderr,
				"bench_format: perf record failed; pass a perf.data instead\n");
			goto fail;
		}
	}
	if (load_records(path, &inputs[0], &nrec) < 0)
		goto fail;
	for (int cpu = 0; cpu <= 3; cpu += 3) {
		for (int m = 0; m < 2; m++) {
			fmt(in_path, sizeof(in_path), "%s/perf-intel-pt/quipper-%s-cpu%d.pt", td,
			    m ? "piped" : "file", cpu);
			if (append_file(&inputs[1], in_path) < 0)
				fprintf(stderr, "bench_format: %s missing (set HWT_TESTDATA)\n",
					in_path);
		}
	}

	{
		char ver[256] = "zstd";
		FILE *pv = popen("zstd -V 2>&1", "r");

		if (pv) {
			if (fgets(ver, sizeof(ver), pv))
				ver[strcspn(ver, "\n")] = '\0';
			pclose(pv);
		}
		printf("hwtrace container writer vs the zstd CLI, same bytes, same run\n%s\n", ver);
	}
	printf("records: %zu perf records (%.2f MB) from %s\n", nrec, inputs[0].len / 1e6, path);
	printf("pt:      %.2f MB of Intel PT (testdata quipper-*.pt, 4 streams)\n\n",
	       inputs[1].len / 1e6);
	printf("%-8s %-26s %5s %10s %10s %7s %9s\n", "input", "tool", "level", "in MB", "out MB",
	       "ratio", "MB/s");
	for (int i = 0; i < 2; i++) {
		/* Enough repetitions for a small input to be timed, not the
		 * process start. */
		int reps =
		    inputs[i].len < (8u << 20) ? (int)((8u << 20) / (inputs[i].len + 1)) + 1 : 1;

		if (!inputs[i].len)
			continue;
		fmt(in_path, sizeof(in_path), "%s/%s.bin", dir, names[i]);
		if (write_file(in_path, &inputs[i]) < 0)
			goto fail;
		for (size_t l = 0; l < HWT_ARRAY_SIZE(levels); l++) {
			struct result r;

			fmt(out, sizeof(out), "%s/%s.hwt", dir, names[i]);
			if (bench_ours(&inputs[i], i == 1, levels[l], 1, out, reps, &r) == 0)
				row(names[i], "hwtrace writer, 1 thread", levels[l], inputs[i].len,
				    &r);
			if (bench_ours(&inputs[i], i == 1, levels[l], 2, out, reps, &r) == 0)
				row(names[i], "hwtrace writer, 2 threads", levels[l], inputs[i].len,
				    &r);
			fmt(out, sizeof(out), "%s/%s.zst", dir, names[i]);
			if (bench_zstd_cli(in_path, inputs[i].len, levels[l], out, reps, &r, cmd,
					   sizeof(cmd)) == 0)
				row(names[i], "zstd CLI (file to file)", levels[l], inputs[i].len,
				    &r);
			if (i == 0 && l == 0)
				fmt(cmds[ncmds++], sizeof(cmds[0]), "%s", cmd);
			if (bench_zstd_b(in_path, levels[l], &r, cmd, sizeof(cmd)) == 0)
				row(names[i], "zstd -b (in memory)", levels[l], inputs[i].len, &r);
			if (i == 0 && l == 0)
				fmt(cmds[ncmds++], sizeof(cmds[0]), "%s", cmd);
		}
	}
	printf("\nratio = input bytes / output file bytes (the container's include its "
	       "headers, index and 1 MiB chunking);\nMB/s = input MB per second of wall time; "
	       "inputs under 8 MB are written repeatedly (separate files) up to 8 MB.\n"
	       "commands (shown for level 1; -3 and -9 likewise):\n");
	for (int i = 0; i < ncmds; i++)
		printf("  %s\n", cmds[i]);
	fmt(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	hwt_buf_fini(&inputs[0]);
	hwt_buf_fini(&inputs[1]);
	return 0;
fail:
	fmt(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	return 1;
}
