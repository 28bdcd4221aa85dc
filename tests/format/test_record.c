/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/test_record.c - the perf record parser and the evlist's
 * record -> event mapping, against records built byte by byte by
 * fmt_testlib.h: every record type with its sample_id trailer, a sample with
 * every sample_type bit, read_format GROUP/ID/LOST, register masks,
 * branch HW_INDEX, and malformed sizes, counts and strings at every length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>
#include <sys/mman.h>

#include "format/format.h"
#include "tests/format/fmt_testlib.h"
#include "tests/lib/testutil.h"

#define ID_ST                                                                                      \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static struct hwt_fmt_attr_info id_info(void)
{
	struct hwt_fmt_attr_info info;

	memset(&info, 0, sizeof(info));
	info.sample_type = ID_ST;
	info.sample_id_all = true;
	return info;
}

static void check_trailer(const struct hwt_fmt_record *rec)
{
	assert_int_equal(rec->id.present, ID_ST);
	assert_int_equal(rec->id.pid, 11);
	assert_int_equal(rec->id.tid, 12);
	assert_int_equal(rec->id.time, 123456789);
	assert_int_equal(rec->id.id, 77);
	assert_int_equal(rec->id.stream_id, 1077);
	assert_int_equal(rec->id.cpu, 3);
}

static void end_with_id(struct rb *b)
{
	rb_sample_id(b, ID_ST, 11, 12, 123456789, 77, 3);
	rb_end(b);
}

/* Parses b; then every shorter header size must be handled cleanly: an
 * error for fixed layouts, an error or success (a string's padding can be
 * cut) for records that end in padding. */
static void parse_ok_and_shorter(const struct hwt_fmt_attr_info *info, struct rb *b,
				 struct hwt_fmt_record *rec, bool fixed)
{
	struct rb t;

	assert_int_equal(hwt_fmt_record_parse(info, b->buf, b->len, rec), 0);
	assert_int_equal(rec->size, b->len);
	for (size_t n = 8; n < b->len; n++) {
		struct hwt_fmt_record r2;
		int err;

		t = *b;
		t.len = n;
		rb_end(&t);
		err = hwt_fmt_record_parse(info, t.buf, n, &r2);
		if (fixed || err != 0)
			assert_int_equal(err, -HWT_EFORMAT);
	}
	/* A header size beyond the buffer is truncation. */
	assert_int_equal(hwt_fmt_record_parse(info, b->buf, b->len - 1, rec), -HWT_ETRUNC);
	assert_int_equal(hwt_fmt_record_parse(info, b->buf, b->len, rec), 0);
}

