/* Internal helpers shared by the file readers (src/io/): whole-file reading, a
 * strict JSON cursor for the safetensors header, UTF-8 validation. */
#ifndef DK_IO_INTERNAL_H
#define DK_IO_INTERNAL_H

#include "../dk_internal.h"
#include "../../include/difkern/safetensors.h"

#include <stddef.h>
#include <stdint.h>

/* Read the whole file at path into a malloc'd block (one spare NUL byte after the
 * contents).  fn names the API call in messages.  DK_ERR_IO / OUT_OF_MEMORY;
 * DK_ERR_INVALID_ARGUMENT for a bad DIFKERN_IO_* value in the environment. */
dk_status dk__io_read_file(const char *fn, const char *path, unsigned char **data, uint64_t *size);

/* Map a regular, non-empty file read-only (POSIX mmap): 1 on success, 0 when
 * mapping is unavailable or failed for any reason (the caller then reads the
 * file with dk__io_read_file, which reports errors).  DIFKERN_IO_NO_MMAP=1
 * (environment) turns mapping off.  Release with dk__io_unmap_file. */
int dk__io_map_file(const char *path, const unsigned char **data, uint64_t *size);
void dk__io_unmap_file(const unsigned char *data, uint64_t size);

/* Write the concatenated pieces to path, atomically where path is (or will
 * be) a regular file: into a new temporary file in the same directory, every
 * write checked, fsync'ed, closed, then renamed over path.  On any failure the
 * temporary file is removed and an existing file at path is left as it was.
 * A symbolic link at path is resolved (realpath): the file it points to is
 * replaced and the link stays.  A character device or FIFO at path (e.g.
 * /dev/null) is written directly, every write checked; a directory or any
 * other kind of file is refused.  DK_ERR_IO with the OS reason. */
typedef struct dk__io_piece {
    const void *data;
    uint64_t size;
} dk__io_piece;
dk_status dk__io_write_file(const char *fn, const char *path, const dk__io_piece *pieces, int64_t count);

/* 1 if s[0..n) is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int dk__utf8_valid(const unsigned char *s, size_t n);

/* A cursor over a JSON text.  Every helper returns DK_OK or DK_ERR_FORMAT (or
 * DK_ERR_OUT_OF_MEMORY) with a message "<fn>: header byte <offset>: ...". */
typedef struct dk__json {
    const unsigned char *begin, *p, *end;
    const char *fn;
} dk__json;

void dk__json_ws(dk__json *j);                  /* skip JSON whitespace */
int dk__json_at(dk__json *j, char c);           /* next char is c (no skip) */
dk_status dk__json_expect(dk__json *j, char c, const char *what); /* skip ws, consume c */
/* Skip ws, consume a string; *out is malloc'd, NUL-terminated, valid UTF-8 with
 * no NUL inside (\u0000 is rejected: names are C strings). */
dk_status dk__json_string(dk__json *j, char **out, size_t *len);
/* Skip ws, consume a non-negative integer literal (no sign, fraction, exponent). */
dk_status dk__json_uint(dk__json *j, uint64_t *out, const char *what);
/* Format a failure at the cursor. */
dk_status dk__json_error(dk__json *j, const char *what);

#endif /* DK_IO_INTERNAL_H */
