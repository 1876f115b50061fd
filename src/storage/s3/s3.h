/*
 * s3.h - the repository in any S3-compatible object store: the S3 back end
 * of storage.h and its settings.
 *
 * The generic interface knows nothing of these settings: src/cmd/common.c
 * fills an s3_options from the command line (and the AWS_* variables fill
 * what it leaves empty), and storage_open forwards it untouched to
 * s3_storage_open when the repository is an s3:// URI.
 */
#ifndef PGD_S3_H
#define PGD_S3_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"
#include "util/error.h"

/* Zero or NULL means the default (or the AWS_* variable). */
typedef struct s3_options {
    const char *endpoint; /* http(s)://host[:port]; default AWS_ENDPOINT_URL or AWS */
    bool host_style;      /* virtual-hosted bucket.host instead of host/bucket */
    const char *region;   /* default AWS_REGION, AWS_DEFAULT_REGION, us-east-1 */
    const char *access_key, *secret_key, *session_token; /* default AWS_* */
    const char *storage_class;                           /* x-amz-storage-class */
    const char *sse;                                     /* x-amz-server-side-encryption */
    uint64_t part_size;
    unsigned upload_concurrency;
    unsigned download_concurrency;
    unsigned retries; /* S3_OPTIONS_NO_RETRIES for none */
    long timeout_s;
    /*
     * S3 Object Lock: every object written gets x-amz-object-lock-mode (this:
     * "GOVERNANCE" or "COMPLIANCE") and a retain-until date lock_seconds after
     * it is created. NULL: none (the bucket's default retention, if any,
     * applies).
     */
    const char *object_lock;
    int64_t lock_seconds;
} s3_options;

#define S3_OPTIONS_NO_RETRIES ((unsigned)-1)

/* What the options may ask for (S3's own limits for parts). */
#define S3_OPTIONS_PART_MIN        (5ULL << 20) /* S3's smallest part */
#define S3_OPTIONS_PART_MAX        (5ULL << 30) /* S3's largest part */
#define S3_OPTIONS_CONCURRENCY_MAX 64
#define S3_OPTIONS_RETRIES_MAX     100
#define S3_OPTIONS_TIMEOUT_MAX_S   3600

/* The region when neither --s3-region nor AWS_REGION nor AWS_DEFAULT_REGION gives one. */
#define S3_REGION_DEFAULT "us-east-1"

/* "s3://bucket/prefix"; o may be NULL for every default. */
storage *s3_storage_open(const char *uri, const s3_options *o, pgd_error *err);

/*
 * Where an open S3 repository sends its requests and the region it signs
 * for, as resolved from the options and AWS_* (for a command line that must
 * reach it the same way). False for a repository of another driver.
 */
bool s3_storage_where(const storage *repo, const char **endpoint_url, const char **region);

/* A bucket's Object Lock configuration (GetObjectLockConfiguration). */
typedef struct s3_lock_config {
    bool enabled;  /* ObjectLockEnabled */
    char mode[16]; /* the default retention's mode, "" when it has none */
    unsigned days; /* its period in days (Years converted at 365 days); 0 when none */
} s3_lock_config;

/*
 * The Object Lock configuration of an S3 repository's bucket: a bucket
 * without one is a result (enabled false), not an error. False for a
 * repository of another driver (err says so) or when the bucket does not
 * answer.
 */
bool s3_storage_lock_config(storage *repo, s3_lock_config *out, pgd_error *err);

#endif
