/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptemu_run.c - the PT emulator's launcher: runs the command
 * under qemu-x86_64 with hwtrace's plugin, waits for it, then collects what
 * the plugin wrote (per-thread PT files and the sideband, see ptemu_int.h)
 * and hands it to a sink: metadata describing the emulated CPU and clock,
 * the sideband records in time order completed with ITRACE_START, AUX and
 * EXIT records, and each thread's PT bytes.
 */
#include "collector/collector.h"
#include "collector/ptemu_int.h"
#include "collector/rec_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/hwt.h"

void hwt_ptemu_config_init(struct hwt_ptemu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	hwt_ptemu_terms_init(&cfg->terms);
}

void hwt_ptemu_result_fini(struct hwt_ptemu_result *res)
{
	if (!res)
		return;
	free(res->threads);
	memset(res, 0, sizeof(*res));
}

static bool executable(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

const char *hwt_ptemu_plugin_path(void)
{
	const char *env = getenv("HWT_PTEMU_PLUGIN");

	if (env && *env)
		return executable(env) || access(env, R_OK) == 0 ? env : NULL;
#ifdef HWT_PTEMU_PLUGIN_BUILD
	if (access(HWT_PTEMU_PLUGIN_BUILD, R_OK) == 0)
		return HWT_PTEMU_PLUGIN_BUILD;
#endif
#ifdef HWT_PTEMU_PLUGIN_INSTALL
	if (access(HWT_PTEMU_PLUGIN_INSTALL, R_OK) == 0)
		return HWT_PTEMU_PLUGIN_INSTALL;
#endif
	return NULL;
}

/* Reads a whole file; returns 0 and a malloc'ed buffer or -errno. */
static int slurp(const char *path, uint8_t **data, size_t *len)
{
	struct hwt_buf b;
	int err;

	hwt_buf_init(&b);
	err = hwt_buf_read_file(&b, path);
	if (err < 0) {
		hwt_buf_fini(&b);
		*data = NULL;
		*len = 0;
		return err;
	}
	*data = b.data;
	*len = b.len;
	return 0;
}

/* ------------------------------------------------------------------------ */

struct thread_file {
	char path[PATH_MAX + 256];
	struct hwt_ptemu_filehdr hdr;
	uint8_t tail[64]; /* closes a stream that ended without notice */
	size_t ntail;
	uint64_t size; /* PT bytes delivered: hdr.used + ntail */
	uint64_t insns;
};

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_file *x = a, *y = b;

	if (x->hdr.tsc_start != y->hdr.tsc_start)
		return x->hdr.tsc_start < y->hdr.tsc_start ? -1 : 1;
	return x->hdr.tid < y->hdr.tid ? -1 : x->hdr.tid > y->hdr.tid;
}

static int list_threads(const char *dir, struct thread_file **out, size_t *n,
			const struct hwt_logger *log)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct thread_file *v = NULL;
	size_t cnt = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct thread_file tf;
		int fd;

		if (strncmp(de->d_name, "pt.", 3))
			continue;
		snprintf(tf.path, sizeof(tf.path), "%s/%s", dir, de->d_name);
		fd = open(tf.path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (pread(fd, &tf.hdr, sizeof(tf.hdr), 0) != sizeof(tf.hdr) ||
		    tf.hdr.magic != HWT_PTEMU_FILE_MAGIC) {
			hwt_log(log, HWT_LOG_WARN, "ptemu: %s was never started; ignored", tf.path);
			close(fd);
			continue;
		}
		close(fd);
		tf.ntail = 0;
		tf.insns = tf.hdr.n.insns;
		if (tf.hdr.end == HWT_PTEMU_END_RUNNING) {
			/* Killed or crashed: the process could not finish its
			 * stream; close it as interrupted before the last
			 * instruction it reached. */
			int len = hwt_ptemu_close_stream(&tf.hdr, tf.tail, sizeof(tf.tail));

			if (len > 0)
				tf.ntail = (size_t)len;
			tf.insns = tf.hdr.insns_tb + (tf.hdr.in_kernel ? 0 : tf.hdr.cur_idx);
		}
		tf.size = tf.hdr.used + tf.ntail;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct thread_file *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		v[cnt++] = tf;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_thread);
	*out = v;
	*n = cnt;
	return 0;
}

