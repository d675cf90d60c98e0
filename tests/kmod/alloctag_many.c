// SPDX-License-Identifier: GPL-2.0
/*
 * alloctag_many: a module with ALLOCTAG_MANY_SITES allocation tags, more
 * than 6.12's module percpu reserve holds counters for (64 KiB, 16 bytes
 * per tag per CPU: about 4,000 for all modules together).  6.12 refuses to
 * load it; a kernel that gives module tags counters at load time must load
 * it and account a page through every tag.
 *
 * Write to /proc/alloctag_many:
 *   alloc  allocate one page through every tag
 *   free   free them
 * Read it for "sites <n> pages <held>".
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/vmalloc.h>

#include "alloctag_pages_proc.h"

#define ALLOCTAG_MANY_SITES	5000

/*
 * Each B1 is a block with an allocation tag of its own, as every
 * alloc_hooks() expansion has (DEFINE_ALLOC_TAG, with whatever counters
 * the kernel gives module tags); pages_alloc() allocates through them with
 * alloc_hooks_tag().  Tags without a call site each keep this module
 * small and quick to build.
 */
static struct alloc_tag **tags;
static unsigned int nr_tags;

#ifdef CONFIG_MEM_ALLOC_PROFILING
#define B1	{ DEFINE_ALLOC_TAG(_t); tags[nr_tags++] = &_t; }
#define alloc_through(tag) alloc_hooks_tag(tag, alloc_pages_noprof(GFP_KERNEL, 0))
#else
#define B1
#define alloc_through(tag) alloc_page(GFP_KERNEL)
#endif
#define B10	B1 B1 B1 B1 B1 B1 B1 B1 B1 B1
#define B100	B10 B10 B10 B10 B10 B10 B10 B10 B10 B10
#define B1000	B100 B100 B100 B100 B100 B100 B100 B100 B100 B100

static noinline void collect_tags(void)
{
	B1000 B1000 B1000 B1000 B1000
}

static struct page **held;
static unsigned int nr_held;

static void pages_free(void)
{
	while (nr_held)
		__free_page(held[--nr_held]);
}

static int pages_alloc(void)
{
	unsigned int i;

	pages_free();
	for (i = 0; i < nr_tags; i++) {
		struct page *page = alloc_through(tags[i]);

		if (!page)
			return -ENOMEM;
		held[nr_held++] = page;
	}
	return 0;
}

static void pages_show(struct seq_file *m)
{
	seq_printf(m, "sites %u pages %u\n", nr_tags, nr_held);
}

static int __init many_init(void)
{
	held = vmalloc(array_size(ALLOCTAG_MANY_SITES, sizeof(*held)));
	tags = vmalloc(array_size(ALLOCTAG_MANY_SITES, sizeof(*tags)));
	if (!held || !tags)
		goto nomem;
	collect_tags();
	if (proc_create("alloctag_many", 0600, NULL, &pages_proc_ops))
		return 0;
nomem:
	vfree(tags);
	vfree(held);
	return -ENOMEM;
}

static void __exit many_exit(void)
{
	remove_proc_entry("alloctag_many", NULL);
	pages_free();
	vfree(tags);
	vfree(held);
}

module_init(many_init);
module_exit(many_exit);
MODULE_DESCRIPTION("5000 allocation tags, one page through each");
MODULE_LICENSE("GPL");
