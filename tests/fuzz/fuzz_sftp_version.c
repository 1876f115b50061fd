/*
 * fuzz_sftp_version.c - the body of an SFTP VERSION packet
 * (storage/sftp/rename.c): whoever answers on the SFTP server's port chooses
 * its bytes. What sftp_rename_parse_version accepts is a version and whole
 * name/data pairs up to the last byte; posix-rename@openssh.com is found
 * only where its name is there.
 */
#define _GNU_SOURCE /* memmem */
#include "fuzz_common.h"

#include "storage/sftp/internal.h"

#define FUZZ_SFTP_EXTENSION "posix-rename@openssh.com"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool found = false;

    if (!sftp_rename_parse_version(data, size, &found)) {
        fuzz_assert(!found || size >= 4);
        return 0;
    }
    fuzz_assert(size >= 4);
    if (found)
        fuzz_assert(memmem(data, size, FUZZ_SFTP_EXTENSION, strlen(FUZZ_SFTP_EXTENSION)) != NULL);
    return 0;
}
