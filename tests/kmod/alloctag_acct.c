// SPDX-License-Identifier: GPL-2.0
/*
 * alloctag_acct: from each of four call sites, one allocation charged to
 * the writer's memory cgroup (__GFP_ACCOUNT) and one not, so that a test
 * can check the accounted part /proc/allocinfo shows for each site.
 *
 * Write to /proc/alloctag_acct:
 *   alloc   allocate the set below (from a task in a memcg other than the
 *           root one: allocations of the root memcg are not charged)
 *   free    free it
 * Read it for the expected lines:
 *   "<line> <site> <bytes> <calls> <accounted bytes> <accounted calls>"
 * where "slab" for bytes means calls times the slab_size of kmalloc-512
 * (/sys/kernel/slab/kmalloc-512/slab_size), which debug options decide.
 *
 * Sites: an order-0 page (freed with __free_pages(): the uncharge in
 * free_pages_prepare()), an order-2 block split with split_page() into
 * four pages freed one by one (split_page_memcg()), a 512-byte kmalloc()
 * (a kmalloc-cg-512 object and a kmalloc-512 one), and a 16 KiB kmalloc()
 * served by the page allocator (freed through folio_put(): the uncharge in
 * uncharge_folio()).
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#define SPLIT_ORDER	2
#define SMALL		512
/* Above KMALLOC_MAX_CACHE_SIZE (two pages with SLUB): from the page allocator. */
#define LARGE		(4 * PAGE_SIZE)

static struct page *site_page(gfp_t gfp) { return alloc_pages(gfp, 0); }
static const unsigned int line_page = __LINE__ - 1;
static struct page *site_split(gfp_t gfp) { return alloc_pages(gfp, SPLIT_ORDER); }
static const unsigned int line_split = __LINE__ - 1;
static void *site_small(gfp_t gfp) { return kmalloc(SMALL, gfp); }
static const unsigned int line_small = __LINE__ - 1;
static void *site_large(gfp_t gfp) { return kmalloc(LARGE, gfp); }
static const unsigned int line_large = __LINE__ - 1;

static DEFINE_MUTEX(lock);
static struct page *pages[2], *split[2];
static void *small[2], *large[2];

static void do_free(void)
{
	int i, j;

	for (i = 0; i < 2; i++) {
		if (pages[i])
			__free_pages(pages[i], 0);
		if (split[i])
			for (j = 0; j < 1 << SPLIT_ORDER; j++)
				__free_pages(split[i] + j, 0);
		kfree(small[i]);
		kfree(large[i]);
		pages[i] = split[i] = NULL;
		small[i] = large[i] = NULL;
	}
}

static int do_alloc(void)
{
	static const gfp_t gfp[2] = { GFP_KERNEL_ACCOUNT, GFP_KERNEL };
	int i;

	if (pages[0])
		return -EBUSY;
	for (i = 0; i < 2; i++) {
		pages[i] = site_page(gfp[i]);
		split[i] = site_split(gfp[i]);
		if (split[i])
			split_page(split[i], SPLIT_ORDER);
		small[i] = site_small(gfp[i]);
		large[i] = site_large(gfp[i]);
		if (!pages[i] || !split[i] || !small[i] || !large[i]) {
			do_free();
			return -ENOMEM;
		}
	}
	return 0;
}

static int acct_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%u page %lu 2 %lu 1\n", line_page, 2 * PAGE_SIZE, PAGE_SIZE);
	seq_printf(m, "%u split %lu %u %lu %u\n", line_split,
		   2 * (PAGE_SIZE << SPLIT_ORDER), 2 << SPLIT_ORDER,
		   PAGE_SIZE << SPLIT_ORDER, 1 << SPLIT_ORDER);
	seq_printf(m, "%u small slab 2 slab 1\n", line_small);
	seq_printf(m, "%u large %lu 2 %lu 1\n", line_large,
		   2 * (PAGE_SIZE << get_order(LARGE)), PAGE_SIZE << get_order(LARGE));
	return 0;
}

static int acct_open(struct inode *inode, struct file *file)
{
	return single_open(file, acct_show, NULL);
}

static ssize_t acct_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	char cmd[16];
	int ret = 0;

	if (len >= sizeof(cmd) || copy_from_user(cmd, ubuf, len))
		return -EINVAL;
	cmd[len] = '\0';
	mutex_lock(&lock);
	if (sysfs_streq(cmd, "alloc"))
		ret = do_alloc();
	else if (sysfs_streq(cmd, "free"))
		do_free();
	else
		ret = -EINVAL;
	mutex_unlock(&lock);
	return ret ? ret : len;
}

static const struct proc_ops acct_ops = {
	.proc_open	= acct_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
	.proc_write	= acct_write,
};

static int __init acct_init(void)
{
	return proc_create("alloctag_acct", 0600, NULL, &acct_ops) ? 0 : -ENOMEM;
}

static void __exit acct_exit(void)
{
	remove_proc_entry("alloctag_acct", NULL);
	do_free();
}

module_init(acct_init);
module_exit(acct_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("memcg-accounted and unaccounted allocations from the same call sites");
