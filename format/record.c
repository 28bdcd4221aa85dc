/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/record.c - the perf record parser shared by .hwt files and
 * perf.data: every PERF_RECORD_* the kernel writes (with the sample layout
 * that the attr's sample_type, read_format, register masks and
 * branch_sample_type dictate, and the sample_id trailer read from the end),
 * plus perf.data's own AUXTRACE record. Every field is checked against the
 * record's size before it is read; nothing is trusted, nothing is allocated.
 */
#include "format/format_int.h"

#include <string.h>
#include <sys/mman.h>

/* A bounded read position inside one record. */
struct cur {
	const uint8_t *p;
	size_t pos, end;
};

static int take_u64(struct cur *c, uint64_t *v)
{
	if (c->end - c->pos < 8)
		return -HWT_EFORMAT;
	*v = hwt_le64(c->p + c->pos);
	c->pos += 8;
	return 0;
}

static int take_u32(struct cur *c, uint32_t *v)
{
	if (c->end - c->pos < 4)
		return -HWT_EFORMAT;
	*v = hwt_le32(c->p + c->pos);
	c->pos += 4;
	return 0;
}

static int take_u16(struct cur *c, uint16_t *v)
{
	if (c->end - c->pos < 2)
		return -HWT_EFORMAT;
	*v = hwt_le16(c->p + c->pos);
	c->pos += 2;
	return 0;
}

/* n bytes; n comes from the record, so it is checked before any arithmetic. */
static int take_bytes(struct cur *c, uint64_t n, const uint8_t **out)
{
	if (n > c->end - c->pos)
		return -HWT_EFORMAT;
	*out = c->p + c->pos;
	c->pos += (size_t)n;
	return 0;
}

/* n entries of size each (n from the record: no overflow possible). */
static int take_array(struct cur *c, uint64_t n, size_t size, const uint8_t **out)
{
	if (n > (c->end - c->pos) / size)
		return -HWT_EFORMAT;
	return take_bytes(c, n * size, out);
}

/* A NUL-terminated string that fills the rest of the body (padding included). */
static int take_string(struct cur *c, const char **out)
{
	const uint8_t *nul = memchr(c->p + c->pos, '\0', c->end - c->pos);

	if (!nul)
		return -HWT_EFORMAT;
	*out = (const char *)(c->p + c->pos);
	c->pos = c->end;
	return 0;
}

void hwt_fmt_attr_info_from_attr(struct hwt_fmt_attr_info *info, const struct perf_event_attr *attr)
{
	memset(info, 0, sizeof(*info));
	info->sample_type = attr->sample_type;
	info->read_format = attr->read_format;
	info->sample_regs_user = attr->sample_regs_user;
	info->sample_regs_intr = attr->sample_regs_intr;
	info->branch_sample_type = attr->branch_sample_type;
	info->sample_id_all = attr->sample_id_all;
}

static int parse_read(struct cur *c, uint64_t read_format, struct hwt_fmt_read *r)
{
	unsigned int per = 1;
	int err;

	memset(r, 0, sizeof(*r));
	if (read_format & PERF_FORMAT_GROUP) {
		err = take_u64(c, &r->nr);
		if (!err && (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED))
			err = take_u64(c, &r->time_enabled);
		if (!err && (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING))
			err = take_u64(c, &r->time_running);
		if (err)
			return err;
		per += !!(read_format & PERF_FORMAT_ID) + !!(read_format & PERF_FORMAT_LOST);
		return take_array(c, r->nr, per * 8u, &r->values);
	}
	/* value, [enabled], [running], [id], [lost]: values points at value and
	 * hwt_fmt_read_value_at() knows where id and lost sit. */
	r->nr = 1;
	per += !!(read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) +
	       !!(read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) + !!(read_format & PERF_FORMAT_ID) +
	       !!(read_format & PERF_FORMAT_LOST);
	err = take_bytes(c, per * 8u, &r->values);
	if (err)
		return err;
	if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
		r->time_enabled = hwt_le64(r->values + 8);
	if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
		r->time_running =
		    hwt_le64(r->values + 8 + 8 * !!(read_format & PERF_FORMAT_TOTAL_TIME_ENABLED));
	return 0;
}

