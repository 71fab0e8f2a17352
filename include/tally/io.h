/* SPDX-License-Identifier: MIT */
/*
 * tally/io.h - reading /proc and /sys files whole, without allocating
 *
 * Inputs keep their files open and re-read them from offset 0 every tick:
 * cheaper than open/close, and the kernel regenerates the text on each
 * read from offset 0. The buffer grows to the largest file seen and is
 * reused, so a steady-state tick allocates nothing.
 *
 * Files tallyd writes for others to read (a final metrics page, the list
 * of listeners) are replaced whole with tally_write_file(), so a reader
 * never sees half of one.
 */
#ifndef TALLY_IO_H
#define TALLY_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tally_readbuf - a growable buffer reused across reads
 * @data: the text of the last read, NUL-terminated (NULL before the first)
 * @cap:  bytes allocated
 *
 * Zero-initialise; release with tally_readbuf_free(). Not thread-safe: one
 * buffer per thread.
 */
struct tally_readbuf {
	char *data;
	size_t cap;
};

/**
 * tally_read_whole() - read a file from offset 0 to its end into @rb
 * @fd: an open file descriptor (its file offset is not used or changed)
 * @rb: the buffer, grown as needed
 *
 * Reads at increasing offsets until end of file: seq_file (most of /proc)
 * returns at most a page per read, and sequential offsets continue the same
 * pass. Retries EINTR.
 * Return: the length read (@rb->data is NUL-terminated), or -1 with errno
 * from pread(2), or ENOMEM.
 */
ssize_t tally_read_whole(int fd, struct tally_readbuf *rb);

/**
 * tally_open_file() - open a regular file for reading, below @dirfd
 * @dirfd: directory descriptor, or AT_FDCWD for @rel relative to the cwd
 * @rel:   path (absolute paths ignore @dirfd, as openat(2))
 *
 * O_NONBLOCK so that a FIFO where a /proc or /sys file is expected cannot
 * block the loop; O_CLOEXEC. Anything but a regular file is refused.
 * Thread-safe.
 * Return: the descriptor, or -1 with errno from openat(2) or fstat(2), or
 * EINVAL when it is not a regular file.
 */
int tally_open_file(int dirfd, const char *rel);

/**
 * tally_parse_u64() - parse an unsigned decimal after optional blanks
 * @pp: cursor; skips spaces and tabs, then advanced past the digits on
 *      success (left alone on failure)
 * @v:  result
 *
 * For the counters of /proc and /sys, which are decimal u64 values.
 * Thread-safe, allocates nothing.
 * Return: 0, or -1 when there is no digit or the value overflows 64 bits
 * (errno is not set).
 */
int tally_parse_u64(const char **pp, uint64_t *v);

/**
 * tally_write_file() - replace a file's content whole
 * @path: the file; created with mode 0666 & ~umask, or replaced
 * @data: the content
 * @len:  its length in bytes
 *
 * Writes "@path.PID.tmp" in the same directory and renames it over @path,
 * so that a reader sees the old content or the new one, never a part.
 * Blocking (a local file: call it for small files or at a run's end).
 * Thread-safe for distinct paths.
 * Return: 0, or -1 with errno from open(2), write(2), close(2) or
 * rename(2) (the temporary file is removed), or ENAMETOOLONG.
 */
int tally_write_file(const char *path, const void *data, size_t len);

/**
 * tally_pid_alive() - whether process @pid runs on this host
 *
 * kill(@pid, 0): ESRCH means gone, EPERM that it exists (another user's).
 * A process that exists is also looked up in /proc/PID/stat: a zombie
 * ('Z', 'X') is gone too. Its parent may never reap it (a container whose
 * init does not), and its open trace spans must still end.
 * Blocking only on /proc; thread-safe.
 * Return: true or false; true when /proc cannot tell (not mounted).
 */
bool tally_pid_alive(uint32_t pid);

/** tally_readbuf_free() - release @rb's memory; @rb is reusable after */
void tally_readbuf_free(struct tally_readbuf *rb);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_IO_H */
