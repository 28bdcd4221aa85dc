/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/test_flame.c - flame graphs: the SVG is well-formed XML and
 * the HTML embeds the exact call tree (checked by python3's parsers) even
 * for hostile frame names; `hwtrace flame` behaves as documented (exact
 * output, exit codes, one-line errors); and the real-browser test
 * (browser_flame.py drives headless Chromium through chromedriver) checks
 * hover, search, zoom, reset, icicle, colours and the differential graph
 * in the page's DOM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <unistd.h>

#include "tests/lib/testutil.h"
#include "tests/report/report_test.h"

static const char weird_folded[] = "prog;main;<script>&amp\"x\"]]>;leaf 5\n"
				   "prog;main;f'o'o 3\n"
				   "prog;main;caf\xc3\xa9;bad\xff;k_[k] 2\n";

static void test_svg_xml_and_data(void **state)
{
	struct hwt_rep_profile *p;
	struct hwt_rep_render_config cfg;
	char *dir = hwt_test_tmpdir(), buf[1024];
	struct hwt_test_run run;
	const char *svg, *html;
	struct hwt_buf b;
	size_t line;

	(void)state;
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	assert_int_equal(
	    hwt_rep_profile_add_folded(p, weird_folded, strlen(weird_folded), NULL, &line), 3);
	hwt_rep_render_config_init(&cfg);
	cfg.format = HWT_REP_FMT_SVG;
	cfg.title = "a <title> & more";
	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_render(p, &cfg, &b), 0);
	svg = rt_write(dir, "g.svg", b.data, b.len);
	hwt_buf_fini(&b);
	/* Well-formed XML whatever the names hold; title escaped. */
	hwt_test_run(
	    &run,
	    "python3 -c 'import sys, xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); "
	    "print(r.find(\"{http://www.w3.org/2000/svg}text\").text)' '%s'",
	    svg);
	assert_int_equal(run.status, 0);
	assert_string_equal(run.out, "a <title> & more\n");
	hwt_test_run_free(&run);
	/* Drawn without a script too: frames a pixel wide or more, laid out
	 * (root 1180 px wide, leaf 5/10 of it), each with a tooltip title. */
	hwt_test_run(
	    &run,
	    "python3 -c 'import sys, xml.etree.ElementTree as E\n"
	    "n={\"s\":\"http://www.w3.org/2000/svg\"}\n"
	    "g=[x for x in E.parse(sys.argv[1]).getroot().iter(\"{http://www.w3.org/2000/svg}g\") "
	    "if x.get(\"id\")==\"frames\"][0]\n"
	    "print([(f.find(\"s:title\",n).text, f.find(\"s:rect\",n).get(\"width\")) "
	    "for f in g.findall(\"s:g\",n)][:5])' '%s'",
	    svg);
	assert_int_equal(run.status, 0);
	assert_string_equal(
	    run.out,
	    "[('all (10, 100.00%)', '1180.00'), ('prog (10, 100.00%)', '1180.00'), "
	    "('main (10, 100.00%)', '1180.00'), ('<script>&amp\"x\"]]> (5, 50.00%)', '590.00'), "
	    "('leaf (5, 50.00%)', '590.00')]\n");
	hwt_test_run_free(&run);

	cfg.format = HWT_REP_FMT_HTML;
	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_render(p, &cfg, &b), 0);
	/* No name can close the script block early. */
	assert_int_equal(hwt_test_contains((char *)b.data, "<script>&amp"), false);
	html = rt_write(dir, "g.html", b.data, b.len);
	hwt_buf_fini(&b);
	/* The embedded tree: preorder (depth, name, kind, value) records. */
	hwt_test_run(
	    &run,
	    "python3 -c '\n"
	    "import json,sys\n"
	    "t=open(sys.argv[1],encoding=\"utf-8\").read()\n"
	    "a=t.index(\"id=\\\"hwt-data\\\">\")+14; b=t.index(\"</script>\",a)\n"
	    "d=json.loads(t[a:b]); n=d[\"nodes\"]\n"
	    "print([(n[i],d[\"names\"][n[i+1]],n[i+2],n[i+3]) for i in range(0,len(n),4)])' '%s'",
	    html);
	assert_int_equal(run.status, 0);
	snprintf(buf, sizeof(buf), "%s", run.out);
	assert_string_equal(
	    buf, "[(0, 'all', 0, 10), (1, 'prog', 1, 10), (2, 'main', 1, 10), "
		 "(3, '<script>&amp\"x\"]]>', 1, 5), (4, 'leaf', 1, 5), (3, 'café', 1, 2), "
		 "(4, 'bad\xef\xbf\xbd', 1, 2), (5, 'k', 2, 2), (3, \"f'o'o\", 1, 3)]\n");
	hwt_test_run_free(&run);
	hwt_rep_profile_free(p);
	hwt_test_tmpdir_remove(dir);
}