void hwt_fmt_read_value_at(const struct hwt_fmt_read *read, uint64_t read_format, uint64_t i,
			   struct hwt_fmt_read_value *out)
{
	const uint8_t *v;
	size_t off;

	memset(out, 0, sizeof(*out));
	if (!read->values || i >= read->nr)
		return;
	if (read_format & PERF_FORMAT_GROUP) {
		size_t per =
		    1 + !!(read_format & PERF_FORMAT_ID) + !!(read_format & PERF_FORMAT_LOST);

		v = read->values + i * per * 8;
		off = 8;
	} else {
		v = read->values;
		off = 8 + 8 * (!!(read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) +
			       !!(read_format & PERF_FORMAT_TOTAL_TIME_RUNNING));
	}
	out->value = hwt_le64(v);
	if (read_format & PERF_FORMAT_ID) {
		out->id = hwt_le64(v + off);
		off += 8;
	}
	if (read_format & PERF_FORMAT_LOST)
		out->lost = hwt_le64(v + off);
}

static int parse_regs(struct cur *c, uint64_t mask, uint64_t *abi, const uint8_t **regs)
{
	int err = take_u64(c, abi);

	*regs = NULL;
	if (err || *abi == PERF_SAMPLE_REGS_ABI_NONE)
		return err;
	return take_array(c, (uint64_t)__builtin_popcountll(mask), 8, regs);
}

#define ST(bit) (t & PERF_SAMPLE_##bit)

static int parse_sample(const struct hwt_fmt_attr_info *info, struct cur *c,
			struct hwt_fmt_record *rec)
{
	struct hwt_fmt_sample *s = &rec->u.sample;
	uint64_t t = info->sample_type, v;
	int err = 0;

	s->type = t;
	if (ST(IDENTIFIER) && (err = take_u64(c, &s->identifier)))
		return err;
	if (ST(IP) && (err = take_u64(c, &s->ip)))
		return err;
	if (ST(TID)) {
		if ((err = take_u32(c, &s->pid)) || (err = take_u32(c, &s->tid)))
			return err;
	}
	if (ST(TIME) && (err = take_u64(c, &s->time)))
		return err;
	if (ST(ADDR) && (err = take_u64(c, &s->addr)))
		return err;
	if (ST(ID) && (err = take_u64(c, &s->id)))
		return err;
	if (ST(STREAM_ID) && (err = take_u64(c, &s->stream_id)))
		return err;
	if (ST(CPU)) {
		if ((err = take_u32(c, &s->cpu)) || (err = take_u32(c, &s->res)))
			return err;
	}
	if (ST(PERIOD) && (err = take_u64(c, &s->period)))
		return err;
	if (ST(READ) && (err = parse_read(c, info->read_format, &s->read)))
		return err;
	if (ST(CALLCHAIN)) {
		const uint8_t *cc;

		if ((err = take_u64(c, &s->callchain_nr)) ||
		    (err = take_array(c, s->callchain_nr, 8, &cc)))
			return err;
		s->callchain = (const uint64_t *)(const void *)cc;
	}
	if (ST(RAW)) {
		if ((err = take_u32(c, &s->raw_size)) ||
		    (err = take_bytes(c, s->raw_size, &s->raw)))
			return err;
	}
	if (ST(BRANCH_STACK)) {
		if ((err = take_u64(c, &s->branch_nr)))
			return err;
		if ((info->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) &&
		    (err = take_u64(c, &s->branch_hw_idx)))
			return err;
		if ((err = take_array(c, s->branch_nr, sizeof(struct perf_branch_entry),
				      &s->branches)))
			return err;
	}
	if (ST(REGS_USER)) {
		s->regs_user_mask = info->sample_regs_user;
		if ((err = parse_regs(c, info->sample_regs_user, &s->regs_user_abi, &s->regs_user)))
			return err;
	}
	if (ST(STACK_USER)) {
		if ((err = take_u64(c, &s->stack_user_size)) ||
		    (err = take_bytes(c, s->stack_user_size, &s->stack_user)))
			return err;
		if (s->stack_user_size && (err = take_u64(c, &s->stack_user_dyn_size)))
			return err;
		if (s->stack_user_dyn_size > s->stack_user_size)
			return -HWT_EFORMAT;
	}
	if ((t & PERF_SAMPLE_WEIGHT_TYPE) && (err = take_u64(c, &s->weight)))
		return err;
	if (ST(DATA_SRC) && (err = take_u64(c, &s->data_src)))
		return err;
	if (ST(TRANSACTION) && (err = take_u64(c, &s->transaction)))
		return err;
	if (ST(REGS_INTR)) {
		s->regs_intr_mask = info->sample_regs_intr;
		if ((err = parse_regs(c, info->sample_regs_intr, &s->regs_intr_abi, &s->regs_intr)))
			return err;
	}
	if (ST(PHYS_ADDR) && (err = take_u64(c, &s->phys_addr)))
		return err;
	if (ST(CGROUP) && (err = take_u64(c, &s->cgroup)))
		return err;
	if (ST(DATA_PAGE_SIZE) && (err = take_u64(c, &s->data_page_size)))
		return err;
	if (ST(CODE_PAGE_SIZE) && (err = take_u64(c, &s->code_page_size)))
		return err;
	if (ST(AUX)) {
		if ((err = take_u64(c, &v)))
			return err;
		if (v > UINT32_MAX)
			return -HWT_EFORMAT;
		s->aux_size = (uint32_t)v;
		if ((err = take_bytes(c, v, &s->aux)))
			return err;
	}

