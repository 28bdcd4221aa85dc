/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/flame.c - flame graphs: folded stacks (the text FlameGraph and
 * inferno read), and the interactive SVG and HTML flame graphs.
 *
 * The interactive graphs carry the whole merged call tree as compact data
 * (one record per node, in preorder) and a small script lays it out in the
 * browser. Only frames at least min_width pixels wide at the current zoom
 * become DOM nodes, so a profile of tens of thousands of stacks stays
 * responsive, while search and zoom work on the exact data of every frame.
 * Colours follow the frame kind (user warm, kernel aqua, inlined violet, JIT
 * green) with a hue stable per name; a differential graph colours each
 * frame red when it grew and blue when it shrank against the base.
 */
#include "report/report_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A node of the merged tree, keyed by (parent, label, kind). */
struct fnode_key {
	uint32_t parent;
	uint32_t label; /* dict string id */
	uint32_t kind;
};

struct flame {
	bool folded;
	enum hwt_rep_format format;
	struct hwt_rep_set nodes;
	uint64_t *val;	/* per node: weight in the profile */
	uint64_t *base; /* per node: weight in the base profile */
	size_t cap;
	uint32_t root_label, comm_unknown;
	uint64_t total, base_total;
	uint64_t samples; /* profile's samples, to name the unit */
	const struct hwt_rep_dict *base_dict;
	uint32_t labels[HWT_REP_MAX_DEPTH + 1];
	uint32_t kinds[HWT_REP_MAX_DEPTH + 1];
};

