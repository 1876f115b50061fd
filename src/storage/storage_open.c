/*
 * storage_open.c - the one place that knows every back end: it chooses the
 * driver a repository URI names. The generic layer (storage.c) and the
 * drivers (fs.c, null.c, s3/, azure/, sftp/) stand below it; adding a store adds a file
 * and a line here.
 */
#include "storage/storage.h"

#include <stdlib.h>
#include <string.h>

#include "storage/azure/azure.h"
#include "storage/s3/s3.h"
#include "storage/sftp/sftp.h"

storage *storage_open(const char *uri, const storage_options *o, pgd_error *err)
{
    const char *why;

    if (uri == NULL || uri[0] == '\0') {
        err_set(err, "no repository given (--repo)");
        return NULL;
    }
    if (!storage_uri_valid(uri, &why)) {
        char *shown = storage_uri_redact(uri, NULL);
        err_set(err, "invalid repository \"%s\": %s", shown, why);
        err_mark(err, PGD_ERR_USAGE);
        free(shown);
        return NULL;
    }
    if (strcmp(uri, STORAGE_NULL_URI) == 0)
        return storage_null_new();
    if (storage_uri_is_s3(uri))
        return s3_storage_open(uri, o ? o->s3 : NULL, err);
    if (storage_uri_is_azure(uri))
        return azure_storage_open(uri, o ? o->azure : NULL, err);
    if (storage_uri_is_sftp(uri))
        return sftp_storage_open(uri, o ? o->sftp : NULL, err);
    if (strncmp(uri, STORAGE_FILE_SCHEME, strlen(STORAGE_FILE_SCHEME)) == 0)
        return storage_fs_new(uri + strlen(STORAGE_FILE_SCHEME));
    return storage_fs_new(uri);
}
