// SPDX-License-Identifier: GPL-2.0-only
/*
 * model-check: run a synthetic access trace through the cache model the
 * plugin uses and print one line per window, so tests can check miss counts
 * they know.  Trace lines on stdin:
 *   P key=value ...   parameters as the plugin takes them (before accesses)
 *   S LABEL           window start        E     window stop
 *   L PADDR SIZE      load                W PADDR SIZE   store
 *   I N               N instructions
 * Output per window: label insns loads stores lines l1_miss l2_miss llc_miss
 * split est_cycles.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachemodel.h"

int main(void)
{
	struct cm_params p = {
		.l1_kib = 48, .l1_ways = 12, .l2_kib = 2048, .l2_ways = 16,
		.llc_kib = 4096, .llc_ways = 16, .pen_l2 = 14, .pen_llc = 50, .pen_mem = 200,
	};
	struct cm_cache l1, l2, llc;
	struct cm_line_set lines;
	struct cm_window w;
	bool ready = false, active = false;
	unsigned int label = 0;
	char buf[512], err[160];
	int lineno = 0;

	while (fgets(buf, sizeof(buf), stdin)) {
		uint64_t a, n;
		unsigned int sz;

		lineno++;
		if (buf[0] == 'P') {
			char *tok = strtok(buf + 1, " \t\n");

			for (; tok; tok = strtok(NULL, " \t\n")) {
				unsigned int v;

				if (sscanf(tok, "l1_kib=%u", &v) == 1) p.l1_kib = v;
				else if (sscanf(tok, "l1_ways=%u", &v) == 1) p.l1_ways = v;
				else if (sscanf(tok, "l2_kib=%u", &v) == 1) p.l2_kib = v;
				else if (sscanf(tok, "l2_ways=%u", &v) == 1) p.l2_ways = v;
				else if (sscanf(tok, "llc_kib=%u", &v) == 1) p.llc_kib = v;
				else if (sscanf(tok, "llc_ways=%u", &v) == 1) p.llc_ways = v;
				else if (sscanf(tok, "pen_l2=%u", &v) == 1) p.pen_l2 = v;
				else if (sscanf(tok, "pen_llc=%u", &v) == 1) p.pen_llc = v;
				else if (sscanf(tok, "pen_mem=%u", &v) == 1) p.pen_mem = v;
				else {
					fprintf(stderr, "line %d: bad parameter %s\n", lineno, tok);
					return 2;
				}
			}
			continue;
		}
		if (!ready) {
			if (cm_params_check(&p, err, sizeof(err))) {
				fprintf(stderr, "%s\n", err);
				return 2;
			}
			if (cm_cache_init(&l1, p.l1_kib, p.l1_ways) ||
			    cm_cache_init(&l2, p.l2_kib, p.l2_ways) ||
			    cm_cache_init(&llc, p.llc_kib, p.llc_ways) ||
			    cm_lines_init(&lines, 1 << 16))
				return 2;
			ready = true;
		}
		switch (buf[0]) {
		case 'S':
			if (sscanf(buf + 1, "%u", &label) != 1)
				goto bad;
			memset(&w, 0, sizeof(w));
			cm_lines_reset(&lines);
			active = true;
			break;
		case 'E':
			if (!active)
				goto bad;
			active = false;
			printf("%u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			       " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", label, w.insns, w.loads,
			       w.stores, w.lines, w.miss[CM_L1], w.miss[CM_L2], w.miss[CM_LLC],
			       w.split, cm_est_cycles(&p, &w));
			break;
		case 'I':
			if (sscanf(buf + 1, "%" SCNu64, &n) != 1)
				goto bad;
			if (active)
				w.insns += n;
			break;
		case 'L':
		case 'W':
			if (sscanf(buf + 1, "%" SCNx64 " %u", &a, &sz) != 2)
				goto bad;
			cm_access(&l1, &l2, &llc, &lines, active ? &w : NULL, a, sz, buf[0] == 'W');
			break;
		case '#':
		case '\n':
			break;
		default:
			goto bad;
		}
	}
	return 0;
bad:
	fprintf(stderr, "line %d: bad trace line: %s", lineno, buf);
	return 2;
}
