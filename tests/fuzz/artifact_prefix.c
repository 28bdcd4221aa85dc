/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/artifact_prefix.c - linked into every libFuzzer harness (not
 * into the replay drivers): a harness run by hand writes its crash-, leak-,
 * timeout- and oom- files into <build>/crashes/<target>/ (made if missing),
 * the folder scripts/fuzz.sh uses, instead of the current directory. A
 * command line that names its own -artifact_prefix= or
 * -exact_artifact_path= is left as it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);

static int has_flag(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], flag, strlen(flag)))
			return 1;
	return 0;
}

/* libFuzzer calls this before it parses its flags: a flag appended here is
 * read as if it had been typed. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char **v = *argv, **nv;
	const char *name = strrchr(v[0], '/');
	static char flag[4200];
	char *dir = flag + strlen("-artifact_prefix=");

	if (has_flag(*argc, v, "-artifact_prefix=") || has_flag(*argc, v, "-exact_artifact_path="))
		return 0;
	name = name ? name + 1 : v[0];
	if (!strncmp(name, "fuzz_", 5))
		name += 5;
	snprintf(flag, sizeof(flag), "-artifact_prefix=%s", HWT_FUZZ_CRASHES);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return 0;
	snprintf(flag, sizeof(flag), "-artifact_prefix=%s/%s/", HWT_FUZZ_CRASHES, name);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return 0;
	nv = malloc(((size_t)*argc + 2) * sizeof(*nv));
	if (!nv)
		return 0;
	memcpy(nv, v, (size_t)*argc * sizeof(*nv));
	nv[(*argc)++] = flag;
	nv[*argc] = NULL;
	*argv = nv;
	fprintf(stderr, "%s: inputs that fail go to %s (-artifact_prefix=PATH to change)\n", v[0],
		dir);
	return 0;
}
