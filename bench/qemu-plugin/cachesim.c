// SPDX-License-Identifier: GPL-2.0-only
/*
 * cachesim: a QEMU TCG plugin that runs the guest's memory accesses through
 * the cache model of cachemodel.c and reports, per marked window (one timed
 * operation of the guest's benchmark), instructions, loads, stores, distinct
 * lines, misses per level and estimated cycles.
 *
 * The guest marks windows with instructions that are no-ops on hardware and
 * recognised here by their bytes when a block is translated:
 *   48 87 d2  xchg %rdx,%rdx   session begin: model every access from here
 *   4d 87 c0  xchg %r8,%r8     session end
 *   48 87 f6  xchg %rsi,%rsi   label bit 0 \ 16 of them, least significant
 *   48 87 ff  xchg %rdi,%rdi   label bit 1 / first, name the next windows
 *   48 87 db  xchg %rbx,%rbx   window start
 *   48 87 c9  xchg %rcx,%rcx   window stop
 * Outside a session or window an access returns at once.  Per label the
 * windows' values are summarised (count, min, p50, p90, p99, mean, max) into
 * the CSV file named by out=.  pcs=FILE also writes, per label, how many
 * times each guest PC ran inside windows (slow; for attributing instructions
 * to code).
 *
 * Arguments (defaults resemble one core of a current server part):
 *   out=FILE (required) l1_kib=48 l1_ways=12 l2_kib=2048 l2_ways=16
 *   llc_kib=4096 llc_ways=16 pen_l2=14 pen_llc=50 pen_mem=200 pcs=FILE
 * The LLC is shared by all vCPUs, L1D and L2 are per vCPU.  vCPUs must run
 * on one thread (-icount, or -accel tcg,thread=single).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "cachemodel.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_VCPUS	16
#define LABEL_BITS	16
#define NLABELS		(1u << LABEL_BITS)

enum marker { MK_NONE, MK_BEGIN, MK_END, MK_BIT0, MK_BIT1, MK_START, MK_STOP };

enum metric { M_INSNS, M_LOADS, M_STORES, M_LINES, M_L1, M_L2, M_LLC, M_SPLIT, M_CYCLES,
	      M_N };

static const char *const metric_name[M_N] = {
	"insns", "loads", "stores", "lines", "l1_miss", "l2_miss", "llc_miss", "split",
	"est_cycles",
};

struct series {
	uint64_t *v;
	size_t n, cap;
};

struct label_data {
	struct series s[M_N];
};

struct vcpu {
	bool session, active;
	uint32_t bits, label;
	struct cm_window w;
	struct cm_cache l1, l2;
	struct cm_line_set lines;
};

static struct cm_params params = {
	.l1_kib = 48, .l1_ways = 12, .l2_kib = 2048, .l2_ways = 16,
	.llc_kib = 4096, .llc_ways = 16, .pen_l2 = 14, .pen_llc = 50, .pen_mem = 200,
};
static struct cm_cache llc;
static struct vcpu vcpus[MAX_VCPUS];
static struct label_data *labels[NLABELS];
static uint64_t windows, stray_stops, nested_starts, io_skipped;
static FILE *out;
static FILE *pcs_out;

/* (label, pc) -> count, open addressing; only with pcs= */
struct pc_ent {
	uint64_t pc;
	uint32_t label;
	uint64_t count;
};
static struct pc_ent *pcs;
static size_t pcs_size = 1 << 20, pcs_used;

static struct vcpu *vcpu_of(unsigned int i)
{
	return &vcpus[i < MAX_VCPUS ? i : MAX_VCPUS - 1];
}

static void push(struct series *s, uint64_t v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v) {
			fprintf(stderr, "cachesim: out of memory\n");
			exit(1);
		}
	}
	s->v[s->n++] = v;
}

static void window_end(struct vcpu *v)
{
	struct label_data *ld = labels[v->label];
	const struct cm_window *w = &v->w;
	const uint64_t val[M_N] = {
		w->insns, w->loads, w->stores, w->lines, w->miss[CM_L1], w->miss[CM_L2],
		w->miss[CM_LLC], w->split, cm_est_cycles(&params, w),
	};

	if (!ld) {
		ld = calloc(1, sizeof(*ld));
		if (!ld) {
			fprintf(stderr, "cachesim: out of memory\n");
			exit(1);
		}
		labels[v->label] = ld;
	}
	for (int m = 0; m < M_N; m++)
		push(&ld->s[m], val[m]);
	windows++;
}

