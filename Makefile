# SPDX-License-Identifier: GPL-2.0-only
# The appliance's interface: every target here is a command a user runs.
# Each depends on 'deps', which installs with apt-get the Debian packages
# the project needs.  A fresh Debian 12 machine has neither make nor git
# (to clone): apt-get update && apt-get install -y make git, then make.
# The work is done by scripts/; this file only names it.

.PHONY: all deps kernel-tree kernel kernel-debug kernel-export kernel-steps image \
	check demo experiment publish run fleet bench clean help

SHELL := /bin/bash
S := scripts

help:
	@echo "make demo         the pressure experiment, default scenario, 3 runs: build/report/"
	@echo "make experiment   every scenario, 5 runs (resumes; SCENARIO=name for one)"
	@echo "make publish      build/report into docs/reports/experiment, with its sources"
	@echo "make check        every test: host suites, then guest suites in QEMU"
	@echo "make deps         install the Debian packages the project needs"
	@echo "make kernel       build/bzImage: Linux + kernel/patches/ (tinyconfig-based)"
	@echo "make kernel-debug build/bzImage-debug: the same with KASAN, lockdep, kmemleak..."
	@echo "make kernel-tree  build/linux: the series as git commits, to work on"
	@echo "make kernel-export  write build/linux's commits back to kernel/patches/"
	@echo "make kernel-steps build and boot the kernel after each patch (KUnit at each)"
	@echo "make image        build/rootfs.img: the guest's root file system"
	@echo "make run          boot the appliance with a shell, cached on a host port"
	@echo "make fleet        several appliances behind twemproxy"
	@echo "make bench        the benchmarks of the kernel series, daemon and loadgen"

all: kernel image

deps:
	@$(S)/deps.sh

kernel-tree: deps
	@$(S)/kernel-tree.sh

kernel: kernel-tree
	@$(S)/kernel-build.sh normal

kernel-debug: kernel-tree
	@$(S)/kernel-build.sh debug

kernel-export: deps
	@$(S)/kernel-export.sh

kernel-steps: image
	@$(S)/test-steps.sh

image: kernel-tree
	@$(S)/image-build.sh

check: deps
	@$(S)/report-sources.sh --check docs/reports/experiment/sources.env
	@$(S)/check.sh

demo: kernel image
	@$(S)/demo.sh --runs 3

experiment: kernel image
	@$(S)/experiment.sh $(SCENARIO)

publish: deps
	@$(S)/publish-report.sh

run: kernel image
	@$(S)/run.sh

fleet: kernel image
	@$(S)/fleet.sh

bench: kernel image
	@$(S)/bench.sh

clean:
	rm -rf build
	$(MAKE) -C cached clean
	$(MAKE) -C loadgen clean
