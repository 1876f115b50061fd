/*
 * sigv4.h - AWS Signature Version 4, written against AWS's published test
 * suite (tests/unit/test_sigv4.c runs every case in tests/data/sigv4)
 * with OpenSSL's HMAC and SHA-256.
 *
 *   canonical request = METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n HASH
 *   string to sign    = AWS4-HMAC-SHA256 \n DATE \n SCOPE \n hex(sha256(creq))
 *   signing key       = HMAC chain of "AWS4"+secret, date, region, service,
 *                       "aws4_request"
 *
 * S3 differs from other services: its paths are neither normalised nor
 * encoded a second time (the canonical URI is the path exactly as sent,
 * each segment encoded once by sigv4_uri_encode), and it signs
 * x-amz-content-sha256.
 */
#ifndef PGD_SIGV4_H
#define PGD_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define SIGV4_HEX_LEN 64

typedef struct sigv4_header {
    const char *name;
    const char *value;
} sigv4_header;

typedef struct sigv4_request {
    const char *method;
    /*
     * S3 (s3 = true): the path as sent on the wire, already encoded once
     * ("/bucket/key%20name"); it is signed verbatim, so the signature covers
     * exactly what the server receives. Other services: the path before
     * encoding; it is normalised and encoded here, as their suite expects.
     */
    const char *path;
    const char *query;           /* raw, without '?'; NULL or "" when none */
    const sigv4_header *headers; /* every header to sign (host and x-amz-date included) */
    size_t nheaders;
    const char *payload_hash; /* hex SHA-256 of the body */
    bool s3;                  /* S3 rules for the path (see path) */
} sigv4_request;

typedef struct sigv4_credentials {
    const char *access_key;
    const char *secret_key;
    const char *region;
    const char *service;
} sigv4_credentials;

/*
 * Each returns a malloc'd string, or NULL (open_memstream failed, or libcrypto made no digest).
 */
char *sigv4_canonical_request(const sigv4_request *r, char **signed_headers);
char *sigv4_string_to_sign(const char *amz_date, const sigv4_credentials *c, const char *creq);
/* False (out empty) when it could not be made: libcrypto made no digest. */
bool sigv4_signature(const sigv4_credentials *c, const char *amz_date, const char *sts,
                     char out[SIGV4_HEX_LEN + 1]);
/* The whole Authorization header value. */
char *sigv4_authorization(const sigv4_request *r, const sigv4_credentials *c, const char *amz_date);

/* hex(SHA-256(data)); false when libcrypto made no digest (util/digest.h) */
bool sigv4_sha256_hex(const void *data, size_t len, char out[SIGV4_HEX_LEN + 1]);
/* RFC 3986 percent-encoding of everything but unreserved characters (and '/' if keep_slash). */
char *sigv4_uri_encode(const char *s, bool keep_slash);

#endif