	/* The sample's own identity fields double as its sample_id. */
	rec->id.present = t & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
	rec->id.pid = s->pid;
	rec->id.tid = s->tid;
	rec->id.time = s->time;
	rec->id.id = ST(IDENTIFIER) ? s->identifier : s->id;
	rec->id.stream_id = s->stream_id;
	rec->id.cpu = s->cpu;
	rec->id.res = s->res;
	return 0;
}

#define SAMPLE_ID_BITS                                                                             \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/* Size of the sample_id trailer for an attr (0 without sample_id_all). */
static size_t sample_id_size(const struct hwt_fmt_attr_info *info)
{
	if (!info || !info->sample_id_all)
		return 0;
	return 8u * (size_t)__builtin_popcountll(info->sample_type & SAMPLE_ID_BITS);
}

static void parse_sample_id(const struct hwt_fmt_attr_info *info, const uint8_t *p,
			    struct hwt_fmt_sample_id *id)
{
	uint64_t t = info->sample_type;
	size_t pos = 0;

	id->present = t & SAMPLE_ID_BITS;
	if (ST(TID)) {
		id->pid = hwt_le32(p + pos);
		id->tid = hwt_le32(p + pos + 4);
		pos += 8;
	}
	if (ST(TIME)) {
		id->time = hwt_le64(p + pos);
		pos += 8;
	}
	if (ST(ID)) {
		id->id = hwt_le64(p + pos);
		pos += 8;
	}
	if (ST(STREAM_ID)) {
		id->stream_id = hwt_le64(p + pos);
		pos += 8;
	}
	if (ST(CPU)) {
		id->cpu = hwt_le32(p + pos);
		id->res = hwt_le32(p + pos + 4);
		pos += 8;
	}
	if (ST(IDENTIFIER))
		id->id = hwt_le64(p + pos);
}

#undef ST

static bool is_kernel_type(uint32_t type)
{
	return type >= PERF_RECORD_MMAP && type <= PERF_RECORD_AUX_OUTPUT_HW_ID;
}

static bool is_user_type(uint32_t type)
{
	return type >= FMT_PERF_HEADER_ATTR && type < FMT_PERF_USER_MAX;
}