/* Sideband records, with the time from their trailer, sorted stably. */
struct rec_ref {
	uint64_t time;
	size_t seq;
	const uint8_t *rec;
	uint16_t size;
};

static int cmp_rec(const void *a, const void *b)
{
	const struct rec_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int add_rec(struct hwt_buf *recs, struct hwt_buf *refs, const uint8_t *rec, size_t len)
{
	/* Records live in recs; refs keep offsets until recs stops moving. */
	struct rec_ref r;
	int err;

	memset(&r, 0, sizeof(r));
	r.size = (uint16_t)len;
	r.rec = (const uint8_t *)(uintptr_t)recs->len; /* offset for now */
	r.time = len >= 32 ? hwt_le64(rec + len - 24) : 0;
	r.seq = refs->len / sizeof(r);
	err = hwt_buf_append(recs, rec, len);
	if (err < 0)
		return err;
	return hwt_buf_append(refs, &r, sizeof(r));
}

static int meta_u64(const struct hwt_ptemu_sink *s, const char *key, uint64_t v)
{
	return s->meta_u64 ? s->meta_u64(s->ctx, key, v) : 0;
}

static int meta_str(const struct hwt_ptemu_sink *s, const char *key, const char *v)
{
	return s->meta_str ? s->meta_str(s->ctx, key, v) : 0;
}

static int send_meta(const struct hwt_ptemu_config *cfg, const char *filter,
		     const struct hwt_ptemu_sink *s)
{
	struct hwt_ptemu_cpu cpu;
	const struct hwt_ptemu_terms *t = &cfg->terms;
	uint8_t attr[256], ids[8];
	struct hwt_buf cmd;
	uint32_t shift, mult;
	uint64_t zero;
	size_t alen;
	int err = 0;

	hwt_ptemu_cpu_default(&cpu);
	hwt_ptemu_time_conv(&shift, &mult, &zero);
	hwt_buf_init(&cmd);
	for (size_t i = 0; cfg->argv[i] && err >= 0; i++)
		err = hwt_buf_printf(&cmd, "%s%s", i ? " " : "", cfg->argv[i]);
	if (err >= 0)
		err = meta_str(s, "target.cmdline", cmd.data ? (char *)cmd.data : "");
	hwt_buf_fini(&cmd);
	struct {
		const char *key;
		uint64_t v;
	} u[] = {
	    {"pt.emulated", 1},
	    {"cpu.family", cpu.family},
	    {"cpu.model", cpu.model},
	    {"cpu.stepping", cpu.stepping},
	    {"cpu.count", 1},
	    {"pt.config.cpu.family", cpu.family},
	    {"pt.config.cpu.model", cpu.model},
	    {"pt.config.cpu.stepping", cpu.stepping},
	    {"pt.config.mtc_freq", t->mtc_period},
	    {"pt.config.nom_freq", cpu.nom_freq},
	    {"pt.config.cbr", cpu.cbr},
	    {"pt.config.cpuid_0x15_eax", cpu.cpuid15_eax},
	    {"pt.config.cpuid_0x15_ebx", cpu.cpuid15_ebx},
	    {"pt.config.tsc", t->tsc},
	    {"pt.config.mtc", t->mtc},
	    {"pt.config.cyc", t->cyc},
	    {"pt.config.noretcomp", t->noretcomp},
	    {"pt.config.psb_period", t->psb_period},
	    {"pt.config.psb_bytes", t->psb_bytes ? t->psb_bytes : 2048ull << t->psb_period},
	    {"pt.config.tsx", t->tsx},
	    {"pt.config.pip", t->pip},
	    {"pt.config.vmcs", t->vmcs},
	    {"pt.config.psb_off", t->psb_off},
	    {"pt.config.vmentry", t->vmentry},
	    {"pt.config.ovf", t->ovf},
	    {"pt.config.tsc_per_insn", t->tsc_per_insn},
	    {"pt.config.config", hwt_ptemu_terms_config(t)},
	    {"pt.config.per_thread", 1},
	    {"time.shift", shift},
	    {"time.mult", mult},
	    {"time.zero", zero},
	    {"event.count", 1},
	};
	for (size_t i = 0; i < HWT_ARRAY_SIZE(u) && err >= 0; i++)
		err = meta_u64(s, u[i].key, u[i].v);
	if (err >= 0)
		err = meta_str(s, "cpu.vendor", "GenuineIntel");
	if (err >= 0)
		err = meta_str(s, "cpu.desc", "Intel PT emulated: family 6 model 85 (Skylake-SP)");
	if (err >= 0)
		err = meta_str(s, "arch", "x86_64");
	if (err >= 0)
		err = meta_str(s, "pt.emulator", "qemu-x86_64 TCG plugin (hwtrace ptemu)");
	if (err >= 0)
		err = meta_str(s, "event.0.name", "intel_pt//u (emulated)");
	/* As a recording of real PT: the string the kernel got. */
	if (err >= 0 && filter[0])
		err = meta_str(s, "pt.config.filter", filter);
	alen = hwt_ptemu_attr(t, attr, sizeof(attr));
	hwt_put_le64(ids, HWT_PTEMU_SAMPLE_ID);
	if (err >= 0 && s->meta_bytes)
		err = s->meta_bytes(s->ctx, "event.0.attr", attr, alen);
	if (err >= 0 && s->meta_bytes)
		err = s->meta_bytes(s->ctx, "event.0.ids", ids, sizeof(ids));
	return err;
}

/* Chunk size of the AUX records we announce (as perf's per-wakeup AUX
 * records would). */
#define AUX_CHUNK (4u << 20)

static int deliver(const struct hwt_ptemu_config *cfg, const char *dir, const char *filter,
		   const struct hwt_ptemu_sink *sink, struct hwt_ptemu_result *res)
{
	struct thread_file *tf = NULL;
	uint8_t *sb = NULL, *buf = NULL;
	size_t nsb = 0, nt = 0;
	struct hwt_buf recs, refs;
	char path[PATH_MAX + 16];
	uint8_t rec[256];
	int err;

	hwt_buf_init(&recs);
	hwt_buf_init(&refs);
	err = send_meta(cfg, filter, sink);
	if (err < 0)
		goto out;
	err = list_threads(dir, &tf, &nt, &cfg->log);
	if (err < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/sideband", dir);
	err = slurp(path, &sb, &nsb);
	if (err < 0 && err != -ENOENT)
		goto out;
	/* Whole records only: a process killed mid-write leaves a torn one. */
	for (size_t off = 0; off + 8 <= nsb;) {
		size_t size = hwt_le16(sb + off + 6);

		if (size < 8 || off + size > nsb)
			break;
		err = add_rec(&recs, &refs, sb + off, size);
		if (err < 0)
			goto out;
		off += size;
	}
	for (size_t i = 0; i < nt; i++) {
		const struct hwt_ptemu_filehdr *h = &tf[i].hdr;
		uint64_t t0 = hwt_ptemu_tsc_to_ns(h->tsc_start);
		uint64_t t1 = hwt_ptemu_tsc_to_ns(h->tsc_end);
		int n;

		n = hwt_ptemu_rec_itrace_start(rec, sizeof(rec), h->pid, h->tid, t0);
		err = n < 0 ? n : add_rec(&recs, &refs, rec, (size_t)n);
		for (uint64_t off = 0; err >= 0 && off < tf[i].size; off += AUX_CHUNK) {
			uint64_t len = tf[i].size - off < AUX_CHUNK ? tf[i].size - off : AUX_CHUNK;

			n = hwt_ptemu_rec_aux(rec, sizeof(rec), h->pid, h->tid, off, len, 0, t1);
			err = n < 0 ? n : add_rec(&recs, &refs, rec, (size_t)n);
		}
		if (err >= 0 && h->end != HWT_PTEMU_END_EXIT && h->end != HWT_PTEMU_END_EXEC) {
			/* Killed: the kernel would still have said EXIT. */
			n = hwt_ptemu_rec_task(rec, sizeof(rec), PERF_RECORD_EXIT, h->pid,
					       h->ppid ? h->ppid : h->pid, h->tid,
					       h->ptid ? h->ptid : h->tid, t1);
			err = n < 0 ? n : add_rec(&recs, &refs, rec, (size_t)n);
		}
		if (err < 0)
			goto out;
	}
	{
		struct rec_ref *r = (struct rec_ref *)refs.data;
		size_t nr = refs.len / sizeof(*r);

		for (size_t i = 0; i < nr; i++)
			r[i].rec = recs.data + (uintptr_t)r[i].rec;
		if (nr)
			qsort(r, nr, sizeof(*r), cmp_rec);
		for (size_t i = 0; i < nr && sink->records; i++) {
			err = sink->records(sink->ctx, r[i].rec, r[i].size);
			if (err < 0)
				goto out;
		}
	}
	if (res) {
		res->threads = calloc(nt ? nt : 1, sizeof(*res->threads));
		if (!res->threads) {
			err = -ENOMEM;
			goto out;
		}
		res->nthreads = nt;
	}
	buf = malloc(1u << 20);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		const struct hwt_ptemu_filehdr *h = &tf[i].hdr;
		int stream = 0;
		int fd;

		if (res) {
			struct hwt_ptemu_thread *th = &res->threads[i];

			th->pid = h->pid;
			th->tid = h->tid;
			th->ppid = h->ppid;
			th->ptid = h->ptid;
			th->insns = tf[i].insns;
			th->cond = h->n.cond;
			th->taken = h->n.taken;
			th->indirect = h->n.indirect;
			th->ret_comp = h->n.ret_comp;
			th->ret_tip = h->n.ret_tip;
			th->kernel = h->n.kernel;
			th->lost = h->n.lost;
			th->ovf = h->n.ovf;
			th->filtered = h->n.outside;
			th->leaves = h->n.leaves;
			th->untraced = h->n.ovf_insns + h->n.outside;
			th->psb = h->n.psb;
			th->bytes = tf[i].size;
			th->tsc_start = h->tsc_start;
			th->tsc_end = h->tsc_end;
			th->end = (int)h->end;
			res->insns += tf[i].insns;
			res->bytes += tf[i].size;
		}
		if (sink->stream) {
			stream = sink->stream(sink->ctx, h->pid, h->tid);
			if (stream < 0) {
				err = stream;
				goto out;
			}
		}
		fd = open(tf[i].path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			goto out;
		}
		for (uint64_t off = 0; off < h->used;) {
			size_t want =
			    h->used - off < (1u << 20) ? (size_t)(h->used - off) : (1u << 20);
			ssize_t n = pread(fd, buf, want, (off_t)(HWT_PTEMU_FILE_HDR + off));

			if (n <= 0) {
				hwt_log(&cfg->log, HWT_LOG_WARN,
					"ptemu: %s is shorter than its header says", tf[i].path);
				break;
			}
			if (sink->aux) {
				err = sink->aux(sink->ctx, stream, off, buf, (size_t)n);
				if (err < 0) {
					close(fd);
					goto out;
				}
			}
			off += (uint64_t)n;
		}
		close(fd);
		if (tf[i].ntail && sink->aux) {
			err = sink->aux(sink->ctx, stream, h->used, tf[i].tail, tf[i].ntail);
			if (err < 0)
				goto out;
		}
	}
	err = 0;
out:
	free(buf);
	free(sb);
	free(tf);
	hwt_buf_fini(&recs);
	hwt_buf_fini(&refs);
	return err;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX + 256];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* The address filters of cfg (perf's syntax) checked by the kernel's
 * rules, as the kernel's filter string (for the metadata) and as the
 * plugin's filt= argument (file offsets of inodes: the plugin applies
 * them to the mappings it sees, as the kernel does). Returns 0 (both
 * empty without filters), or -HWT_EINVAL or -HWT_ENOTSUP (kernel
 * addresses) with the reason logged. */
static int filters(const struct hwt_ptemu_config *cfg, char *kstr, size_t klen, char *arg,
		   size_t alen)
{
	struct hwt_coll_pt_range rg[HWT_PTEMU_ADDR_RANGES];
	char msg[512];
	size_t used = 0;
	int n;

	kstr[0] = arg[0] = '\0';
	if (!cfg->terms.filter)
		return 0;
	msg[0] = '\0';
	n = hwt_coll_pt_filter_ranges(cfg->terms.filter, HWT_PTEMU_ADDR_RANGES, 0, rg, kstr, klen,
				      msg, sizeof(msg));
	if (n < 0) {
		hwt_log(&cfg->log, HWT_LOG_ERROR, "ptemu: %s", msg[0] ? msg : hwt_strerror(n));
		return -HWT_EINVAL;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;
		int k;

		if (!rg[i].file[0]) {
			hwt_log(&cfg->log, HWT_LOG_ERROR,
				"ptemu: filter at kernel address 0x%llx: the emulator traces user "
				"space only; give 'filter SYMBOL @ FILE'",
				(unsigned long long)rg[i].addr);
			return -HWT_ENOTSUP;
		}
		if (stat(rg[i].file, &st) < 0) {
			hwt_log(&cfg->log, HWT_LOG_ERROR, "ptemu: filter: '%s': %s", rg[i].file,
				strerror(errno));
			return -HWT_EINVAL;
		}
		k = snprintf(arg + used, alen - used, "%s%c:%llx:%llx:%llx:%llx", i ? "+" : "",
			     rg[i].stop ? 's' : 'f', (unsigned long long)rg[i].addr,
			     (unsigned long long)rg[i].size, (unsigned long long)st.st_dev,
			     (unsigned long long)st.st_ino);
		if (k < 0 || (size_t)k >= alen - used)
			return -HWT_EINTERNAL; /* 2 filters always fit */
		used += (size_t)k;
	}
	return 0;
}

/* The traced command while it runs: signals that would end hwtrace go to
 * it instead. (A process-wide variable, as signal dispositions are.) */
static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

int hwt_ptemu_run(const struct hwt_ptemu_config *cfg, const struct hwt_ptemu_sink *sink,
		  struct hwt_ptemu_result *res)
{
	struct hwt_ptemu_config c;
	char qemu[PATH_MAX], prog[PATH_MAX], dir[PATH_MAX], plugarg[PATH_MAX + 512], shape[64];
	char kfilter[4096], filt[256];
	const char *plugin, *tmp;
	struct timespec t0, t1;
	const char **argv = NULL;
	bool own_dir = false;
	size_t argc = 0;
	int err, status;
	pid_t pid;

	if (res)
		memset(res, 0, sizeof(*res));
	hwt_ptemu_config_init(&c);
	if (!cfg || hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &c;
	if (!sink || !cfg->argv || !cfg->argv[0])
		return -HWT_EINVAL;
	if (cfg->terms.mtc_period > 15 || cfg->terms.psb_period > 15 || !cfg->terms.tsc_per_insn ||
	    (cfg->terms.psb_bytes && cfg->terms.psb_bytes < 256) || cfg->terms.psb_off > 64 ||
	    (cfg->truth && !cfg->workdir))
		return -HWT_EINVAL;
	err = filters(cfg, kfilter, sizeof(kfilter), filt, sizeof(filt));
	if (err < 0)
		return err;
	/* Found as execvp would (qemu-user does not search $PATH for the
	 * program either). */
	err = hwt_coll_command_find(cfg->qemu ? cfg->qemu : "qemu-x86_64", qemu, sizeof(qemu), NULL,
				    0);
	if (err < 0) {
		hwt_log(&cfg->log, HWT_LOG_ERROR,
			"ptemu: qemu-x86_64 not found: install Debian's qemu-user package");
		return -HWT_ENOTSUP;
	}
	plugin = cfg->plugin ? cfg->plugin : hwt_ptemu_plugin_path();
	if (!plugin || access(plugin, R_OK) != 0) {
		hwt_log(&cfg->log, HWT_LOG_ERROR,
			"ptemu: the emulator plugin hwtrace-ptemu.so was not found: "
			"set HWT_PTEMU_PLUGIN or reinstall hwtrace");
		return -HWT_ENOTSUP;
	}
	{
		char msg[512];

		err = hwt_coll_command_find(cfg->argv[0], prog, sizeof(prog), msg, sizeof(msg));
		if (err < 0) {
			hwt_log(&cfg->log, HWT_LOG_ERROR, "%s", msg);
			return err;
		}
	}
	if (cfg->workdir) {
		snprintf(dir, sizeof(dir), "%s", cfg->workdir);
	} else {
		tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/hwtrace-ptemu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			return -errno;
		own_dir = true;
	}
	if (strchr(dir, ',') || strchr(plugin, ',')) {
		hwt_log(&cfg->log, HWT_LOG_ERROR, "ptemu: paths with ',' cannot be passed to qemu");
		err = -HWT_EINVAL;
		goto out;
	}
	hwt_ptemu_shape_arg(&cfg->terms, shape, sizeof(shape));
	snprintf(plugarg, sizeof(plugarg), "%s,dir=%s,cfg=%llx,tpi=%u,truth=%d,shape=%s%s%s",
		 plugin, dir, (unsigned long long)hwt_ptemu_terms_config(&cfg->terms),
		 cfg->terms.tsc_per_insn, cfg->truth ? 1 : 0, shape, filt[0] ? ",filt=" : "", filt);
	while (cfg->argv[argc])
		argc++;
	argv = calloc(argc + 5, sizeof(*argv));
	if (!argv) {
		err = -ENOMEM;
		goto out;
	}
	argv[0] = qemu;
	argv[1] = "-plugin";
	argv[2] = plugarg;
	argv[3] = prog;
	for (size_t i = 1; i < argc; i++)
		argv[3 + i] = cfg->argv[i];
	hwt_log(&cfg->log, HWT_LOG_DEBUG, "ptemu: %s -plugin %s %s", qemu, plugarg, prog);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (pid == 0) {
		execv(qemu, (char *const *)argv);
		_exit(127);
	}
	{
		/* Ctrl-C (or a SIGTERM to us) stops the command, as with perf
		 * record, and what it ran so far is still collected. */
		struct sigaction fwd, old_int, old_term;
		int werr = 0;

		memset(&fwd, 0, sizeof(fwd));
		fwd.sa_handler = forward_signal;
		child_pid = pid;
		sigaction(SIGINT, &fwd, &old_int);
		sigaction(SIGTERM, &fwd, &old_term);
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR) {
				werr = -errno;
				break;
			}
		}
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		child_pid = 0;
		if (werr < 0) {
			err = werr;
			goto out;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (res) {
		res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		res->seconds =
		    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	}
	err = deliver(cfg, dir, kfilter, sink, res);
	if (err < 0 && res) {
		free(res->threads);
		res->threads = NULL;
		res->nthreads = 0;
	}
out:
	free(argv);
	if (own_dir)
		remove_dir(dir);
	return err;
}
