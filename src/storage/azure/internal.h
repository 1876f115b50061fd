/*
 * internal.h - what the files of the Azure driver share; nothing outside
 * src/storage/azure includes it except the driver's own tests.
 *
 *   config.c   the azure:// URI, the connection string, the endpoint,
 *              credentials, and the storage object they make
 *   sign.c     Shared Key: the string to sign and the Authorization header
 *   request.c  one request with retries (storage/http's policy), and what
 *              its answer means
 *   xml.c      Azure's XML: errors, List Blobs pages, the block list
 *   writer.c   a blob written as one Put Blob, or as blocks in parallel
 *              committed with Put Block List
 *   reader.c   ranged GETs of a blob, and the existence check
 *   listing.c  List Blobs (delimiter, marker), Delete Blob
 */
#ifndef PGD_AZURE_INTERNAL_H
#define PGD_AZURE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/azure/azure.h"
#include "storage/http/http.h"
#include "storage/storage.h"
#include "util/error.h"

/*
 * The REST API version every request asks for (x-ms-version), named here
 * only: 2021-12-02 allows blocks and Put Blob bodies of up to 4000 MiB and
 * 50,000 blocks a blob, and Azurite 3.37 serves it.
 */
#define AZURE_API_VERSION "2021-12-02"

#define AZURE_BLOCK_MIN         (1ULL << 20)
#define AZURE_BLOCK_DEFAULT     (64ULL << 20)
#define AZURE_BLOCK_MAX         (4000ULL << 20) /* Azure's largest block */
#define AZURE_BLOCKS_MAX        50000           /* Azure's limit of blocks a blob */
#define AZURE_BLOCKS_PER_SIZE   5000 /* block size doubles after every this many blocks */
#define AZURE_RETRIES_DEFAULT   5
#define AZURE_TIMEOUT_DEFAULT   30
#define AZURE_UPLOADS_DEFAULT   2
#define AZURE_RANGE_SIZE        (8 * 1024 * 1024)
#define AZURE_CONTAINER_MIN     3
#define AZURE_CONTAINER_MAX     63
#define AZURE_CODE_MAX          64
#define AZURE_MESSAGE_MAX       256
#define AZURE_DATE_LEN          29  /* "Sun, 06 Dec 2026 06:10:05 GMT" */
#define AZURE_KEY_MAX           128 /* decoded account key bytes (Azure's are 64) */
#define AZURE_DEFAULT_SUFFIX    "core.windows.net"
#define AZURE_LIST_PAGE_DEFAULT 5000 /* Azure's largest maxresults */

/* ---- config.c ---- */

/* Container and prefix of "azure://container/prefix"; the prefix loses leading and trailing '/'. */
bool azure_config_parse_uri(const char *uri, char **container, char **prefix, pgd_error *err);

/* What a connection string says; every field malloc'd or NULL. */
typedef struct azure_conn {
    char *account, *key, *sas, *blob_endpoint, *protocol, *suffix;
} azure_conn;

/*
 * "Name=value;Name=value": AccountName, AccountKey, SharedAccessSignature,
 * BlobEndpoint, DefaultEndpointsProtocol, EndpointSuffix (others ignored).
 * A malformed part is refused without echoing the string (it holds a key).
 */
bool azure_config_parse_connection_string(const char *text, azure_conn *out, pgd_error *err);
void azure_config_conn_free(azure_conn *c);

/* ---- the storage ---- */

typedef struct azure_storage {
    storage base;
    char *container, *prefix;
    char *endpoint;      /* "http://127.0.0.1:10000/acct" or "https://acct.blob.core.windows.net" */
    char *endpoint_path; /* the endpoint's path ("/acct" or ""): signed with the resource */
    char *account;
    unsigned char key[AZURE_KEY_MAX];
    size_t key_len; /* 0: no Shared Key (a SAS, or nothing) */
    char *sas;      /* the SAS token's query, without '?'; NULL without */
    uint64_t block_size;
    unsigned upload_concurrency, retries;
    unsigned list_page; /* maxresults of List Blobs (tests lower it to see pages) */
    long timeout_s;
    http_pool pool; /* idle connections, reused across requests */
} azure_storage;

/* ---- sign.c ---- */

typedef struct azure_sign_input {
    const char *method;
    uint64_t content_length;
    const char *const *headers; /* "name", "value" pairs, lower-case names, NULL-terminated */
    const char *account;
    const char *resource_path; /* the URL's path as sent (encoded): "/acct/container/key" */
    const char *const *params; /* "name", "value" pairs (decoded), NULL-terminated */
} azure_sign_input;

/* Shared Key's string to sign (version 2015-02-21 and later), malloc'd. */
char *azure_sign_string(const azure_sign_input *in);

/* "SharedKey ACCOUNT:BASE64(HMAC-SHA256(key, string))", malloc'd; NULL when libcrypto made none. */
char *azure_sign_authorization(const char *account, const unsigned char *key, size_t key_len,
                               const char *string_to_sign);

