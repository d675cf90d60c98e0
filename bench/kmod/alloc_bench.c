// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_bench: per-operation latency of the kernel allocators, run once at
 * module load with the same parameters on every kernel variant.
 *
 * Each sample times one operation with ktime_get_ns() (under QEMU -icount
 * one guest nanosecond is one instruction), minus the calibrated cost of the
 * clock read itself.  Every op is recorded as <op>_alloc, <op>_free and
 * <op>_pair (allocation plus free of one iteration).  Results:
 * /proc/alloc_bench, one CSV line per operation and CPU:
 * op,cpu,count,min,p50,p90,p99,mean,max,outliers.
 *
 * The batch pattern (batch=N) allocates N objects of one op, then frees all
 * of them in allocation order, timing each: their struct pages and page_ext
 * entries no longer fit in a last-level cache, as on a loaded machine; the
 * hot loop before it has warmed code, tags and per-CPU lists.  It is
 * recorded as <op>_batch_alloc, _batch_free and _batch_pair.
 *
 * Under QEMU with the cache-model plugin (bench/qemu-plugin) each timed
 * operation is also a plugin window: marker instructions, no-ops on
 * hardware, name the op (a label, listed as "#label N op" lines) and start
 * and stop the window.  The markers add one instruction to each timed op on
 * every kernel alike.
 *
 * Allocations made here are accounted to this module's allocation tags.  On
 * kernels with CONFIG_TEST_ALLOC_SITES the ops named ksite_* allocate
 * through exported functions in the kernel image instead, so they are
 * accounted to kernel tags.
 */
#include <linux/gfp.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>

static unsigned int samples = 10000;
module_param(samples, uint, 0444);
MODULE_PARM_DESC(samples, "Timed samples per operation (100..1000000)");

static unsigned int warmup = 1000;
module_param(warmup, uint, 0444);
MODULE_PARM_DESC(warmup, "Untimed iterations before the samples (0..1000000)");

static bool parallel = true;
module_param(parallel, bool, 0444);
MODULE_PARM_DESC(parallel, "Also run order-0 page alloc/free on every CPU at once");

static unsigned int batch;
module_param(batch, uint, 0444);
MODULE_PARM_DESC(batch, "Objects per batch pattern (0: none, else 1024..1048576)");

/*
 * Cache-model plugin markers (bench/qemu-plugin/cachesim.c): a session
 * models every access, a label of 16 bits (one marker per bit, least
 * significant first) names the windows that follow, a window is one timed
 * allocation or free.
 */
#define LABEL_BITS	16
#define LABEL_FREE	0x1	/* label = op << 4 | pattern << 1 | LABEL_FREE */
#define PAT_HOT		0
#define PAT_BATCH	1
#define PAT_PARALLEL	2

static __always_inline void cs_session_begin(void)
{
	asm volatile("xchg %%rdx, %%rdx" ::: "memory");
}

static __always_inline void cs_session_end(void)
{
	asm volatile("xchg %%r8, %%r8" ::: "memory");
}

static __always_inline void cs_start(void)
{
	asm volatile("xchg %%rbx, %%rbx" ::: "memory");
}

static __always_inline void cs_stop(void)
{
	asm volatile("xchg %%rcx, %%rcx" ::: "memory");
}

static noinline void cs_label(unsigned int label)
{
	unsigned int i;

	for (i = 0; i < LABEL_BITS; i++, label >>= 1) {
		if (label & 1)
			asm volatile("xchg %%rdi, %%rdi" ::: "memory");
		else
			asm volatile("xchg %%rsi, %%rsi" ::: "memory");
	}
}

#define MAX_RESULTS	128
/* "ksite_kmalloc_64_batch_alloc" and the like, with room to spare */
#define OP_NAME_LEN	48

struct result {
	char op[OP_NAME_LEN];
	int cpu;
	unsigned int count;
	u64 min, p50, p90, p99, mean, max;
	unsigned int outliers;
};

static struct result results[MAX_RESULTS];
static unsigned int nr_results;
static DEFINE_MUTEX(results_lock);
static u64 clock_cost;

enum op_kind { OP_PAGES, OP_FOLIO, OP_KMALLOC, OP_CACHE, OP_VMALLOC, OP_PERCPU,
	       OP_KSITE_PAGES, OP_KSITE_FOLIO, OP_KSITE_KMALLOC };

#ifdef CONFIG_TEST_ALLOC_SITES
struct page *test_alloc_site_pages(gfp_t gfp, unsigned int order);
struct folio *test_alloc_site_folio(gfp_t gfp, unsigned int order);
void *test_alloc_site_kmalloc(size_t size, gfp_t gfp);
#endif

