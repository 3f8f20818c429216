/* sdxl_decode's output files. */
#ifndef SDXL_FILE_WRITE_H
#define SDXL_FILE_WRITE_H

#include <stddef.h>

/* The command's name, the prefix of every message (sdxl_decode or
 * difkern-vae; the two share this code). */
extern const char *sdxl_prog;
/* fprintf(stderr, ...) after "PROG: ". */
void sdxl_err(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Writes n bytes to path; returns 1 on success, else prints the reason (the
 * OS's) to stderr and returns 0.  A regular file (or none yet) is written
 * atomically: a temporary file in the same directory, every write checked,
 * fsync, close, rename over path; on failure the temporary file is removed and
 * an existing file is left untouched.  A symbolic link is followed: the file it
 * points to is replaced and the link stays.  A character device or FIFO
 * (/dev/null, /dev/full, a pipe) is written in place with checked writes; a
 * directory or other kind of file is refused. */
int sdxl_write_file(const char *path, const void *data, size_t n);

/* Checks, before any decoding, that path can be written: 1..PATH_MAX-1 bytes,
 * its directory exists and is writable, it is not a directory, and it is none
 * of the ninputs input files (same device and inode).  Prints the reason and
 * returns 0 otherwise. */
int sdxl_check_output(const char *path, const char *const *inputs, int ninputs);

#endif