static void test_cli(void **state)
{
	char *dir = hwt_test_tmpdir();
	struct hwt_test_run run;
	const char *in, *bad;
	char path[4096];

	(void)state;
	in = rt_write(dir, "in.folded", "b;c 2\na;x 1\nb 4\n", 16);
	hwt_test_run(&run, "%s flame --folded-in %s -o - --format folded", hwt_test_hwtrace(), in);
	assert_int_equal(run.status, 0);
	assert_string_equal(run.out, "a;x 1\nb 4\nb;c 2\n");
	hwt_test_run_free(&run);

	snprintf(path, sizeof(path), "%s/out.svg", dir);
	hwt_test_run(&run, "%s flame --folded-in %s -o %s --title T --icicle --width 800",
		     hwt_test_hwtrace(), in, path);
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(
	    run.err, "out.svg: 7 samples (0 filtered out, 0 lost), 10 frames (0 unsymbolized)"));
	hwt_test_run_free(&run);
	assert_int_equal(access(path, R_OK), 0);

	bad = rt_write(dir, "bad.folded", "a;b 1\nno count here\n", 20);
	hwt_test_run(&run, "%s flame --folded-in %s -o %s/x.svg", hwt_test_hwtrace(), bad, dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "bad.folded:2: not a folded stack line"));
	hwt_test_run_free(&run);

	hwt_test_run(&run, "%s flame --folded-in %s -o %s/x.png", hwt_test_hwtrace(), in, dir);
	assert_int_equal(run.status, 2);
	assert_true(hwt_test_contains(run.err, "cannot tell the format"));
	hwt_test_run_free(&run);

	hwt_test_run(&run, "%s flame --folded-in %s -o %s/x.json", hwt_test_hwtrace(), in, dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "Chrome trace (.json) needs samples in time order"));
	hwt_test_run_free(&run);

	hwt_test_run(&run, "%s flame --folded-in %s/missing -o %s/x.svg", hwt_test_hwtrace(), dir,
		     dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "cannot read"));
	hwt_test_run_free(&run);

	/* No input: the default recording, which is not there. */
	hwt_test_run(&run, "cd %s && %s flame -o x.svg", dir, hwt_test_hwtrace());
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "hwtrace.hwt: no such file"));
	hwt_test_run_free(&run);

	hwt_test_run(&run, "%s flame --folded-in %s --diff %s -o %s/x.folded", hwt_test_hwtrace(),
		     in, in, dir);
	assert_int_equal(run.status, 2);
	assert_true(hwt_test_contains(run.err, "--diff draws a differential flame graph"));
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

static void test_browser(void **state)
{
	char *dir = hwt_test_tmpdir();
	struct hwt_test_run run;

	(void)state;
	hwt_test_run(&run, "python3 %s/tests/report/browser_flame.py %s %s", hwt_test_source_dir(),
		     hwt_test_hwtrace(), dir);
	fprintf(stderr, "%s%s", run.out, run.err);
	if (run.status == 77) {
		hwt_test_run_free(&run);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("the browser test cannot run here (reason above)");
		return;
	}
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "all checks passed"));
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_svg_xml_and_data),
	    cmocka_unit_test(test_cli),
	    cmocka_unit_test(test_browser),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