struct op {
	const char *name;
	enum op_kind kind;
	unsigned int arg;	/* order or size */
};

static const struct op ops[] = {
	{ "pages_o0", OP_PAGES, 0 },
	{ "pages_o1", OP_PAGES, 1 },
	{ "pages_o3", OP_PAGES, 3 },
	{ "pages_o9", OP_PAGES, 9 },
	{ "folio_o0", OP_FOLIO, 0 },
	{ "folio_o2", OP_FOLIO, 2 },
	{ "kmalloc_8", OP_KMALLOC, 8 },
	{ "kmalloc_64", OP_KMALLOC, 64 },
	{ "kmalloc_256", OP_KMALLOC, 256 },
	{ "kmalloc_1024", OP_KMALLOC, 1024 },
	{ "kmalloc_4096", OP_KMALLOC, 4096 },
	{ "kmalloc_8192", OP_KMALLOC, 8192 },
	{ "cache_192", OP_CACHE, 192 },
	{ "vmalloc_16k", OP_VMALLOC, 16384 },
	{ "percpu_64", OP_PERCPU, 64 },
#ifdef CONFIG_TEST_ALLOC_SITES
	{ "ksite_pages_o0", OP_KSITE_PAGES, 0 },
	{ "ksite_folio_o0", OP_KSITE_FOLIO, 0 },
	{ "ksite_kmalloc_64", OP_KSITE_KMALLOC, 64 },
#endif
};

static struct kmem_cache *bench_cache;

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static void record(const char *op, int cpu, u32 *s, unsigned int n)
{
	struct result *r;
	u64 sum = 0;
	unsigned int i, outliers = 0;

	sort(s, n, sizeof(*s), cmp_u32, NULL);
	for (i = 0; i < n; i++) {
		sum += s[i];
		/* far beyond the median: an interrupt or a reclaim hit the sample */
		if (s[i] > 100 * (u64)max(s[n / 2], 1U))
			outliers++;
	}
	mutex_lock(&results_lock);
	if (nr_results < MAX_RESULTS) {
		r = &results[nr_results++];
		strscpy(r->op, op, sizeof(r->op));
		r->cpu = cpu;
		r->count = n;
		r->min = s[0];
		r->p50 = s[n / 2];
		r->p90 = s[(u64)n * 90 / 100];
		r->p99 = s[(u64)n * 99 / 100];
		r->mean = div_u64(sum, n);
		r->max = s[n - 1];
		r->outliers = outliers;
	}
	mutex_unlock(&results_lock);
}

static inline u32 since(u64 t0, u64 t1)
{
	u64 d = t1 - t0;

	return d > clock_cost ? d - clock_cost : 0;
}

static void calibrate(u32 *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		u64 t0 = ktime_get_ns();

		s[i] = ktime_get_ns() - t0;
	}
	sort(s, n, sizeof(*s), cmp_u32, NULL);
	clock_cost = s[n / 2];
}

/* One timed allocation; the plugin window covers just the allocator call. */
static void *alloc_one(const struct op *op)
{
	void *p = NULL;

	cs_start();
	switch (op->kind) {
	case OP_PAGES:
		p = alloc_pages(GFP_KERNEL, op->arg);
		break;
	case OP_FOLIO:
		p = folio_alloc(GFP_KERNEL, op->arg);
		break;
	case OP_KMALLOC:
		p = kmalloc(op->arg, GFP_KERNEL);
		break;
	case OP_CACHE:
		p = kmem_cache_alloc(bench_cache, GFP_KERNEL);
		break;
	case OP_VMALLOC:
		p = vmalloc(op->arg);
		break;
	case OP_PERCPU:
		p = (void __force *)__alloc_percpu(op->arg, 8);
		break;
#ifdef CONFIG_TEST_ALLOC_SITES
	case OP_KSITE_PAGES:
		p = test_alloc_site_pages(GFP_KERNEL, op->arg);
		break;
	case OP_KSITE_FOLIO:
		p = test_alloc_site_folio(GFP_KERNEL, op->arg);
		break;
	case OP_KSITE_KMALLOC:
		p = test_alloc_site_kmalloc(op->arg, GFP_KERNEL);
		break;
#endif
	}
	cs_stop();
	return p;
}