static int flame_grow(struct flame *f, size_t need)
{
	size_t cap;
	uint64_t *v, *b;

	if (need <= f->cap)
		return 0;
	cap = f->cap ? f->cap * 2 : 1024;
	while (cap < need)
		cap *= 2;
	v = realloc(f->val, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	f->val = v;
	b = realloc(f->base, cap * sizeof(*b));
	if (!b)
		return -ENOMEM;
	f->base = b;
	f->cap = cap;
	return 0;
}

static int flame_init(struct hwt_rep_render_ctx *ctx)
{
	struct flame *f = calloc(1, sizeof(*f));
	struct fnode_key root = {UINT32_MAX, 0, 0};
	uint32_t id;
	int err;

	if (!f)
		return -ENOMEM;
	ctx->state = f;
	f->format = ctx->cfg->format;
	f->folded = ctx->cfg->format == HWT_REP_FMT_FOLDED;
	hwt_rep_set_init(&f->nodes);
	if ((err = flame_grow(f, 1)) < 0)
		return err;
	if ((err = hwt_rep_set_intern(&f->nodes, &root, sizeof(root), &id)) < 0)
		return err;
	f->val[0] = 0;
	f->base[0] = 0;
	return 0;
}

/* Labels live in the profile's dict; a base profile may have its own
 * dict, so its labels are re-interned into the profile's (a cold path:
 * once per base row frame, only for differential graphs). The profile's
 * dict is const to callers, but interning a string changes no id and no
 * result a caller has seen. */
static int label_in_main(struct hwt_rep_render_ctx *ctx, const struct hwt_rep_dict *from,
			 uint32_t label, uint32_t *out)
{
	const char *s;

	if (from == ctx->profile->dict) {
		*out = label;
		return 0;
	}
	s = hwt_rep_dict_str_get(from, label);
	return hwt_rep_dict_str((struct hwt_rep_dict *)ctx->profile->dict, s, strlen(s), out);
}

static int flame_process(struct hwt_rep_render_ctx *ctx, int source, uint32_t row_index,
			 const struct hwt_rep_row_key *row, const struct hwt_rep_row_val *val)
{
	struct flame *f = ctx->state;
	const struct hwt_rep_profile *p = source ? ctx->base : ctx->profile;
	const struct hwt_rep_dict *dict = p->dict;
	const uint32_t *frames;
	size_t n = hwt_rep_dict_stack_get(dict, row->stack, &frames), m = 0;
	uint64_t w = ctx->cfg->count_samples ? val->samples : val->weight;
	uint32_t node = 0;
	int err;

	(void)row_index;
	if (ctx->cfg->by_comm && row->comm) {
		err = label_in_main(ctx, dict, row->comm, &f->labels[m]);
		if (err < 0)
			return err;
		f->kinds[m++] = HWT_REP_KIND_UNKNOWN;
	}
	for (size_t i = n; i-- > 0;) {
		err =
		    label_in_main(ctx, dict, hwt_rep_dict_label_id(dict, frames[i]), &f->labels[m]);
		if (err < 0)
			return err;
		f->kinds[m++] = hwt_rep_dict_frame_key(dict, frames[i])->kind;
	}
	if (source)
		f->base_total += w;
	else {
		f->total += w;
		f->samples += val->samples;
	}
	if (source)
		f->base[0] += w;
	else
		f->val[0] += w;
	for (size_t i = 0; i < m; i++) {
		struct fnode_key k = {node, f->labels[i], f->kinds[i]};
		uint32_t id;

		if ((err = flame_grow(f, f->nodes.n + 1)) < 0)
			return err;
		err = hwt_rep_set_intern(&f->nodes, &k, sizeof(k), &id);
		if (err < 0)
			return err;
		if (err == 1) {
			f->val[id] = 0;
			f->base[id] = 0;
		}
		if (source)
			f->base[id] += w;
		else
			f->val[id] += w;
		node = id;
	}
	return 0;
}

static inline const struct fnode_key *fkey(const struct flame *f, uint32_t id)
{
	return (const struct fnode_key *)hwt_rep_set_key(&f->nodes, id, NULL);
}

/* Children lists sorted by name (then kind), FlameGraph's order, which
 * keeps a frame's position stable across profiles. */
struct kids {
	uint32_t *first, *next;
};

struct kid_ref {
	uint32_t id;
	const char *name;
	uint32_t kind;
};

static int cmp_kid(const void *pa, const void *pb)
{
	const struct kid_ref *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	return a->kind < b->kind ? -1 : a->kind > b->kind;
}

static int link_kids(const struct flame *f, const struct hwt_rep_dict *dict, struct kids *k)
{
	size_t n = f->nodes.n;
	struct kid_ref *refs = malloc(n * sizeof(*refs));
	size_t *start = calloc(n + 1, sizeof(*start)), *fill = calloc(n + 1, sizeof(*fill));
	int err = -ENOMEM;

	k->first = malloc(n * sizeof(uint32_t));
	k->next = malloc(n * sizeof(uint32_t));
	if (!refs || !start || !fill || !k->first || !k->next)
		goto out;
	for (size_t i = 1; i < n; i++)
		start[fkey(f, (uint32_t)i)->parent + 1]++;
	for (size_t i = 0; i < n; i++)
		start[i + 1] += start[i];
	for (size_t i = 1; i < n; i++) {
		const struct fnode_key *key = fkey(f, (uint32_t)i);
		struct kid_ref *r = &refs[start[key->parent] + fill[key->parent]++];

		r->id = (uint32_t)i;
		r->name = hwt_rep_dict_str_get(dict, key->label);
		r->kind = key->kind;
	}
	for (size_t p = 0; p < n; p++) {
		size_t cnt = start[p + 1] - start[p];

		k->first[p] = UINT32_MAX;
		if (!cnt)
			continue;
		qsort(refs + start[p], cnt, sizeof(*refs), cmp_kid);
		k->first[p] = refs[start[p]].id;
		for (size_t j = 0; j < cnt; j++)
			k->next[refs[start[p] + j].id] =
			    j + 1 < cnt ? refs[start[p] + j + 1].id : UINT32_MAX;
	}
	err = 0;
out:
	free(refs);
	free(start);
	free(fill);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Folded output */

/* Preorder walk with an explicit stack (trees can be HWT_REP_MAX_DEPTH
 * deep). Calls visit(node, depth) for every node but the root. */
struct walk {
	uint32_t node[HWT_REP_MAX_DEPTH + 3];
};

static int folded_emit(struct hwt_rep_render_ctx *ctx, struct flame *f, const struct kids *k,
		       struct hwt_buf *out)
{
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	struct walk *w = malloc(sizeof(*w));
	struct hwt_buf line;
	size_t lens[HWT_REP_MAX_DEPTH + 3];
	int depth = 0, err = 0;
	uint32_t c;

	if (!w)
		return -ENOMEM;
	hwt_buf_init(&line);
	/* Walk; a node's self weight (its value minus its children's) is a
	 * folded line of its path. */
	c = k->first[0];
	while (c != UINT32_MAX && err >= 0) {
		const struct fnode_key *key = fkey(f, c);
		uint64_t self = f->val[c];

		lens[depth] = line.len;
		if (depth)
			err = hwt_buf_append(&line, ";", 1);
		if (err >= 0)
			err = hwt_rep_folded_frame(&line, hwt_rep_dict_str_get(dict, key->label),
						   key->kind, ctx->cfg->annotate);
		for (uint32_t d = k->first[c]; d != UINT32_MAX; d = k->next[d])
			self -= f->val[d];
		if (err >= 0 && self)
			err = hwt_buf_printf(out, "%.*s %" PRIu64 "\n", (int)line.len,
					     (const char *)line.data, self);
		if (err < 0)
			break;
		w->node[depth] = c;
		if (k->first[c] != UINT32_MAX && depth + 1 < (int)HWT_ARRAY_SIZE(w->node)) {
			depth++;
			c = k->first[c];
			continue;
		}
		/* Up until a node has a next sibling. */
		for (;;) {
			line.len = lens[depth];
			if (k->next[w->node[depth]] != UINT32_MAX) {
				c = k->next[w->node[depth]];
				break;
			}
			if (depth == 0) {
				c = UINT32_MAX;
				break;
			}
			depth--;
		}
	}
	hwt_buf_fini(&line);
	free(w);
	return err;
}

/* ------------------------------------------------------------------------ */
/* SVG and HTML */

#define FRAME_H	 16
#define TOP_H	 56
#define BOTTOM_H 36

/* The script both the SVG and the HTML page run. It reads the JSON in
 * <script id="hwt-data">:
 *   names  unique frame names
 *   nodes  preorder, `stride` integers a node: depth, name index, kind,
 *          value [, base value]
 * and lays the graph out inside <g id="frames">. */
static const char flame_js[] =
    "(function(){\"use strict\";var T0=performance.now();\n"
    "var "
    "doc=document,D=JSON.parse(doc.getElementById(\"hwt-data\").textContent),NS=\"http://"
    "www.w3.org/2000/svg\";\n"
    "var S=D.diff?5:4,N=D.nodes.length/S,W=D.width,PAD=10,FH="
    "16"
    ",TOP="
    "56"
    ";\n"
    "var dep=new Int32Array(N),nm=new Int32Array(N),kd=new Int8Array(N),val=new Float64Array(N),\n"
    " bas=new Float64Array(N),x=new Float64Array(N),end=new Int32Array(N),par=new "
    "Int32Array(N),maxd=0;\n"
    "(function(){var cur=[0],st=[];for(var i=0;i<N;i++){var o=i*S,d=D.nodes[o];\n"
    " dep[i]=d;nm[i]=D.nodes[o+1];kd[i]=D.nodes[o+2];val[i]=D.nodes[o+3];if(D.diff)bas[i]=D.nodes["
    "o+4];\n"
    " while(st.length>d)end[st.pop()]=i;par[i]=d?st[d-1]:-1;st.push(i);if(cur[d]===undefined)cur[d]"
    "=0;\n"
    " x[i]=cur[d];cur[d]+=val[i];cur[d+1]=x[i];if(d>maxd)maxd=d;}\n"
    " while(st.length)end[st.pop()]=N;})();\n"
    "var svg=doc.getElementById(\"hwt-flame\"),G=doc.getElementById(\"frames\"),\n"
    " det=doc.getElementById(\"details\"),mat=doc.getElementById(\"matched\"),\n"
    " rst=doc.getElementById(\"reset\"),zoomI=0,matched=null,shown=0;\n"
    "var H=TOP+(maxd+1)*FH+36;svg.setAttribute(\"height\",H);svg.setAttribute(\"viewBox\",\"0 0 "
    "\"+W+\" \"+H);\n"
    "if(svg.getAttribute(\"data-standalone\")){det.setAttribute(\"y\",H-12);mat.setAttribute(\"y\","
    "H-12);}\n"
    "function hsh(s){var h=2166136261;for(var "
    "k=0;k<s.length;k++)h=Math.imul(h^s.charCodeAt(k),16777619);\n"
    " return ((h>>>0)%1000)/1000;}\n"
    "var maxDelta=1;if(D.diff){for(var i=1;i<N;i++){var "
    "dd=Math.abs(val[i]-bas[i]*D.bscale);if(dd>maxDelta)maxDelta=dd;}}\n"
    "function color(i){if(matched&&matched[i])return \"rgb(230,0,230)\";\n"
    " if(D.diff){var "
    "d=val[i]-bas[i]*D.bscale,t=Math.min(1,Math.abs(d)/maxDelta),c=Math.round(225-180*t);\n"
    "  return "
    "d>0?\"rgb(255,\"+c+\",\"+c+\")\":d<0?\"rgb(\"+c+\",\"+c+\",255)\":\"rgb(225,225,225)\";}\n"
    " var h=hsh(D.names[nm[i]]);switch(kd[i]){\n"
    " case 1:return \"hsl(\"+Math.round(h*50)+\",80%,\"+Math.round(55+h*10)+\"%)\";\n"
    " case 2:return \"hsl(\"+Math.round(180+h*25)+\",60%,\"+Math.round(50+h*12)+\"%)\";\n"
    " case 3:return \"hsl(\"+Math.round(265+h*25)+\",50%,\"+Math.round(65+h*10)+\"%)\";\n"
    " case 4:return \"hsl(\"+Math.round(95+h*35)+\",55%,\"+Math.round(48+h*12)+\"%)\";\n"
    " default:return \"hsl(0,0%,\"+Math.round(68+h*15)+\"%)\";}}\n"
    "function fmt(v){return Math.round(v).toString().replace(/\\B(?=(\\d{3})+(?!\\d))/g,\",\");}\n"
    "function pct(v,t){return t>0?(100*v/t).toFixed(2):\"0.00\";}\n"
    "function info(i){var s=D.names[nm[i]]+\" (\"+fmt(val[i])+\" \"+D.unit+\", "
    "\"+pct(val[i],val[0])+\"%\";\n"
    " if(zoomI!==0&&i>=zoomI&&i<end[zoomI])s+=\", \"+pct(val[i],val[zoomI])+\"% of zoom\";\n"
    " if(D.diff){var b=bas[i]*D.bscale,d=val[i]-b;s+=\"; base \"+fmt(b)+\", "
    "\"+(d>=0?\"+\":\"\")+pct(d,val[0])+\"%\";}\n"
    " return s+\")\";}\n"
    "function draw(frag,i,rx,w){var y=D.icicle?TOP+dep[i]*FH:TOP+(maxd-dep[i])*FH;\n"
    " var "
    "r=doc.createElementNS(NS,\"rect\");r.setAttribute(\"x\",rx.toFixed(2));r.setAttribute(\"y\",y)"
    ";\n"
    " r.setAttribute(\"width\",w.toFixed(2));r.setAttribute(\"height\",FH-1);r.setAttribute(\"rx\","
    "2);\n"
    " r.setAttribute(\"fill\",color(i));r.setAttribute(\"class\",w>=3?\"f "
    "w\":\"f\");r.setAttribute(\"data-i\",i);\n"
    " r.setAttribute(\"data-n\",D.names[nm[i]]);if(matched&&matched[i])r.setAttribute(\"data-m\","
    "\"1\");\n"
    " frag.appendChild(r);var n=Math.floor((w-6)/7);if(n<3)return;var s=D.names[nm[i]];\n"
    " if(s.length>n)s=s.substr(0,n-2)+\"..\";var t=doc.createElementNS(NS,\"text\");\n"
    " t.setAttribute(\"x\",(rx+3).toFixed(2));t.setAttribute(\"y\",y+FH-4.5);t.setAttribute(\"data-"
    "i\",i);\n"
    " t.textContent=s;frag.appendChild(t);}\n"
    "function render(){var "
    "zx=x[zoomI],zw=val[zoomI]||1,sc=(W-2*PAD)/zw,frag=doc.createDocumentFragment(),i=0;\n"
    " shown=0;while(i<N){if(i<zoomI||i>=end[zoomI]){if(i<zoomI&&end[i]>zoomI){draw(frag,i,PAD,W-2*"
    "PAD);shown++;i++;}\n"
    "   else i=end[i];continue;}\n"
    "  var "
    "w=val[i]*sc;if(w<D.minw){i=end[i];continue;}draw(frag,i,PAD+(x[i]-zx)*sc,w);shown++;i++;}\n"
    " G.textContent=\"\";G.appendChild(frag);rst.style.visibility=zoomI?\"visible\":\"hidden\";\n"
    " svg.setAttribute(\"data-zoom\",zoomI);svg.setAttribute(\"data-shown\",shown);}\n"
    "function zoom(i){if(i<0||i>=N)return;zoomI=i;render();}\n"
    "function "
    "search(re){if(!re){matched=null;mat.textContent=\"\";svg.removeAttribute(\"data-matched\");"
    "render();return;}\n"
    " var r;try{r=new RegExp(re);}catch(e){mat.textContent=\"bad regular expression\";return;}\n"
    " matched=new Uint8Array(N);var sum=0,zsum=0,stop=-1,zstop=-1;\n"
    " for(var i=1;i<N;i++){if(!r.test(D.names[nm[i]]))continue;matched[i]=1;\n"
    "  if(i>=stop){sum+=val[i];stop=end[i];}\n"
    "  if(zoomI&&i>=zoomI&&i<end[zoomI]&&i>=zstop){zsum+=val[i];zstop=end[i];}}\n"
    " var txt=\"Matched: \"+pct(sum,val[0])+\"%\";if(zoomI)txt+=\" (\"+pct(zsum,val[zoomI])+\"% of "
    "zoom)\";\n"
    " mat.textContent=txt;svg.setAttribute(\"data-matched\",pct(sum,val[0]));render();}\n"
    "function idx(e){var t=e.target;return t&&t.getAttribute?t.getAttribute(\"data-i\"):null;}\n"
    "G.addEventListener(\"mouseover\",function(e){var "
    "i=idx(e);if(i!==null)det.textContent=info(+i);});\n"
    "G.addEventListener(\"mouseout\",function(){det.textContent=\" \";});\n"
    "G.addEventListener(\"click\",function(e){var i=idx(e);if(i!==null)zoom(+i);});\n"
    "rst.addEventListener(\"click\",function(){zoom(0);});\n"
    "var inp=doc.getElementById(\"search\");\n"
    "if(inp&&inp.tagName.toLowerCase()===\"input\")inp.addEventListener(\"input\",function(){"
    "search(inp.value);});\n"
    "else if(inp)inp.addEventListener(\"click\",function(){var q=prompt(\"Search (regular "
    "expression)\",\"\");\n"
    " if(q!==null)search(q);});\n"
    "doc.addEventListener(\"keydown\",function(e){if(e.key===\"Escape\"){search(\"\");zoom(0);}});"
    "\n"
    "window.hwtFlame={search:search,zoom:zoom,reset:function(){zoom(0);},nodes:N,\n"
    " name:function(i){return D.names[nm[i]];},value:function(i){return val[i];},\n"
    " kind:function(i){return kd[i];},path:function(i){var "
    "p=[];for(;i>0;i=par[i])p.unshift(D.names[nm[i]]);return p;}};\n"
    "render();svg.setAttribute(\"data-ms\",Math.round(performance.now()-T0));})();\n";

static const char flame_css[] = "text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"
				"rect.f{cursor:pointer}rect.w{stroke:#fff;stroke-width:0.5}\n"
				"rect.f:hover{stroke:#000;stroke-width:0.7}\n"
				"text[data-i]{pointer-events:none;font-size:11px}\n"
				"#title{font-size:17px}#subtitle{fill:#555}\n";

/* Frames the SVG draws without a script (for viewers that run none): those
 * at least a pixel wide in the full view, laid out as the script does. */
struct statics {
	struct {
		uint32_t node;
		int depth;
		double x, w;
	} * f;
	size_t n, cap;
	double *cursor; /* next x per depth, in value units */
	int maxd;
	double scale; /* px per value unit */
};

static int statics_add(struct statics *st, uint32_t node, int depth, double x, double w)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 1024;
		void *nf = realloc(st->f, cap * sizeof(*st->f));

		if (!nf)
			return -ENOMEM;
		st->f = nf;
		st->cap = cap;
	}
	st->f[st->n].node = node;
	st->f[st->n].depth = depth;
	st->f[st->n].x = x;
	st->f[st->n].w = w;
	st->n++;
	return 0;
}