static int parse_mmap(struct cur *c, struct hwt_fmt_record *rec)
{
#define m (&rec->u.mmap)
	int err;

	if ((err = take_u32(c, &m->pid)) || (err = take_u32(c, &m->tid)) ||
	    (err = take_u64(c, &m->addr)) || (err = take_u64(c, &m->len)) ||
	    (err = take_u64(c, &m->pgoff)))
		return err;
	if (rec->type == PERF_RECORD_MMAP2) {
		const uint8_t *u;

		if ((err = take_bytes(c, 24, &u)))
			return err;
		if (rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m->has_build_id = true;
			m->build_id_size = u[0];
			if (m->build_id_size > sizeof(m->build_id))
				return -HWT_EFORMAT;
			memcpy(m->build_id, u + 4, m->build_id_size);
		} else {
			m->maj = hwt_le32(u);
			m->min = hwt_le32(u + 4);
			m->ino = hwt_le64(u + 8);
			m->ino_generation = hwt_le64(u + 16);
		}
		if ((err = take_u32(c, &m->prot)) || (err = take_u32(c, &m->flags)))
			return err;
	}
	return take_string(c, &m->filename);
#undef m
}

static int parse_body(const struct hwt_fmt_attr_info *info, struct cur *c,
		      struct hwt_fmt_record *rec)
{
	int err = 0;

	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return parse_mmap(c, rec);
	case PERF_RECORD_COMM:
		if ((err = take_u32(c, &rec->u.comm.pid)) || (err = take_u32(c, &rec->u.comm.tid)))
			return err;
		return take_string(c, &rec->u.comm.comm);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if ((err = take_u32(c, &rec->u.fork.pid)) ||
		    (err = take_u32(c, &rec->u.fork.ppid)) ||
		    (err = take_u32(c, &rec->u.fork.tid)) || (err = take_u32(c, &rec->u.fork.ptid)))
			return err;
		return take_u64(c, &rec->u.fork.time);
	case PERF_RECORD_LOST:
		if ((err = take_u64(c, &rec->u.lost.id)))
			return err;
		return take_u64(c, &rec->u.lost.lost);
	case PERF_RECORD_LOST_SAMPLES:
		return take_u64(c, &rec->u.lost_samples.lost);
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if ((err = take_u64(c, &rec->u.throttle.time)) ||
		    (err = take_u64(c, &rec->u.throttle.id)))
			return err;
		return take_u64(c, &rec->u.throttle.stream_id);
	case PERF_RECORD_READ:
		if ((err = take_u32(c, &rec->u.read.pid)) || (err = take_u32(c, &rec->u.read.tid)))
			return err;
		return parse_read(c, info ? info->read_format : 0, &rec->u.read.values);
	case PERF_RECORD_AUX:
		if ((err = take_u64(c, &rec->u.aux.aux_offset)) ||
		    (err = take_u64(c, &rec->u.aux.aux_size)))
			return err;
		return take_u64(c, &rec->u.aux.flags);
	case PERF_RECORD_ITRACE_START:
		if ((err = take_u32(c, &rec->u.itrace_start.pid)))
			return err;
		return take_u32(c, &rec->u.itrace_start.tid);
	case PERF_RECORD_SWITCH:
		return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if ((err = take_u32(c, &rec->u.sw.next_prev_pid)))
			return err;
		return take_u32(c, &rec->u.sw.next_prev_tid);
	case PERF_RECORD_NAMESPACES:
		if ((err = take_u32(c, &rec->u.namespaces.pid)) ||
		    (err = take_u32(c, &rec->u.namespaces.tid)) ||
		    (err = take_u64(c, &rec->u.namespaces.nr)))
			return err;
		return take_array(c, rec->u.namespaces.nr, 16, &rec->u.namespaces.entries);
	case PERF_RECORD_KSYMBOL:
		if ((err = take_u64(c, &rec->u.ksymbol.addr)) ||
		    (err = take_u32(c, &rec->u.ksymbol.len)) ||
		    (err = take_u16(c, &rec->u.ksymbol.ksym_type)) ||
		    (err = take_u16(c, &rec->u.ksymbol.flags)))
			return err;
		return take_string(c, &rec->u.ksymbol.name);
	case PERF_RECORD_BPF_EVENT: {
		const uint8_t *tag;

		if ((err = take_u16(c, &rec->u.bpf_event.type)) ||
		    (err = take_u16(c, &rec->u.bpf_event.flags)) ||
		    (err = take_u32(c, &rec->u.bpf_event.id)) || (err = take_bytes(c, 8, &tag)))
			return err;
		memcpy(rec->u.bpf_event.tag, tag, 8);
		return 0;
	}
	case PERF_RECORD_CGROUP:
		if ((err = take_u64(c, &rec->u.cgroup.id)))
			return err;
		return take_string(c, &rec->u.cgroup.path);
	case PERF_RECORD_TEXT_POKE:
		if ((err = take_u64(c, &rec->u.text_poke.addr)) ||
		    (err = take_u16(c, &rec->u.text_poke.old_len)) ||
		    (err = take_u16(c, &rec->u.text_poke.new_len)) ||
		    (err = take_bytes(c, rec->u.text_poke.old_len, &rec->u.text_poke.old_bytes)))
			return err;
		return take_bytes(c, rec->u.text_poke.new_len, &rec->u.text_poke.new_bytes);
	case PERF_RECORD_AUX_OUTPUT_HW_ID:
		return take_u64(c, &rec->u.aux_output_hw_id.hw_id);
	case FMT_PERF_AUXTRACE: {
		uint32_t pad;

		if ((err = take_u64(c, &rec->u.auxtrace.size)) ||
		    (err = take_u64(c, &rec->u.auxtrace.offset)) ||
		    (err = take_u64(c, &rec->u.auxtrace.reference)) ||
		    (err = take_u32(c, &rec->u.auxtrace.idx)) ||
		    (err = take_u32(c, &rec->u.auxtrace.tid)) ||
		    (err = take_u32(c, &rec->u.auxtrace.cpu)) || (err = take_u32(c, &pad)))
			return err;
		rec->u.auxtrace.data = NULL;
		return 0;
	}
	default:
		/* perf.data's other user records are framing the session
		 * consumes; their bytes stay available through rec->raw. */
		return 0;
	}
}

