/*
 * options_table.c - every option (its one name for the command line, the
 * environment and the config file, its default, the commands that take it,
 * its help) and the store the three sources fill (options.c,
 * options_config.c).
 */
#include "util/options_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

const opt_def opt_defs[OPT_COUNT] = {
    [OPT_REPO] = {"repo", "URI", "file:///var/lib/pgdirect", CMD_REPO_USERS, true,
                  "repository: an absolute path, file:///path, s3://bucket/prefix, "
                  "azure://container/prefix or sftp://user@host[:port]/path; its own "
                  "settings after '?': URI?s3-endpoint=URL&encryption-key-file=FILE "
                  "(repeatable: backup and wal-push write to every one, restore and "
                  "wal-fetch read from the first that has it, list, delete, verify and "
                  "check work on each)"},
    [OPT_S3_ENDPOINT] = {"s3-endpoint", "URL", NULL, CMD_REPO_USERS, false,
                         "S3 endpoint, http(s)://host[:port] (default: $AWS_ENDPOINT_URL, else "
                         "AWS)"},
    [OPT_S3_URI_STYLE] = {"s3-uri-style", "path|host", "path", CMD_REPO_USERS, false,
                          "bucket in the path (host/bucket/key) or in the host name"},
    [OPT_S3_REGION] = {"s3-region", "REGION", NULL, CMD_REPO_USERS, false,
                       "signing region (default: $AWS_REGION, else us-east-1)"},
    [OPT_S3_STORAGE_CLASS] = {"s3-storage-class", "CLASS", NULL, CMD_REPO_USERS, false,
                              "x-amz-storage-class of uploaded objects (e.g. STANDARD_IA)"},
    [OPT_S3_SSE] = {"s3-sse", "AES256|aws:kms", NULL, CMD_REPO_USERS, false,
                    "server-side encryption of uploaded objects"},
    [OPT_S3_OBJECT_LOCK] = {"s3-object-lock", "governance|compliance", NULL, CMD_REPO_USERS, false,
                            "S3 Object Lock mode of every object written (with --s3-lock-days; "
                            "the bucket must have Object Lock enabled)"},
    [OPT_S3_LOCK_DAYS] = {"s3-lock-days", "N", NULL, CMD_REPO_USERS, false,
                          "with --s3-object-lock: each object is locked for N days from when it "
                          "is written (a duration with a unit, \"90s\", \"12h\", is taken as "
                          "such); choose N above what retention keeps"},
    [OPT_S3_PART_SIZE] = {"s3-part-size", "BYTES", "64MiB", CMD_REPO_USERS, false,
                          "multipart upload part size (at least 5MiB; doubles every 1,000 parts); "
                          "Azure: the block size"},
    [OPT_S3_UPLOAD_CONCURRENCY] = {"s3-upload-concurrency", "N", "2", CMD_REPO_USERS, false,
                                   "parts (Azure: blocks) in flight per uploaded object (memory: "
                                   "(N+1) x part)"},
    [OPT_S3_RETRIES] = {"s3-retries", "N", "5", CMD_REPO_USERS, false,
                        "retries of a failed request (5xx, 429, timeouts, resets); Azure too"},
    [OPT_S3_TIMEOUT] = {"s3-timeout", "SECONDS", "30", CMD_REPO_USERS, false,
                        "a request that makes no progress for this long is retried; Azure too"},
    [OPT_DOWNLOAD_CONCURRENCY] = {"download-concurrency", "N", "4", CMD_REPO_USERS, false,
                                  "ranged GETs in flight per object read from S3"},
    [OPT_AZURE_ENDPOINT] = {"azure-endpoint", "URL", NULL, CMD_REPO_USERS, false,
                            "Azure Blob endpoint, http(s)://host[:port][/path] (Azurite: "
                            "http://127.0.0.1:10000/ACCOUNT; default: the connection string's, "
                            "else https://ACCOUNT.blob.core.windows.net)"},
    [OPT_SFTP_PRIVATE_KEY_FILE] = {"sftp-private-key-file", "FILE", NULL, CMD_REPO_USERS, false,
                                   "SSH private key for an sftp:// repository (no passphrase; "
                                   "the agent is also tried when SSH_AUTH_SOCK is set)"},
    [OPT_SFTP_KNOWN_HOSTS] = {"sftp-known-hosts", "FILE", NULL, CMD_REPO_USERS, false,
                              "known hosts file the sftp server's host key must be in (default: "
                              "~/.ssh/known_hosts)"},
    [OPT_ENCRYPTION_KEY_FILE] = {"encryption-key-file", "FILE", NULL, CMD_REPO_USERS, false,
                                 "the repository is encrypted with the key in FILE (mode 600, at "
                                 "least 32 bytes: random bytes, or a passphrase)"},
    [OPT_NEW_ENCRYPTION_KEY_FILE] = {"new-encryption-key-file", "FILE", NULL, CMD_KEY, false,
                                     "key rotate: the key file that opens the repository "
                                     "afterwards (instead of --encryption-key-file)"},
    [OPT_CONFIG] = {"config", "FILE", OPTIONS_DEFAULT_CONFIG_PATH, CMD_ALL, false,
                    "file of name = value lines, quoted as in postgresql.conf"},
    [OPT_LOG_LEVEL] = {"log-level", "debug|info|warning|error", "info", CMD_ALL, false,
                       "least important message shown"},
    [OPT_PGDATA] = {"pgdata", "DIR", NULL, CMD_BACKUP | CMD_CACHE | CMD_TUNE | CMD_LIST, false,
                    "data directory of the running cluster (default: $PGDATA; cache: the "
                    "server's data_directory; list: none, and with one, each repository's "
                    "archive backlog)"},
    [OPT_DBNAME] = {"dbname", "CONNINFO", "", CMD_BACKUP | CMD_CACHE | CMD_CHECK, false,
                    "libpq connection string; PGHOST, PGPORT, PGUSER... apply"},
    [OPT_BLOCK_COUNT] = {"block-count", "N|auto", "auto", CMD_BACKUP, false,
                         "read size in 4 KiB blocks (1..16384; auto: 256 per drive of each "
                         "tablespace's device, see pgdirect tune)"},
    [OPT_CONCURRENCY] =
        {"concurrency", "N|auto", "auto", CMD_BACKUP | CMD_RESTORE | CMD_VERIFY | CMD_DRILL, false,
         "reads (backup), partitions (restore, verify) or WAL segments (verify) in flight "
         "(1..256; auto: backup, a "
         "stream per vCPU on NVMe, per two otherwise, at least one, each 8 reads ahead (2 on a "
         "rotating disk), see pgdirect tune; restore, verify: vCPUs, at least 2)"},
    [OPT_COMPRESSION] = {"compression", "lz4|zstd|none", "lz4", CMD_BACKUP | CMD_WAL_PUSH, false,
                         "compression of partitions and WAL"},
    [OPT_COMPRESSION_LEVEL] = {"compression-level", "N", NULL, CMD_BACKUP | CMD_WAL_PUSH, false,
                               "lz4 0..12 (default 0), zstd 1..19 (default 3)"},
    [OPT_PARTITION_SIZE] = {"partition-size", "BYTES", "1GiB", CMD_BACKUP, false,
                            "uncompressed size after which a tar partition is closed"},
    [OPT_DIRECT_IO] = {"direct-io", "on|off|cache-neutral", "on", CMD_BACKUP, false,
                       "on: O_DIRECT (cache-neutral where refused); off: buffered, fills the "
                       "page cache; cache-neutral: buffered, dropping only pages it brought in"},
    [OPT_IO_ENGINE] = {"io-engine", "auto|io_uring|threads", "auto", CMD_BACKUP, false,
                       "how reads are kept in flight (auto: io_uring when the kernel allows it)"},
    [OPT_MAX_RATE] = {"max-rate", "BYTES", "0", CMD_BACKUP, false,
                      "read at most this many bytes per second (MiB suffixes; 0: no cap); the "
                      "queries are protected by --cpu-class and --io-class, not by a rate"},
    [OPT_MAX_MEMORY] = {"max-memory", "BYTES|auto", "auto", CMD_BACKUP, false,
                        "cap on read and compression buffers (auto: 5 % of RAM, at most 1GiB)"},
    [OPT_CPU_WEIGHT] = {"cpu-weight", "N", "0", CMD_BACKUP, false,
                        "run in a cgroup with this CPU weight, 1..10000 (100 = normal; 0: leave "
                        "as is)"},
    [OPT_NICE] = {"nice", "N", "0", CMD_BACKUP, false,
                  "raise the backup's nice value by N, 0..19 (unprivileged; 0: leave as is)"},
    [OPT_IO_CLASS] = {"io-class", "best-effort|idle", "idle", CMD_BACKUP, false,
                      "I/O scheduling class of the backup's reads (ioprio; idle: the database's "
                      "I/O first, best-effort: compete with it)"},
    [OPT_CPU_CLASS] = {"cpu-class", "auto|idle|normal", "auto", CMD_BACKUP, false,
                       "CPU scheduling class of the reading threads (idle: SCHED_IDLE, they run "
                       "on CPU time the database leaves idle and a waking query preempts them; "
                       "normal: compete with it; auto: one at normal priority for each vCPU the "
                       "other processes left idle as the backup began, idle for the rest; one "
                       "that then waits for a CPU more than half the time moves to idle)"},
    [OPT_DEADLINE] = {"deadline", "DURATION", NULL, CMD_BACKUP, false,
                      "finish within DURATION (\"2h\", \"45m\") whatever the load: a reading "
                      "thread per vCPU waits at normal priority, and they join when the reading "
                      "would end too late (one at a time, all at once when far behind)"},
    [OPT_CHECKPOINT] = {"checkpoint", "spread|fast", "spread", CMD_BACKUP, false,
                        "checkpoint mode of pg_backup_start"},
    [OPT_LABEL] = {"label", "TEXT", "pgdirect", CMD_BACKUP, false, "backup label"},
    [OPT_ARCHIVE_CHECK] = {"archive-check", "on|off", "on", CMD_BACKUP, false,
                           "require archive_mode and wait until the backup's WAL is in the repo"},
    [OPT_ARCHIVE_TIMEOUT] = {"archive-timeout", "SECONDS", "60",
                             CMD_BACKUP | CMD_CHECK | CMD_WAL_PUSH, false,
                             "how long to wait for WAL to reach the repository (backup: its WAL; "
                             "check: a switched segment; wal-push --archive-async: the file, "
                             "pushed in the background)"},
    [OPT_CHECKSUM_ERRORS] = {"checksum-errors", "warn|fail", "warn", CMD_BACKUP, false,
                             "pages failing their data checksum: warn (the backup succeeds), or "
                             "fail (the backup completes, is marked, and pgdirect exits 3)"},
    [OPT_NO_VERIFY_CHECKSUMS] = {"no-verify-checksums", NULL, "off", CMD_BACKUP, false,
                                 "do not verify data page checksums while reading"},
    [OPT_STANDBY_ONLY] = {"standby-only", NULL, "off", CMD_BACKUP, false,
                          "refuse to back up a primary: the server must be a hot standby"},
    [OPT_RESUME] = {"resume", NULL, "off", CMD_BACKUP, false,
                    "a full backup reuses what an interrupted full backup of this cluster stored "
                    "and can prove unchanged (its partitions read back and checked), and reads "
                    "only the rest"},
    [OPT_CONCURRENT] = {"concurrent", NULL, "off", CMD_BACKUP, false,
                        "allow a backup while another backup of the same cluster runs into the "
                        "same repository (refused by default: it would read the cluster twice "
                        "at once)"},
    [OPT_DELTA_FROM] = {"delta-from", "ID|LATEST", "LATEST", CMD_BACKUP, false,
                        "with --delta: the parent backup (LATEST: the newest); a parent that "
                        "cannot serve (damaged, another system or timeline, chain too long) "
                        "makes a full backup with a warning"},
    [OPT_DELTA_MAX_STEPS] = {"delta-max-steps", "N", "6", CMD_BACKUP, false,
                             "with --delta: a chain holds at most N deltas after its full "
                             "backup; the next --delta is taken as a full"},
    [OPT_DELTA_SUMMARY_WAIT] = {"delta-summary-wait", "SECONDS", "60", CMD_BACKUP, false,
                                "with --delta on PostgreSQL 17+: how long to wait for the WAL "
                                "summarizer to reach the backup's start (0: not at all); past "
                                "it, the delta scans every page instead"},
    [OPT_STANDBY] = {"standby", NULL, "off", CMD_RESTORE, false,
                     "restore as a standby (standby.signal instead of recovery.signal)"},
    [OPT_PRIMARY_CONNINFO] = {"primary-conninfo", "CONNINFO", NULL, CMD_RESTORE, false,
                              "with --standby: primary_conninfo of the new standby"},
    [OPT_PROGRESS] = {"progress", "auto|on|off", "auto", CMD_BACKUP | CMD_RESTORE, false,
                      "progress line (auto: when stderr is a terminal)"},
    [OPT_TARGET_DIR] = {"target-dir", "DIR", NULL, CMD_RESTORE, false,
                        "empty or absent directory to restore into (required)"},
    [OPT_TARGET_TIME] = {"target-time", "TIMESTAMP", NULL, CMD_RESTORE | CMD_DRILL, false,
                         "recover up to this time (recovery_target_time)"},
    [OPT_TARGET_LSN] = {"target-lsn", "LSN", NULL, CMD_RESTORE | CMD_DRILL, false,
                        "recover up to this WAL location (recovery_target_lsn)"},
    [OPT_TARGET_NAME] = {"target-name", "NAME", NULL, CMD_RESTORE | CMD_DRILL, false,
                         "recover up to this restore point (recovery_target_name)"},
    [OPT_TARGET_XID] = {"target-xid", "XID", NULL, CMD_RESTORE | CMD_DRILL, false,
                        "recover up to this transaction (recovery_target_xid)"},
    [OPT_TARGET_ACTION] = {"target-action", "promote|pause|shutdown", NULL, CMD_RESTORE, false,
                           "what the server does at the target (PostgreSQL default: pause)"},
    [OPT_TARGET_TIMELINE] = {"target-timeline", "latest|current|N", NULL, CMD_RESTORE | CMD_DRILL,
                             false,
                             "the timeline recovery follows (recovery_target_timeline; "
                             "PostgreSQL default: latest), checked to pass through the backup"},
    [OPT_ARCHIVE_MODE] = {"archive-mode", "off|preserve", "off", CMD_RESTORE, false,
                          "off: the restored cluster does not archive (archive_mode = off, so a "
                          "test restore never adds to this repository); preserve: as the backup "
                          "had it (a failover, a new primary)"},
    [OPT_TABLESPACE_MAP] = {"tablespace-map", "OLD=NEW", NULL, CMD_RESTORE, true,
                            "restore the tablespace at OLD into NEW (repeatable)"},
    [OPT_DB_INCLUDE] = {"db-include", "NAME", NULL, CMD_RESTORE, true,
                        "restore only this user database (repeatable); the others' relation "
                        "files become empty sparse files: drop those databases after recovery"},
    [OPT_DB_EXCLUDE] = {"db-exclude", "NAME", NULL, CMD_RESTORE, true,
                        "restore this user database's relation files as empty sparse files "
                        "(repeatable): drop it after recovery"},
    [OPT_ALLOW_EXTERNAL_LINKS] = {"allow-external-links", NULL, "off", CMD_RESTORE, false,
                                  "restore symbolic links that point outside the target "
                                  "directory (e.g. a postgresql.conf linked into /etc) as they "
                                  "are"},
    [OPT_DELTA] = {"delta", NULL, "off", CMD_BACKUP | CMD_RESTORE, false,
                   "backup: store only the pages changed since a parent backup (--delta-from); "
                   "restore: into an existing data directory of the same system (stopped): "
                   "write only what differs, remove what the backup does not have"},
    [OPT_JSON] = {"json", NULL, "off",
                  CMD_LIST | CMD_CACHE | CMD_TUNE | CMD_CHECK | CMD_VERIFY | CMD_BACKUP |
                      CMD_RESTORE | CMD_DELETE | CMD_DRILL,
                  false,
                  "machine-readable output (backup, restore, delete: one JSON object on standard "
                  "output when the command ends, with \"ok\" and, when it failed, \"error\")"},
    [OPT_DATABASE] = {"database", "NAME", NULL, CMD_CACHE, true,
                      "only this database (repeatable; default: every database)"},
    [OPT_RELATION] = {"relation", "PATTERN", NULL, CMD_CACHE, false,
                      "only relations whose name matches (* and ? wildcards)"},
    [OPT_TOP] = {"top", "N", "0", CMD_CACHE, false, "only the N largest relations (0: all)"},
    [OPT_WATCH] = {"watch", "SECONDS", NULL, CMD_CACHE, false,
                   "print totals and memory figures as CSV every SECONDS"},
    [OPT_WATCH_COUNT] = {"count", "N", "0", CMD_CACHE, false,
                         "with --watch: stop after N samples (0: until interrupted)"},
    [OPT_RETAIN_FULL] = {"retain-full", "N", NULL, CMD_DELETE, false,
                         "keep the N newest full backups and the backups that depend on them"},
    [OPT_RETAIN_SINCE] = {"retain-since", "TIME|AGE", NULL, CMD_DELETE, false,
                          "keep what restores to any point after TIME (\"2026-11-29 21:00+00\") "
                          "or AGE ago (\"14d\")"},
    [OPT_BACKUP_ID] = {"backup", "ID", NULL, CMD_DELETE, false,
                       "remove this one backup (refused if others depend on it)"},
    [OPT_WITH_DEPENDENTS] = {"with-dependents", NULL, "off", CMD_DELETE, false,
                             "with --backup: remove the backups that depend on it too"},
    [OPT_GARBAGE] = {"garbage", NULL, "off", CMD_DELETE, false,
                     "remove what killed runs left: backups without a sentinel older than "
                     "--garbage-age, unfinished uploads, temporary files"},
    [OPT_GARBAGE_AGE] = {"garbage-age", "AGE", "1d", CMD_DELETE, false,
                         "a backup claimed this long ago without a sentinel is dead (longer than "
                         "any backup runs)"},
    [OPT_TIMELINE] = {"timeline", "N", NULL, CMD_DELETE, false,
                      "remove timeline N's history file and WAL, a timeline no backup is on or "
                      "descends from (what a promoted test restore archived; refused when a "
                      "backup needs it)"},
    [OPT_DRY_RUN] = {"dry-run", NULL, "off", CMD_DELETE, false,
                     "print what would be removed, remove nothing"},
    [OPT_STRICT] = {"strict", NULL, "off", CMD_DELETE, false,
                    "exit 1 when a backup retention would remove is kept by S3 Object Lock "
                    "(default: a warning, exit 0)"},
    [OPT_ALL] = {"all", NULL, "off", CMD_VERIFY, false, "every backup in the repository"},
    [OPT_ARCHIVE_ASYNC] = {"archive-async", "on|off", "off", CMD_WAL_PUSH, false,
                           "a background pusher archives every segment PostgreSQL marks ready, "
                           "several at a time; this command waits for its record of the file"},
    [OPT_ARCHIVE_PUSH_CONCURRENCY] = {"archive-push-concurrency", "N", "4", CMD_WAL_PUSH, false,
                                      "pushes in flight in the background pusher (memory: N "
                                      "segments; 4 keeps an S3 round trip per segment off the "
                                      "critical path on 2 cores)"},
    [OPT_ARCHIVE_PUSH_QUEUE_MAX] = {"archive-push-queue-max", "BYTES", "4GiB", CMD_WAL_PUSH, false,
                                    "one repository: WAL waiting for the archive beyond which "
                                    "every call warns; several: the bound of each repository's "
                                    "queue, at which nothing more is acknowledged; nothing is "
                                    "ever dropped or acknowledged unstored"},
    [OPT_SPOOL_PATH] = {"spool-path", "DIR", NULL,
                        CMD_WAL_PUSH | CMD_WAL_FETCH | CMD_CHECK | CMD_LIST, false,
                        "records of --archive-async and files of --prefetch (default: "
                        "pgdirect-spool next to the data directory, on its file system and "
                        "writable by its owner)"},
    [OPT_PREFETCH] = {"prefetch", "N", "0", CMD_WAL_FETCH, false,
                      "keep the N segments after each one served downloaded and checked in the "
                      "spool (0..64; spool: N segments)"},
    [OPT_PREFETCH_CONCURRENCY] = {"prefetch-concurrency", "N", "4", CMD_WAL_FETCH, false,
                                  "downloads in flight for --prefetch (S3 memory: N x "
                                  "download-concurrency x 8MiB)"},
    [OPT_SCRATCH_DIR] = {"scratch-dir", "DIR", NULL, CMD_DRILL, false,
                         "where the drill restores and runs its server (must be empty or absent; "
                         "default: a new directory under $TMPDIR, else /tmp)"},
    [OPT_KEEP] = {"keep", NULL, "off", CMD_DRILL, false,
                  "keep the scratch directory (stopped) after the drill"},
    [OPT_CHECK_SQL] =
        {"check-sql", "FILE", NULL, CMD_DRILL, false,
         "statements the restored cluster must hold (each ends with ; at the end of a "
         "line): each must return true or at least one row"},
    [OPT_DRILL_MEMORY] = {"drill-memory", "BYTES", "512MiB", CMD_DRILL, false,
                          "memory cgroup bound of the scratch server and the checks (their page "
                          "cache is charged to it and reclaimed from it)"},
    [OPT_PG_BIN] = {"pg-bin", "DIR", NULL, CMD_DRILL, false,
                    "postgres and pg_ctl of the backup's major version (default: "
                    "/usr/lib/postgresql/MAJOR/bin, where Debian installs them)"},
    [OPT_METRICS_FILE] = {"metrics-file", "PATH", NULL,
                          CMD_BACKUP | CMD_WAL_PUSH | CMD_VERIFY | CMD_DRILL, false,
                          "when done, write the repository's metrics there in Prometheus' text "
                          "format, atomically (for node_exporter's textfile collector)"},
    [OPT_LOG_FORMAT] = {"log-format", "text|json", "text", CMD_ALL, false,
                        "messages as \"pgdirect: LEVEL: text\" lines, or one JSON object a line "
                        "(time, level, command, backup_id, message)"},
    [OPT_LOG_FILE] = {"log-file", "PATH", NULL, CMD_ALL, false,
                      "append every message to this file too, in --log-format"},
    [OPT_ANNOTATION] = {"annotation", "KEY=VALUE", NULL, CMD_BACKUP, true,
                        "a note kept with the backup in its sentinel, shown by list "
                        "(repeatable; pgdirect annotate changes them later)"},
    [OPT_REMOVE] = {"remove", "KEY", NULL, CMD_ANNOTATE, true,
                    "remove this annotation (repeatable)"},
    [OPT_HELP] = {"help", NULL, "off", CMD_ALL, false, "show this help"},
};

bool opt_is_of(opt_id id, unsigned command)
{
    return (opt_defs[id].commands & command) != 0;
}

const char *opt_name(opt_id id)
{
    return opt_defs[id].name;
}

int options_lookup(const char *name, size_t len)
{
    for (int i = 0; i < OPT_COUNT; i++)
        if (strlen(opt_defs[i].name) == len && strncmp(opt_defs[i].name, name, len) == 0)
            return i;
    return -1;
}

void options_store(pgd_options *opts, int id, const char *value, opt_source src)
{
    opt_value *v = &opts->v[id];

    if (v->nvalues > 0 && v->source != src) /* a stronger source already set it */
        return;
    if (v->nvalues > 0 && !opt_defs[id].repeatable) {
        free(v->values[0]);
        v->nvalues = 0;
    }
    v->values = xrealloc(v->values, (v->nvalues + 1) * sizeof(char *));
    v->values[v->nvalues] = xstrdup(value);
    v->nvalues++;
    v->source = src;
}
