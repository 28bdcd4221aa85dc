/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_script.c - `hwtrace script`: a small dispatcher. A recording goes
 * to the sample mode (cli/script_samples.c), which hands a PT recording to
 * the PT recording mode (cli/script_ptrec.c); options only that mode has
 * (--itrace, --flow, ...) go there directly; --pt selects the raw Intel PT
 * mode, ptxed-compatible (cli/script_pt.c).
 */
#include <stdbool.h>
#include <string.h>

#include "cli/cli.h"

int hwt_cmd_script(int argc, char **argv)
{
	static const char *const ptrec_opts[] = {"--itrace", "--flow", "--call-trace", "--engine",
						 "--threads"};
	bool pt = false, help = false, ptrec = false;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		pt |= !strcmp(argv[i], "--pt") || !strncmp(argv[i], "--pt=", 5);
		help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
		for (size_t k = 0; k < HWT_ARRAY_SIZE(ptrec_opts); k++) {
			size_t n = strlen(ptrec_opts[k]);

			ptrec |= !strncmp(argv[i], ptrec_opts[k], n) &&
				 (argv[i][n] == 0 || argv[i][n] == '=');
		}
	}
	if (pt && help) {
		/* `script --pt --help`: --pt would take --help as its file. */
		char *usage[] = {argv[0], "--help", NULL};

		return hwt_script_pt(2, usage);
	}
	if (pt)
		return hwt_script_pt(argc, argv);
	if (ptrec)
		return hwt_script_ptrec(argc, argv, NULL);
	return hwt_script_samples(argc, argv);
}