/* udata: marker kind | count of instructions after the marker in its TB << 8 */
static void marker_exec(unsigned int cpu, void *udata)
{
	struct vcpu *v = vcpu_of(cpu);
	uintptr_t u = (uintptr_t)udata;
	uint64_t after = u >> 8;

	switch (u & 0xff) {
	case MK_BEGIN:
		v->session = true;
		break;
	case MK_END:
		v->session = false;
		break;
	case MK_BIT0:
	case MK_BIT1:
		v->bits = (v->bits >> 1) | ((uint32_t)((u & 0xff) == MK_BIT1) << (LABEL_BITS - 1));
		break;
	case MK_START:
		if (v->active)
			nested_starts++;
		memset(&v->w, 0, sizeof(v->w));
		cm_lines_reset(&v->lines);
		v->label = v->bits & (NLABELS - 1);
		v->w.insns = after;
		v->active = true;
		break;
	case MK_STOP:
		if (!v->active) {
			stray_stops++;
			break;
		}
		/* the block's count included the stop marker and what follows */
		v->w.insns -= after + 1;
		v->active = false;
		window_end(v);
		break;
	}
}

static void tb_exec(unsigned int cpu, void *udata)
{
	struct vcpu *v = vcpu_of(cpu);

	if (v->active)
		v->w.insns += (uintptr_t)udata;
}

static void mem_access(unsigned int cpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		       void *udata)
{
	struct vcpu *v = vcpu_of(cpu);
	struct qemu_plugin_hwaddr *hw;

	if (!v->session && !v->active)
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (!hw || qemu_plugin_hwaddr_is_io(hw)) {
		io_skipped++;
		return;
	}
	cm_access(&v->l1, &v->l2, &llc, &v->lines, v->active ? &v->w : NULL,
		  qemu_plugin_hwaddr_phys_addr(hw), 1u << qemu_plugin_mem_size_shift(info),
		  qemu_plugin_mem_is_store(info));
}

static void pc_exec(unsigned int cpu, void *udata)
{
	struct vcpu *v = vcpu_of(cpu);
	uint64_t pc = (uintptr_t)udata;
	size_t i;

	if (!v->active)
		return;
	i = (size_t)(((pc ^ v->label) * 0x9E3779B97F4A7C15ull) >> 20) & (pcs_size - 1);
	for (;; i = (i + 1) & (pcs_size - 1)) {
		if (!pcs[i].count) {
			if (pcs_used >= pcs_size / 2)
				return;
			pcs[i].pc = pc;
			pcs[i].label = v->label;
			pcs_used++;
			break;
		}
		if (pcs[i].pc == pc && pcs[i].label == v->label)
			break;
	}
	pcs[i].count++;
}

static enum marker marker_of(const uint8_t *b, size_t n)
{
	if (n != 3 || b[1] != 0x87)
		return MK_NONE;
	if (b[0] == 0x48) {
		switch (b[2]) {
		case 0xd2: return MK_BEGIN;
		case 0xf6: return MK_BIT0;
		case 0xff: return MK_BIT1;
		case 0xdb: return MK_START;
		case 0xc9: return MK_STOP;
		}
	} else if (b[0] == 0x4d && b[2] == 0xc0) {
		return MK_END;
	}
	return MK_NONE;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)n);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		enum marker mk = marker_of(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn));

		if (mk != MK_NONE)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_exec,
				QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)(mk | (n - i - 1) << 8));
		qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, NULL);
		if (pcs)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, pc_exec, QEMU_PLUGIN_CB_NO_REGS,
				(void *)(uintptr_t)qemu_plugin_insn_vaddr(insn));
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	fprintf(out, "# cachesim l1=%uK/%u l2=%uK/%u llc=%uK/%u pen_l2=%u pen_llc=%u pen_mem=%u"
		" windows=%" PRIu64 " stray_stops=%" PRIu64 " nested_starts=%" PRIu64
		" io_skipped=%" PRIu64 "\n",
		params.l1_kib, params.l1_ways, params.l2_kib, params.l2_ways, params.llc_kib,
		params.llc_ways, params.pen_l2, params.pen_llc, params.pen_mem, windows,
		stray_stops, nested_starts, io_skipped);
	fprintf(out, "label,metric,count,min,p50,p90,p99,mean,max\n");
	for (uint32_t l = 0; l < NLABELS; l++) {
		if (!labels[l])
			continue;
		for (int m = 0; m < M_N; m++) {
			struct series *s = &labels[l]->s[m];
			long double sum = 0;

			qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
			for (size_t i = 0; i < s->n; i++)
				sum += s->v[i];
			fprintf(out, "%u,%s,%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%.3Lf,%" PRIu64 "\n", l, metric_name[m], s->n, s->v[0],
				s->v[s->n / 2], s->v[s->n * 90 / 100], s->v[s->n * 99 / 100],
				sum / s->n, s->v[s->n - 1]);
		}
	}
	fprintf(out, "# end\n");
	fclose(out);
	if (pcs_out) {
		fprintf(pcs_out, "label,pc,count\n");
		for (size_t i = 0; i < pcs_size; i++)
			if (pcs[i].count)
				fprintf(pcs_out, "%u,0x%" PRIx64 ",%" PRIu64 "\n", pcs[i].label,
					pcs[i].pc, pcs[i].count);
		fclose(pcs_out);
	}
}