/* Emits the tree in preorder: depth, name index, kind, value[, base]; and
 * collects the frames to draw statically. */
static int emit_nodes(struct hwt_rep_render_ctx *ctx, struct flame *f, const struct kids *k,
		      struct hwt_buf *out, uint32_t *name_idx, uint32_t *names_order,
		      size_t *nnames, bool diff, struct statics *st)
{
	uint32_t *stack = malloc((HWT_REP_MAX_DEPTH + 4) * sizeof(*stack));
	int depth = 0, err = 0;
	uint32_t c = 0;
	bool first = true;

	if (!stack)
		return -ENOMEM;
	st->cursor[0] = 0;
	while (c != UINT32_MAX && err >= 0) {
		const struct fnode_key *key = fkey(f, c);
		uint32_t label = c ? key->label : f->root_label;

		/* Frames that never had weight in this profile (only in the
		 * base) have no width: leave them out. */
		if (c == 0 || f->val[c]) {
			if (name_idx[label] == UINT32_MAX) {
				name_idx[label] = (uint32_t)*nnames;
				names_order[(*nnames)++] = label;
			}
			/* depth,name,kind,value[,base] with a hand-rolled
			 * formatter: this runs once per node of the tree. */
			uint64_t rec[5] = {(uint64_t)depth, name_idx[label], c ? key->kind : 0,
					   f->val[c], f->base[c]};

			for (int i = 0; i < (diff ? 5 : 4) && err >= 0; i++) {
				if (!first || i)
					err = hwt_buf_append(out, ",", 1);
				if (err >= 0)
					err = hwt_rep_buf_u64(out, rec[i]);
			}
			first = false;
			{
				double x = st->cursor[depth], w = (double)f->val[c] * st->scale;

				st->cursor[depth] += (double)f->val[c];
				st->cursor[depth + 1] = x;
				if (depth > st->maxd)
					st->maxd = depth;
				if (w >= 1.0 && err >= 0)
					err = statics_add(st, c, depth, x * st->scale, w);
			}
			stack[depth] = c;
			if (k->first[c] != UINT32_MAX && depth < HWT_REP_MAX_DEPTH + 2) {
				depth++;
				c = k->first[c];
				continue;
			}
		} else {
			stack[depth] = c;
		}
		for (;;) {
			if (depth == 0) {
				c = UINT32_MAX;
				break;
			}
			if (k->next[stack[depth]] != UINT32_MAX) {
				c = k->next[stack[depth]];
				break;
			}
			depth--;
		}
	}
	free(stack);
	return err;
}

