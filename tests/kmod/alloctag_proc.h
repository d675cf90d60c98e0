/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control file of the test modules: a /proc file whose reads print
 * @show (a seq_file show function) and whose writes go to @write.
 */
#ifndef ALLOCTAG_PROC_H
#define ALLOCTAG_PROC_H

#include <linux/proc_fs.h>
#include <linux/seq_file.h>

#define ALLOCTAG_PROC_OPS(name, show, write)				\
static int name##_open(struct inode *inode, struct file *file)		\
{									\
	return single_open(file, show, NULL);				\
}									\
									\
static const struct proc_ops name = {					\
	.proc_open	= name##_open,					\
	.proc_read	= seq_read,					\
	.proc_write	= write,					\
	.proc_lseek	= seq_lseek,					\
	.proc_release	= single_release,				\
}

#endif