static void test_kernel_records(void **state)
{
	struct hwt_fmt_attr_info info = id_info();
	struct hwt_fmt_record rec;
	struct rb b;
	uint8_t tag[8] = {1, 2, 3, 4, 5, 6, 7, 8}, bid[20];

	(void)state;
	rb_begin(&b, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER);
	rb_u32(&b, 100);
	rb_u32(&b, 101);
	rb_u64(&b, 0x400000);
	rb_u64(&b, 0x1000);
	rb_u64(&b, 0x200);
	rb_str(&b, "/bin/true");
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_int_equal(rec.type, PERF_RECORD_MMAP);
	assert_int_equal(rec.u.mmap.pid, 100);
	assert_int_equal(rec.u.mmap.tid, 101);
	assert_int_equal(rec.u.mmap.addr, 0x400000);
	assert_int_equal(rec.u.mmap.len, 0x1000);
	assert_int_equal(rec.u.mmap.pgoff, 0x200);
	assert_string_equal(rec.u.mmap.filename, "/bin/true");
	check_trailer(&rec);

	rb_mmap2(&b, 5, 6, 0x7f0000, 0x3000, 0x1000, "/lib/libc.so.6", 0, 0, 0);
	b.len -= 32; /* drop the testlib trailer (4 fields), add ours */
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_int_equal(rec.type, PERF_RECORD_MMAP2);
	assert_int_equal(rec.u.mmap.maj, 8);
	assert_int_equal(rec.u.mmap.min, 1);
	assert_int_equal(rec.u.mmap.ino, 12345);
	assert_int_equal(rec.u.mmap.ino_generation, 7);
	assert_int_equal(rec.u.mmap.prot, 5);
	assert_int_equal(rec.u.mmap.flags, 2);
	assert_false(rec.u.mmap.has_build_id);
	assert_string_equal(rec.u.mmap.filename, "/lib/libc.so.6");
	check_trailer(&rec);

	/* MMAP2 with a build-id instead of device and inode. */
	for (int i = 0; i < 20; i++)
		bid[i] = (uint8_t)(0xa0 + i);
	rb_begin(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	rb_u32(&b, 5);
	rb_u32(&b, 6);
	rb_u64(&b, 1);
	rb_u64(&b, 2);
	rb_u64(&b, 3);
	b.buf[b.len] = 20;
	memset(b.buf + b.len + 1, 0, 3);
	b.len += 4;
	rb_bytes(&b, bid, 20);
	rb_u32(&b, 5);
	rb_u32(&b, 2);
	rb_str(&b, "/x");
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_true(rec.u.mmap.has_build_id);
	assert_int_equal(rec.u.mmap.build_id_size, 20);
	assert_memory_equal(rec.u.mmap.build_id, bid, 20);
	/* A build-id size over 20 is impossible. */
	b.buf[8 + 32] = 21;
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), -HWT_EFORMAT);

	rb_begin(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	rb_u32(&b, 7);
	rb_u32(&b, 8);
	rb_str(&b, "fmt_spin");
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_int_equal(rec.u.comm.pid, 7);
	assert_int_equal(rec.u.comm.tid, 8);
	assert_string_equal(rec.u.comm.comm, "fmt_spin");
	assert_int_equal(rec.misc, PERF_RECORD_MISC_COMM_EXEC);
	check_trailer(&rec);
	/* An unterminated string is refused. */
	rb_begin(&b, PERF_RECORD_COMM, 0);
	rb_u32(&b, 7);
	rb_u32(&b, 8);
	rb_bytes(&b, "abcdefgh", 8);
	end_with_id(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), -HWT_EFORMAT);

	for (uint32_t type = PERF_RECORD_EXIT; type <= PERF_RECORD_FORK; type += 3) {
		rb_begin(&b, type, 0);
		rb_u32(&b, 1);
		rb_u32(&b, 2);
		rb_u32(&b, 3);
		rb_u32(&b, 4);
		rb_u64(&b, 555);
		end_with_id(&b);
		parse_ok_and_shorter(&info, &b, &rec, true);
		assert_int_equal(rec.type, type);
		assert_int_equal(rec.u.fork.pid, 1);
		assert_int_equal(rec.u.fork.ppid, 2);
		assert_int_equal(rec.u.fork.tid, 3);
		assert_int_equal(rec.u.fork.ptid, 4);
		assert_int_equal(rec.u.fork.time, 555);
		check_trailer(&rec);
	}

	rb_begin(&b, PERF_RECORD_LOST, 0);
	rb_u64(&b, 99);
	rb_u64(&b, 1234);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.lost.id, 99);
	assert_int_equal(rec.u.lost.lost, 1234);

	rb_begin(&b, PERF_RECORD_LOST_SAMPLES, 0);
	rb_u64(&b, 42);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.lost_samples.lost, 42);

	for (uint32_t type = PERF_RECORD_THROTTLE; type <= PERF_RECORD_UNTHROTTLE; type++) {
		rb_begin(&b, type, 0);
		rb_u64(&b, 1000);
		rb_u64(&b, 2000);
		rb_u64(&b, 3000);
		end_with_id(&b);
		parse_ok_and_shorter(&info, &b, &rec, true);
		assert_int_equal(rec.u.throttle.time, 1000);
		assert_int_equal(rec.u.throttle.id, 2000);
		assert_int_equal(rec.u.throttle.stream_id, 3000);
	}

	rb_begin(&b, PERF_RECORD_AUX, 0);
	rb_u64(&b, 4096);
	rb_u64(&b, 8192);
	rb_u64(&b, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.aux.aux_offset, 4096);
	assert_int_equal(rec.u.aux.aux_size, 8192);
	assert_int_equal(rec.u.aux.flags, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL);
	check_trailer(&rec);

	rb_begin(&b, PERF_RECORD_ITRACE_START, 0);
	rb_u32(&b, 21);
	rb_u32(&b, 22);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.itrace_start.pid, 21);
	assert_int_equal(rec.u.itrace_start.tid, 22);

	rb_begin(&b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
	end_with_id(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.misc, PERF_RECORD_MISC_SWITCH_OUT);
	check_trailer(&rec);
	/* A SWITCH shorter than its trailer. */
	b.len = 16;
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), -HWT_EFORMAT);

	rb_begin(&b, PERF_RECORD_SWITCH_CPU_WIDE, 0);
	rb_u32(&b, 31);
	rb_u32(&b, 32);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.sw.next_prev_pid, 31);
	assert_int_equal(rec.u.sw.next_prev_tid, 32);

	rb_begin(&b, PERF_RECORD_NAMESPACES, 0);
	rb_u32(&b, 41);
	rb_u32(&b, 42);
	rb_u64(&b, 2);
	rb_u64(&b, 10);
	rb_u64(&b, 11);
	rb_u64(&b, 20);
	rb_u64(&b, 21);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.namespaces.nr, 2);
	assert_int_equal(hwt_le64(rec.u.namespaces.entries + 16), 20);
	hwt_put_le64(b.buf + 16, UINT64_MAX / 8); /* impossible count */
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), -HWT_EFORMAT);

	rb_begin(&b, PERF_RECORD_KSYMBOL, 0);
	rb_u64(&b, 0xffffffffc0000000ull);
	rb_u32(&b, 300);
	rb_u16(&b, PERF_RECORD_KSYMBOL_TYPE_BPF);
	rb_u16(&b, 0);
	rb_str(&b, "bpf_prog_1");
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_int_equal(rec.u.ksymbol.addr, 0xffffffffc0000000ull);
	assert_int_equal(rec.u.ksymbol.len, 300);
	assert_int_equal(rec.u.ksymbol.ksym_type, PERF_RECORD_KSYMBOL_TYPE_BPF);
	assert_string_equal(rec.u.ksymbol.name, "bpf_prog_1");

	rb_begin(&b, PERF_RECORD_BPF_EVENT, 0);
	rb_u16(&b, 1);
	rb_u16(&b, 2);
	rb_u32(&b, 3);
	rb_bytes(&b, tag, 8);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.bpf_event.type, 1);
	assert_int_equal(rec.u.bpf_event.id, 3);
	assert_memory_equal(rec.u.bpf_event.tag, tag, 8);

	rb_begin(&b, PERF_RECORD_CGROUP, 0);
	rb_u64(&b, 77);
	rb_str(&b, "/sys/fs/cgroup/x");
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_int_equal(rec.u.cgroup.id, 77);
	assert_string_equal(rec.u.cgroup.path, "/sys/fs/cgroup/x");

	rb_begin(&b, PERF_RECORD_TEXT_POKE, 0);
	rb_u64(&b, 0xffffffff81000000ull);
	rb_u16(&b, 2);
	rb_u16(&b, 3);
	rb_bytes(&b, "\x90\x90\xe8\x01\x02", 5);
	rb_pad8(&b);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, false);
	assert_int_equal(rec.u.text_poke.old_len, 2);
	assert_int_equal(rec.u.text_poke.new_len, 3);
	assert_memory_equal(rec.u.text_poke.old_bytes, "\x90\x90", 2);
	assert_memory_equal(rec.u.text_poke.new_bytes, "\xe8\x01\x02", 3);

	rb_begin(&b, PERF_RECORD_AUX_OUTPUT_HW_ID, 0);
	rb_u64(&b, 5);
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.aux_output_hw_id.hw_id, 5);

	/* Without sample_id_all (or without info) there is no trailer. */
	rb_begin(&b, PERF_RECORD_LOST_SAMPLES, 0);
	rb_u64(&b, 9);
	rb_end(&b);
	info.sample_id_all = false;
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.id.present, 0);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.u.lost_samples.lost, 9);
}

