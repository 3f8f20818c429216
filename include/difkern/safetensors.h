/* difkern file readers: .safetensors (read + write) and .npy (read).
 *
 *   dk_safetensors *f;
 *   dk_st_tensor t;
 *   if (dk_safetensors_open("vae.safetensors", &f) != DK_OK) puts(dk_last_error(NULL));
 *   if (dk_safetensors_find(f, "decoder.conv_in.weight", &t) == DK_OK) ... t.data, t.shape ...
 *   dk_safetensors_close(f);
 *
 * Errors: every call returns dk_status; the message is in dk_last_error(NULL)
 * (per thread).  Open/read/write failures are DK_ERR_IO; malformed, truncated or
 * hostile contents are DK_ERR_FORMAT; valid contents difkern cannot use (another
 * dtype, more dims) are DK_ERR_UNSUPPORTED.  No input makes a call crash or read
 * out of bounds (fuzzed under ASan/UBSan).
 *
 * Safetensors layout: u64 little-endian header length N, N bytes of a JSON object
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value", ...}}, then the data section; offsets are
 * relative to the start of the data section.  The reader is strict, like the
 * reference implementation: the header must be valid JSON in valid UTF-8
 * (at most 100 MiB, padding with trailing spaces allowed), every entry needs
 * exactly the keys dtype, shape and data_offsets, names are unique and contain no
 * NUL, shape products may not overflow, end - begin == numel * dtype size for the
 * dtypes the format defines, and the tensors tile the data section exactly (sorted
 * by offset, no gap, no overlap, no trailing bytes).  Entries of any dtype are
 * listed (count/at/find); only F32, F16 and BF16 with at most DK_ST_MAX_DIMS dims
 * are usable, the others report DK_ERR_UNSUPPORTED when accessed.
 *
 * dk_safetensors_open maps the file read-only on POSIX systems (mmap: nothing is
 * read until a tensor's bytes are touched) and reads it with fread into one heap
 * block elsewhere, for files mmap cannot take, or when the environment variable
 * DIFKERN_IO_NO_MMAP is set to a value other than 0.  As with any mapping, a file
 * truncated by another process while it is open can make accesses fault (SIGBUS);
 * set DIFKERN_IO_NO_MMAP=1 where files may change under the reader.  Files that
 * are not regular (pipes, devices such as /dev/zero) are read up to 4 GiB
 * (DIFKERN_IO_STREAM_LIMIT, bytes, sets another bound), then refused with
 * DK_ERR_IO; a directory is DK_ERR_IO "is a directory".
 * dk_safetensors_open_memory parses a caller's block and copies nothing.
 *
 * Alignment: a tensor's data pointer is aligned to its element size when the
 * file's offsets are (files from the safetensors library and from
 * dk_safetensors_write are) and, for open_memory, when the caller's block is
 * 8-byte aligned and the header length keeps it so.  Code that must not assume
 * this uses memcpy or dk_st_tensor_copy.  Data is little-endian.
 */
#ifndef DIFKERN_SAFETENSORS_H
#define DIFKERN_SAFETENSORS_H

#include "../difkern.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DK_ST_MAX_DIMS 8

typedef struct dk_safetensors dk_safetensors;

typedef struct dk_st_tensor {
    const char *name;        /* NUL-terminated UTF-8, valid until close */
    const char *dtype_name;  /* the file's dtype string ("F32", "I64", ...) */
    dk_dtype dtype;          /* DK_F32 / DK_F16 / DK_BF16; 0 for other dtypes */
    int32_t ndim;            /* 0 (a scalar) .. DK_ST_MAX_DIMS; the file's count if more */
    int64_t shape[DK_ST_MAX_DIMS]; /* unused dims are 1 */
    const void *data;        /* nbytes of little-endian elements, row-major */
    uint64_t nbytes;
} dk_st_tensor;

/* Open a file (mmap or fread, see above).  On failure *out is NULL. */
DK_API dk_status dk_safetensors_open(const char *path, dk_safetensors **out);
/* Parse a file already in memory: nothing is copied, data pointers point into
 * data, which must outlive the handle. */
DK_API dk_status dk_safetensors_open_memory(const void *data, uint64_t size, dk_safetensors **out);
DK_API void dk_safetensors_close(dk_safetensors *f); /* NULL is fine */

/* Number of tensors (entries other than __metadata__), in file (offset) order. */
DK_API int64_t dk_safetensors_count(const dk_safetensors *f);
/* Entry i (0 <= i < count).  out is filled for every entry; the status is
 * DK_ERR_UNSUPPORTED for a dtype other than F32/F16/BF16 or more than
 * DK_ST_MAX_DIMS dims. */
DK_API dk_status dk_safetensors_at(const dk_safetensors *f, int64_t i, dk_st_tensor *out);
/* Entry by exact name; DK_ERR_INVALID_ARGUMENT "tensor 'x' not found" if absent. */
DK_API dk_status dk_safetensors_find(const dk_safetensors *f, const char *name, dk_st_tensor *out);
/* Value of a __metadata__ key, or NULL if absent (valid until close). */
DK_API const char *dk_safetensors_metadata(const dk_safetensors *f, const char *key);

/* Convert a tensor's elements (F32/F16/BF16, any source alignment) to dtype into
 * dst, which holds dst_bytes (>= numel * dk_dtype_size(dtype)).  Rounding to
 * nearest even; NaN stays NaN. */
DK_API dk_status dk_st_tensor_copy(const dk_st_tensor *t, dk_dtype dtype, void *dst, uint64_t dst_bytes);

/* Write tensors (F32/F16/BF16; name, dtype, ndim 0..DK_ST_MAX_DIMS, shape,
 * data, nbytes == numel * dtype size; dtype_name is ignored) to a new file.
 * Names must be unique, non-empty, valid UTF-8 and not "__metadata__".  The
 * header is padded to a multiple of 8 bytes and tensors are stored by
 * decreasing element size (stable), so every data pointer stays aligned.
 * The file is written atomically: into a new temporary file beside it
 * (".NAME.tmp-PID-N"), every write checked, fsync'ed, closed, then renamed over
 * path; on any failure (a full disk, a file-size limit) the temporary file is
 * removed, an existing file at path is left as it was, and the status is
 * DK_ERR_IO with the OS's reason.  A symbolic link at path is followed (the
 * file it points to is replaced, the link stays); a character device or FIFO
 * is written in place with checked writes; a directory is refused. */
DK_API dk_status dk_safetensors_write(const char *path, const dk_st_tensor *tensors, int64_t count);

/* -------------------------------------------------------------------- .npy
 * NumPy format 1.0, 2.0 and 3.0; dtype '<f4', '<f2' or '<f8' (converted to
 * float), C order, 0..DK_MAX_DIMS dims.  fortran_order True, big-endian and other
 * dtypes are DK_ERR_UNSUPPORTED; malformed, truncated or trailing bytes are
 * DK_ERR_FORMAT.  On success *data (numel floats, at least one allocation even
 * for numel 0) is freed with dk_npy_free; unused shape entries are 1. */
DK_API dk_status dk_npy_read_f32(const char *path, float **data, int32_t *ndim,
                                 int64_t shape[DK_MAX_DIMS]);
DK_API dk_status dk_npy_read_f32_memory(const void *bytes, uint64_t size, float **data,
                                        int32_t *ndim, int64_t shape[DK_MAX_DIMS]);
DK_API void dk_npy_free(float *data);

#ifdef __cplusplus
}
#endif

#endif /* DIFKERN_SAFETENSORS_H */
