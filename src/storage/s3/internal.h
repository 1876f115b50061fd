/*
 * internal.h - what the files of the S3 driver share; nothing outside
 * src/storage/s3 includes it except the driver's own tests and tools.
 *
 *   config.c   the s3:// URI, the endpoint, credentials and settings
 *   request.c  one signed request with retries, and what its answer means
 *   xml.c      S3's XML answers, read with libxml2
 *   writer.c   objects written as one PUT or a multipart upload
 *   reader.c   HEAD and ranged GETs, several in flight
 *   listing.c  ListObjectsV2, DELETE and DeleteObjects
 *   uploads.c  the multipart uploads killed writers left, aborted
 */
#ifndef PGD_S3_INTERNAL_H
#define PGD_S3_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/http/http.h"
#include "storage/s3/s3.h"
#include "storage/storage.h"
#include "util/error.h"

#define S3_PART_MIN          (5ULL * 1024 * 1024) /* S3's smallest part but the last */
#define S3_PART_DEFAULT      (64ULL * 1024 * 1024)
#define S3_PART_MAX          (5ULL * 1024 * 1024 * 1024) /* S3's largest part */
#define S3_PARTS_MAX         10000                       /* S3's limit per multipart upload */
#define S3_PARTS_PER_SIZE    1000 /* part size doubles after every this many parts */
#define S3_RETRIES_DEFAULT   5
#define S3_TIMEOUT_DEFAULT   30
#define S3_UPLOADS_DEFAULT   2
#define S3_DOWNLOADS_DEFAULT 4
#define S3_RANGE_SIZE        (8 * 1024 * 1024)
#define S3_HTTP_NO_RANGE     416  /* Range Not Satisfiable: a range of an empty object */
#define S3_DELETE_BATCH      1000 /* S3's limit of keys per DeleteObjects */
#define S3_BUCKET_MIN        3
#define S3_BUCKET_MAX        63
#define S3_CODE_MAX          64  /* "SignatureDoesNotMatch" */
#define S3_MESSAGE_MAX       256 /* the server's sentence, cut */
#define S3_AMZ_DATE_LEN      16  /* "20261129T215959Z" */
#define S3_UNSIGNED_PAYLOAD  "UNSIGNED-PAYLOAD"

/* ---- config.c ---- */

typedef struct s3_endpoint {
    char *scheme_host; /* "https://bucket.host:port" or "http://127.0.0.1:9000": URLs start here */
    char *host;        /* the Host header */
} s3_endpoint;

/* Bucket and prefix of "s3://bucket/prefix"; the prefix loses leading and trailing '/'. */
bool s3_config_parse_uri(const char *uri, char **bucket, char **prefix, pgd_error *err);

/*
 * "http(s)://host[:port][/]" -> where requests go. Refuses credentials in
 * the URL (without echoing them), a path, query or fragment, and a
 * virtual-hosted style (host_style) with an IP address.
 */
bool s3_config_parse_endpoint(const char *endpoint, bool host_style, const char *bucket,
                              s3_endpoint *out, pgd_error *err);
void s3_config_endpoint_free(s3_endpoint *e);

/* ---- the storage ---- */

typedef struct s3_storage {
    storage base;
    char *bucket, *prefix; /* prefix without leading/trailing '/' */
    s3_endpoint endpoint;
    char *endpoint_url; /* as given, or AWS_ENDPOINT_URL, or AWS's for the region */
    bool host_style;
    char *region, *access_key, *secret_key, *session_token, *storage_class, *sse;
    uint64_t part_size;
    unsigned upload_concurrency, download_concurrency, retries;
    long timeout_s;
    char *lock_mode;      /* x-amz-object-lock-mode of every object written, or NULL */
    int64_t lock_seconds; /* its retain-until date: this long after the object's creation */
    pthread_mutex_t lock; /* bucket_known, versioned */
    http_pool pool;       /* idle connections, reused across requests */
    bool bucket_known;    /* the bucket was seen to exist: a 404 without a code is a missing key */
    unsigned list_page;   /* max-keys of a listing page; 0: the server's (tests lower it) */
    int versioned;        /* versions under Object Lock: 1, not: -1, not asked yet: 0 */
} s3_storage;

/* ---- request.c ---- */

