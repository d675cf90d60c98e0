# Shared helpers for the scripts of bench/build/, bench/boot/ and tests/.
# Sourced, not executed.
# shellcheck shell=sh

: "${BUILD_DIR:=/var/tmp/alloctag-build}"
: "${CCACHE_DIR:=/var/tmp/alloctag-ccache}"
: "${KERNEL_TARBALL:=/usr/src/linux-source-6.12.tar.xz}"
export BUILD_DIR CCACHE_DIR

# The checkout: the nearest directory at or above the sourcing script's
# that holds bench/lib.sh (scripts live one or two levels down: tests/run,
# bench/build/build-kernel, ...).
REPO=$(CDPATH='' cd -- "$(dirname -- "$0")" && while [ ! -f bench/lib.sh ]; do
	[ "$PWD" != / ] && cd .. || exit 1; done && pwd) ||
	{ echo "error: no checkout (bench/lib.sh) above $0" >&2; exit 1; }
PRISTINE=$BUILD_DIR/linux

die() {
	echo "error: $*" >&2
	exit 1
}

note() {
	echo ">>> $*" >&2
}

# variant_field NAME FIELD: FIELD 1 = tree, 2.. = config fragments
variant_tree() {
	awk -v v="$1" '!/^#/ && $1 == v { print $2; found = 1 } END { exit !found }' \
		"$REPO/bench/build/variants"
}

variant_fragments() {
	awk -v v="$1" '!/^#/ && $1 == v { for (i = 3; i <= NF; i++) print $i }' \
		"$REPO/bench/build/variants"
}

all_variants() {
	awk '!/^#/ && NF { print $1 }' "$REPO/bench/build/variants"
}

# kernel_table ARGS...: python3 -m bench.kernels ARGS, the reader of bench/kernels
# (the one table of kernel labels, their variants, arguments and roles).
# The run loop, bench/run_bench.py, reads the table and bench/workloads/ in
# Python.
kernel_table() {
	(cd "$REPO" && "${PYTHON:-/usr/bin/python3}" -m bench.kernels "$@")
}

# mutation_verdict BUILT PYTEST_RC: tests/mutation-check's verdict on one
# mutation.  "invalid" when the mutated kernel did not build (BUILT 0): no
# test ran, so it shows nothing; else "caught" when the tests failed,
# "MISSED" when they passed.
mutation_verdict() {
	if [ "$1" != 1 ]; then
		echo invalid
	elif [ "$2" != 0 ]; then
		echo caught
	else
		echo MISSED
	fi
}

# series_objects SRC [CONFIG]: the objects (dir/file.o) of the C files the
# series change in source tree SRC (against tag pristine) and of every C
# file that calls the page tag API, for single-object compile checks.  Only
# files in a kbuild directory can be built as objects, and with CONFIG only
# those that configuration builds (config_builds): mm/kfence/core.c does
# not compile on its own without CONFIG_KFENCE.
series_objects() {
	( git -C "$1" diff --name-only pristine HEAD -- '*.c'
	  git -C "$1" grep -l -E 'page_tag_(load|xchg)|pgalloc_tag_|alloc_tag_from_idx|page_cpupid_borrowed' -- '*.c'
	) | sort -u | while read -r _f; do
		if [ -f "$1/$(dirname "$_f")/Makefile" ] &&
		   { [ -z "${2:-}" ] || config_builds "$1" "$2" "$_f"; }; then
			echo "${_f%.c}.o"
		fi
	done
}

# config_builds SRC CONFIG FILE.c: whether the configuration CONFIG (a
# .config of the whole series' tree) builds FILE, following the
# obj-$(CONFIG_...) line of the file and of each directory above it (mm/kfence/core.c needs CONFIG_KFENCE through
# mm/Makefile's "obj-$(CONFIG_KFENCE) += kfence/").  Objects listed without
# a CONFIG_ condition count as built.
config_builds() {
	_cb_p=${3%.c}
	while :; do
		_cb_d=$(dirname "$_cb_p") _cb_n=$(basename "$_cb_p")
		[ "$_cb_d" = . ] && return 0
		if [ -f "$1/$_cb_p.c" ]; then _cb_s="$_cb_n\.o"; else _cb_s="$_cb_n/"; fi
		_cb_cfg=$(grep -E "^obj-\\\$\(CONFIG_[A-Z0-9_]+\)[[:space:]]*[+:]?=.*(^|[[:space:]])$_cb_s" \
			"$1/$_cb_d/Makefile" 2>/dev/null | sed -n 's/^obj-\$(\(CONFIG_[A-Z0-9_]*\)).*/\1/p' | head -n 1)
		if [ -n "$_cb_cfg" ] && ! grep -q "^$_cb_cfg=[ym]" "$2"; then
			return 1
		fi
		_cb_p=$_cb_d
	done
}

# Series (patch directories) applied for a source tree, in order; "DIR:N"
# is the first N patches of DIR's series file.  The trees of the upstream
# peer (Linux 7.3, bench/build/fetch-peer) start with the benchmark's own test
# patches named in bench/build/peer-patches: "up" gets nothing else, "up-packed"
# this project's series for 7.3 and "up-table" its first five patches (the
# fixes, the tag lookup on free, the index constants and the index table,
# without the inline hooks: the attribution step between the two).
tree_series() {
	case $1 in
	baseline) echo baseline ;;
	packed) echo baseline packed-refs packed-slab packed-select ;;
	packed-cmpxchg) echo baseline packed-refs packed-slab packed-select bench-cmpxchg ;;
	up) ;;
	up-packed) echo packed-refs-7.3 ;;
	up-table) echo packed-refs-7.3:5 ;;
	*) die "unknown source tree '$1'" ;;
	esac
}

