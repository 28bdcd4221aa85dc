/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/ptflame_work.c - the workload bench_ptflame.sh traces: a small
 * "realistic" program with many functions and calls of every kind (a
 * tokenizer over generated text, a hash table of the words, qsort with a
 * comparison callback, a recursive expression evaluator, memcpy/strlen
 * from libc), so that the trace has deep and varied stacks. Its size is
 * its argument: the number of rounds (about 1.5 million instructions
 * each, -O2).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS	2048
#define BUCKETS 1024

struct entry {
	char word[16];
	unsigned count;
	struct entry *next;
};

static struct entry pool[WORDS];
static struct entry *table[BUCKETS];
static size_t npool;
static uint64_t rng = 88172645463325252ull;

static __attribute__((noinline)) uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static __attribute__((noinline)) size_t gen_text(char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 12 < cap) {
		int len = 2 + (int)(next_rand() % 8);

		for (int i = 0; i < len; i++)
			buf[n++] = (char)('a' + next_rand() % 6);
		buf[n++] = (next_rand() % 5) ? ' ' : '\n';
	}
	buf[n] = '\0';
	return n;
}

static __attribute__((noinline)) unsigned hash(const char *s, size_t len)
{
	unsigned h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static __attribute__((noinline)) void count_word(const char *s, size_t len)
{
	unsigned b = hash(s, len) % BUCKETS;
	struct entry *e;

	if (len >= sizeof(e->word))
		len = sizeof(e->word) - 1;
	for (e = table[b]; e; e = e->next) {
		if (strlen(e->word) == len && !memcmp(e->word, s, len)) {
			e->count++;
			return;
		}
	}
	if (npool == WORDS)
		return;
	e = &pool[npool++];
	memcpy(e->word, s, len);
	e->word[len] = '\0';
	e->count = 1;
	e->next = table[b];
	table[b] = e;
}

static __attribute__((noinline)) size_t tokenize(const char *text)
{
	size_t words = 0;
	const char *p = text;

	while (*p) {
		const char *start = p;

		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (p > start) {
			count_word(start, (size_t)(p - start));
			words++;
		}
		if (*p)
			p++;
	}
	return words;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->word, y->word);
}

/* A recursive evaluator of a random expression tree. */
static __attribute__((noinline)) long eval(int depth)
{
	uint64_t r = next_rand();

	if (depth == 0 || r % 4 == 0)
		return (long)(r % 100);
	switch (r % 3) {
	case 0:
		return eval(depth - 1) + eval(depth - 1);
	case 1:
		return eval(depth - 1) * 3 - eval(depth - 1);
	default:
		return eval(depth - 1) ^ 5;
	}
}

static __attribute__((noinline)) long round_once(char *text, size_t cap)
{
	long acc = 0;

	memset(table, 0, sizeof(table));
	npool = 0;
	gen_text(text, cap);
	acc += (long)tokenize(text);
	qsort(pool, npool, sizeof(pool[0]), cmp_entry);
	for (int i = 0; i < 20; i++)
		acc += eval(8);
	return acc + pool[0].count;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 10, acc = 0;
	static char text[32768];

	for (long i = 0; i < rounds; i++)
		acc += round_once(text, 8192);
	printf("%ld\n", acc);
	return 0;
}