typedef struct s3_call {
    const char *method;
    const char *path;  /* object path under the prefix, or NULL for the bucket */
    const char *what;  /* for messages when path is NULL: "backups/" for its listing */
    const char *query; /* raw query, already encoded, or NULL */
    const void *body;
    size_t body_len;
    const char *const *extra; /* more "name", "value" pairs, NULL-terminated */
    void *into;               /* receive the body here (ranged GET) */
    size_t into_cap;
    bool expect_missing;     /* a 404 for a missing object is an answer, not an error */
    bool expect_no_range;    /* a 416 (the range begins past the end: an empty object) too */
    bool no_replace;         /* If-None-Match: a 412 or 409 means "already exists" */
    const char *absent_code; /* a 404 with this S3 error code is an answer: answer->missing */
} s3_call;

typedef struct s3_answer {
    http_response http;
    bool missing; /* expect_missing, and the object is missing (the bucket exists) */
} s3_answer;

/*
 * One signed request with retries of what may pass (5xx, 429, timeouts,
 * resets, refused connections). Returns false on failure with a message
 * naming the operation, the object and the S3 error code and message,
 * marked transient when retries ran out on something that may pass.
 * answer must be freed with s3_answer_free whatever the outcome.
 */
bool s3_request(s3_storage *s, const s3_call *call, s3_answer *answer, pgd_error *err);
void s3_answer_free(s3_answer *a);

/* The key of `path` under the prefix, malloc'd. */
char *s3_request_key(const s3_storage *s, const char *path);

/* The request target as sent and signed: "/bucket/enc(key)" (path style) or "/enc(key)". */
char *s3_request_target(const s3_storage *s, const char *path);

/*
 * The headers of a request, Authorization last, signed at amz_date
 * ("YYYYMMDDTHHMMSSZ"); md5 is the body's Content-MD5 or NULL.
 * Exposed for tests/tools/pgd_sigv4.c, which compares it with botocore.
 */
bool s3_request_headers(const s3_storage *s, const s3_call *call, const char *target,
                        const char *amz_date, const char *md5, http_header_list *out);

#define S3_MD5_B64_LEN 25 /* base64 of 16 bytes (24 characters), NUL included */

/* The Content-MD5 of a body: base64 (RFC 4648, padded) of its MD5; false when libcrypto made none.
 */
bool s3_request_md5_base64(const void *data, size_t len, char out[S3_MD5_B64_LEN]);

/* ---- xml.c ---- */

typedef struct s3_xml_fault {
    char code[S3_CODE_MAX];       /* "NoSuchBucket"; "" when the body held none */
    char message[S3_MESSAGE_MAX]; /* control characters replaced: one line */
} s3_xml_fault;

/* A body whose root is <Error>: its Code and Message. false when it is not one. */
bool s3_xml_error(const char *body, size_t len, s3_xml_fault *fault);

/* ObjectLockConfiguration: enabled, the default retention's mode and days. */
bool s3_xml_lock_config(const char *body, size_t len, s3_lock_config *out, pgd_error *err);

/* InitiateMultipartUploadResult's UploadId, malloc'd. */
bool s3_xml_upload_id(const char *body, size_t len, char **upload_id, pgd_error *err);

/*
 * CompleteMultipartUpload answers 200 and may still have failed: true only for
 * a CompleteMultipartUploadResult (or moto's ...Response); an <Error> fills
 * fault; anything else is err.
 */
bool s3_xml_complete(const char *body, size_t len, s3_xml_fault *fault, pgd_error *err);

/* A key or a common prefix of a listing page (storage.h). */
typedef storage_key s3_xml_entry;

typedef struct s3_xml_listing {
    s3_xml_entry *entries;
    size_t n;
    bool truncated;
    char *next_token; /* NULL when none */
} s3_xml_listing;

/* ListObjectsV2: keys with sizes, common prefixes, IsTruncated, NextContinuationToken. */
bool s3_xml_listing_parse(const char *body, size_t len, s3_xml_listing *out, pgd_error *err);
void s3_xml_listing_free(s3_xml_listing *l);

typedef struct s3_xml_delete_failure {
    char *key;
    s3_xml_fault fault;
} s3_xml_delete_failure;

/* DeleteResult: every per-key <Error>. A body whose root is <Error> is err. */
bool s3_xml_delete_result(const char *body, size_t len, s3_xml_delete_failure **failures, size_t *n,
                          pgd_error *err);
