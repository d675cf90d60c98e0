// SPDX-License-Identifier: GPL-2.0
/*
 * alloctag_param: allocate from a module parameter's set callback, which
 * load_module() runs in parse_args(), before the module's init function
 * (usbcore's quirks= does the same), and free it again in the exit function.
 *
 *   insmod alloctag_param.ko alloc=1
 *
 * allocates ALLOCTAG_PARAM_KMALLOC bytes with kmalloc() and one order-0 page
 * while the parameter is parsed; /proc/allocinfo must show both at this
 * file's two call sites, and rmmod must bring them back to zero without an
 * "allocated at module unload" warning.  Writing the parameter again later
 * (/sys/module/alloctag_param/parameters/alloc) is a no-op while the
 * allocations are held.
 */
#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#define ALLOCTAG_PARAM_KMALLOC	200

static void *held_obj;
static struct page *held_page;

static int alloc_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret = kstrtobool(val, &on);

	if (ret)
		return ret;
	if (!on || held_obj)
		return 0;
	held_obj = kmalloc(ALLOCTAG_PARAM_KMALLOC, GFP_KERNEL);
	held_page = alloc_pages(GFP_KERNEL, 0);
	if (!held_obj || !held_page) {
		kfree(held_obj);
		if (held_page)
			__free_pages(held_page, 0);
		held_obj = NULL;
		held_page = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int alloc_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", held_obj ? 1 : 0);
}

static const struct kernel_param_ops alloc_ops = {
	.set = alloc_set,
	.get = alloc_get,
};
module_param_cb(alloc, &alloc_ops, NULL, 0644);
MODULE_PARM_DESC(alloc, "Allocate from the parameter callback");

static int __init alloctag_param_init(void)
{
	return 0;
}

static void __exit alloctag_param_exit(void)
{
	kfree(held_obj);
	if (held_page)
		__free_pages(held_page, 0);
}

module_init(alloctag_param_init);
module_exit(alloctag_param_exit);
MODULE_DESCRIPTION("Allocations from a module parameter callback");
MODULE_LICENSE("GPL");
