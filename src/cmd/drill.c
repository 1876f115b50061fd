/*
 * drill.c - `pgdirect drill [ID|LATEST]`: prove that a backup restores. Restore it into a scratch
 * directory, start the same PostgreSQL major version on it (Unix socket only, a port nobody
 * uses), let it recover to the end of the archive or to --target-*, then check it: the same
 * system, the target reached, amcheck over every relation, every page's data checksum, the
 * DBA's own statements (--check-sql). Stop it and remove the scratch directory (--keep keeps it).
 *
 * Exit status: 0 everything held; EXIT_DAMAGED (3) something is wrong with the data (each
 * problem named); 1 the drill itself could not run (no server program, no port, disk full);
 * 2 a usage error. It never touches the production cluster: the scratch server listens on no
 * TCP address, its socket is in the scratch directory, tablespaces are restored under it too,
 * and the restored cluster does not archive.
 *
 * Steps, each a module:
 *   restore   this same program's `restore --json` into SCRATCH/data, run as a child, so that a
 *             drill restores exactly as a restore does (backup choice, WAL, recovery settings)
 *   server    pg/scratch_server.h, in a bounded memory cgroup (io/mem_cgroup.h, --drill-memory)
 *             with the checks, so that its page cache is charged to it and reclaimed from it
 *             (the restore before it drops what it writes from the page cache itself)
 *   checks    pg/cluster_check.h (identity, amcheck, --check-sql) on the running server,
 *             pg/checksum_scan.h on the stopped one
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "io/mem_cgroup.h"
#include "pg/checksum_scan.h"
#include "pg/cluster_check.h"
#include "pg/lsn.h"
#include "pg/pq_api.h"
#include "pg/scratch_server.h"
#include "repo/backup_info.h"
#include "repo/backup_read.h"
#include "repo/drill_record.h"
#include "repo/manifest.h"
#include "restore/recovery_target.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/process.h"
#include "util/progress.h"
#include "util/text.h"
#include "util/units.h"
#include "util/xmalloc.h"

#define DRILL_MEMORY_MIN     (64ULL << 20)
#define DRILL_MEMORY_MAX     (1ULL << 50)
#define DRILL_SHARED_BUFFERS (128ULL << 20) /* at most; a quarter of --drill-memory below that */
#define DRILL_CHECK_SQL_MAX  (1 << 20)
#define DRILL_SOCKET_DIR_MAX 90 /* sun_path is 108 bytes: "/.s.PGSQL.NNNNN.lock" must fit */
#define DRILL_DEFAULT_PORT   5432
#define DRILL_PG_BIN_DEFAULT "/usr/lib/postgresql/%d/bin"
#define DRILL_LOG_TAIL       8 /* lines of the scratch server's log shown when the drill failed */
#define DRILL_SERVER_USER    "postgres" /* run as root: who runs the scratch server */
#define DRILL_SCRATCH_PREFIX "pgdirect-drill-"
/* in the scratch directory: which process made it, so that the next drill can tell it is stale */
#define DRILL_MARKER ".pgdirect-drill"

/*
 * The processes a signal is passed on to (interrupt.h's hook, async-signal-safe): the restore
 * child, which removes what it wrote and exits, and the scratch server, which shuts down fast
 * so that checks running on it end at once; the drill then stops, removes its scratch
 * directory and ends by the signal.
 */
static volatile pid_t drill_child, drill_server;

static void drill_on_signal(void)
{
    if (drill_child > 0)
        kill(drill_child, SIGTERM);
    if (drill_server > 0)
        kill(drill_server, SIGINT);
}

static const command_help drill_help = {
    CMD_DRILL, "usage: pgdirect drill [ID|LATEST] [OPTIONS]",
    "Prove that a backup restores: restore it into a scratch directory, start PostgreSQL of its\n"
    "major version on it (listening on a Unix socket in that directory only, on a port no\n"
    "server uses), recover to the end of the archive or to --target-*, and check it: the same\n"
    "system identifier, the recovery target reached, amcheck (verify_heapam and bt_index_check\n"
    "with heapallindexed, as pg_amcheck --heapallindexed) over every relation of every\n"
    "database, the data checksum of every page when the cluster has them, and each statement\n"
    "of --check-sql (it must return true or at least one row). Then the server is stopped and\n"
    "the scratch directory removed (--keep keeps it).\n"
    "\n"
    "The server and the checks run in a memory cgroup bounded by --drill-memory, so their page\n"
    "cache is reclaimed from them and not from the production cluster beside them; where no\n"
    "cgroup can be made (not root, no memory controller) the drill says so and goes on. The\n"
    "restore itself leaves the page cache as it found it.\n"
    "\n"
    "One line sums it up (--json: one object): restore seconds, replay seconds and WAL\n"
    "replayed, the time to consistency (restore plus recovery until the server accepts\n"
    "connections: the measured recovery time objective), relations and pages checked, and each\n"
    "problem. Exit 0 when everything held, 3 when something is wrong with the data, 1 when the\n"
    "drill could not run. Run as root, the scratch server runs as the scratch directory's owner,\n"
    "or as postgres when root owns it."};

