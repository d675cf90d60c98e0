/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A deterministic cache-hierarchy model: private L1D and L2 per vCPU and a
 * shared last-level cache, each set-associative with true LRU replacement,
 * write-allocate, filled on a miss at every level (non-inclusive), 64-byte
 * lines, indexed by physical address.  No prefetchers, no TLB: it counts
 * the lines an operation needs that are not already cached, which is what
 * a page_ext lookup adds and a page->flags lookup does not.
 */
#ifndef CACHEMODEL_H
#define CACHEMODEL_H

#include <stdbool.h>
#include <stdint.h>

#define CM_LINE_SHIFT 6
#define CM_LINE (1u << CM_LINE_SHIFT)

enum cm_level { CM_L1, CM_L2, CM_LLC, CM_MEM, CM_NLEVELS };

struct cm_cache {
	unsigned int sets, ways;
	uint64_t *tag;		/* sets * ways line numbers, ~0 = empty */
	uint64_t *stamp;	/* last use, for LRU */
	uint64_t clock;
};

struct cm_params {
	unsigned int l1_kib, l1_ways;
	unsigned int l2_kib, l2_ways;
	unsigned int llc_kib, llc_ways;
	/* extra cycles of an access served by L2, LLC, memory */
	unsigned int pen_l2, pen_llc, pen_mem;
};

/* Per window (one timed operation) counts. */
struct cm_window {
	uint64_t insns, loads, stores, lines;
	uint64_t miss[CM_NLEVELS - 1];	/* misses of L1, L2, LLC */
	uint64_t split;		/* accesses crossing a line */
};

struct cm_line_set {		/* distinct lines touched in a window */
	unsigned int size, used;
	uint64_t *key;
	uint32_t *gen;
	uint32_t cur;
};

int cm_params_check(const struct cm_params *p, char *err, int errlen);
int cm_cache_init(struct cm_cache *c, unsigned int kib, unsigned int ways);
void cm_cache_free(struct cm_cache *c);
/* true on a hit; on a miss the line is filled, evicting the LRU way */
bool cm_cache_access(struct cm_cache *c, uint64_t line);

int cm_lines_init(struct cm_line_set *s, unsigned int size);
void cm_lines_reset(struct cm_line_set *s);
/* true when the line was not yet in the set */
bool cm_lines_add(struct cm_line_set *s, uint64_t line);

/*
 * One access of size bytes at physical address pa through l1 -> l2 -> llc;
 * counts into w when w is not NULL.  Returns the level that served the
 * last line of the access.
 */
enum cm_level cm_access(struct cm_cache *l1, struct cm_cache *l2, struct cm_cache *llc,
			struct cm_line_set *lines, struct cm_window *w,
			uint64_t pa, unsigned int size, bool store);

uint64_t cm_est_cycles(const struct cm_params *p, const struct cm_window *w);

#endif
