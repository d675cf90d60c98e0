// SPDX-License-Identifier: GPL-2.0
/*
 * alloctag_keeper: holds allocations of alloctag_test so that they can be
 * freed after alloctag_test is unloaded.  "echo free > /proc/alloctag_keeper"
 * frees them; reading it prints how many it holds.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "alloctag_keeper.h"
#include "alloctag_proc.h"

struct kmem_cache *alloctag_keeper_cache;
EXPORT_SYMBOL_GPL(alloctag_keeper_cache);

static LIST_HEAD(kept);
static DEFINE_MUTEX(lock);

void alloctag_keeper_free_held(struct alloctag_held *h)
{
	switch (h->kind) {
	case K_PAGE:
		__free_pages(h->p, h->order);
		break;
	case K_FOLIO:
		folio_put(h->p);
		break;
	case K_KMALLOC:
		kfree(h->p);
		break;
	case K_VMALLOC:
		vfree(h->p);
		break;
	case K_PERCPU:
		free_percpu((void __percpu __force *)h->p);
		break;
	case K_KMEMCACHE:
		kmem_cache_free(alloctag_keeper_cache, h->p);
		break;
	}
	kfree(h);
}
EXPORT_SYMBOL_GPL(alloctag_keeper_free_held);

void alloctag_keeper_take(struct list_head *held)
{
	mutex_lock(&lock);
	list_splice_tail_init(held, &kept);
	mutex_unlock(&lock);
}
EXPORT_SYMBOL_GPL(alloctag_keeper_take);

static void free_kept(void)
{
	struct alloctag_held *h, *tmp;

	mutex_lock(&lock);
	list_for_each_entry_safe(h, tmp, &kept, link) {
		list_del(&h->link);
		alloctag_keeper_free_held(h);
	}
	mutex_unlock(&lock);
}

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t len, loff_t *off)
{
	char buf[16] = {};

	if (len >= sizeof(buf) || copy_from_user(buf, ubuf, len))
		return -EINVAL;
	if (!sysfs_streq(buf, "free"))
		return -EINVAL;
	free_kept();
	return len;
}

static int ctl_show(struct seq_file *m, void *v)
{
	struct alloctag_held *h;
	unsigned int n = 0;

	mutex_lock(&lock);
	list_for_each_entry(h, &kept, link)
		n++;
	mutex_unlock(&lock);
	seq_printf(m, "%u\n", n);
	return 0;
}

ALLOCTAG_PROC_OPS(ctl_ops, ctl_show, ctl_write);

static int __init keeper_init(void)
{
	alloctag_keeper_cache = kmem_cache_create("alloctag_obj", ALLOCTAG_OBJ_SIZE,
						  0, 0, NULL);
	if (!alloctag_keeper_cache)
		return -ENOMEM;
	if (!proc_create("alloctag_keeper", 0644, NULL, &ctl_ops)) {
		kmem_cache_destroy(alloctag_keeper_cache);
		return -ENOMEM;
	}
	return 0;
}

static void __exit keeper_exit(void)
{
	remove_proc_entry("alloctag_keeper", NULL);
	free_kept();
	kmem_cache_destroy(alloctag_keeper_cache);
}

module_init(keeper_init);
module_exit(keeper_exit);
MODULE_DESCRIPTION("Holds alloctag_test allocations across its unload");
MODULE_LICENSE("GPL");
