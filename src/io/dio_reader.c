/*
 * dio_reader.c - O_DIRECT reads into aligned buffers, with a buffered
 * fallback where the file system refuses O_DIRECT.
 */
#define _GNU_SOURCE
#include "io/dio_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/big_buffer.h"

const char *read_mode_name(read_mode mode)
{
    switch (mode) {
    case READ_MODE_DIRECT:
        return "direct";
    case READ_MODE_BUFFERED:
        return "buffered";
    case READ_MODE_FALLBACK:
        return "cache-neutral (O_DIRECT refused)";
    case READ_MODE_CACHE_NEUTRAL:
        return "cache-neutral";
    }
    return "unknown";
}

void *dio_buffer_alloc(size_t size)
{
    size_t rounded = (size + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;

    return big_buffer_alloc(rounded > 0 ? rounded : DIO_ALIGN);
}

bool dio_file_open(dio_file *f, const char *path, read_mode want, bool *missing, pgd_error *err)
{
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
    bool want_direct = want == READ_MODE_DIRECT;

    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->path = path;
    *missing = false;
    f->mode = want;
    f->fd = open(path, flags | (want_direct ? O_DIRECT : 0));
    if (f->fd < 0 && want_direct && errno == EINVAL) {
        f->mode = READ_MODE_FALLBACK;
        f->fd = open(path, flags);
    }
    if (f->fd < 0) {
        if (errno == ENOENT) {
            *missing = true;
            return false;
        }
        return err_errno(err, errno, "could not open file \"%s\"", path);
    }
    return true;
}

bool dio_file_read(dio_file *f, void *buf, size_t len, size_t *nread, pgd_error *err)
{
    size_t done = 0;

    *nread = 0;
    if (f->eof)
        return true;
    while (done < len) {
        ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(f->offset + done));

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return err_errno(err, errno, "could not read file \"%s\" at offset %llu", f->path,
                             (unsigned long long)(f->offset + done));
        }
        if (n == 0) {
            f->eof = true;
            break;
        }
        done += (size_t)n;
        /*
         * A short direct read that is not block-aligned ends the file: the
         * next aligned read would start past EOF or be misaligned.
         */
        if (f->mode == READ_MODE_DIRECT && (done % DIO_ALIGN) != 0) {
            f->eof = true;
            break;
        }
    }
    f->offset += done;
    *nread = done;
    return true;
}

void dio_file_close(dio_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}