/* One normalization of MMAP and MMAP2 for every reader (hwt_fmt_mmap_get):
 * an MMAP's protection from its misc, MMAP2's build-id, kernel mappings,
 * the time only when the trailer has it. */
static void test_mmap_normalized(void **state)
{
	struct hwt_fmt_attr_info info = id_info(), bare = {0};
	struct hwt_fmt_record rec;
	struct hwt_fmt_mmap m;
	struct rb b;
	uint8_t bid[20];

	(void)state;
	for (int data = 0; data < 2; data++) {
		rb_begin(&b, PERF_RECORD_MMAP,
			 PERF_RECORD_MISC_USER | (data ? PERF_RECORD_MISC_MMAP_DATA : 0));
		rb_u32(&b, 100);
		rb_u32(&b, 101);
		rb_u64(&b, 0x400000);
		rb_u64(&b, 0x1000);
		rb_u64(&b, 0x200);
		rb_str(&b, "/bin/true");
		end_with_id(&b);
		assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
		assert_int_equal(hwt_fmt_mmap_get(&rec, &m), 0);
		assert_int_equal(m.pid, 100);
		assert_int_equal(m.tid, 101);
		assert_int_equal(m.time, 123456789);
		assert_int_equal(m.start, 0x400000);
		assert_int_equal(m.len, 0x1000);
		assert_int_equal(m.pgoff, 0x200);
		assert_int_equal(m.prot, data ? 0 : PROT_EXEC);
		assert_string_equal(m.filename, "/bin/true");
		assert_null(m.build_id);
	}
	/* no trailer: no time; a kernel mapping has no process */
	rb_begin(&b, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
	rb_u32(&b, 0);
	rb_u32(&b, 0);
	rb_u64(&b, 0xffffffff81000000ull);
	rb_u64(&b, 0x1000000);
	rb_u64(&b, 0);
	rb_str(&b, "[kernel.kallsyms]_text");
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(&bare, b.buf, b.len, &rec), 0);
	assert_int_equal(hwt_fmt_mmap_get(&rec, &m), 0);
	assert_int_equal(m.pid, UINT32_MAX);
	assert_int_equal(m.time, 0);
	/* MMAP2: its own protection, and its build-id */
	for (int i = 0; i < 20; i++)
		bid[i] = (uint8_t)(0xa0 + i);
	rb_begin(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	rb_u32(&b, 5);
	rb_u32(&b, 6);
	rb_u64(&b, 1);
	rb_u64(&b, 2);
	rb_u64(&b, 3);
	b.buf[b.len] = 20;
	memset(b.buf + b.len + 1, 0, 3);
	b.len += 4;
	rb_bytes(&b, bid, 20);
	rb_u32(&b, PROT_READ);
	rb_u32(&b, 2);
	rb_str(&b, "/x");
	end_with_id(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
	assert_int_equal(hwt_fmt_mmap_get(&rec, &m), 0);
	assert_int_equal(m.prot, PROT_READ);
	assert_int_equal(m.build_id_len, 20);
	assert_memory_equal(m.build_id, bid, 20);
	/* not a mapping */
	rb_begin(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_USER);
	rb_u32(&b, 5);
	rb_u32(&b, 6);
	rb_str(&b, "x");
	end_with_id(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
	assert_int_equal(hwt_fmt_mmap_get(&rec, &m), -HWT_EINVAL);
}

static void test_read_record(void **state)
{
	struct hwt_fmt_attr_info info = id_info();
	struct hwt_fmt_read_value v;
	struct hwt_fmt_record rec;
	struct rb b;

	(void)state;
	/* Non-group read: value, enabled, running, id, lost. */
	info.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
			   PERF_FORMAT_ID | PERF_FORMAT_LOST;
	rb_begin(&b, PERF_RECORD_READ, 0);
	rb_u32(&b, 1);
	rb_u32(&b, 2);
	rb_u64(&b, 1000); /* value */
	rb_u64(&b, 50);	  /* enabled */
	rb_u64(&b, 40);	  /* running */
	rb_u64(&b, 9);	  /* id */
	rb_u64(&b, 3);	  /* lost */
	end_with_id(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);
	assert_int_equal(rec.u.read.pid, 1);
	assert_int_equal(rec.u.read.values.nr, 1);
	assert_int_equal(rec.u.read.values.time_enabled, 50);
	assert_int_equal(rec.u.read.values.time_running, 40);
	hwt_fmt_read_value_at(&rec.u.read.values, info.read_format, 0, &v);
	assert_int_equal(v.value, 1000);
	assert_int_equal(v.id, 9);
	assert_int_equal(v.lost, 3);
	hwt_fmt_read_value_at(&rec.u.read.values, info.read_format, 1, &v);
	assert_int_equal(v.value, 0); /* out of range: zeroed */
}

/* A sample with every field, group read with ids and lost counts, user and
 * interrupt registers, branch stack with HW_INDEX, user stack and AUX. */
static void test_sample_all_fields(void **state)
{
	struct hwt_fmt_attr_info info;
	struct hwt_fmt_read_value v;
	struct hwt_fmt_record rec;
	struct hwt_fmt_sample *s = &rec.u.sample;
	struct rb b;
	uint8_t br[3 * 24];

	(void)state;
	memset(&info, 0, sizeof(info));
	info.sample_type = (PERF_SAMPLE_MAX - 1) & ~(uint64_t)PERF_SAMPLE_WEIGHT_STRUCT;
	info.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
			   PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | PERF_FORMAT_LOST;
	info.sample_regs_user = 0x7;  /* 3 registers */
	info.sample_regs_intr = 0x30; /* 2 registers */
	info.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
	for (size_t i = 0; i < sizeof(br); i++)
		br[i] = (uint8_t)i;

	rb_begin(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	rb_u64(&b, 501);      /* IDENTIFIER */
	rb_u64(&b, 0x401000); /* IP */
	rb_u32(&b, 10);	      /* PID */
	rb_u32(&b, 11);	      /* TID */
	rb_u64(&b, 999);      /* TIME */
	rb_u64(&b, 0xdead);   /* ADDR */
	rb_u64(&b, 501);      /* ID */
	rb_u64(&b, 502);      /* STREAM_ID */
	rb_u32(&b, 1);	      /* CPU */
	rb_u32(&b, 0);	      /* res */
	rb_u64(&b, 100000);   /* PERIOD */
	rb_u64(&b, 2);	      /* READ: nr */
	rb_u64(&b, 70);	      /* enabled */
	rb_u64(&b, 60);	      /* running */
	rb_u64(&b, 111);      /* value 0, id 0, lost 0 */
	rb_u64(&b, 501);
	rb_u64(&b, 0);
	rb_u64(&b, 222); /* value 1, id 1, lost 1 */
	rb_u64(&b, 503);
	rb_u64(&b, 4);
	rb_u64(&b, 3); /* CALLCHAIN nr */
	rb_u64(&b, PERF_CONTEXT_USER);
	rb_u64(&b, 0x401000);
	rb_u64(&b, 0x402000);
	rb_u32(&b, 4); /* RAW size (4 + 4 = 8 aligned) */
	rb_bytes(&b, "raw!", 4);
	rb_u64(&b, 3);	/* BRANCH nr */
	rb_u64(&b, 17); /* hw_idx */
	rb_bytes(&b, br, sizeof(br));
	rb_u64(&b, PERF_SAMPLE_REGS_ABI_64); /* REGS_USER */
	rb_u64(&b, 1);
	rb_u64(&b, 2);
	rb_u64(&b, 3);
	rb_u64(&b, 16); /* STACK_USER size */
	rb_bytes(&b, "0123456789abcdef", 16);
	rb_u64(&b, 12);			     /* dyn_size */
	rb_u64(&b, 33);			     /* WEIGHT */
	rb_u64(&b, 44);			     /* DATA_SRC */
	rb_u64(&b, 55);			     /* TRANSACTION */
	rb_u64(&b, PERF_SAMPLE_REGS_ABI_64); /* REGS_INTR */
	rb_u64(&b, 8);
	rb_u64(&b, 9);
	rb_u64(&b, 0x1234000); /* PHYS_ADDR */
	rb_u64(&b, 66);	       /* CGROUP */
	rb_u64(&b, 4096);      /* DATA_PAGE_SIZE */
	rb_u64(&b, 2097152);   /* CODE_PAGE_SIZE */
	rb_u64(&b, 8);	       /* AUX size */
	rb_bytes(&b, "auxbytes", 8);
	rb_end(&b);
	parse_ok_and_shorter(&info, &b, &rec, true);

	assert_int_equal(s->identifier, 501);
	assert_int_equal(s->ip, 0x401000);
	assert_int_equal(s->pid, 10);
	assert_int_equal(s->tid, 11);
	assert_int_equal(s->time, 999);
	assert_int_equal(s->addr, 0xdead);
	assert_int_equal(s->id, 501);
	assert_int_equal(s->stream_id, 502);
	assert_int_equal(s->cpu, 1);
	assert_int_equal(s->period, 100000);
	assert_int_equal(s->read.nr, 2);
	assert_int_equal(s->read.time_enabled, 70);
	assert_int_equal(s->read.time_running, 60);
	hwt_fmt_read_value_at(&s->read, info.read_format, 1, &v);
	assert_int_equal(v.value, 222);
	assert_int_equal(v.id, 503);
	assert_int_equal(v.lost, 4);
	assert_int_equal(s->callchain_nr, 3);
	assert_int_equal(hwt_le64(&s->callchain[2]), 0x402000);
	assert_int_equal(s->raw_size, 4);
	assert_memory_equal(s->raw, "raw!", 4);
	assert_int_equal(s->branch_nr, 3);
	assert_int_equal(s->branch_hw_idx, 17);
	assert_memory_equal(s->branches, br, sizeof(br));
	assert_int_equal(s->regs_user_abi, PERF_SAMPLE_REGS_ABI_64);
	assert_int_equal(s->regs_user_mask, 0x7);
	assert_int_equal(hwt_le64(s->regs_user + 16), 3);
	assert_int_equal(s->stack_user_size, 16);
	assert_memory_equal(s->stack_user, "0123456789abcdef", 16);
	assert_int_equal(s->stack_user_dyn_size, 12);
	assert_int_equal(s->weight, 33);
	assert_int_equal(s->data_src, 44);
	assert_int_equal(s->transaction, 55);
	assert_int_equal(hwt_le64(s->regs_intr + 8), 9);
	assert_int_equal(s->phys_addr, 0x1234000);
	assert_int_equal(s->cgroup, 66);
	assert_int_equal(s->data_page_size, 4096);
	assert_int_equal(s->code_page_size, 2097152);
	assert_int_equal(s->aux_size, 8);
	assert_memory_equal(s->aux, "auxbytes", 8);
	/* The sample's identity is its sample_id. */
	assert_int_equal(rec.id.time, 999);
	assert_int_equal(rec.id.id, 501);
	assert_int_equal(rec.id.tid, 11);

	/* Impossible counts: callchain, group, branch, raw, stack. */
	{
		static const size_t count_at[] = {
		    8 + 9 * 8,	/* READ nr */
		    8 + 18 * 8, /* CALLCHAIN nr */
		    8 + 22 * 8, /* RAW size (u32) */
		    8 + 23 * 8, /* BRANCH nr */
		    8 + 38 * 8, /* STACK_USER size */
		};
		for (size_t i = 0; i < HWT_ARRAY_SIZE(count_at); i++) {
			struct rb t = b;

			if (i == 2)
				hwt_put_le32(t.buf + count_at[i], 0xfffffff0u);
			else
				hwt_put_le64(t.buf + count_at[i], UINT64_MAX / 3);
			assert_int_equal(hwt_fmt_record_parse(&info, t.buf, t.len, &rec),
					 -HWT_EFORMAT);
		}
	}
	/* A sample needs its attr. */
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, b.len, &rec), -HWT_EINVAL);
	/* regs abi NONE: no registers follow. */
	memset(&info, 0, sizeof(info));
	info.sample_type = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_TIME;
	info.sample_regs_user = 0xff;
	rb_begin(&b, PERF_RECORD_SAMPLE, 0);
	rb_u64(&b, 5);
	rb_u64(&b, PERF_SAMPLE_REGS_ABI_NONE);
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
	assert_null(rec.u.sample.regs_user);
	/* WEIGHT_STRUCT takes the weight slot. */
	info.sample_type = PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC;
	rb_begin(&b, PERF_RECORD_SAMPLE, 0);
	rb_u64(&b, 0x0003000200000001ull);
	rb_u64(&b, 77);
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(&info, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.u.sample.weight, 0x0003000200000001ull);
	assert_int_equal(rec.u.sample.data_src, 77);
}

static void test_header_errors(void **state)
{
	struct hwt_fmt_record rec;
	struct rb b;

	(void)state;
	memset(b.buf, 0, 16);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, 7, &rec), -HWT_ETRUNC);
	rb_begin(&b, PERF_RECORD_SWITCH, 0);
	hwt_put_le16(b.buf + 6, 4); /* size smaller than a header */
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, 8, &rec), -HWT_EFORMAT);
	hwt_put_le16(b.buf + 6, 0);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, 8, &rec), -HWT_EFORMAT);
	/* Unknown types: skippable, with type and size known. */
	rb_begin(&b, 200, 0);
	rb_u64(&b, 1);
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, b.len, &rec), -HWT_ENOTSUP);
	assert_int_equal(rec.type, 200);
	assert_int_equal(rec.size, 16);
	assert_ptr_equal(rec.raw, b.buf);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, b.len, NULL), -HWT_EINVAL);

	/* perf.data's AUXTRACE: fixed 48 bytes, data not in the record. */
	rb_begin(&b, 71, 0);
	rb_u64(&b, 4096);
	rb_u64(&b, 8192);
	rb_u64(&b, 0xabc);
	rb_u32(&b, 3);
	rb_u32(&b, 1234);
	rb_u32(&b, 2);
	rb_u32(&b, 0);
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.u.auxtrace.size, 4096);
	assert_int_equal(rec.u.auxtrace.offset, 8192);
	assert_int_equal(rec.u.auxtrace.reference, 0xabc);
	assert_int_equal(rec.u.auxtrace.idx, 3);
	assert_int_equal(rec.u.auxtrace.tid, 1234);
	assert_int_equal(rec.u.auxtrace.cpu, 2);
	assert_null(rec.u.auxtrace.data);
	b.len = 40;
	rb_end(&b);
	assert_int_equal(hwt_fmt_record_parse(NULL, b.buf, b.len, &rec), -HWT_EFORMAT);

	assert_string_equal(hwt_fmt_record_type_name(PERF_RECORD_SAMPLE), "SAMPLE");
	assert_string_equal(hwt_fmt_record_type_name(PERF_RECORD_MMAP2), "MMAP2");
	assert_string_equal(hwt_fmt_record_type_name(71), "AUXTRACE");
	assert_string_equal(hwt_fmt_record_type_name(68), "FINISHED_ROUND");
	assert_null(hwt_fmt_record_type_name(0));
	assert_null(hwt_fmt_record_type_name(63));
	assert_null(hwt_fmt_record_type_name(1000));
	for (uint32_t t = 1; t <= PERF_RECORD_AUX_OUTPUT_HW_ID; t++)
		assert_non_null(hwt_fmt_record_type_name(t));
}

