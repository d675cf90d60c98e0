// SPDX-License-Identifier: GPL-2.0
/*
 * alloctag_test: allocate known amounts from known call sites of a module,
 * so that a test can check what /proc/allocinfo attributes to them.
 *
 * Write to /proc/alloctag_test:
 *   alloc    allocate the set below (again)
 *   free     free everything allocated
 *   handoff  give everything to alloctag_keeper (freed there later)
 *   flagcheck  allocate FLAGCHECK_PAGES pages, check that zone, node and
 *            page flags of each are sane, free them; the verdict is added to
 *            what reading prints (allocinfo shows the call site's tag)
 *   pgp      allocate one page at the flagcheck site, print its flags with
 *            %pGp to the kernel log ("alloctag_test: pgp ..."), free it
 *   memmapcheck  count the struct pages of online memory whose tag index
 *            field is all ones (added to what reading prints): no index
 *            maps to it, so where the field holds indexes none may have it
 * Read it for the expected lines: "<line> <kind> <bytes> <calls> exact|min|any|slab"
 * (any: 6.12 does not profile allocations from the first percpu chunk; slab:
 * calls exact, bytes are calls times the slab_size of alloctag_keeper's
 * cache, /sys/kernel/slab/alloctag_obj/slab_size, which debug options and
 * cache merging decide).
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "alloctag_keeper.h"
#include "alloctag_proc.h"

struct site {
	const char *name;
	enum alloctag_kind kind;
	unsigned int line, n, arg;
	const char *check;
};

static LIST_HEAD(held);
static DEFINE_MUTEX(lock);

/* More than ZONE_DMA holds (16 MiB), so that some pages come from DMA32. */
#define FLAGCHECK_PAGES	8192
static unsigned long flagcheck_rounds, flagcheck_pages, flagcheck_bad;

/* One call site per allocation kind; the line numbers are what allocinfo shows. */
static void *site_page0(void) { return alloc_pages(GFP_KERNEL, 0); }
static const unsigned int line_page0 = __LINE__ - 1;
static void *site_page2(void) { return alloc_pages(GFP_KERNEL, 2); }
static const unsigned int line_page2 = __LINE__ - 1;
static void *site_folio1(void) { return folio_alloc(GFP_KERNEL, 1); }
static const unsigned int line_folio1 = __LINE__ - 1;
static void *site_kmalloc(void) { return kmalloc(1024, GFP_KERNEL); }
static const unsigned int line_kmalloc = __LINE__ - 1;
static void *site_vmalloc(void) { return vmalloc(64 * 1024); }
static const unsigned int line_vmalloc = __LINE__ - 1;
static void *site_percpu(void) { return (void __force *)__alloc_percpu(128, 8); }
static const unsigned int line_percpu = __LINE__ - 1;
static struct page *site_flagcheck(void) { return alloc_pages(GFP_KERNEL, 0); }
static void *site_kmemcache(void) { return kmem_cache_alloc(alloctag_keeper_cache, GFP_KERNEL); }
static const unsigned int line_kmemcache = __LINE__ - 1;
static int site_bulk(void **p, size_t n)
{
	return kmem_cache_alloc_bulk(alloctag_keeper_cache, GFP_KERNEL, n, p);
}
static const unsigned int line_bulk = __LINE__ - 2;
#define BULK_OBJECTS	16

static struct site sites[] = {
	{ "page0", K_PAGE, 0, 4, 0, "exact" },
	{ "page2", K_PAGE, 0, 2, 2, "exact" },
	{ "folio1", K_FOLIO, 0, 3, 1, "exact" },
	{ "kmalloc1024", K_KMALLOC, 0, 8, 1024, "exact" },
	{ "vmalloc64k", K_VMALLOC, 0, 2, 65536, "min" },
	{ "percpu128", K_PERCPU, 0, 4, 128, "any" },
	/* bytes: calls times the cache's slab_size, which the job reads */
	{ "kmemcache", K_KMEMCACHE, 0, 5, ALLOCTAG_OBJ_SIZE, "slab" },
	{ "bulk", K_KMEMCACHE, 0, BULK_OBJECTS, ALLOCTAG_OBJ_SIZE, "slab" },
};

static void *alloc_one(struct site *s)
{
	if (s == &sites[0])
		return site_page0();
	if (s == &sites[1])
		return site_page2();
	if (s == &sites[2])
		return site_folio1();
	if (s == &sites[3])
		return site_kmalloc();
	if (s == &sites[4])
		return site_vmalloc();
	if (s == &sites[6])
		return site_kmemcache();
	return site_percpu();
}

