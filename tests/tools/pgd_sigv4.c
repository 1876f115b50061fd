/*
 * pgd_sigv4.c - test helper: the request target and Authorization header the
 * S3 driver itself builds for an object, so a test can compare both with an
 * independent implementation (botocore). It goes through the driver's own
 * configuration, key encoding and signing (src/storage/s3/request.c), not
 * the signer alone: the target encoded and the target signed are the same
 * string only if that code makes them so.
 *
 *   pgd-sigv4 METHOD BUCKET KEY QUERY AMZ_DATE REGION ACCESS SECRET TOKEN [NAME VALUE]...
 *
 * KEY "" is the bucket itself; QUERY and TOKEN may be "". Prints the target
 * (with "?QUERY" when there is one) on one line, the Authorization value on
 * the next. The endpoint is AWS's (https://s3.REGION.amazonaws.com), path style.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3/internal.h"

#define PGD_SIGV4_FIXED_ARGS 10
#define PGD_SIGV4_EXTRA_MAX  8

static const char *pgd_sigv4_authorization(const http_header_list *h)
{
    static const char name[] = "Authorization: ";

    for (size_t i = 0; i < h->n; i++)
        if (strncmp(h->items[i], name, sizeof(name) - 1) == 0)
            return h->items[i] + sizeof(name) - 1;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *extra[2 * PGD_SIGV4_EXTRA_MAX + 1];
    char uri[512], endpoint[256];
    http_header_list h = {0};
    pgd_error err = {0};
    storage *st;
    char *target;
    const char *authz;
    int n = 0, rc = 1;

    if (argc < PGD_SIGV4_FIXED_ARGS || (argc - PGD_SIGV4_FIXED_ARGS) % 2 != 0 ||
        (argc - PGD_SIGV4_FIXED_ARGS) / 2 > PGD_SIGV4_EXTRA_MAX) {
        fprintf(stderr, "usage: pgd-sigv4 METHOD BUCKET KEY QUERY AMZ_DATE REGION ACCESS SECRET "
                        "TOKEN [NAME VALUE]...\n");
        return 2;
    }
    for (int i = PGD_SIGV4_FIXED_ARGS; i < argc; i++)
        extra[n++] = argv[i];
    extra[n] = NULL;
    snprintf(uri, sizeof(uri), "s3://%s", argv[2]);
    snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com", argv[6]);
    s3_options o = {.endpoint = endpoint,
                    .region = argv[6],
                    .access_key = argv[7],
                    .secret_key = argv[8],
                    .session_token = argv[9][0] ? argv[9] : NULL};
    if ((st = s3_storage_open(uri, &o, &err)) == NULL) {
        fprintf(stderr, "pgd-sigv4: %s\n", err.msg);
        return 1;
    }
    s3_call call = {.method = argv[1],
                    .path = argv[3][0] ? argv[3] : NULL,
                    .query = argv[4][0] ? argv[4] : NULL,
                    .extra = extra};
    target = s3_request_target((s3_storage *)st, call.path);
    if (target != NULL && s3_request_headers((s3_storage *)st, &call, target, argv[5], NULL, &h) &&
        (authz = pgd_sigv4_authorization(&h)) != NULL) {
        printf("%s%s%s\n%s\n", target, call.query ? "?" : "", call.query ? call.query : "", authz);
        rc = 0;
    }
    http_headers_free(&h);
    free(target);
    storage_free(st);
    return rc;
}