int hwt_fmt_record_parse(const struct hwt_fmt_attr_info *info, const void *buf, size_t len,
			 struct hwt_fmt_record *rec)
{
	const uint8_t *p = buf;
	struct cur c;
	size_t trailer = 0;
	int err;

	if (!buf || !rec)
		return -HWT_EINVAL;
	memset(rec, 0, sizeof(*rec));
	rec->event = -1;
	if (len < sizeof(struct perf_event_header))
		return -HWT_ETRUNC;
	rec->type = hwt_le32(p);
	rec->misc = hwt_le16(p + 4);
	rec->size = hwt_le16(p + 6);
	rec->raw = p;
	if (rec->size > len)
		return -HWT_ETRUNC;
	if (rec->size < sizeof(struct perf_event_header))
		return -HWT_EFORMAT;
	if (!is_kernel_type(rec->type) && !is_user_type(rec->type)) {
		/* A kernel record newer than this parser still ends with its
		 * sample_id trailer. */
		trailer = sample_id_size(info);
		if (rec->type < FMT_PERF_HEADER_ATTR && trailer &&
		    trailer <= rec->size - sizeof(struct perf_event_header))
			parse_sample_id(info, p + rec->size - trailer, &rec->id);
		return -HWT_ENOTSUP;
	}

	c.p = p;
	c.pos = sizeof(struct perf_event_header);
	c.end = rec->size;
	if (rec->type == PERF_RECORD_SAMPLE) {
		if (!info)
			return -HWT_EINVAL;
		return parse_sample(info, &c, rec);
	}
	if (is_kernel_type(rec->type)) {
		trailer = sample_id_size(info);
		if (trailer > c.end - c.pos)
			return -HWT_EFORMAT;
		c.end -= trailer;
		if (trailer)
			parse_sample_id(info, p + c.end, &rec->id);
	}
	err = parse_body(info, &c, rec);
	return err;
}