/* One kmem_cache_alloc_bulk() of the bulk site's objects, held one by one. */
static int do_alloc_bulk(struct site *s)
{
	void *p[BULK_OBJECTS];
	unsigned int i;

	/*
	 * 6.12 returns the number of objects, 0 on failure; later kernels
	 * (7.3) return true or false.  Comparing with n made every call on
	 * 7.3 look failed, after its objects were allocated and counted.
	 */
	if (!site_bulk(p, s->n))
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		struct alloctag_held *h = kmalloc(sizeof(*h), GFP_KERNEL);

		if (!h) {
			kmem_cache_free_bulk(alloctag_keeper_cache, s->n - i, p + i);
			return -ENOMEM;
		}
		h->kind = K_KMEMCACHE;
		h->order = 0;
		h->p = p[i];
		list_add_tail(&h->link, &held);
	}
	return 0;
}

static int do_alloc(void)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(sites); i++) {
		if (i == 7) {
			int err = do_alloc_bulk(&sites[i]);

			if (err)
				return err;
			continue;
		}
		for (j = 0; j < sites[i].n; j++) {
			struct alloctag_held *h = kmalloc(sizeof(*h), GFP_KERNEL);

			if (!h)
				return -ENOMEM;
			h->kind = sites[i].kind;
			h->order = sites[i].kind == K_PAGE || sites[i].kind == K_FOLIO ?
				   sites[i].arg : 0;
			h->p = alloc_one(&sites[i]);
			if (!h->p) {
				kfree(h);
				return -ENOMEM;
			}
			list_add_tail(&h->link, &held);
		}
	}
	return 0;
}

static void do_free(void)
{
	struct alloctag_held *h, *tmp;

	list_for_each_entry_safe(h, tmp, &held, link) {
		list_del(&h->link);
		alloctag_keeper_free_held(h);
	}
}

/*
 * The page->flags bits of the tag index, as constants: the main field (the
 * low last_cpupid bits where the layout borrows them) and the spare field
 * of a layout that has both (6.12 series, ALLOC_TAG_IDX_ALT_WIDTH).  Which
 * one holds the index is a boot-time choice that modules cannot read.
 */
#if defined(ALLOC_TAG_IDX_PGSHIFT)
#define IDX_FIELD_MASK	(ALLOC_TAG_IDX_MASK << ALLOC_TAG_IDX_PGSHIFT)
#elif defined(ALLOC_TAG_REF_FLAGS_MASK)
/* The 7.3 series (patches/packed-refs-7.3): the compressed-mode field. */
#define IDX_FIELD_MASK	ALLOC_TAG_REF_FLAGS_MASK
#else
#define IDX_FIELD_MASK	0UL	/* baseline: no tag index */
#endif
#ifdef ALLOC_TAG_IDX_ALT_PGSHIFT
#define IDX_ALT_MASK	(ALLOC_TAG_IDX_ALT_MASK << ALLOC_TAG_IDX_ALT_PGSHIFT)
#else
#define IDX_ALT_MASK	0UL
#endif

/* page->flags became a memdesc_flags_t in 6.18. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
#define page_flags_word(page)	READ_ONCE((page)->flags.f)
#else
#define page_flags_word(page)	READ_ONCE((page)->flags)
#endif

/* Every page->flags bit some field owns; the rest must stay zero. */
static unsigned long owned_flags_bits(void)
{
	return (BIT(NR_PAGEFLAGS) - 1) |
	       ((unsigned long)SECTIONS_MASK << SECTIONS_PGSHIFT) |
	       ((unsigned long)NODES_MASK << NODES_PGSHIFT) |
	       ((unsigned long)ZONES_MASK << ZONES_PGSHIFT) |
	       (((1UL << LAST_CPUPID_WIDTH) - 1) << LAST_CPUPID_PGSHIFT) |
	       ((unsigned long)KASAN_TAG_MASK << KASAN_TAG_PGSHIFT) |
	       LRU_GEN_MASK | LRU_REFS_MASK | IDX_FIELD_MASK | IDX_ALT_MASK;
}

/*
 * A page just allocated must sit in the zone its flags name, on the only
 * node, with no flag set that the allocator clears and no bit set outside
 * the fields: the tag index shares page->flags with all of these, so a lost
 * or misplaced update shows here.
 */
static bool page_sane(struct page *page)
{
	const unsigned long clear = BIT(PG_locked) | BIT(PG_lru) | BIT(PG_active) |
				    BIT(PG_reserved) | BIT(PG_private);
	unsigned long flags = page_flags_word(page);

	if (!zone_spans_pfn(page_zone(page), page_to_pfn(page)))
		return false;
	if (page_to_nid(page) != first_online_node)
		return false;
	if (flags & ~owned_flags_bits())
		return false;
	return !(flags & clear) && !PageSlab(page);
}

