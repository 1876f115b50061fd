/*
 * pgd_sigv4.c - test helper: print the Authorization header pgdirect's
 * SigV4 code computes for a request, so a test can compare it with an
 * independent implementation (botocore).
 *
 *   pgd-sigv4 METHOD PATH QUERY AMZ_DATE PAYLOAD_HASH REGION ACCESS SECRET [NAME VALUE]...
 *
 * QUERY may be "" (none). Host and x-amz-date must be among the headers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "storage/sigv4.h"

int main(int argc, char **argv)
{
    sigv4_header headers[32];
    size_t n = 0;
    char *authz;

    if (argc < 9 || (argc - 9) % 2 != 0 || (argc - 9) / 2 > 32) {
        fprintf(stderr, "usage: pgd-sigv4 METHOD PATH QUERY AMZ_DATE PAYLOAD_HASH REGION ACCESS "
                        "SECRET [NAME VALUE]...\n");
        return 2;
    }
    for (int i = 9; i < argc; i += 2)
        headers[n++] = (sigv4_header){argv[i], argv[i + 1]};
    sigv4_request r = {argv[1], argv[2], argv[3], headers, n, argv[5], true};
    sigv4_credentials c = {argv[7], argv[8], argv[6], "s3"};
    authz = sigv4_authorization(&r, &c, argv[4]);
    if (authz == NULL)
        return 1;
    printf("%s\n", authz);
    free(authz);
    return 0;
}