static void make_attr(struct perf_event_attr *a, uint64_t st)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_type = st;
	a->sample_id_all = 1;
}

static void test_evlist_mapping(void **state)
{
	struct hwt_fmt_evlist *ev;
	struct perf_event_attr a;
	struct hwt_fmt_record rec;
	uint64_t ids0[] = {10, 11}, ids1[] = {20, 21};
	const uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	struct rb b;

	(void)state;
	assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
	make_attr(&a, st);
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, sizeof(a), "cycles", ids0, 2), 0);
	a.config = 1;
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, sizeof(a), "instructions", ids1, 2), 1);
	assert_int_equal(hwt_fmt_evlist_count(ev), 2);
	assert_string_equal(hwt_fmt_evlist_event(ev, 1)->name, "instructions");
	assert_int_equal(hwt_fmt_evlist_event(ev, 1)->nids, 2);
	assert_int_equal(hwt_fmt_evlist_event(ev, 1)->ids[1], 21);

	/* Samples: IDENTIFIER first. */
	rb_begin(&b, PERF_RECORD_SAMPLE, 0);
	rb_u64(&b, 21);
	rb_u64(&b, 0x1000);
	rb_u32(&b, 1);
	rb_u32(&b, 2);
	rb_u64(&b, 300);
	rb_u32(&b, 1);
	rb_u32(&b, 0);
	rb_end(&b);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 1);
	assert_int_equal(rec.u.sample.time, 300);
	hwt_put_le64(b.buf + 8, 10);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 0);
	hwt_put_le64(b.buf + 8, 99); /* an id nobody owns */
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), -HWT_EFORMAT);
	hwt_put_le64(b.buf + 8, 0); /* synthesized: the first event */
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 0);

	/* Non-samples: the identifier is the trailer's last u64. */
	rb_begin(&b, PERF_RECORD_COMM, 0);
	rb_u32(&b, 1);
	rb_u32(&b, 1);
	rb_str(&b, "x");
	rb_sample_id(&b, st, 1, 1, 400, 20, 0);
	rb_end(&b);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 1);
	assert_int_equal(rec.id.time, 400);
	assert_string_equal(rec.u.comm.comm, "x");
	/* perf.data's own records belong to no event. */
	rb_begin(&b, 68, 0);
	rb_end(&b);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, -1);
	hwt_fmt_evlist_free(ev);

	/* Without IDENTIFIER: ID's position, the same in every event. */
	assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
	make_attr(&a, FMT_TEST_SAMPLE_TYPE);
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, sizeof(a), "a", ids0, 2), 0);
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, sizeof(a), "b", ids1, 2), 1);
	rb_sample(&b, 0x10, 1, 2, 3, 11, 0, 1);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 0);
	rb_sample(&b, 0x10, 1, 2, 3, 20, 0, 1);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 1);
	rb_comm(&b, 1, 2, "c", 5, 21, 1);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 1);
	assert_int_equal(rec.id.cpu, 1);
	/* A third event that puts the id elsewhere: no common position. */
	make_attr(&a, PERF_SAMPLE_ID);
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, sizeof(a), "c", NULL, 0), 2);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), -HWT_EFORMAT);
	hwt_fmt_evlist_free(ev);

	/* One event: everything is its own; old attr sizes are zero-extended. */
	assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
	make_attr(&a, FMT_TEST_SAMPLE_TYPE);
	a.sample_regs_user = 0xff; /* beyond VER0: must be dropped */
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, PERF_ATTR_SIZE_VER0 - 1, "x", NULL, 0),
			 -HWT_EINVAL);
	assert_int_equal(hwt_fmt_evlist_add(ev, &a, PERF_ATTR_SIZE_VER0, NULL, NULL, 0), 0);
	assert_int_equal(hwt_fmt_evlist_event(ev, 0)->attr.sample_regs_user, 0);
	assert_string_equal(hwt_fmt_evlist_event(ev, 0)->name, "");
	rb_sample(&b, 0x10, 1, 2, 3, 12345, 0, 1);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, 0);
	assert_int_equal(rec.u.sample.id, 12345);
	hwt_fmt_evlist_free(ev);

	/* No events: samples cannot be parsed, other records can. */
	assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), -HWT_EFORMAT);
	rb_begin(&b, PERF_RECORD_LOST_SAMPLES, 0);
	rb_u64(&b, 3);
	rb_end(&b);
	assert_int_equal(hwt_fmt_evlist_parse(ev, b.buf, b.len, &rec), 0);
	assert_int_equal(rec.event, -1);
	hwt_fmt_evlist_free(ev);
	hwt_fmt_evlist_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_records), cmocka_unit_test(test_mmap_normalized),
	    cmocka_unit_test(test_read_record),	   cmocka_unit_test(test_sample_all_fields),
	    cmocka_unit_test(test_header_errors),  cmocka_unit_test(test_evlist_mapping),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
