// SPDX-License-Identifier: GPL-2.0
/*
 * alloctag_huge: a module with ALLOCTAG_HUGE_TAGS allocation tags, more
 * than a 16-bit tag index can name, so that loading it reaches the index
 * overflow path for real (not through alloc_tag.index_limit=).
 *
 * The tags are one array in the module's alloc_tags section, laid out as
 * DEFINE_ALLOC_TAG() lays out one tag per call site, so the module builds
 * in seconds.  They share one static percpu counter pair (16 bytes, unlike
 * 70,000 per-site pairs, which no module percpu reserve holds); a kernel
 * that gives module tags counters of their own at load time replaces it.
 *
 * Write to /proc/alloctag_huge:
 *   alloc  allocate one page through the first tag and one through the last
 *   free   free them
 * Read it for "tags <n> pages <held>".
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>

#include "alloctag_pages_proc.h"

#define ALLOCTAG_HUGE_TAGS	70000

#ifdef CONFIG_MEM_ALLOC_PROFILING
static_assert(ALLOCTAG_HUGE_TAGS > 65536, "must not fit a 16-bit index");

static DEFINE_PER_CPU(struct alloc_tag_counters, huge_counters);

static struct alloc_tag huge_tags[ALLOCTAG_HUGE_TAGS] __used __aligned(8)
	__section("alloc_tags") = {
	[0 ... ALLOCTAG_HUGE_TAGS - 1] = {
		.ct = {
			.modname	= KBUILD_MODNAME,
			.function	= "huge_tags",
			.filename	= __FILE__,
			.lineno		= __LINE__,
		},
		.counters = &huge_counters,
	},
};

#define NR_TAGS	ALLOCTAG_HUGE_TAGS
#define alloc_through(i) \
	alloc_hooks_tag(&huge_tags[i], alloc_pages_noprof(GFP_KERNEL, 0))
#else
#define NR_TAGS	0
#define alloc_through(i) alloc_page(GFP_KERNEL)
#endif

static struct page *held[2];
static unsigned int nr_held;

static void pages_free(void)
{
	while (nr_held)
		__free_page(held[--nr_held]);
}

static int pages_alloc(void)
{
	pages_free();
	held[0] = alloc_through(0);
	if (!held[0])
		return -ENOMEM;
	nr_held = 1;
	held[1] = alloc_through(NR_TAGS ? NR_TAGS - 1 : 0);
	if (!held[1])
		return -ENOMEM;
	nr_held = 2;
	return 0;
}

static void pages_show(struct seq_file *m)
{
	seq_printf(m, "tags %u pages %u\n", NR_TAGS, nr_held);
}

static int __init huge_init(void)
{
	return proc_create("alloctag_huge", 0600, NULL, &pages_proc_ops) ? 0 : -ENOMEM;
}

static void __exit huge_exit(void)
{
	remove_proc_entry("alloctag_huge", NULL);
	pages_free();
}

module_init(huge_init);
module_exit(huge_exit);
MODULE_DESCRIPTION("A module with more allocation tags than 16-bit tag indices name");
MODULE_LICENSE("GPL");
