#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# volatile-bench.sh - the kernel benchmark of `make bench`, in the guest:
# volatile_bench twice on the same boot.  First the default workload, pairs
# at 4096 random offsets over the file, so that at 100,000 ranges every
# pair walks a different, mostly cold part of the tree; then -k 1, every
# pair on one page, where the walked nodes stay cached: the difference is
# the cost of cache and (under TCG, software) TLB misses, not of the
# tree's depth.
B=/usr/libexec/volatile/volatile_bench
echo "== pairs at 4096 random offsets (default)"
$B || exit 1
echo
echo "== every pair on one page (-k 1)"
$B -k 1
