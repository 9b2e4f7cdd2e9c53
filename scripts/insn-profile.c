// SPDX-License-Identifier: GPL-2.0
/*
 * insn-profile.c - a QEMU TCG plugin that counts, for every guest kernel
 * instruction address, how many times it ran.  qemu-run.sh --profile loads
 * it; scripts/profile.py turns two such counts into instructions per call,
 * by function.
 *
 * Each instruction gets an inline counter increment, so the cost is a few
 * host instructions per guest instruction and nothing is sampled: with
 * -icount on one vCPU the counts are exact and the same on every run.
 * Only kernel text is counted (addresses in the top 2 GiB, where x86-64
 * links the kernel).  At exit it writes "ADDRESS COUNT" lines, in hex and
 * decimal, to the file named by its out= argument.
 *
 * Debian 12 ships QEMU 7.2 with plugin support but no qemu-plugin.h, so the
 * few declarations used here are written out below; they follow version 1
 * of QEMU's plugin API.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLUGIN_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
typedef struct {
	const char *target_name;
	struct {
		int min, cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus, max_vcpus;
		} system;
	};
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*udata_cb_t)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb_t cb, void *udata);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
						enum qemu_plugin_op op, void *ptr,
						uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

PLUGIN_EXPORT int qemu_plugin_version = 1;
PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
				      int argc, char **argv);

#define KERNEL_TEXT	0xffffffff80000000ULL
#define TABLE_BITS	22	/* 4M addresses: a 6.1 kernel runs far fewer */
#define TABLE_SIZE	(1UL << TABLE_BITS)

/* Open addressing: a kernel address and the counter QEMU adds to. */
static uint64_t *addrs, *counts;
static unsigned long used;
static char *out_path;

static uint64_t *counter(uint64_t addr)
{
	unsigned long h = (addr * 0x9e3779b97f4a7c15ULL) >> (64 - TABLE_BITS);

	for (;; h = (h + 1) & (TABLE_SIZE - 1)) {
		if (addrs[h] == addr)
			return &counts[h];
		if (!addrs[h]) {
			if (used >= TABLE_SIZE / 2) {
				qemu_plugin_outs("insn-profile: address table full\n");
				abort();
			}
			used++;
			addrs[h] = addr;
			return &counts[h];
		}
	}
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t addr = qemu_plugin_insn_vaddr(insn);

		if (addr >= KERNEL_TEXT)
			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64, counter(addr), 1);
	}
}

static void finished(qemu_plugin_id_t id, void *udata)
{
	FILE *f = fopen(out_path, "w");
	unsigned long i;

	(void)id;
	(void)udata;
	if (!f) {
		perror(out_path);
		return;
	}
	for (i = 0; i < TABLE_SIZE; i++)
		if (addrs[i] && counts[i])
			fprintf(f, "%llx %llu\n", (unsigned long long)addrs[i],
				(unsigned long long)counts[i]);
	if (fclose(f))
		perror(out_path);
}

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
			char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	if (!out_path) {
		qemu_plugin_outs("insn-profile: usage: -plugin insn-profile.so,out=FILE\n");
		return -1;
	}
	addrs = calloc(TABLE_SIZE, sizeof(*addrs));
	counts = calloc(TABLE_SIZE, sizeof(*counts));
	if (!addrs || !counts)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, finished, NULL);
	return 0;
}