/* The script's colour of a frame (same hash, same ranges), so the static
 * drawing matches what the script redraws. */
static int static_fill(struct hwt_buf *out, const char *name, uint32_t kind, double delta,
		       double max_delta, bool diff)
{
	uint32_t h = 2166136261u;
	double t;

	if (diff) {
		int c;

		/* Grey when unchanged, toward red (grew) or blue (shrank). */
		t = fabs(delta) / max_delta;
		c = (int)lround(225 - 180 * (t < 1 ? t : 1));
		if (delta > 0)
			return hwt_buf_printf(out, "rgb(255,%d,%d)", c, c);
		if (delta < 0)
			return hwt_buf_printf(out, "rgb(%d,%d,255)", c, c);
		return hwt_buf_printf(out, "rgb(225,225,225)");
	}
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	t = (double)(h % 1000) / 1000.0;
	switch (kind) {
	case HWT_REP_KIND_USER:
		return hwt_buf_printf(out, "hsl(%ld,80%%,%ld%%)", lround(t * 50),
				      lround(55 + t * 10));
	case HWT_REP_KIND_KERNEL:
		return hwt_buf_printf(out, "hsl(%ld,60%%,%ld%%)", lround(180 + t * 25),
				      lround(50 + t * 12));
	case HWT_REP_KIND_INLINED:
		return hwt_buf_printf(out, "hsl(%ld,50%%,%ld%%)", lround(265 + t * 25),
				      lround(65 + t * 10));
	case HWT_REP_KIND_JIT:
		return hwt_buf_printf(out, "hsl(%ld,55%%,%ld%%)", lround(95 + t * 35),
				      lround(48 + t * 12));
	default:
		return hwt_buf_printf(out, "hsl(0,0%%,%ld%%)", lround(68 + t * 15));
	}
}