# Is this a tree of the upstream peer (Linux 7.3)?
tree_is_peer() {
	case $1 in up | up-*) return 0 ;; *) return 1 ;; esac
}

# The benchmark's test patches for the peer, written against 6.12.
peer_patches() {
	grep -v -e '^#' -e '^[[:space:]]*$' "$REPO/bench/build/peer-patches" | while read -r p; do
		[ -f "$REPO/patches/$p" ] || die "bench/build/peer-patches names missing patch $p"
		echo "$REPO/patches/$p"
	done
}

# peer_info FIELD: a field of the peer's packages, as bench/build/fetch-peer records it.
peer_info() {
	"${PYTHON:-/usr/bin/python3}" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$BUILD_DIR/peer/peer-info.json" "$1"
}

# apply_peer_patch SRC PATCH: apply one of the benchmark's peer patches
# (written against 6.12) to the git tree SRC with context fuzz and commit it
# under its subject: how bench/build/prepare-tree and bench/build/check-series apply them.
apply_peer_patch() {
	patch -d "$1" -p1 -F3 --no-backup-if-mismatch <"$2" && git -C "$1" add -f -A &&
		git -C "$1" commit -q -m "$(git mailinfo -k /dev/null /dev/null <"$2" | sed -n "s/^Subject: //p")"
}

# Patch files applied to a source tree, in order.
tree_patches() {
	if tree_is_peer "$1"; then
		peer_patches || exit 1
	fi
	for _s in $(tree_series "$1"); do series_patches "$_s" || exit 1; done
}

# The pristine git tree (tag 'pristine') a source tree is built from.
tree_pristine() {
	if tree_is_peer "$1"; then echo "$BUILD_DIR/linux-up"; else echo "$PRISTINE"; fi
}

# Patch files of a series ("DIR" or "DIR:N", the first N), in the order of
# its series file.
series_patches() {
	_n=${1#*:}
	case $1 in *:*) ;; *) _n=0 ;; esac
	case $_n in '' | *[!0-9]*) die "bad series '$1' (DIR or DIR:N)" ;; esac
	dir=$REPO/patches/${1%%:*}
	[ -f "$dir/series" ] || die "patches/${1%%:*}/series is missing"
	_all=$(grep -v -e '^#' -e '^[[:space:]]*$' "$dir/series")
	[ "$_n" -le "$(echo "$_all" | grep -c .)" ] ||
		die "patches/${1%%:*}/series has fewer than $_n patches"
	echo "$_all" | { if [ "$_n" -gt 0 ]; then head -n "$_n"; else cat; fi; } | while read -r p; do
		[ -f "$dir/$p" ] || die "patches/${1%%:*}/series names missing patch $p"
		echo "$dir/$p"
	done
}

sha() {
	sha256sum | cut -c1-16
}

outdir() {
	echo "$BUILD_DIR/out/$1"
}

srcdir() {
	echo "$BUILD_DIR/src/$1"
}

# The compiler of every kernel build: ccache gcc when ccache is installed.
kernel_cc() {
	if command -v ccache >/dev/null 2>&1; then echo "ccache gcc"; else echo gcc; fi
}

# kmake_tree SRC OUT ARGS...: make in kernel tree SRC, output in OUT, with the
# compiler and build identity every kernel build here uses.
kmake_tree() {
	_src=$1 _out=$2
	shift 2
	make -C "$_src" O="$_out" ARCH=x86_64 CC="$(kernel_cc)" HOSTCC="$(kernel_cc)" \
		KBUILD_BUILD_USER=bench KBUILD_BUILD_HOST=alloctag \
		KBUILD_BUILD_TIMESTAMP="2024-11-17" "$@"
}

elapsed() {
	echo $(($(date +%s) - $1))
}

# The Debian mirror the system's own apt sources name for its main suite
# (deb822 .sources or one-line sources.list); read, never written.
system_mirror() {
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null
		echo
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1 == "deb" || $1 == "deb-src" {
				u = ($2 ~ /^\[/) ? $3 : $2
				printf "Types: deb\nURIs: %s\nSuites: %s\n\n", u, (($2 ~ /^\[/) ? $4 : $3) }'
	} | awk -v RS= '
		/Types:[^\n]*deb/ && !/debian-security/ && /URIs:/ {
			n = split($0, l, "\n")
			for (i = 1; i <= n; i++)
				if (l[i] ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", l[i]); split(l[i], u, " ") }
			if (u[1] ~ /debian\/?$/) { print u[1]; exit }
		}'
}

# papt_init NAME LINE...: a private apt configuration under
# $BUILD_DIR/apt/NAME whose sources are the given one-line entries; the
# system's /etc/apt is only read (keyrings, apt.conf).
papt_init() {
	_pd=$BUILD_DIR/apt/$1
	shift
	mkdir -p "$_pd/parts" "$_pd/lists/partial" "$_pd/cache/archives/partial"
	printf '%s\n' "$@" >"$_pd/sources.list"
}

# papt NAME APT-GET-ARGS...: apt-get with NAME's private configuration.
papt() {
	_papt apt-get "$@" -q -o Debug::NoLocking=1
}

# papt_cache NAME APT-CACHE-ARGS...: apt-cache with NAME's configuration.
papt_cache() {
	_papt apt-cache "$@"
}

# _papt COMMAND NAME ARGS...: COMMAND with the options of NAME's configuration.
_papt() {
	_pc=$1 _pd=$BUILD_DIR/apt/$2
	shift 2
	"$_pc" -o Dir::Etc::SourceList="$_pd/sources.list" \
		-o Dir::Etc::SourceParts="$_pd/parts" -o Dir::State::Lists="$_pd/lists" \
		-o Dir::Cache="$_pd/cache" "$@"
}