void s3_xml_delete_failures_free(s3_xml_delete_failure *f, size_t n);

/* One version (or delete marker) of a key: ListObjectVersions. */
typedef struct s3_xml_version {
    char *key;
    char *version_id;
} s3_xml_version;

typedef struct s3_xml_versions {
    s3_xml_version *items;
    size_t n;
    bool truncated;
    char *next_key_marker, *next_version_id_marker; /* NULL when none */
} s3_xml_versions;

/* ListVersionsResult: every Version and DeleteMarker, IsTruncated and where it continues. */
bool s3_xml_versions_parse(const char *body, size_t len, s3_xml_versions *out, pgd_error *err);
void s3_xml_versions_free(s3_xml_versions *v);

/* VersioningConfiguration: does the bucket keep versions (Status Enabled or Suspended)? */
bool s3_xml_versioning(const char *body, size_t len, bool *versioned, pgd_error *err);

typedef struct s3_xml_upload {
    char *key;
    char *upload_id;
    int64_t initiated; /* seconds since the epoch */
} s3_xml_upload;

typedef struct s3_xml_uploads {
    s3_xml_upload *items;
    size_t n;
    bool truncated;
    char *next_key_marker, *next_upload_id_marker; /* NULL when none */
} s3_xml_uploads;

/* ListMultipartUploads: each upload's key, id and start; where the next page starts. */
bool s3_xml_uploads_parse(const char *body, size_t len, s3_xml_uploads *out, pgd_error *err);
void s3_xml_uploads_free(s3_xml_uploads *u);

/* ListParts: the latest LastModified of the page (0 without parts), and where the next starts. */
bool s3_xml_parts_parse(const char *body, size_t len, int64_t *latest, bool *truncated,
                        char **next_marker, pgd_error *err);

/* "2026-11-30T18:23:01.000Z" -> seconds since the epoch. */
bool s3_xml_time(const char *text, int64_t *out);

/* Text escaped for an XML element (& < > " '), malloc'd. */
char *s3_xml_escape(const char *text);

/* ---- writer.c, reader.c, listing.c: the storage operations ---- */

/*
 * Size of part `number` (1-based): part_size, doubled every S3_PARTS_PER_SIZE
 * parts (so no object needs more than S3_PARTS_MAX), never above S3_PART_MAX.
 */
uint64_t s3_writer_part_size(uint64_t part_size, unsigned number);

out_stream *s3_writer_open(storage *st, const char *path, unsigned flags, pgd_error *err);
in_stream *s3_reader_open(storage *st, const char *path, bool *missing, pgd_error *err);
bool s3_reader_exists(storage *st, const char *path, bool *exists, pgd_error *err);
/* storage_ops.retained_until: a HEAD's x-amz-object-lock-retain-until-date. */
bool s3_reader_retained_until(storage *st, const char *path, int64_t *until, pgd_error *err);
bool s3_listing_list(storage *st, const char *dir, storage_list_cb cb, void *arg, pgd_error *err);
bool s3_listing_remove(storage *st, const char *path, pgd_error *err);
bool s3_listing_remove_many(storage *st, const char *const *paths, size_t n, pgd_error *err);

/*
 * One ListObjectsV2 page handed to the callback, names relative to
 * list_prefix ("prefix/dir/"); an entry not directly under it is an error.
 */
bool s3_listing_deliver(const s3_storage *s, const char *dir, const char *list_prefix,
                        const s3_xml_listing *page, storage_list_cb cb, void *arg, pgd_error *err);

/* "prefix/dir/" (or "" for the whole bucket): what a listing of dir asks for; malloc'd. */
char *s3_listing_prefix(const s3_storage *s, const char *dir);

/*
 * uploads.c: abort the multipart uploads under dir (recursively) that nothing
 * has written to for older_than_s seconds: what killed writers leave.
 */
bool s3_uploads_remove_stale(storage *st, const char *dir, int64_t older_than_s, pgd_error *err);

/* The DeleteObjects body for keys[0..n), keys escaped; malloc'd (NULL: open_memstream failed). */
char *s3_listing_delete_body(const s3_storage *s, const char *const *paths, size_t n, size_t *len);

#endif
