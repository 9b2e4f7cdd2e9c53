/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * volatile_fadvise.h - user-space access to volatile ranges on tmpfs/memfd.
 *
 * The kernel series in kernel/patches/ adds three posix_fadvise() advice
 * values for shmem files (tmpfs, memfd_create(), SysV shm):
 *
 *   POSIX_FADV_VOLATILE (8)     the range may be discarded under memory
 *                               pressure; returns 0.
 *   POSIX_FADV_NONVOLATILE (9)  the range is kept again; returns 1 if any part
 *                               of it was purged while volatile, else 0.
 *   POSIX_FADV_ISVOLATILE (10)  returns 1 if any page of the range is volatile.
 *
 * glibc's posix_fadvise() maps every non-negative return value to 0, which
 * hides the purged flag.  These helpers call the fadvise64 system call
 * directly and return the kernel's value, or -errno.  Header only.
 */
#ifndef VOLATILE_FADVISE_H
#define VOLATILE_FADVISE_H

#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef POSIX_FADV_VOLATILE
#define POSIX_FADV_VOLATILE	8
#define POSIX_FADV_NONVOLATILE	9
#define POSIX_FADV_ISVOLATILE	10
#endif

/* fadvise64 with the kernel's return value: >= 0, or -errno. */
static inline long vol_fadvise(int fd, off_t offset, off_t len, int advice)
{
#if defined(__x86_64__) || defined(__aarch64__) || defined(__riscv)
	long ret = syscall(SYS_fadvise64, fd, offset, len, advice);
#else
#error "volatile_fadvise.h: add the fadvise64 calling convention of this arch"
#endif
	return ret < 0 ? -errno : ret;
}

/* Mark [offset, offset + len) volatile.  Returns 0 or -errno. */
static inline long vol_mark(int fd, off_t offset, off_t len)
{
	return vol_fadvise(fd, offset, len, POSIX_FADV_VOLATILE);
}

/* Unmark.  Returns 1 if anything in the range was purged, 0 if not, -errno. */
static inline long vol_unmark(int fd, off_t offset, off_t len)
{
	return vol_fadvise(fd, offset, len, POSIX_FADV_NONVOLATILE);
}

/* Returns 1 if any page of the range is volatile, 0 if none, or -errno. */
static inline long vol_query(int fd, off_t offset, off_t len)
{
	return vol_fadvise(fd, offset, len, POSIX_FADV_ISVOLATILE);
}

/*
 * Returns 1 if the running kernel supports volatile ranges on shmem files,
 * 0 if not (it answers -EINVAL to advice 10), or -errno on other errors.
 * The probe file is created and closed here.
 */
static inline int vol_supported(void)
{
	int fd = (int)syscall(SYS_memfd_create, "vol-probe", 0);
	long ret;

	if (fd < 0)
		return -errno;
	ret = vol_query(fd, 0, 0);
	close(fd);
	if (ret == -EINVAL)
		return 0;
	return ret < 0 ? (int)ret : 1;
}

#endif /* VOLATILE_FADVISE_H */