static void free_one(const struct op *op, void *p)
{
	cs_start();
	switch (op->kind) {
	case OP_PAGES:
	case OP_KSITE_PAGES:
		__free_pages(p, op->arg);
		break;
	case OP_FOLIO:
	case OP_KSITE_FOLIO:
		folio_put(p);
		break;
	case OP_KMALLOC:
	case OP_KSITE_KMALLOC:
		kfree(p);
		break;
	case OP_CACHE:
		kmem_cache_free(bench_cache, p);
		break;
	case OP_VMALLOC:
		vfree(p);
		break;
	case OP_PERCPU:
		free_percpu((void __percpu __force *)p);
		break;
	}
	cs_stop();
}

/*
 * One iteration: allocate, then free; times both when @a and @f are set.
 * The label was set by the caller; alloc and free windows get the label
 * with and without LABEL_FREE, so the plugin sees one label per window kind.
 */
static int run_once(const struct op *op, unsigned int label, u32 *a, u32 *f)
{
	u64 t0, t1, t2, t3;
	void *p;

	cs_label(label);
	t0 = ktime_get_ns();
	p = alloc_one(op);
	t1 = ktime_get_ns();
	if (!p)
		return -ENOMEM;
	cs_label(label | LABEL_FREE);
	t2 = ktime_get_ns();
	free_one(op, p);
	t3 = ktime_get_ns();
	if (a)
		*a = since(t0, t1);
	if (f)
		*f = since(t2, t3);
	return 0;
}

static unsigned int op_label(const struct op *op, unsigned int pattern)
{
	return (unsigned int)(op - ops) << 4 | pattern << 1;
}

/* Record <op><suffix>_alloc, _free and _pair of @n timed iterations. */
static int record_op(const struct op *op, const char *suffix, int cpu, u32 *a, u32 *f,
		     unsigned int n)
{
	static const char * const phases[] = { "alloc", "free", "pair" };
	char name[3][OP_NAME_LEN];
	unsigned int i;
	u32 *pair;

	/* A name cut short would be another op's, or none: refuse it. */
	for (i = 0; i < ARRAY_SIZE(phases); i++)
		if (snprintf(name[i], OP_NAME_LEN, "%s%s_%s", op->name, suffix,
			     phases[i]) >= OP_NAME_LEN)
			return -ENAMETOOLONG;

	/* The pair of each iteration, before record() sorts the halves. */
	pair = vmalloc(array_size(n, sizeof(u32)));
	if (!pair)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		pair[i] = a[i] + f[i];
	record(name[0], cpu, a, n);
	record(name[1], cpu, f, n);
	record(name[2], cpu, pair, n);
	vfree(pair);
	return 0;
}

static int run_op(const struct op *op, int cpu, u32 *a, u32 *f)
{
	unsigned int i, label = op_label(op, cpu < 0 ? PAT_HOT : PAT_PARALLEL);

	for (i = 0; i < warmup; i++) {
		if (run_once(op, label, NULL, NULL))
			return -ENOMEM;
		cond_resched();
	}
	for (i = 0; i < samples; i++) {
		if (run_once(op, label, &a[i], &f[i]))
			return -ENOMEM;
		if (!(i & 63))
			cond_resched();
	}
	return record_op(op, "", cpu, a, f, samples);
}

/*
 * The batch pattern: @batch allocations, then @batch frees in allocation
 * order, each timed.  The freed objects were allocated long before, so
 * their metadata is as cold as the modelled caches make it.
 */
static int run_batch(const struct op *op)
{
	unsigned int i, n = 0, label = op_label(op, PAT_BATCH);
	u32 *a = vmalloc(array_size(batch, sizeof(u32)));
	u32 *f = vmalloc(array_size(batch, sizeof(u32)));
	void **p = vmalloc(array_size(batch, sizeof(void *)));
	int err = -ENOMEM;
	u64 t0, t1;

	if (!a || !f || !p)
		goto out;
	cs_label(label);
	for (n = 0; n < batch; n++) {
		t0 = ktime_get_ns();
		p[n] = alloc_one(op);
		t1 = ktime_get_ns();
		if (!p[n])
			break;
		a[n] = since(t0, t1);
		if (!(n & 63))
			cond_resched();
	}
	cs_label(label | LABEL_FREE);
	for (i = 0; i < n; i++) {
		t0 = ktime_get_ns();
		free_one(op, p[i]);
		t1 = ktime_get_ns();
		f[i] = since(t0, t1);
		if (!(i & 63))
			cond_resched();
	}
	err = n == batch ? record_op(op, "_batch", -1, a, f, n) : -ENOMEM;
out:
	vfree(a);
	vfree(f);
	vfree(p);
	return err;
}

