/*
 * azure.h - the repository in Azure Blob Storage (or Azurite): the Azure
 * back end of storage.h and its settings.
 *
 * "azure://CONTAINER/PREFIX". The account and its credentials come from the
 * variables Azure's own tools read: AZURE_STORAGE_ACCOUNT with
 * AZURE_STORAGE_KEY (Shared Key) or AZURE_STORAGE_SAS_TOKEN, or
 * AZURE_STORAGE_CONNECTION_STRING (AccountName, AccountKey or
 * SharedAccessSignature, BlobEndpoint or DefaultEndpointsProtocol and
 * EndpointSuffix). src/cmd/common.c fills an azure_options from the command
 * line, and storage_open forwards it untouched.
 */
#ifndef PGD_AZURE_H
#define PGD_AZURE_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"
#include "util/error.h"

/* Zero or NULL means the default. */
typedef struct azure_options {
    /* http(s)://host[:port][/path]; default the connection string's, else
     * https://ACCOUNT.blob.core.windows.net */
    const char *endpoint;
    uint64_t block_size;
    unsigned upload_concurrency;
    unsigned retries; /* AZURE_OPTIONS_NO_RETRIES for none */
    long timeout_s;
} azure_options;

#define AZURE_OPTIONS_NO_RETRIES ((unsigned)-1)

/* "azure://container/prefix"; o may be NULL for every default. */
storage *azure_storage_open(const char *uri, const azure_options *o, pgd_error *err);

/*
 * The endpoint an open Azure repository sends its requests to, as resolved
 * (for a restore_command that must reach it the same way). False for a
 * repository of another driver.
 */
bool azure_storage_where(const storage *repo, const char **endpoint_url);

#endif