static int do_flagcheck(void)
{
	struct page **pages = kvcalloc(FLAGCHECK_PAGES, sizeof(*pages), GFP_KERNEL);
	unsigned int i;
	int err = 0;

	if (!pages)
		return -ENOMEM;
	for (i = 0; i < FLAGCHECK_PAGES; i++) {
		pages[i] = site_flagcheck();
		if (!pages[i]) {
			err = -ENOMEM;
			break;
		}
	}
	for (i = 0; i < FLAGCHECK_PAGES && pages[i]; i++) {
		flagcheck_pages++;
		if (!page_sane(pages[i]))
			flagcheck_bad++;
		__free_page(pages[i]);
	}
	flagcheck_rounds++;
	kvfree(pages);
	return err;
}

static unsigned long memmap_rounds, memmap_pages, memmap_allones;

static int do_memmapcheck(void)
{
	unsigned long mask = IDX_FIELD_MASK, pfn;
	int nid;

	memmap_rounds++;
	memmap_pages = 0;
	memmap_allones = 0;
	for_each_online_node(nid) {
		for (pfn = node_start_pfn(nid); pfn < node_end_pfn(nid); pfn++) {
			struct page *page = pfn_to_online_page(pfn);

			if (!page)
				continue;
			memmap_pages++;
			if (mask && (page_flags_word(page) & mask) == mask)
				memmap_allones++;
			if (!(pfn % 4096))
				cond_resched();
		}
	}
	return 0;
}

static int do_pgp(void)
{
	struct page *page = site_flagcheck();
	unsigned long flags;

	if (!page)
		return -ENOMEM;
	flags = page_flags_word(page);
	pr_info("alloctag_test: pgp %pGp\n", &flags);
	__free_page(page);
	return 0;
}

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len, loff_t *off)
{
	char buf[16] = {};
	int err = 0;

	if (len >= sizeof(buf) || copy_from_user(buf, ubuf, len))
		return -EINVAL;
	mutex_lock(&lock);
	if (sysfs_streq(buf, "alloc"))
		err = do_alloc();
	else if (sysfs_streq(buf, "free"))
		do_free();
	else if (sysfs_streq(buf, "handoff"))
		alloctag_keeper_take(&held);
	else if (sysfs_streq(buf, "flagcheck"))
		err = do_flagcheck();
	else if (sysfs_streq(buf, "pgp"))
		err = do_pgp();
	else if (sysfs_streq(buf, "memmapcheck"))
		err = do_memmapcheck();
	else
		err = -EINVAL;
	mutex_unlock(&lock);
	return err ? err : len;
}

static int ctl_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sites); i++) {
		struct site *s = &sites[i];
		unsigned long bytes;

		switch (s->kind) {
		case K_PAGE:
		case K_FOLIO:
			bytes = (PAGE_SIZE << s->arg) * s->n;
			break;
		default:
			bytes = (unsigned long)s->arg * s->n;
		}
		seq_printf(m, "%u %s %lu %u %s\n", s->line, s->name, bytes, s->n, s->check);
	}
	if (flagcheck_rounds)
		seq_printf(m, "flagcheck rounds=%lu pages=%lu bad=%lu\n",
			   flagcheck_rounds, flagcheck_pages, flagcheck_bad);
	if (memmap_rounds)
		seq_printf(m, "memmapcheck pages=%lu allones=%lu\n",
			   memmap_pages, memmap_allones);
	return 0;
}

ALLOCTAG_PROC_OPS(ctl_ops, ctl_show, ctl_write);

static int __init alloctag_test_init(void)
{
	sites[0].line = line_page0;
	sites[1].line = line_page2;
	sites[2].line = line_folio1;
	sites[3].line = line_kmalloc;
	sites[4].line = line_vmalloc;
	sites[5].line = line_percpu;
	sites[6].line = line_kmemcache;
	sites[7].line = line_bulk;
	return proc_create("alloctag_test", 0644, NULL, &ctl_ops) ? 0 : -ENOMEM;
}

static void __exit alloctag_test_exit(void)
{
	remove_proc_entry("alloctag_test", NULL);
	/* Whatever was not freed or handed off stays allocated on purpose. */
}

module_init(alloctag_test_init);
module_exit(alloctag_test_exit);
MODULE_DESCRIPTION("Allocation profiling attribution test");
MODULE_LICENSE("GPL");