/* Ops the batch pattern runs: order-0 pages and kmalloc-64, both tag kinds. */
static bool batched(const struct op *op)
{
	switch (op->kind) {
	case OP_PAGES:
	case OP_KSITE_PAGES:
		return op->arg == 0;
	case OP_KMALLOC:
	case OP_KSITE_KMALLOC:
		return op->arg == 64;
	default:
		return false;
	}
}

struct worker {
	struct completion done;
	int cpu, err;
};

static int parallel_worker(void *arg)
{
	struct worker *w = arg;
	u32 *a = vmalloc(array_size(samples, sizeof(u32)));
	u32 *f = vmalloc(array_size(samples, sizeof(u32)));

	w->err = -ENOMEM;
	if (a && f)
		w->err = run_op(&ops[0], w->cpu, a, f);
	vfree(a);
	vfree(f);
	complete(&w->done);
	return 0;
}

static void run_parallel(void)
{
	unsigned int nr = num_online_cpus(), i = 0;
	struct worker *w;
	int cpu;

	if (nr < 2)
		return;
	w = kcalloc(nr, sizeof(*w), GFP_KERNEL);
	if (!w)
		return;
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (i == nr)
			break;
		w[i].cpu = 1000 + cpu;	/* parallel run: op lines with cpu >= 1000 */
		init_completion(&w[i].done);
		t = kthread_create(parallel_worker, &w[i], "alloc_bench/%d", cpu);
		if (IS_ERR(t)) {
			complete(&w[i].done);
			i++;
			continue;
		}
		kthread_bind(t, cpu);
		wake_up_process(t);
		i++;
	}
	while (i--)
		wait_for_completion(&w[i].done);
	kfree(w);
}

static int results_show(struct seq_file *m, void *v)
{
	unsigned int i;

	seq_printf(m, "# samples=%u warmup=%u clock_cost=%llu cpus=%u batch=%u\n",
		   samples, warmup, clock_cost, num_online_cpus(), batch);
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		seq_printf(m, "#label %u %s\n", op_label(&ops[i], PAT_HOT), ops[i].name);
	seq_puts(m, "op,cpu,count,min,p50,p90,p99,mean,max,outliers\n");
	mutex_lock(&results_lock);
	for (i = 0; i < nr_results; i++) {
		struct result *r = &results[i];

		seq_printf(m, "%s,%d,%u,%llu,%llu,%llu,%llu,%llu,%llu,%u\n",
			   r->op, r->cpu, r->count, r->min, r->p50, r->p90,
			   r->p99, r->mean, r->max, r->outliers);
	}
	mutex_unlock(&results_lock);
	seq_puts(m, "# end\n");
	return 0;
}

static int __init alloc_bench_init(void)
{
	u32 *a, *f;
	unsigned int i;
	int err = 0;

	if (samples < 100 || samples > 1000000 || warmup > 1000000 ||
	    (batch && (batch < 1024 || batch > 1048576))) {
		pr_err("alloc_bench: samples must be 100..1000000, warmup 0..1000000, batch 0 or 1024..1048576\n");
		return -EINVAL;
	}
	a = vmalloc(array_size(samples, sizeof(u32)));
	f = vmalloc(array_size(samples, sizeof(u32)));
	bench_cache = kmem_cache_create("alloc_bench_192", 192, 0, 0, NULL);
	if (!a || !f || !bench_cache) {
		err = -ENOMEM;
		goto out;
	}
	calibrate(a, samples);
	if (!clock_cost) {
		pr_err("alloc_bench: the clock does not advance between two reads: no latency can be measured\n");
		err = -EIO;
		goto out;
	}
	cs_session_begin();
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		err = run_op(&ops[i], -1, a, f);
		if (!err && batch && batched(&ops[i]))
			err = run_batch(&ops[i]);
		if (err) {
			pr_err("alloc_bench: %s failed: %d\n", ops[i].name, err);
			cs_session_end();
			goto out;
		}
	}
	cs_session_end();
	if (parallel)
		run_parallel();
	if (!proc_create_single("alloc_bench", 0444, NULL, results_show))
		err = -ENOMEM;
out:
	vfree(a);
	vfree(f);
	if (err && bench_cache)
		kmem_cache_destroy(bench_cache);
	return err;
}

static void __exit alloc_bench_exit(void)
{
	remove_proc_entry("alloc_bench", NULL);
	kmem_cache_destroy(bench_cache);
}

module_init(alloc_bench_init);
module_exit(alloc_bench_exit);
MODULE_DESCRIPTION("Allocator latency microbenchmark");
MODULE_LICENSE("GPL");