/* RFC 4648 base64 with padding, malloc'd. */
char *azure_sign_base64(const unsigned char *data, size_t len);

/* Base64 decoded into out (at most cap bytes); false on a character or length that is wrong. */
bool azure_sign_base64_decode(const char *text, unsigned char *out, size_t cap, size_t *len);

/* Percent-encoding of a path (keep_slash) or a query value, as Azure's SDKs do. */
char *azure_sign_uri_encode(const char *s, bool keep_slash);

/* ---- request.c ---- */

typedef struct azure_call {
    const char *method;
    const char *path;          /* object path under the prefix, or NULL for the container */
    const char *what;          /* for messages when path is NULL */
    const char *const *params; /* query "name", "value" pairs (not encoded), NULL-terminated */
    const void *body;
    size_t body_len;
    const char *const *headers; /* more "name", "value" pairs (lower-case), NULL-terminated */
    void *into;                 /* receive the body here (ranged GET) */
    size_t into_cap;
    bool expect_missing;  /* a 404 for a missing blob is an answer, not an error */
    bool expect_no_range; /* a 416 (a range of an empty blob) too */
    bool no_replace;      /* If-None-Match: *: a 409 or 412 means "already exists" */
} azure_call;

typedef struct azure_answer {
    http_response http;
    bool missing; /* expect_missing, and the blob is missing (the container exists) */
} azure_answer;

/*
 * One signed request with retries of what may pass (storage/http's policy).
 * False on failure with one line naming the operation, the object and
 * Azure's error code, marked transient when retries ran out on something
 * that may pass, PGD_ERR_EXISTS for a refused no_replace write. answer
 * must be freed with azure_answer_free whatever the outcome.
 */
bool azure_request(azure_storage *s, const azure_call *call, azure_answer *answer, pgd_error *err);
void azure_answer_free(azure_answer *a);

/* The blob name of `path` under the prefix, malloc'd. */
char *azure_request_key(const azure_storage *s, const char *path);

/*
 * The headers of a request as sent (x-ms-date, x-ms-version, the call's,
 * Authorization when the storage has a key), dated `date` (RFC 1123).
 * Exposed for the unit test of the signature.
 */
bool azure_request_headers(const azure_storage *s, const azure_call *call, const char *date,
                           http_header_list *out);

/* The URL of a call: endpoint, container, encoded key, query (and the SAS), malloc'd. */
char *azure_request_url(const azure_storage *s, const azure_call *call);

/* ---- xml.c ---- */

typedef struct azure_xml_fault {
    char code[AZURE_CODE_MAX];       /* "BlobNotFound"; "" when the body held none */
    char message[AZURE_MESSAGE_MAX]; /* one line */
} azure_xml_fault;

/* A body whose root is <Error>: its Code and Message. false when it is not one. */
bool azure_xml_error(const char *body, size_t len, azure_xml_fault *fault);

/* A blob name or a prefix of a listing page (storage.h). */
typedef storage_key azure_xml_entry;

typedef struct azure_xml_listing {
    azure_xml_entry *entries;
    size_t n;
    char *next_marker; /* NULL or "" when the listing is complete */
} azure_xml_listing;

/* List Blobs: blobs with their Content-Length, BlobPrefix entries, NextMarker. */
bool azure_xml_listing_parse(const char *body, size_t len, azure_xml_listing *out, pgd_error *err);
void azure_xml_listing_free(azure_xml_listing *l);

/* The Put Block List body for block ids ids[0..n) (base64, need no escaping), malloc'd. */
char *azure_xml_block_list(char *const *ids, size_t n, size_t *len);

/* ---- writer.c, reader.c, listing.c: the storage operations ---- */

/* Size of block `number` (1-based): block_size, doubled every AZURE_BLOCKS_PER_SIZE blocks. */
uint64_t azure_writer_block_size(uint64_t block_size, unsigned number);

/* A block id: base64 of "<writer id>-<number, 6 digits>", the same length for every block. */
char *azure_writer_block_id(const char *writer_id, unsigned number);

out_stream *azure_writer_open(storage *st, const char *path, unsigned flags, pgd_error *err);
in_stream *azure_reader_open(storage *st, const char *path, bool *missing, pgd_error *err);
bool azure_reader_exists(storage *st, const char *path, bool *exists, pgd_error *err);
bool azure_listing_list(storage *st, const char *dir, storage_list_cb cb, void *arg,
                        pgd_error *err);
bool azure_listing_remove(storage *st, const char *path, pgd_error *err);

/* "prefix/dir/" (or "" for the whole container): what a listing of dir asks for; malloc'd. */
char *azure_listing_prefix(const azure_storage *s, const char *dir);

/*
 * One List Blobs page handed to the callback, names relative to
 * list_prefix; an entry not directly under it is an error.
 */
bool azure_listing_deliver(const azure_storage *s, const char *dir, const char *list_prefix,
                           const azure_xml_listing *page, storage_list_cb cb, void *arg,
                           pgd_error *err);

#endif