typedef struct drill_settings {
    const char *id;
    const char *scratch; /* --scratch-dir or NULL */
    bool keep, json;
    char *check_sql; /* the file's text, or NULL */
    const char *check_sql_path;
    uint64_t memory;
    const char *pg_bin;
    bool target; /* a --target-* was given */
} drill_settings;

typedef struct drill_run {
    const drill_settings *s;
    const pgd_options *opts;
    storage *repo;
    backup_info bi;
    char scratch[PATH_MAX];
    char data[PATH_MAX];
    bool made_scratch; /* created by the drill (else it was there, empty) */
    bool switch_user;
    uid_t uid;
    gid_t gid;
    mem_cgroup cg;
    scratch_server server;
    cluster_problems problems;
    cluster_facts facts;
    cluster_amcheck amcheck;
    checksum_scan_result sums;
    size_t checks_run;
    uint64_t wal_replayed;
    double restore_s, consistent_s, replay_s, checks_s;
    bool checksums_scanned;
} drill_run;

static bool drill_read_check_sql(const char *path, char **text, pgd_error *err)
{
    FILE *f = fopen(path, "r");
    char *buf;
    size_t n;

    if (f == NULL)
        return err_errno(err, errno, "could not open file \"%s\" of option \"--check-sql\"", path);
    buf = xmalloc(DRILL_CHECK_SQL_MAX + 1);
    n = fread(buf, 1, DRILL_CHECK_SQL_MAX + 1, f);
    if (ferror(f) || n > DRILL_CHECK_SQL_MAX) {
        int e = errno;
        fclose(f);
        free(buf);
        return n > DRILL_CHECK_SQL_MAX
                   ? err_set(err, "file \"%s\" of option \"--check-sql\" is larger than %d bytes",
                             path, DRILL_CHECK_SQL_MAX)
                   : err_errno(err, e, "could not read file \"%s\"", path);
    }
    fclose(f);
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        return err_set(err, "file \"%s\" of option \"--check-sql\" is not text", path);
    }
    *text = buf;
    return true;
}

static bool drill_read_settings(const pgd_options *opts, drill_settings *s, pgd_error *err)
{
    static const opt_id targets[] = {OPT_TARGET_TIME, OPT_TARGET_LSN, OPT_TARGET_NAME,
                                     OPT_TARGET_XID};

    memset(s, 0, sizeof(*s));
    s->id = opts->nargs == 1 ? opts->args[0] : "LATEST";
    s->scratch = opt_str(opts, OPT_SCRATCH_DIR);
    if (s->scratch != NULL && s->scratch[0] != '/')
        return err_set(err,
                       "invalid value \"%s\" for option \"--scratch-dir\": not an absolute "
                       "path",
                       s->scratch);
    if (s->scratch != NULL && strlen(s->scratch) > DRILL_SOCKET_DIR_MAX)
        return err_set(err,
                       "invalid value \"%s\" for option \"--scratch-dir\": longer than %d "
                       "bytes, too long for the server's Unix socket in it",
                       s->scratch, DRILL_SOCKET_DIR_MAX);
    s->pg_bin = opt_str(opts, OPT_PG_BIN);
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
        s->target = s->target || opt_str(opts, targets[i]) != NULL;
    s->check_sql_path = opt_str(opts, OPT_CHECK_SQL);
    return opt_bool(opts, OPT_KEEP, &s->keep, err) && opt_bool(opts, OPT_JSON, &s->json, err) &&
           opt_size(opts, OPT_DRILL_MEMORY, DRILL_MEMORY_MIN, DRILL_MEMORY_MAX, &s->memory, err) &&
           (s->check_sql_path == NULL ||
            drill_read_check_sql(s->check_sql_path, &s->check_sql, err));
}

static int drill_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

