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
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

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
static DEFINE_MUTEX(lock);

static void free_all(void)
{
	while (nr_held)
		__free_page(held[--nr_held]);
}

static int alloc_two(void)
{
	free_all();
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

static ssize_t huge_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	char cmd[16] = "";
	int ret = 0;

	if (copy_from_user(cmd, ubuf, min(len, sizeof(cmd) - 1)))
		return -EFAULT;
	mutex_lock(&lock);
	if (!strncmp(cmd, "alloc", 5))
		ret = alloc_two();
	else if (!strncmp(cmd, "free", 4))
		free_all();
	else
		ret = -EINVAL;
	mutex_unlock(&lock);
	return ret ? ret : len;
}

static int huge_show(struct seq_file *m, void *v)
{
	mutex_lock(&lock);
	seq_printf(m, "tags %u pages %u\n", NR_TAGS, nr_held);
	mutex_unlock(&lock);
	return 0;
}

static int huge_open(struct inode *inode, struct file *file)
{
	return single_open(file, huge_show, NULL);
}

static const struct proc_ops huge_ops = {
	.proc_open	= huge_open,
	.proc_read	= seq_read,
	.proc_write	= huge_write,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

static int __init huge_init(void)
{
	return proc_create("alloctag_huge", 0600, NULL, &huge_ops) ? 0 : -ENOMEM;
}

static void __exit huge_exit(void)
{
	remove_proc_entry("alloctag_huge", NULL);
	mutex_lock(&lock);
	free_all();
	mutex_unlock(&lock);
}

module_init(huge_init);
module_exit(huge_exit);
MODULE_DESCRIPTION("A module with more allocation tags than 16-bit tag indices name");
MODULE_LICENSE("GPL");
