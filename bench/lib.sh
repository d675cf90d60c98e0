# Shared helpers for the bench/ scripts.  Sourced, not executed.
# shellcheck shell=sh

: "${BUILD_DIR:=/var/tmp/alloctag-build}"
: "${CCACHE_DIR:=/var/tmp/alloctag-ccache}"
: "${KERNEL_TARBALL:=/usr/src/linux-source-6.12.tar.xz}"
export BUILD_DIR CCACHE_DIR

REPO=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
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
		"$REPO/bench/variants"
}

variant_fragments() {
	awk -v v="$1" '!/^#/ && $1 == v { for (i = 3; i <= NF; i++) print $i }' \
		"$REPO/bench/variants"
}

all_variants() {
	awk '!/^#/ && NF { print $1 }' "$REPO/bench/variants"
}

# kernel_variant LABEL: the variant (bench/variants) a bench/kernels label boots.
kernel_variant() {
	awk -v k="$1" '!/^#/ && $1 == k { print $2 }' "$REPO/bench/kernels"
}

# Series (patch directories) applied for a source tree, in order.
tree_series() {
	case $1 in
	baseline) echo baseline ;;
	packed) echo baseline packed-refs ;;
	*) die "unknown source tree '$1'" ;;
	esac
}

# Patch files of a series, in the order of its series file.
series_patches() {
	dir=$REPO/patches/$1
	[ -f "$dir/series" ] || die "patches/$1/series is missing"
	grep -v -e '^#' -e '^[[:space:]]*$' "$dir/series" | while read -r p; do
		[ -f "$dir/$p" ] || die "patches/$1/series names missing patch $p"
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