/* Remove what is in `dir` (and `dir` itself unless keep_dir); false with errno on failure. */
static bool drill_remove_tree(const char *dir, bool keep_dir)
{
    char path[PATH_MAX];
    struct dirent *de;
    bool ok = true;
    DIR *d;

    if (!keep_dir)
        return nftw(dir, drill_remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
    if ((d = opendir(dir)) == NULL)
        return errno == ENOENT;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
            str_format(path, sizeof(path), "%s/%s", dir, de->d_name) &&
            nftw(path, drill_remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
            ok = false;
    closedir(d);
    return ok;
}

/* Write the marker naming this process into the scratch directory, first thing in it. */
static bool drill_write_marker(const char *scratch, pgd_error *err)
{
    process_identity me;
    char path[PATH_MAX];
    FILE *f;

    process_self(&me);
    str_format(path, sizeof(path), "%s/%s", scratch, DRILL_MARKER);
    if ((f = fopen(path, "wxe")) == NULL)
        return err_errno(err, errno, "could not create file \"%s\"", path);
    fprintf(f, "pid=%lld\nstart_ticks=%llu\npid_ns=%llu\nboot_id=%s\nhost=%s\n", (long long)me.pid,
            (unsigned long long)me.start_ticks, (unsigned long long)me.pid_ns, me.boot_id, me.host);
    if (fclose(f) != 0)
        return err_errno(err, errno, "could not write file \"%s\"", path);
    return true;
}

/* The process the marker of `scratch` names; false when there is none or it does not parse. */
static bool drill_read_marker(const char *scratch, process_identity *id)
{
    char path[PATH_MAX], line[PROCESS_HOST_MAX + 16];
    unsigned long long v;
    bool pid = false;
    struct stat st;
    FILE *f;

    memset(id, 0, sizeof(*id));
    str_format(path, sizeof(path), "%s/%s", scratch, DRILL_MARKER);
    if ((f = fopen(path, "re")) == NULL)
        return false;
    /* written by a drill of this user, not planted (a drill run as root removes what it names) */
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        fclose(f);
        return false;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "pid=%llu", &v) == 1)
            id->pid = (int64_t)v, pid = v > 0;
        else if (sscanf(line, "start_ticks=%llu", &v) == 1)
            id->start_ticks = v;
        else if (sscanf(line, "pid_ns=%llu", &v) == 1)
            id->pid_ns = v;
        else if (strncmp(line, "boot_id=", 8) == 0)
            str_format(id->boot_id, sizeof(id->boot_id), "%s", line + 8);
        else if (strncmp(line, "host=", 5) == 0)
            str_format(id->host, sizeof(id->host), "%s", line + 5);
    }
    fclose(f);
    return pid && id->host[0] != '\0';
}

/*
 * A scratch directory whose drill is gone (killed by SIGKILL, or the machine went down):
 * removed, saying so; its server followed its drill (scratch_server.h: PR_SET_PDEATHSIG), but
 * one that still runs on it keeps it. A directory without a marker, or whose drill runs or
 * cannot be told (another host, another pid namespace), is left alone.
 */
static void drill_remove_stale_scratch(const char *scratch, bool keep_dir)
{
    process_identity id;
    char why[256], pidfile[PATH_MAX];
    FILE *f;
    long server = 0;

    if (!drill_read_marker(scratch, &id) || process_check(&id, why, sizeof(why)) != PROCESS_GONE)
        return;
    str_format(pidfile, sizeof(pidfile), "%s/data/postmaster.pid", scratch);
    if ((f = fopen(pidfile, "re")) != NULL) {
        if (fscanf(f, "%ld", &server) != 1)
            server = 0;
        fclose(f);
    }
    if (server > 0 && kill((pid_t)server, 0) == 0) {
        log_warn("scratch directory \"%s\" of drill process %lld, which ended, is kept: a server "
                 "(pid %ld) still runs on it",
                 scratch, (long long)id.pid, server);
        return;
    }
    if (drill_remove_tree(scratch, keep_dir))
        log_info("removed scratch directory \"%s\" of drill process %lld, which ended without "
                 "removing it (%s)",
                 scratch, (long long)id.pid, why);
    else
        log_warn("could not remove scratch directory \"%s\" of drill process %lld, which ended: "
                 "%s",
                 scratch, (long long)id.pid, strerror(errno));
}

/* The stale scratch directories in `tmp`, where drills without --scratch-dir make theirs. */
static void drill_remove_stale_scratches(const char *tmp)
{
    char path[PATH_MAX];
    struct dirent *de;
    DIR *d;

    if ((d = opendir(tmp)) == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, DRILL_SCRATCH_PREFIX, strlen(DRILL_SCRATCH_PREFIX)) == 0 &&
            str_format(path, sizeof(path), "%s/%s", tmp, de->d_name))
            drill_remove_stale_scratch(path, false);
    closedir(d);
}

