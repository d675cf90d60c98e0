# Page tag reference storage: build, test and benchmark kernel variants.
#
#   make bench-all   build everything missing, run every workload on every
#                    kernel in QEMU, write results/<run-id>/ and the plots
#   make test        boot checks, KUnit and system tests in QEMU, unit tests
#
# Build products live outside the checkout in $(BUILD_DIR).

BUILD_DIR ?= /var/tmp/alloctag-build
CCACHE_DIR ?= /var/tmp/alloctag-ccache
PYTHON ?= /usr/bin/python3
# Benchmark repetitions (boots per kernel and workload), timing mode
# (auto, icount, kvm, tcg), QUICK=1 for a smoke run.
R ?= 2
TIMING ?= auto
QUICK ?= 0
RUN ?=
A ?=
B ?=
# PEER=1 (default) also fetches, builds and benchmarks the upstream peer,
# Debian's Linux 7.3 (bench/build/fetch-peer); PEER=0 leaves it out.
PEER ?= 1
# CACHESIM=1 (default) runs the cache model (bench/qemu-plugin) on icount
# boots; CACHESIM=0 leaves it out.
CACHESIM ?= 1
# Boots at a time in make bench (default: the number of CPUs).  Under icount
# a boot's instruction counts do not depend on what else the host runs.
BENCH_JOBS ?= $(shell nproc)

# Bad values stop make before anything is built.
$(if $(filter-out 0 1,$(PEER)),$(error PEER='$(PEER)' must be 0 or 1))
$(if $(filter-out 0 1,$(CACHESIM)),$(error CACHESIM='$(CACHESIM)' must be 0 or 1))
$(if $(filter-out 0 1,$(QUICK)),$(error QUICK='$(QUICK)' must be 0 or 1))
$(if $(filter-out auto icount kvm tcg,$(TIMING)),$(error TIMING='$(TIMING)' must be auto, icount, kvm or tcg))
$(if $(shell echo '$(R)' | grep -Ex '[1-9][0-9]*'),,$(error R='$(R)' is not a positive number of repetitions))
$(if $(shell echo '$(BENCH_JOBS)' | grep -Ex '[1-9][0-9]*'),,$(error BENCH_JOBS='$(BENCH_JOBS)' is not a positive number of parallel boots))

export BUILD_DIR CCACHE_DIR TIMING PEER CACHESIM BENCH_JOBS TEST_KERNELS

# The variants to build come from bench/kernels, the one list of kernel
# labels (python3 -m bench.kernels): a malformed table or an unknown label
# in KERNELS (make bench KERNELS="off packed") is a one-line error here,
# before anything is built.  With KERNELS, only those labels' variants and
# their references' are built.
KERNELS_ERROR := $(shell $(PYTHON) -m bench.kernels check $(KERNELS) 2>&1 >/dev/null)
$(if $(KERNELS_ERROR),$(error $(filter-out error:,$(KERNELS_ERROR))))
BENCH_KERNELS := $(shell $(PYTHON) -m bench.kernels variants --bench $(KERNELS))
PEER_KERNELS := $(shell $(PYTHON) -m bench.kernels variants --peer $(KERNELS))
TEST_KERNELS := $(shell $(PYTHON) -m bench.kernels variants --test)

.PHONY: all deps kernels test-kernels modules initramfs test bench bench-all \
	plots compare clean distclean

all: kernels

deps:
	@bench/build/deps
	@$(MAKE) --no-print-directory -s -C bench/qemu-plugin

kernels: deps
	@for v in $(BENCH_KERNELS); do bench/build/build-kernel $$v || exit 1; done
	@if [ "$(PEER)" = 1 ]; then for v in $(PEER_KERNELS); do \
		bench/build/build-kernel $$v || { \
		echo "warning: upstream peer kernel $$v not built (error above); the bench runs without it" >&2; \
		break; }; done; fi

test-kernels: deps
	@for v in $(TEST_KERNELS); do bench/build/build-kernel $$v || exit 1; done

modules: kernels
	@for v in $(BENCH_KERNELS); do bench/build/build-modules $$v || exit 1; done
	@if [ "$(PEER)" = 1 ]; then for v in $(PEER_KERNELS); do \
		[ -f $(BUILD_DIR)/out/$$v/Module.symvers ] || continue; \
		bench/build/build-modules $$v || \
		echo "warning: modules for upstream peer kernel $$v not built (error above)" >&2; \
		done; fi

initramfs: deps
	@bench/boot/make-initramfs

test: deps
	@tests/run

bench: modules initramfs
	@R=$(R) QUICK=$(QUICK) bench/run-bench

PLOTS = $(PYTHON) -m analysis.plots $(if $(filter tcg,$(TIMING)),--allow-tcg)

# Plots the run it made (run-bench names it in RUN_ID_FILE): run ids sort
# by date, but "-quick" and named runs (RUN_ID=...) do not sort after the
# newest one.  No $(MAKE) in this recipe: make runs a line that has one
# even under "make -n", which would start the whole run.
bench-all: modules initramfs
	@f=$$(mktemp) && trap 'rm -f "$$f"' EXIT && \
	R=$(R) QUICK=$(QUICK) RUN_ID_FILE=$$f bench/run-bench && \
	$(PLOTS) "$${RESULTS_DIR:-results}/$$(cat "$$f")"

plots:
	@$(PLOTS) $(if $(RUN),results/$(RUN),results)

compare:
	@test -n "$(A)" -a -n "$(B)" || { echo "error: usage: make compare A=<run-id> B=<run-id>" >&2; exit 1; }
	@$(PYTHON) -m analysis.compare results/$(A) results/$(B)

clean:
	rm -rf $(BUILD_DIR)/out $(BUILD_DIR)/kmod $(BUILD_DIR)/initramfs \
		$(BUILD_DIR)/*.log $(BUILD_DIR)/tests

distclean: clean
	rm -rf $(BUILD_DIR) $(CCACHE_DIR)