static int emit_static(struct hwt_rep_render_ctx *ctx, struct flame *f, const struct statics *st,
		       struct hwt_buf *out, double bscale)
{
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	bool diff = ctx->base != NULL;
	double max_delta = 1;
	int err = 0;

	if (diff) {
		for (size_t i = 1; i < f->nodes.n; i++) {
			double d = fabs((double)f->val[i] - (double)f->base[i] * bscale);

			if (f->val[i] && d > max_delta)
				max_delta = d;
		}
	}
	for (size_t i = 0; i < st->n && err >= 0; i++) {
		uint32_t c = st->f[i].node;
		const struct fnode_key *key = fkey(f, c);
		const char *name = hwt_rep_dict_str_get(dict, c ? key->label : f->root_label);
		int y = TOP_H +
			(ctx->cfg->icicle ? st->f[i].depth : st->maxd - st->f[i].depth) * FRAME_H;
		double x = 10 + st->f[i].x, w = st->f[i].w;
		int fit = (int)((w - 6) / 7);

		err = hwt_buf_printf(out, "<g><title>");
		if (err >= 0)
			err = hwt_rep_xml_str(out, name);
		if (err >= 0)
			err = hwt_buf_printf(
			    out,
			    " (%" PRIu64 ", %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" "
			    "width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"",
			    f->val[c],
			    f->val[0] ? 100.0 * (double)f->val[c] / (double)f->val[0] : 0, x, y, w,
			    FRAME_H - 1);
		if (err >= 0)
			err = static_fill(out, name, c ? key->kind : 0,
					  (double)f->val[c] - (double)f->base[c] * bscale,
					  max_delta, diff);
		if (err >= 0)
			err = hwt_buf_printf(out, "\"/>");
		if (err >= 0 && fit >= 3) {
			size_t len = strlen(name);
			char *cut = NULL;

			if (len > (size_t)fit) {
				cut = strndup(name, (size_t)fit - 2);
				if (!cut)
					err = -ENOMEM;
			}
			if (err >= 0)
				err = hwt_buf_printf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3,
						     y + FRAME_H - 4.5);
			if (err >= 0)
				err = hwt_rep_xml_str(out, cut ? cut : name);
			if (err >= 0)
				err = hwt_buf_printf(out, "%s</text>", cut ? ".." : "");
			free(cut);
		}
		if (err >= 0)
			err = hwt_buf_printf(out, "</g>\n");
	}
	return err;
}