/* Where a scratch directory is made without --scratch-dir. */
static const char *drill_tmp_dir(void)
{
    const char *tmp = getenv("TMPDIR");

    return tmp == NULL || tmp[0] != '/' || strlen(tmp) > DRILL_SOCKET_DIR_MAX - 24 ? "/tmp" : tmp;
}

/* The scratch directory: made (0700), or given and empty; run as root, given to the server's user.
 */
static bool drill_prepare_scratch(drill_run *r, pgd_error *err)
{
    struct stat st;

    if (r->s->scratch == NULL) {
        const char *tmp = drill_tmp_dir();
        str_format(r->scratch, sizeof(r->scratch), "%s/" DRILL_SCRATCH_PREFIX "XXXXXX", tmp);
        if (mkdtemp(r->scratch) == NULL)
            return err_errno(err, errno, "could not create a scratch directory in \"%s\"", tmp);
        r->made_scratch = true;
    } else {
        DIR *d;
        struct dirent *de;
        str_format(r->scratch, sizeof(r->scratch), "%s", r->s->scratch);
        if (mkdir(r->scratch, 0700) == 0) {
            r->made_scratch = true;
        } else if (errno != EEXIST) {
            return err_errno(err, errno, "could not create scratch directory \"%s\"", r->scratch);
        } else if ((d = opendir(r->scratch)) == NULL) {
            return err_errno(err, errno, "could not open scratch directory \"%s\"", r->scratch);
        } else {
            while ((de = readdir(d)) != NULL &&
                   (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0))
                ;
            closedir(d);
            if (de != NULL)
                return err_set(err,
                               "scratch directory \"%s\" is not empty: a drill restores only into "
                               "an empty or new directory (give another --scratch-dir)",
                               r->scratch);
            if (chmod(r->scratch, 0700) != 0)
                return err_errno(err, errno, "could not restrict scratch directory \"%s\"",
                                 r->scratch);
        }
    }
    str_format(r->data, sizeof(r->data), "%s/data", r->scratch);
    if (!drill_write_marker(r->scratch, err))
        return false;
    if (stat(r->scratch, &st) != 0)
        return err_errno(err, errno, "could not stat scratch directory \"%s\"", r->scratch);
    if (geteuid() != 0)
        return true;
    /* PostgreSQL refuses to run as root: as the directory's owner, else as postgres */
    r->switch_user = true;
    r->uid = st.st_uid;
    r->gid = st.st_gid;
    if (r->uid == 0) {
        struct passwd *pw = getpwnam(DRILL_SERVER_USER);
        if (pw == NULL)
            return err_set(err,
                           "drill run as root needs a user to run the scratch server: there is "
                           "no user \"%s\"; give a --scratch-dir owned by the server's user",
                           DRILL_SERVER_USER);
        r->uid = pw->pw_uid;
        r->gid = pw->pw_gid;
        if (chown(r->scratch, r->uid, r->gid) != 0)
            return err_errno(err, errno, "could not give scratch directory \"%s\" to user %s",
                             r->scratch, DRILL_SERVER_USER);
    }
    return true;
}

/* Remove what the drill wrote: the scratch directory (or, when it was given, what is in it). */
static void drill_remove_scratch(drill_run *r)
{
    if (r->scratch[0] != '\0' && !drill_remove_tree(r->scratch, !r->made_scratch))
        log_warn("could not remove all of scratch directory \"%s\": %s", r->scratch,
                 strerror(errno));
}

/* restore's arguments: the drill's own, those restore takes, from its command line. */
static char **drill_restore_argv(const drill_run *r, const manifest *m)
{
    char **argv = xcalloc(16 + 2 * OPT_COUNT + m->ntablespaces, sizeof(*argv));
    size_t n = 0;

    argv[n++] = xstrdup("/proc/self/exe");
    argv[n++] = xstrdup("restore");
    argv[n++] = xstrdup(r->bi.id);
    argv[n++] = xasprintf("--target-dir=%s", r->data);
    argv[n++] = xstrdup("--json");
    argv[n++] = xstrdup("--progress=off");
    /* a target pauses by default: the drill wants the server out of recovery at the target */
    if (r->s->target && opt_str(r->opts, OPT_TARGET_ACTION) == NULL)
        argv[n++] = xstrdup("--target-action=promote");
    /* tablespaces go under the scratch directory, never to the production cluster's places */
    for (size_t i = 0; i < m->ntablespaces; i++)
        argv[n++] = xasprintf("--tablespace-map=%s=%s/tblspc_%u", m->tablespaces[i].location,
                              r->scratch, m->tablespaces[i].oid);
    for (int id = 0; id < OPT_COUNT; id++) {
        if (id == OPT_JSON || id == OPT_HELP || !opt_is_of((opt_id)id, CMD_RESTORE) ||
            !opt_is_set(r->opts, (opt_id)id) || r->opts->v[id].source != SRC_CLI)
            continue;
        for (size_t k = 0; k < r->opts->v[id].nvalues; k++)
            argv[n++] = xasprintf("--%s=%s", opt_name((opt_id)id), r->opts->v[id].values[k]);
    }
    argv[n] = NULL;
    return argv;
}

