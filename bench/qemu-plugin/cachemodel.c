// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cache model of cachemodel.h: plain C, no QEMU, so that tests can run
 * synthetic traces through exactly the code the plugin uses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachemodel.h"

static bool pow2(unsigned int x)
{
	return x && !(x & (x - 1));
}

int cm_params_check(const struct cm_params *p, char *err, int errlen)
{
	const unsigned int kib[] = { p->l1_kib, p->l2_kib, p->llc_kib };
	const unsigned int ways[] = { p->l1_ways, p->l2_ways, p->llc_ways };
	const char *name[] = { "l1", "l2", "llc" };

	for (int i = 0; i < 3; i++) {
		unsigned long lines = (unsigned long)kib[i] * 1024 / CM_LINE;

		if (!kib[i] || !ways[i] || lines % ways[i] || !pow2(lines / ways[i])) {
			snprintf(err, errlen,
				 "%s=%uK/%u-way: size must be a non-zero multiple of ways * 64 bytes with a power-of-two number of sets",
				 name[i], kib[i], ways[i]);
			return -1;
		}
	}
	return 0;
}

int cm_cache_init(struct cm_cache *c, unsigned int kib, unsigned int ways)
{
	size_t n = (size_t)kib * 1024 / CM_LINE;

	c->ways = ways;
	c->sets = n / ways;
	c->clock = 0;
	c->tag = malloc(n * sizeof(*c->tag));
	c->stamp = calloc(n, sizeof(*c->stamp));
	if (!c->tag || !c->stamp)
		return -1;
	memset(c->tag, 0xff, n * sizeof(*c->tag));
	return 0;
}

void cm_cache_free(struct cm_cache *c)
{
	free(c->tag);
	free(c->stamp);
	c->tag = NULL;
	c->stamp = NULL;
}

bool cm_cache_access(struct cm_cache *c, uint64_t line)
{
	size_t base = (size_t)(line & (c->sets - 1)) * c->ways;
	uint64_t *tag = c->tag + base, *stamp = c->stamp + base;
	unsigned int victim = 0;

	c->clock++;
	for (unsigned int w = 0; w < c->ways; w++) {
		if (tag[w] == line) {
			stamp[w] = c->clock;
			return true;
		}
		if (stamp[w] < stamp[victim])
			victim = w;
	}
	tag[victim] = line;
	stamp[victim] = c->clock;
	return false;
}

int cm_lines_init(struct cm_line_set *s, unsigned int size)
{
	s->size = size;
	s->used = 0;
	s->cur = 1;
	s->key = calloc(size, sizeof(*s->key));
	s->gen = calloc(size, sizeof(*s->gen));
	return s->key && s->gen ? 0 : -1;
}

void cm_lines_reset(struct cm_line_set *s)
{
	s->used = 0;
	if (++s->cur == 0) {
		memset(s->gen, 0, s->size * sizeof(*s->gen));
		s->cur = 1;
	}
}

bool cm_lines_add(struct cm_line_set *s, uint64_t line)
{
	unsigned int i = (unsigned int)((line * 0x9E3779B97F4A7C15ull) >> 40) & (s->size - 1);

	if (s->used >= s->size / 2)	/* full: count, stop remembering */
		return true;
	for (;; i = (i + 1) & (s->size - 1)) {
		if (s->gen[i] != s->cur) {
			s->gen[i] = s->cur;
			s->key[i] = line;
			s->used++;
			return true;
		}
		if (s->key[i] == line)
			return false;
	}
}

enum cm_level cm_access(struct cm_cache *l1, struct cm_cache *l2, struct cm_cache *llc,
			struct cm_line_set *lines, struct cm_window *w,
			uint64_t pa, unsigned int size, bool store)
{
	uint64_t first = pa >> CM_LINE_SHIFT;
	uint64_t last = (pa + (size ? size : 1) - 1) >> CM_LINE_SHIFT;
	enum cm_level lvl = CM_L1;

	if (w) {
		if (store)
			w->stores++;
		else
			w->loads++;
		if (last != first)
			w->split++;
	}
	for (uint64_t line = first; line <= last; line++) {
		if (w && lines && cm_lines_add(lines, line))
			w->lines++;
		lvl = CM_L1;
		if (cm_cache_access(l1, line))
			continue;
		lvl = CM_L2;
		if (w)
			w->miss[CM_L1]++;
		if (cm_cache_access(l2, line))
			continue;
		lvl = CM_LLC;
		if (w)
			w->miss[CM_L2]++;
		if (cm_cache_access(llc, line))
			continue;
		lvl = CM_MEM;
		if (w)
			w->miss[CM_LLC]++;
	}
	return lvl;
}

uint64_t cm_est_cycles(const struct cm_params *p, const struct cm_window *w)
{
	/* An L1 miss served by L2 costs pen_l2, by LLC pen_llc, by memory pen_mem. */
	uint64_t l2_hits = w->miss[CM_L1] - w->miss[CM_L2];
	uint64_t llc_hits = w->miss[CM_L2] - w->miss[CM_LLC];

	return w->insns + l2_hits * p->pen_l2 + llc_hits * p->pen_llc +
	       w->miss[CM_LLC] * p->pen_mem;
}
