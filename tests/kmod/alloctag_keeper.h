/* SPDX-License-Identifier: GPL-2.0 */
#ifndef ALLOCTAG_KEEPER_H
#define ALLOCTAG_KEEPER_H

#include <linux/list.h>

enum alloctag_kind { K_PAGE, K_FOLIO, K_KMALLOC, K_VMALLOC, K_PERCPU, K_KMEMCACHE };

/*
 * A slab cache of ALLOCTAG_OBJ_SIZE-byte objects that alloctag_test
 * allocates from: the keeper owns it, so that objects can outlive
 * alloctag_test.  Mergeable, so it may be an alias of a kmalloc cache.
 */
#define ALLOCTAG_OBJ_SIZE	192
extern struct kmem_cache *alloctag_keeper_cache;

/* One allocation of alloctag_test, freed by whoever holds it. */
struct alloctag_held {
	struct list_head link;
	enum alloctag_kind kind;
	unsigned int order;
	void *p;
};

/* Frees @h and what it holds. */
void alloctag_keeper_free_held(struct alloctag_held *h);
/* Takes over every entry of @held; they are freed on "free" or unload. */
void alloctag_keeper_take(struct list_head *held);

#endif