/* Run restore as a child; its JSON on our side of a pipe, its log lines on our stderr. */
static bool drill_restore(drill_run *r, pgd_error *err)
{
    manifest m;
    char **argv;
    int fds[2], status = 0;
    text_buf out = {0};
    char buf[4096];
    ssize_t n;
    json_t *o;
    pid_t pid;
    double t = clock_seconds();
    bool ok;

    manifest_init(&m);
    if (!backup_read_manifest(r->repo, r->bi.id, &m, err))
        return false;
    argv = drill_restore_argv(r, &m);
    manifest_free(&m);
    if (pipe2(fds, O_CLOEXEC) != 0) {
        for (size_t i = 0; argv[i] != NULL; i++)
            free(argv[i]);
        free(argv);
        return err_errno(err, errno, "could not create a pipe");
    }
    pid = fork();
    if (pid == 0) {
        /* a drill killed by SIGKILL takes its restore with it, which removes what it wrote */
        if (dup2(fds[1], STDOUT_FILENO) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 ||
            getppid() == 1)
            _exit(EXIT_ERROR);
        execv("/proc/self/exe", argv);
        _exit(EXIT_ERROR);
    }
    drill_child = pid;
    /* a signal that came before the hook could see the child */
    if (interrupt_signal() != 0 && pid > 0)
        kill(pid, SIGTERM);
    close(fds[1]);
    for (size_t i = 0; argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
    if (pid < 0) {
        close(fds[0]);
        return err_errno(err, errno, "could not start the restore");
    }
    while ((n = read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            text_buf_printf(&out, "%.*s", (int)n, buf);
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    drill_child = 0;
    r->restore_s = clock_seconds() - t;
    o = out.data != NULL ? json_loads(out.data, 0, NULL) : NULL;
    text_buf_free(&out);
    ok = WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK && o != NULL &&
         json_is_true(json_object_get(o, "ok"));
    if (ok && json_string_value(json_object_get(o, "backup")) != NULL &&
        strcmp(json_string_value(json_object_get(o, "backup")), r->bi.id) != 0)
        ok = err_set(err, "restore restored backup %s, not %s",
                     json_string_value(json_object_get(o, "backup")), r->bi.id);
    else if (!ok) {
        const char *kind = json_string_value(json_object_get(o, "error_kind"));
        err_set(err, "restore of backup %s into \"%s\" failed%s%s", r->bi.id, r->data,
                json_string_value(json_object_get(o, "error")) ? ": " : " (see its messages above)",
                json_string_value(json_object_get(o, "error"))
                    ? json_string_value(json_object_get(o, "error"))
                    : "");
        /* the repository's data is damaged: a verdict on the backup (3), not a drill that failed */
        if (kind != NULL && strcmp(kind, "damaged") == 0)
            err_mark(err, PGD_ERR_DAMAGED);
    }
    json_decref(o);
    return ok;
}

/* Debian keeps postgresql.conf outside the data directory: the server needs one to start. */
static bool drill_config_file(const drill_run *r, pgd_error *err)
{
    char path[PATH_MAX];
    int fd;

    str_format(path, sizeof(path), "%s/postgresql.conf", r->data);
    if (access(path, F_OK) == 0)
        return true;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", path);
    if (r->switch_user && fchown(fd, r->uid, r->gid) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not give file \"%s\" to user %u", path, (unsigned)r->uid);
    }
    return close(fd) == 0 || err_errno(err, errno, "could not write file \"%s\"", path);
}

/* Where postgres of the backup's major version is: checked before anything is restored. */
static bool drill_find_server(drill_run *r, pgd_error *err)
{
    scratch_server *sv = &r->server;
    char postgres[PATH_MAX];

    if (r->s->pg_bin != NULL)
        str_format(sv->bindir, sizeof(sv->bindir), "%s", r->s->pg_bin);
    else
        str_format(sv->bindir, sizeof(sv->bindir), DRILL_PG_BIN_DEFAULT,
                   r->bi.pg_version_num / 10000);
    if (!str_format(postgres, sizeof(postgres), "%s/postgres", sv->bindir) ||
        access(postgres, X_OK) != 0)
        return err_set(err,
                       "no PostgreSQL server program \"%s\" for backup %s of PostgreSQL %d (give "
                       "--pg-bin, the directory of postgres of that major version)",
                       postgres, r->bi.id, r->bi.pg_version_num / 10000);
    return true;
}

static bool drill_start_server(drill_run *r, pgd_error *err)
{
    scratch_server *sv = &r->server;
    const char *pgport = getenv("PGPORT");
    int avoid = pgport != NULL && atoi(pgport) > 0 ? atoi(pgport) : DRILL_DEFAULT_PORT;
    uint64_t sb = r->s->memory / 4;

    str_format(sv->datadir, sizeof(sv->datadir), "%s", r->data);
    str_format(sv->sockdir, sizeof(sv->sockdir), "%s", r->scratch);
    sv->shared_buffers = sb < DRILL_SHARED_BUFFERS ? sb : DRILL_SHARED_BUFFERS;
    sv->switch_user = r->switch_user;
    sv->uid = r->uid;
    sv->gid = r->gid;
    sv->cgroup = r->cg.dir[0] ? r->cg.dir : NULL;
    if (!drill_config_file(r, err) || !scratch_server_pick_port(avoid, &sv->port, err) ||
        !scratch_server_start(sv, err))
        return false;
    drill_server = sv->pid;
    if (interrupt_signal() != 0)
        drill_on_signal();
    log_info("scratch server (PostgreSQL %d, \"%s\") started on port %d, socket in \"%s\" only",
             r->bi.pg_version_num / 10000, sv->bindir, sv->port, sv->sockdir);
    return true;
}

/* Recover, then the checks the running server answers. */
static bool drill_check_running(drill_run *r, pgd_error *err)
{
    double started = clock_seconds(), consistent_at, ready_at;
    PGconn *conn;
    bool ok;

    if (!scratch_server_wait_ready(&r->server, interrupt_flag(), &consistent_at, &ready_at, err))
        return false;
    r->consistent_s = r->restore_s + (consistent_at - started);
    r->replay_s = ready_at - started;
    log_info("scratch server consistent after %.1f s and out of recovery after %.1f s",
             consistent_at - started, r->replay_s);
    if ((conn = scratch_server_connect(&r->server, "postgres", err)) == NULL)
        return false;
    ok = cluster_check_facts(conn, &r->facts, err);
    if (ok && strcmp(r->facts.system_identifier, r->bi.system_identifier) != 0)
        cluster_problems_add(&r->problems,
                             "the restored cluster's system identifier is %s, not the backup's %s",
                             r->facts.system_identifier, r->bi.system_identifier);
    if (ok && r->facts.replay_lsn < r->bi.stop_lsn) {
        char a[LSN_TEXT_MAX], b[LSN_TEXT_MAX];
        cluster_problems_add(
            &r->problems, "recovery ended at %s, before the end of backup %s at %s",
            lsn_format(r->facts.replay_lsn, a), r->bi.id, lsn_format(r->bi.stop_lsn, b));
    }
    if (ok && r->facts.replay_lsn > r->bi.start_lsn)
        r->wal_replayed = r->facts.replay_lsn - r->bi.start_lsn;
    if (ok && r->s->check_sql != NULL)
        ok = cluster_check_sql(conn, r->s->check_sql, r->s->check_sql_path, &r->checks_run,
                               &r->problems, err);
    PQfinish(conn);
    if (ok)
        ok = cluster_check_amcheck(&r->server, &r->amcheck, &r->problems, err);
    if (ok && r->amcheck.skipped)
        log_info("amcheck skipped: %s", r->amcheck.why);
    return ok;
}

/*
 * LATEST with a --target-time, -lsn or -xid before its end: the backup restore would take, the
 * newest that ended before the target (restore/recovery_target.h), chosen here because the
 * drill restores the backup it names and lays out its tablespaces first.
 */
static bool drill_choose_backup(drill_run *r, pgd_error *err)
{
    static const struct {
        opt_id id;
        const char *key;
        bool (*check)(const char *, char *, size_t);
    } targets[] = {{OPT_TARGET_TIME, "recovery_target_time", recovery_target_check_time},
                   {OPT_TARGET_LSN, "recovery_target_lsn", recovery_target_check_lsn},
                   {OPT_TARGET_XID, "recovery_target_xid", recovery_target_check_xid}};
    char end[64], why[256];

    if (strcmp(r->s->id, "LATEST") != 0)
        return true;
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        const char *value = opt_str(r->opts, targets[i].id);
        /* a bad value: restore refuses it, naming the option */
        if (value == NULL || !targets[i].check(value, why, sizeof(why)) ||
            recovery_target_versus_backup(&r->bi, targets[i].key, value, end, sizeof(end)) !=
                RECOVERY_TARGET_BEFORE_END)
            continue;
        return recovery_target_older_backup(r->repo, targets[i].key, value, end, &r->bi, err);
    }
    return true;
}

/* What drills killed with SIGKILL left: their memory cgroups. */
static void drill_remove_stale_cgroups(void)
{
    char kept[1200];
    size_t n = mem_cgroup_remove_stale(kept, sizeof(kept));

    if (n > 0)
        log_info("removed %zu memory cgroups of drills that ended without removing them", n);
    if (kept[0] != '\0')
        log_warn("could not remove the memory cgroup of a drill that ended: %s", kept);
}

/* Has a signal come? Then that is the error, whatever a step said about it. */
static bool drill_interrupted(pgd_error *err)
{
    if (interrupt_signal() == 0)
        return false;
    err_clear(err);
    err_set(err, "interrupted by %s", interrupt_signal_name(interrupt_signal()));
    return true;
}

static bool drill_run_steps(drill_run *r, pgd_error *err)
{
    pgd_error cg_err = {0};
    bool ok;
    double t;

    if (!backup_info_resolve(r->repo, r->s->id, &r->bi, err) || !drill_choose_backup(r, err))
        return false;
    log_set_backup_id(r->bi.id);
    /* first, what drills killed with SIGKILL left: their scratch directories */
    if (r->s->scratch != NULL)
        drill_remove_stale_scratch(r->s->scratch, true);
    else
        drill_remove_stale_scratches(drill_tmp_dir());
    if (!drill_find_server(r, err) || !drill_prepare_scratch(r, err))
        return false;
    log_info("drill of backup %s in \"%s\"", r->bi.id, r->scratch);
    drill_remove_stale_cgroups();
    if (!drill_restore(r, err) || drill_interrupted(err))
        return false;
    /*
     * The restore dropped what it wrote from the page cache (restore/durable.h) and stays out of
     * the cgroup: its buffers grow with the vCPUs. What reads the cluster back goes in.
     */
    if (mem_cgroup_enter(&r->cg, r->s->memory, &cg_err)) {
        char lim[32];
        units_format_bytes(r->s->memory, lim, sizeof(lim));
        log_info("drill runs in memory cgroup \"%s\", bounded to %s (--drill-memory)", r->cg.dir,
                 lim);
    } else {
        log_info("no memory cgroup for the drill (%s): going on without a bound", cg_err.msg);
    }
    ok = drill_start_server(r, err);
    t = clock_seconds();
    ok = ok && drill_check_running(r, err);
    if (r->server.pid != 0) {
        pgd_error stop_err = {0};
        if (!scratch_server_stop(&r->server, &stop_err) && ok)
            ok = err_set(err, "%s", stop_err.msg);
    }
    ok = ok && !drill_interrupted(err);
    if (ok && r->facts.data_checksums) {
        ok = checksum_scan_run(r->data, &r->sums, &r->problems, err);
        r->checksums_scanned = ok;
    } else if (ok) {
        log_info("page checksums skipped: the cluster has no data checksums");
    }
    r->checks_s = clock_seconds() - t;
    return !drill_interrupted(err) && ok;
}

/* The verdict beside the backup, for metrics; a repository we may not write to costs only that. */
static void drill_record_result(const drill_run *r)
{
    drill_record rec = {.time = time(NULL),
                        .ok = r->problems.n == 0,
                        .problems = r->problems.n,
                        .restore_seconds = r->restore_s,
                        .replay_seconds = r->replay_s,
                        .time_to_consistency_seconds = r->consistent_s};
    pgd_error err = {0};

    if (!drill_record_write(r->repo, r->bi.id, &rec, &err))
        log_warn("could not record the drill's verdict beside backup %s: %s", r->bi.id, err.msg);
}

static json_t *drill_json(const drill_run *r)
{
    json_t *problems = json_array();

    for (size_t i = 0; i < r->problems.n; i++)
        json_array_append_new(problems, json_string(r->problems.text[i]));
    return json_pack(
        "{s:s, s:s, s:s?, s:f, s:f, s:I, s:f, s:f, s:{s:b, s:s?, s:I, s:I}, s:{s:b, s:I, s:I}, "
        "s:I, s:I, s:I, s:o, s:b}",
        "backup", r->bi.id, "system_identifier", r->bi.system_identifier, "scratch_dir", r->scratch,
        "restore_seconds", r->restore_s, "replay_seconds", r->replay_s, "wal_replayed_bytes",
        (json_int_t)r->wal_replayed, "time_to_consistency_seconds", r->consistent_s,
        "check_seconds", r->checks_s, "amcheck", "ran", !r->amcheck.skipped, "skipped",
        r->amcheck.skipped ? r->amcheck.why : NULL, "relations", (json_int_t)r->amcheck.relations,
        "pages", (json_int_t)r->amcheck.pages, "page_checksums", "ran", r->checksums_scanned,
        "files", (json_int_t)r->sums.files, "pages", (json_int_t)r->sums.pages, "relations_checked",
        (json_int_t)r->amcheck.relations, "pages_checked",
        (json_int_t)(r->amcheck.pages + r->sums.pages), "checks_run", (json_int_t)r->checks_run,
        "problems", problems, "kept", r->s->keep);
}

static void drill_summary(const drill_run *r)
{
    char wal[32];

    units_format_bytes(r->wal_replayed, wal, sizeof(wal));
    printf("drill of backup %s: %s: restore %.1f s, replay %.1f s (%s of WAL), consistent after "
           "%.1f s; amcheck %s %llu relations (%llu pages), page checksums %s %llu pages; "
           "%zu checks of --check-sql; %zu problems\n",
           r->bi.id, r->problems.n == 0 ? "ok" : "PROBLEMS", r->restore_s, r->replay_s, wal,
           r->consistent_s, r->amcheck.skipped ? "skipped," : "checked",
           (unsigned long long)r->amcheck.relations, (unsigned long long)r->amcheck.pages,
           r->checksums_scanned ? "checked on" : "skipped,", (unsigned long long)r->sums.pages,
           r->checks_run, r->problems.n);
    for (size_t i = 0; i < r->problems.n; i++)
        printf("  problem: %s\n", r->problems.text[i]);
    fflush(stdout);
}

int cmd_drill(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    drill_settings s;
    drill_run r = {0};
    json_t *result = NULL;
    bool json = false, ok;
    int rc;

    if (!command_start(&opts, &drill_help, 1, argc, argv, &rc))
        return rc;
    if (!opt_bool(&opts, OPT_JSON, &json, &err))
        err_clear(&err);
    r.s = &s;
    r.opts = &opts;
    if (!drill_read_settings(&opts, &s, &err)) {
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_DRILL, &err);
    } else if ((r.repo = command_open_repo(&opts, &err)) == NULL) {
        rc = command_fail(CMD_DRILL, &err);
    } else {
        interrupt_catch(drill_on_signal);
        ok = drill_run_steps(&r, &err);
        if (r.server.pid != 0) {
            pgd_error ignored = {0};
            scratch_server_stop(&r.server, &ignored);
        }
        drill_server = 0;
        mem_cgroup_leave(&r.cg);
        if (!ok && r.server.log[0] != '\0')
            scratch_server_log_tail(&r.server, DRILL_LOG_TAIL);
        if (s.keep && r.scratch[0] != '\0') {
            char marker[PATH_MAX];
            /* the user's now: no later drill takes it for one a killed drill left */
            if (str_format(marker, sizeof(marker), "%s/%s", r.scratch, DRILL_MARKER))
                unlink(marker);
            log_info("scratch directory \"%s\" kept (--keep)", r.scratch);
        } else
            drill_remove_scratch(&r);
        interrupt_release();
        if (ok)
            drill_record_result(&r);
        command_write_metrics(&opts, r.repo, NULL);
        if (ok) {
            if (!json)
                drill_summary(&r);
            else
                result = drill_json(&r);
            if (r.problems.n > 0) {
                err_set(&err, "drill of backup %s found %zu problems", r.bi.id, r.problems.n);
                err_mark(&err, PGD_ERR_DAMAGED);
            }
        } else {
            /* a server that could not recover is a verdict on the backup, not a failure to run */
            if (interrupt_signal() != 0)
                drill_interrupted(&err);
            err_prefix(&err,
                       interrupt_signal() != 0         ? "drill of backup %s"
                       : err_is(&err, PGD_ERR_DAMAGED) ? "drill of backup %s: the backup does not "
                                                         "restore"
                                                       : "drill of backup %s failed",
                       r.bi.id[0] ? r.bi.id : s.id);
        }
        rc = ok && r.problems.n == 0 ? EXIT_OK : command_fail(CMD_DRILL, &err);
    }
    if (json)
        rc = command_print_json(result, rc, &err);
    cluster_problems_free(&r.problems);
    free(s.check_sql);
    storage_free(r.repo);
    options_free(&opts);
    if (rc != EXIT_OK && interrupt_signal() != 0) {
        /* ends by the signal; where it is ignored (SIGINT in a background job), 128 + it */
        raise(interrupt_signal());
        rc = 128 + interrupt_signal();
    }
    return rc;
}
