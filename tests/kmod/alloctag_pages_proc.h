/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The /proc file of the modules that hold pages allocated through their
 * tags (alloctag_many, alloctag_huge): writing "alloc" calls the module's
 * pages_alloc(), "free" its pages_free(), both under pages_lock; reading it
 * prints pages_show().  The module defines those three.
 */
#ifndef ALLOCTAG_PAGES_PROC_H
#define ALLOCTAG_PAGES_PROC_H

#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "alloctag_proc.h"

static int pages_alloc(void);
static void pages_free(void);
static void pages_show(struct seq_file *m);

static DEFINE_MUTEX(pages_lock);

static ssize_t pages_write(struct file *file, const char __user *ubuf,
			   size_t len, loff_t *ppos)
{
	char cmd[16] = "";
	int ret = 0;

	if (copy_from_user(cmd, ubuf, min(len, sizeof(cmd) - 1)))
		return -EFAULT;
	mutex_lock(&pages_lock);
	if (!strncmp(cmd, "alloc", 5))
		ret = pages_alloc();
	else if (!strncmp(cmd, "free", 4))
		pages_free();
	else
		ret = -EINVAL;
	mutex_unlock(&pages_lock);
	return ret ? ret : len;
}

static int pages_seq_show(struct seq_file *m, void *v)
{
	mutex_lock(&pages_lock);
	pages_show(m);
	mutex_unlock(&pages_lock);
	return 0;
}

ALLOCTAG_PROC_OPS(pages_proc_ops, pages_seq_show, pages_write);

#endif
