/* placeholder: perf-event sideband for script --pt */
#include <stdlib.h>
#include "cli/cli.h"
#include "cli/script_pt.h"
struct script_sb { int n; };
int script_sb_alloc(struct script_sb **sb, struct hwt_dec_icache *ic, const struct script_opts *opts) { (void)ic; (void)opts; *sb = calloc(1, sizeof(**sb)); return *sb ? 0 : -1; }
void script_sb_free(struct script_sb *sb) { free(sb); }
int script_sb_option(struct script_sb *sb, const char *name, const char *arg) { (void)sb; (void)arg; hwt_cli_error("script: --%s is not supported yet", name); return -HWT_ENOTSUP; }
int script_sb_setup(struct script_sb *sb, struct hwt_dec_image *img, struct hwt_dec_config *cfg) { (void)sb; (void)img; (void)cfg; return 0; }
bool script_sb_active(const struct script_sb *sb) { (void)sb; return false; }
void script_sb_before(struct script_sb *sb, const struct hwt_dec_rec *rec) { (void)sb; (void)rec; }
void script_sb_after(struct script_sb *sb, const struct hwt_dec_rec *rec) { (void)sb; (void)rec; }
void script_sb_finish(struct script_sb *sb) { (void)sb; }