static int emit_graph(struct hwt_rep_render_ctx *ctx, struct flame *f, const struct kids *k,
		      struct hwt_buf *out)
{
	const struct hwt_rep_render_config *cfg = ctx->cfg;
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	bool html = f->format == HWT_REP_FMT_HTML, diff = ctx->base != NULL;
	size_t nstr = dict->strs.n, nnames = 0;
	uint32_t *name_idx = malloc((nstr + 1) * sizeof(*name_idx));
	uint32_t *names_order = malloc((nstr + 1) * sizeof(*names_order));
	const char *title = cfg->title ? cfg->title
			    : diff     ? "Differential Flame Graph"
				       : "Flame Graph";
	unsigned int width = cfg->width ? cfg->width : 1200;
	struct hwt_buf nodes, stats;
	struct statics st;
	double bscale = 1.0;
	int err, height = 0;

	hwt_buf_init(&nodes);
	hwt_buf_init(&stats);
	memset(&st, 0, sizeof(st));
	st.cursor = calloc(HWT_REP_MAX_DEPTH + 8, sizeof(*st.cursor));
	if (!st.cursor) {
		err = -ENOMEM;
		goto out;
	}
	st.scale = f->val[0] ? (double)(width - 20) / (double)f->val[0] : 0;
	if (!name_idx || !names_order) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i <= nstr; i++)
		name_idx[i] = UINT32_MAX;
	/* "all" may be new to the dict: the arrays have one spare slot. */
	err = hwt_rep_dict_str((struct hwt_rep_dict *)dict, "all", 3, &f->root_label);
	if (err < 0)
		goto out;
	err = emit_nodes(ctx, f, k, &nodes, name_idx, names_order, &nnames, diff, &st);
	if (err < 0)
		goto out;
	height = TOP_H + (st.maxd + 1) * FRAME_H + BOTTOM_H;
	if (diff && f->base_total && cfg->diff_normalize)
		bscale = (double)f->total / (double)f->base_total;
	{
		const struct hwt_rep_stats *ps = &ctx->profile->stats;

		if (ps->exact)
			err = hwt_buf_printf(
			    &stats,
			    "%" PRIu64 " %s, exact (every one counted, not sampled), in %" PRIu64
			    " distinct stacks",
			    ps->weight, ctx->profile->exact_event, ps->samples);
		else
			err = hwt_buf_printf(&stats, "%" PRIu64 " samples, weight %" PRIu64,
					     ps->samples, ps->weight);
		if (err >= 0)
			err = hwt_buf_printf(
			    &stats,
			    "; filtered %" PRIu64 ", lost %" PRIu64 ", unsymbolized frames %" PRIu64
			    " of %" PRIu64 ", truncated stacks %" PRIu64,
			    ps->filtered, ps->lost, ps->unsymbolized, ps->frames, ps->truncated);
		if (err >= 0 && diff)
			err =
			    hwt_buf_printf(&stats, "; base weight %" PRIu64 "%s", f->base_total,
					   cfg->diff_normalize ? ", scaled to the same total" : "");
		if (err < 0)
			goto out;
	}
	if (html) {
		err = hwt_buf_printf(
		    out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>");
		if (err >= 0)
			err = hwt_rep_xml_str(out, title);
		if (err >= 0)
			err = hwt_buf_printf(
			    out,
			    "</title>\n<style>\nbody{margin:8px;font-family:Verdana,sans-serif}\n"
			    "#bar{margin:4px 0}#bar input{width:260px}#details{font-size:13px;"
			    "min-height:1.3em;white-space:pre}#matched{margin-left:12px;"
			    "font-size:13px}\n%s</style></head><body>\n"
			    "<div id=\"bar\"><button id=\"reset\">Reset zoom</button> "
			    "<input id=\"search\" placeholder=\"Search (regular expression)\" "
			    "autocomplete=\"off\"><span id=\"matched\"></span></div>\n",
			    flame_css);
		if (err >= 0)
			err = hwt_buf_printf(out,
					     "<svg id=\"hwt-flame\" width=\"%u\" height=\"%d\" "
					     "xmlns=\"http://www.w3.org/2000/svg\">\n",
					     width, height);
	} else {
		err = hwt_buf_printf(
		    out,
		    "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		    "<svg version=\"1.1\" id=\"hwt-flame\" data-standalone=\"1\" width=\"%u\" "
		    "height=\"%d\" viewBox=\"0 0 %u %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		    "<style type=\"text/css\"><![CDATA[\n%s"
		    ".btn{fill:#0645ad;cursor:pointer}\n]]></style>\n",
		    width, height, width, height, flame_css);
	}
	if (err >= 0)
		err = hwt_buf_printf(
		    out,
		    "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f6f6f0\"/>\n"
		    "<text id=\"title\" x=\"%u\" y=\"22\" text-anchor=\"middle\">",
		    width / 2);
	if (err >= 0)
		err = hwt_rep_xml_str(out, title);
	if (err >= 0)
		err = hwt_buf_printf(out,
				     "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"40\" "
				     "text-anchor=\"middle\">",
				     width / 2);
	if (err >= 0)
		err = hwt_rep_xml_str(out, (const char *)stats.data);
	if (err >= 0)
		err = hwt_buf_printf(out, "</text>\n");
	if (err >= 0 && !html)
		err = hwt_buf_printf(
		    out,
		    "<text id=\"reset\" class=\"btn\" x=\"10\" y=\"22\" "
		    "visibility=\"hidden\">Reset Zoom</text>\n"
		    "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"22\">Search</text>\n"
		    "<text id=\"matched\" x=\"%u\" y=\"%d\"> </text>\n"
		    "<text id=\"details\" x=\"10\" y=\"%d\"> </text>\n",
		    width - 110, width - 260, height - 12, height - 12);
	/* Without a script (image viewers, previews) the SVG still shows the
	 * full view; the script replaces these frames when it runs. */
	if (err >= 0)
		err = hwt_buf_printf(out, "<g id=\"frames\">\n");
	if (err >= 0 && !html)
		err = emit_static(ctx, f, &st, out, bscale);
	if (err >= 0)
		err = hwt_buf_printf(out, "</g>\n");
	/* The SVG keeps its script inside the root element; the page puts it
	 * after the drawing and the details line. */
	if (err >= 0 && html)
		err = hwt_buf_printf(out, "</svg>\n<div id=\"details\"> </div>\n");
	/* The data is JSON in a script block of its own: browsers parse
	 * JSON.parse input several times faster than a script literal of the
	 * same size, which matters at hundreds of thousands of frames. Names
	 * are JSON-escaped with < and > as \u003c/\u003e, so no name can end
	 * the block (or the SVG's CDATA section) early. */
	if (err >= 0)
		err = hwt_buf_printf(
		    out, html ? "<script type=\"application/json\" id=\"hwt-data\">"
			      : "<script type=\"application/json\" id=\"hwt-data\"><![CDATA[");
	if (err >= 0)
		err = hwt_buf_printf(out,
				     "{\"width\":%u,\"minw\":%.3f,\"icicle\":%s,\"diff\":%s,"
				     "\"bscale\":%.17g,\"unit\":\"%s\",\"names\":[",
				     width, cfg->min_width, cfg->icicle ? "true" : "false",
				     diff ? "true" : "false", bscale,
				     ctx->profile->stats.exact ? ctx->profile->exact_event
				     : f->samples == f->total  ? "samples"
							       : "events");
	for (size_t i = 0; i < nnames && err >= 0; i++) {
		if (i)
			err = hwt_buf_append(out, ",", 1);
		if (err >= 0)
			err = hwt_rep_json_str(out, hwt_rep_dict_str_get(dict, names_order[i]));
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "],\"nodes\":[");
	if (err >= 0)
		err = hwt_buf_append(out, nodes.data, nodes.len);
	if (err >= 0)
		err = hwt_buf_printf(
		    out, html ? "]}</script>\n<script>\n"
			      : "]}]]></script>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	if (err >= 0)
		err = hwt_buf_append(out, flame_js, sizeof(flame_js) - 1);
	if (err >= 0)
		err = hwt_buf_printf(out, html ? "</script>\n</body></html>\n"
					       : "]]></script>\n</svg>\n");
out:
	free(st.f);
	free(st.cursor);
	free(name_idx);
	free(names_order);
	hwt_buf_fini(&nodes);
	hwt_buf_fini(&stats);
	return err;
}

static int flame_finish(struct hwt_rep_render_ctx *ctx, int err, struct hwt_buf *out)
{
	struct flame *f = ctx->state;
	struct kids k = {NULL, NULL};

	if (err < 0 || !f)
		goto done;
	err = link_kids(f, ctx->profile->dict, &k);
	if (err < 0)
		goto done;
	if (f->folded)
		err = folded_emit(ctx, f, &k, out);
	else
		err = emit_graph(ctx, f, &k, out);
done:
	free(k.first);
	free(k.next);
	if (f) {
		hwt_rep_set_fini(&f->nodes);
		free(f->val);
		free(f->base);
		free(f);
	}
	ctx->state = NULL;
	return err;
}

const struct hwt_rep_format_ops hwt_rep_fmt_folded = {
    .name = "folded",
    .format = HWT_REP_FMT_FOLDED,
    .init = flame_init,
    .process = flame_process,
    .finish = flame_finish,
};

const struct hwt_rep_format_ops hwt_rep_fmt_svg = {
    .name = "svg",
    .format = HWT_REP_FMT_SVG,
    .init = flame_init,
    .process = flame_process,
    .finish = flame_finish,
};

const struct hwt_rep_format_ops hwt_rep_fmt_html = {
    .name = "html",
    .format = HWT_REP_FMT_HTML,
    .init = flame_init,
    .process = flame_process,
    .finish = flame_finish,
};