static const char *const kernel_names[] = {
    [PERF_RECORD_MMAP] = "MMAP",
    [PERF_RECORD_LOST] = "LOST",
    [PERF_RECORD_COMM] = "COMM",
    [PERF_RECORD_EXIT] = "EXIT",
    [PERF_RECORD_THROTTLE] = "THROTTLE",
    [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
    [PERF_RECORD_FORK] = "FORK",
    [PERF_RECORD_READ] = "READ",
    [PERF_RECORD_SAMPLE] = "SAMPLE",
    [PERF_RECORD_MMAP2] = "MMAP2",
    [PERF_RECORD_AUX] = "AUX",
    [PERF_RECORD_ITRACE_START] = "ITRACE_START",
    [PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
    [PERF_RECORD_SWITCH] = "SWITCH",
    [PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
    [PERF_RECORD_NAMESPACES] = "NAMESPACES",
    [PERF_RECORD_KSYMBOL] = "KSYMBOL",
    [PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
    [PERF_RECORD_CGROUP] = "CGROUP",
    [PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
    [PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
};

static const char *const user_names[] = {
    [FMT_PERF_HEADER_ATTR - 64] = "ATTR",
    [FMT_PERF_HEADER_EVENT_TYPE - 64] = "EVENT_TYPE",
    [FMT_PERF_HEADER_TRACING_DATA - 64] = "TRACING_DATA",
    [FMT_PERF_HEADER_BUILD_ID - 64] = "BUILD_ID",
    [FMT_PERF_FINISHED_ROUND - 64] = "FINISHED_ROUND",
    [FMT_PERF_ID_INDEX - 64] = "ID_INDEX",
    [FMT_PERF_AUXTRACE_INFO - 64] = "AUXTRACE_INFO",
    [FMT_PERF_AUXTRACE - 64] = "AUXTRACE",
    [FMT_PERF_AUXTRACE_ERROR - 64] = "AUXTRACE_ERROR",
    [FMT_PERF_THREAD_MAP - 64] = "THREAD_MAP",
    [FMT_PERF_CPU_MAP - 64] = "CPU_MAP",
    [FMT_PERF_STAT_CONFIG - 64] = "STAT_CONFIG",
    [FMT_PERF_STAT - 64] = "STAT",
    [FMT_PERF_STAT_ROUND - 64] = "STAT_ROUND",
    [FMT_PERF_EVENT_UPDATE - 64] = "EVENT_UPDATE",
    [FMT_PERF_TIME_CONV - 64] = "TIME_CONV",
    [FMT_PERF_HEADER_FEATURE - 64] = "FEATURE",
    [FMT_PERF_COMPRESSED - 64] = "COMPRESSED",
    [FMT_PERF_FINISHED_INIT - 64] = "FINISHED_INIT",
    [FMT_PERF_COMPRESSED2 - 64] = "COMPRESSED2",
};

const char *hwt_fmt_record_type_name(uint32_t type)
{
	if (is_kernel_type(type))
		return kernel_names[type];
	if (is_user_type(type))
		return user_names[type - 64];
	return NULL;
}

int hwt_fmt_mmap_get(const struct hwt_fmt_record *rec, struct hwt_fmt_mmap *m)
{
	if (!rec || !m || (rec->type != PERF_RECORD_MMAP && rec->type != PERF_RECORD_MMAP2))
		return -HWT_EINVAL;
	memset(m, 0, sizeof(*m));
	m->pid = rec->u.mmap.pid;
	m->tid = rec->u.mmap.tid;
	if ((rec->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		m->pid = UINT32_MAX;
	m->time = (rec->id.present & PERF_SAMPLE_TIME) ? rec->id.time : 0;
	m->start = rec->u.mmap.addr;
	m->len = rec->u.mmap.len;
	m->pgoff = rec->u.mmap.pgoff;
	if (rec->type == PERF_RECORD_MMAP2)
		m->prot = rec->u.mmap.prot;
	else
		m->prot = (rec->misc & PERF_RECORD_MISC_MMAP_DATA) ? 0 : PROT_EXEC;
	m->filename = rec->u.mmap.filename;
	if (rec->type == PERF_RECORD_MMAP2 && rec->u.mmap.has_build_id) {
		m->build_id = rec->u.mmap.build_id;
		m->build_id_len = rec->u.mmap.build_id_size;
	}
	return 0;
}