static int parse_uint(const char *s, unsigned int *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 10);

	if (!*s || *end || x > 1u << 30)
		return -1;
	*v = (unsigned int)x;
	return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	struct { const char *key; unsigned int *v; } uargs[] = {
		{ "l1_kib", &params.l1_kib }, { "l1_ways", &params.l1_ways },
		{ "l2_kib", &params.l2_kib }, { "l2_ways", &params.l2_ways },
		{ "llc_kib", &params.llc_kib }, { "llc_ways", &params.llc_ways },
		{ "pen_l2", &params.pen_l2 }, { "pen_llc", &params.pen_llc },
		{ "pen_mem", &params.pen_mem },
	};
	const char *outpath = NULL, *pcspath = NULL;
	char err[160];

	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		size_t k;

		if (!eq) {
			fprintf(stderr, "cachesim: argument '%s' is not key=value\n", argv[i]);
			return -1;
		}
		*eq = '\0';
		if (!strcmp(argv[i], "out")) {
			outpath = eq + 1;
			continue;
		}
		if (!strcmp(argv[i], "pcs")) {
			pcspath = eq + 1;
			continue;
		}
		for (k = 0; k < sizeof(uargs) / sizeof(uargs[0]); k++)
			if (!strcmp(argv[i], uargs[k].key))
				break;
		if (k == sizeof(uargs) / sizeof(uargs[0]) || parse_uint(eq + 1, uargs[k].v)) {
			fprintf(stderr, "cachesim: bad argument %s=%s\n", argv[i], eq + 1);
			return -1;
		}
	}
	if (!outpath) {
		fprintf(stderr, "cachesim: out=FILE is required\n");
		return -1;
	}
	if (cm_params_check(&params, err, sizeof(err))) {
		fprintf(stderr, "cachesim: %s\n", err);
		return -1;
	}
	if (info->system_emulation && info->system.max_vcpus > MAX_VCPUS) {
		fprintf(stderr, "cachesim: at most %d vCPUs\n", MAX_VCPUS);
		return -1;
	}
	out = fopen(outpath, "w");
	if (!out) {
		fprintf(stderr, "cachesim: cannot write %s\n", outpath);
		return -1;
	}
	if (pcspath) {
		pcs_out = fopen(pcspath, "w");
		pcs = calloc(pcs_size, sizeof(*pcs));
		if (!pcs_out || !pcs) {
			fprintf(stderr, "cachesim: cannot write %s\n", pcspath);
			return -1;
		}
	}
	if (cm_cache_init(&llc, params.llc_kib, params.llc_ways))
		return -1;
	for (int i = 0; i < MAX_VCPUS; i++)
		if (cm_cache_init(&vcpus[i].l1, params.l1_kib, params.l1_ways) ||
		    cm_cache_init(&vcpus[i].l2, params.l2_kib, params.l2_ways) ||
		    cm_lines_init(&vcpus[i].lines, 1 << 16))
			return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
