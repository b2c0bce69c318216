/* L2, the cache on disk: one SQLite database, kernels.db, shared by every
 * process of the user.
 *
 * Rules (docs/cache.md has the reasons):
 * - WAL journal, synchronous=NORMAL: a killed process never leaves a
 *   half-written entry (an entry and its payload go in one transaction);
 *   readers never wait for writers.
 * - Every write is one short BEGIN IMMEDIATE transaction, so a busy
 *   database waits in busy_timeout instead of failing on a lock upgrade;
 *   nothing is open while a kernel compiles.  A write still busy after the
 *   timeout is skipped (the kernel is just not stored).
 * - Schema versioned with PRAGMA user_version: an older schema is dropped
 *   and recreated (it is a cache), a newer one is left alone.
 * - 4 KiB pages and incremental auto-vacuum: evicted space goes back to the
 *   file system.  (16 KiB pages mean fewer overflow pages per blob, but a
 *   new process's first lookup faults in every page it reads: 4 KiB pages
 *   made it 2x faster for a 10 KB cubin, 1.4x for a 45 KB one.)
 * - The blob's length and XXH3-128 are stored beside it and checked before
 *   a blob leaves this file; the full key material is compared on a hit.
 * - Size cap: after an insert, least recently used entries are deleted
 *   until the total is within the cap, inside the insert's transaction, so
 *   only one process evicts at a time and the cap holds at every commit.
 * - Claims: before compiling a missing kernel a process records a claim;
 *   others wait for its entry instead of compiling the same kernel.  A
 *   claim whose process is gone (same host) or that is older than 10
 *   minutes is void.
 * - A file that is not a database (or is corrupt) is renamed to
 *   kernels.db.corrupt and recreated, under an flock on kernels.db.lock and
 *   only after a fresh connection confirms the damage (another process may
 *   have replaced it already). */
#define XXH_STATIC_LINKING_ONLY
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

enum { SCHEMA_VERSION = 1, STORE_PAGE_SIZE = 4096, ROW_OVERHEAD = 256 };
#define STALE_CLAIM_MS (10 * 60 * 1000)

static const char schema_sql[] =
    "CREATE TABLE entry("
    " id INTEGER PRIMARY KEY,"
    " key BLOB NOT NULL UNIQUE,"      /* XXH3-128 of the key material */
    " format INTEGER NOT NULL,"       /* key material, compared on a hit: */
    " kfuse TEXT NOT NULL,"
    " backend TEXT NOT NULL,"
    " target TEXT NOT NULL,"
    " compiler TEXT NOT NULL,"
    " options TEXT NOT NULL,"         /* (the source is payload.source) */
    " name TEXT NOT NULL,"            /* for listings */
    " nkernels INTEGER NOT NULL,"
    " source_len INTEGER NOT NULL,"
    " blob_len INTEGER NOT NULL,"
    " blob_hash BLOB NOT NULL,"       /* XXH3-128 of payload.blob */
    " size INTEGER NOT NULL,"         /* bytes counted against the cap */
    " compile_ms REAL NOT NULL,"
    " created INTEGER NOT NULL,"      /* ms since the epoch */
    " last_used INTEGER NOT NULL,"
    " hits INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX entry_lru ON entry(last_used);"
    "CREATE TABLE payload(id INTEGER PRIMARY KEY, source BLOB NOT NULL, blob BLOB NOT NULL);"
    "CREATE TABLE claim(key BLOB PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, since INTEGER NOT NULL);"
    "CREATE TABLE stats(backend TEXT PRIMARY KEY, hits INTEGER NOT NULL DEFAULT 0,"
    " misses INTEGER NOT NULL DEFAULT 0, compiles INTEGER NOT NULL DEFAULT 0, compile_ms REAL NOT NULL DEFAULT 0,"
    " bytes_read INTEGER NOT NULL DEFAULT 0, bytes_written INTEGER NOT NULL DEFAULT 0,"
    " evictions INTEGER NOT NULL DEFAULT 0, dropped INTEGER NOT NULL DEFAULT 0);";

static const char drop_sql[] = "DROP TABLE IF EXISTS entry; DROP TABLE IF EXISTS payload;"
                               "DROP TABLE IF EXISTS claim; DROP TABLE IF EXISTS stats;";

/* Statements kept prepared (the hit path). */
enum { Q_GET, Q_TOUCH, Q_EXISTS, Q_COUNT };
static const char *const query_sql[Q_COUNT] = {
    [Q_GET] = ("SELECT e.id, e.format, e.kfuse, e.backend, e.target, e.compiler, e.options, e.blob_len,"
               " e.blob_hash, e.name, p.source, p.blob FROM entry e JOIN payload p ON p.id = e.id WHERE e.key = ?1"),
    [Q_TOUCH] = "UPDATE entry SET last_used = max(last_used, ?1), hits = hits + ?3 WHERE id = ?2",
    [Q_EXISTS] = "SELECT id FROM entry WHERE key = ?1",
};

enum { NBACKENDS = KF_BACKEND_CPU + 1 };

struct kf_store {
    pthread_mutex_t lock;    /* the connection is used by one thread at a time */
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT];
    char dir[1024];
    char path[1100];
    bool ro, immutable, dir_writable;
    bool broken;             /* the database failed as corrupt: calls fail until repaired */
    uint64_t max_bytes;
    int busy_ms;
    kf_store_counts pending[NBACKENDS];
    bool dirty;
    /* hits not yet written (last use and hit count): written with the next
     * write, when 64 have gathered, or at close, so a hit writes nothing */
    int64_t touch_id[64], touch_ms[64], touch_n[64];
    int ntouch;
    bool touch_done;         /* written in the open transaction */
    char host[256];
    long pid;
};

/* -- Small helpers ---------------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static bool is_corrupt(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }
static bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

/* "what: the database's message" into msg; notes a corrupt database. */
static int sqlfail(kf_store *s, int rc, const char *what, char *msg, size_t msglen)
{
    if (is_corrupt(rc))
        s->broken = true;
    if (msg && msglen) {
        const char *m = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
        if (is_busy(rc))
            snprintf(msg, msglen, "%s: the cache database stayed busy for %d ms (another process writing)", what,
                     s->busy_ms);
        else
            snprintf(msg, msglen, "%s: %s (%s)", what, m ? m : "?", sqlite3_errstr(rc));
    }
    return rc;
}

static void hash128(const void *p, size_t n, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
    memcpy(out, c.digest, 16);
}

static int backend_index(const char *name)
{
    for (int b = 0; b < NBACKENDS; b++)
        if (strcmp(name, kf_backend_name((kf_backend)b)) == 0)
            return b;
    return -1;
}

/* Run sql (no results), retrying while the database is busy: the busy
 * handler does not cover every lock (a journal mode change). */
static int exec_retry(kf_store *s, const char *sql)
{
    int64_t end = mono_ms() + s->busy_ms;
    for (int wait = 1;; wait = wait < 32 ? wait * 2 : 32) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (!is_busy(rc) || mono_ms() >= end)
            return rc;
        sleep_ms(wait);
    }
}

/* One integer (or text) from a single-row query, retrying while busy. */
static int query_retry(kf_store *s, const char *sql, int64_t *iv, char *tv, size_t tvlen)
{
    int64_t end = mono_ms() + s->busy_ms;
    for (int wait = 1;; wait = wait < 32 ? wait * 2 : 32) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(st);
            if (rc == SQLITE_ROW) {
                if (iv)
                    *iv = sqlite3_column_int64(st, 0);
                if (tv) {
                    const unsigned char *t = sqlite3_column_text(st, 0);
                    snprintf(tv, tvlen, "%s", t ? (const char *)t : "");
                }
                rc = SQLITE_OK;
            } else if (rc == SQLITE_DONE) {
                rc = SQLITE_OK;
            }
        }
        sqlite3_finalize(st);
        if (!is_busy(rc) || mono_ms() >= end)
            return rc;
        sleep_ms(wait);
    }
}

static sqlite3_stmt *query(kf_store *s, int which)
{
    if (!s->q[which] &&
        sqlite3_prepare_v3(s->db, query_sql[which], -1, SQLITE_PREPARE_PERSISTENT, &s->q[which], NULL) != SQLITE_OK)
        return NULL;
    return s->q[which];
}

static void disconnect(kf_store *s)
{
    for (int i = 0; i < Q_COUNT; i++) {
        sqlite3_finalize(s->q[i]);
        s->q[i] = NULL;
    }
    if (s->db)
        sqlite3_close_v2(s->db);
    s->db = NULL;
}

static int begin(kf_store *s) { return sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL); }

/* Commit when rc is OK, else roll back; returns the first failure. */
static int end_tx(kf_store *s, int rc)
{
    if (rc == SQLITE_OK || rc == SQLITE_DONE) {
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return SQLITE_OK;
    }
    s->touch_done = false; /* rolled back: the hits are still to write */
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* -- Opening --------------------------------------------------------------------- */

/* file: URI of path (percent-encoded), with ?immutable=1 when asked. */
static void uri_of(const char *path, bool immutable, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = (size_t)snprintf(out, cap, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && o + 4 < cap; p++) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("/-_.~", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
    if (immutable && o + 13 < cap)
        snprintf(out + o, cap - o, "?immutable=1");
}

static int create_schema(kf_store *s, char *msg, size_t msglen)
{
    int rc = begin(s);
    if (rc != SQLITE_OK)
        return sqlfail(s, rc, "creating the cache database", msg, msglen);
    int64_t v = 0;
    rc = query_retry(s, "PRAGMA user_version", &v, NULL, 0);
    if (rc == SQLITE_OK && v != SCHEMA_VERSION) {
        /* empty, or an older kfuse's layout: it is only a cache */
        rc = sqlite3_exec(s->db, drop_sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(s->db, schema_sql, NULL, NULL, NULL);
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", SCHEMA_VERSION);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    }
    rc = end_tx(s, rc);
    return rc == SQLITE_OK ? rc : sqlfail(s, rc, "creating the cache database", msg, msglen);
}

/* Open the connection, set it up and make sure the schema is there. */
static int connect_db(kf_store *s, char *msg, size_t msglen)
{
    char uri[3500];
    uri_of(s->path, s->immutable, uri, sizeof uri);
    int flags = (s->ro ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
    int rc = sqlite3_open_v2(uri, &s->db, flags, NULL);
    if (rc != SQLITE_OK) {
        sqlfail(s, rc, "opening the cache database", msg, msglen);
        disconnect(s);
        return rc;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, s->busy_ms);
    if (!s->ro) {
        /* page size and auto-vacuum take effect only on a new database,
         * and must come before the switch to WAL, which writes page 1 */
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA page_size = %d; PRAGMA auto_vacuum = INCREMENTAL", STORE_PAGE_SIZE);
        char mode[16] = "";
        if ((rc = exec_retry(s, sql)) == SQLITE_OK)
            rc = query_retry(s, "PRAGMA journal_mode = WAL", NULL, mode, sizeof mode);
        if (rc == SQLITE_OK)
            rc = exec_retry(s, "PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = 4194304;"
                               "PRAGMA wal_autocheckpoint = 256");
        if (rc != SQLITE_OK) {
            sqlfail(s, rc, "setting up the cache database", msg, msglen);
            disconnect(s);
            return rc;
        }
    }
    int64_t v = 0;
    rc = query_retry(s, "PRAGMA user_version", &v, NULL, 0);
    if (rc == SQLITE_OK && v != SCHEMA_VERSION) {
        if (v > SCHEMA_VERSION) {
            snprintf(msg, msglen, "the cache database '%.600s' is of a newer kfuse (schema %lld; this one reads %d)",
                     s->path, (long long)v, SCHEMA_VERSION);
            rc = SQLITE_MISMATCH;
        } else if (s->ro) {
            snprintf(msg, msglen, "the cache database '%.600s' is %s", s->path,
                     v == 0 ? "empty" : "of an older kfuse (read-only: cannot upgrade it)");
            rc = SQLITE_MISMATCH;
        } else {
            rc = create_schema(s, msg, msglen);
        }
    } else if (rc != SQLITE_OK) {
        sqlfail(s, rc, "reading the cache database", msg, msglen);
    }
    if (rc == SQLITE_OK) /* a cheap look past page 1: the schema must parse */
        rc = query_retry(s, "SELECT count(*) FROM sqlite_schema", NULL, NULL, 0);
    if (rc != SQLITE_OK) {
        if (!msg[0] || is_corrupt(rc))
            sqlfail(s, rc, "reading the cache database", msg, msglen);
        disconnect(s);
    }
    return rc;
}

/* Under an exclusive flock on kernels.db.lock: when a fresh connection finds
 * the database damaged too, move it to kernels.db.corrupt and start an
 * empty one.  Returns true when it moved something. */
static bool repair(kf_store *s)
{
    char lockpath[1200], aside[1200], side[1200];
    snprintf(lockpath, sizeof lockpath, "%s.lock", s->path);
    int fd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
            ;
    bool moved = false;
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE, NULL);
    char res[64] = "";
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, s->busy_ms);
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            snprintf(res, sizeof res, "%s", t ? (const char *)t : "");
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close_v2(db);
    if (is_corrupt(rc) || (rc == SQLITE_OK && strcmp(res, "ok") != 0)) {
        snprintf(aside, sizeof aside, "%s.corrupt", s->path);
        if (rename(s->path, aside) == 0) {
            moved = true;
            snprintf(side, sizeof side, "%s-wal", s->path);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", s->path);
            unlink(side);
            int nfd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (nfd >= 0)
                close(nfd);
        }
    }
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
    return moved;
}

kf_status kf_store_open(const kf_store_config *cfg, kf_store **out, char *note, size_t notelen)
{
    char msg[1024] = "";
    *out = NULL;
    note[0] = 0;
    if (!cfg || !cfg->dir)
        return KF_ERR_INVALID_ARG;
    kf_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(note, notelen, "out of memory opening the cache");
        return KF_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->ro = cfg->read_only;
    s->max_bytes = cfg->max_bytes;
    s->busy_ms = cfg->busy_ms > 0 ? cfg->busy_ms : 5000;
    s->pid = (long)getpid();
    if (gethostname(s->host, sizeof s->host - 1) != 0)
        snprintf(s->host, sizeof s->host, "?");
    kf_status st = KF_ERR_IO;
    if ((size_t)snprintf(s->dir, sizeof s->dir, "%s", cfg->dir) >= sizeof s->dir ||
        (size_t)snprintf(s->path, sizeof s->path, "%s/%s", cfg->dir, KF_STORE_FILE) >= sizeof s->path) {
        snprintf(msg, sizeof msg, "the cache directory's path is too long");
        goto fail;
    }
    if (kf_cache_dir_check(s->dir, false, &s->dir_writable, msg, sizeof msg) != KF_OK)
        goto fail;
    /* the database and every file beside it must be trustworthy */
    bool exists = false, writable = false;
    static const char *const sides[] = { "-wal", "-shm", ".lock" };
    if (kf_cache_file_check(s->path, &exists, &writable, msg, sizeof msg) != KF_OK)
        goto fail;
    for (int i = 0; i < 3; i++) {
        char side[1200];
        bool e2, w2;
        snprintf(side, sizeof side, "%s%s", s->path, sides[i]);
        if (kf_cache_file_check(side, &e2, &w2, msg, sizeof msg) != KF_OK)
            goto fail;
    }
    if (!s->ro && (!s->dir_writable || (exists && !writable))) {
        s->ro = true;
        snprintf(note, notelen, "the cache %s '%.600s' is read-only: the cache is used read-only",
                 exists && !writable ? "database" : "directory", exists && !writable ? s->path : s->dir);
    }
    if (!exists) {
        if (s->ro || !cfg->create) {
            snprintf(msg, sizeof msg, "there is no cache database in '%.600s'", s->dir);
            goto fail;
        }
        int fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) {
            snprintf(msg, sizeof msg, "cannot create '%.600s': %s", s->path, strerror(errno));
            goto fail;
        }
        if (fd >= 0)
            close(fd);
    }
    /* a read-only directory cannot take the -shm file: read the database
     * as an immutable file (a shipped cache, checkpointed) */
    s->immutable = s->ro && !s->dir_writable;
    int rc = connect_db(s, msg, sizeof msg);
    if (is_corrupt(rc) && !s->ro) {
        char why[600];
        snprintf(why, sizeof why, "%.500s", msg);
        s->broken = false;
        msg[0] = 0;
        if (repair(s))
            snprintf(note, notelen, "the cache database was damaged (%s): moved aside to '%.600s.corrupt' and started afresh",
                     why, s->path);
        rc = connect_db(s, msg, sizeof msg);
    }
    if (rc != SQLITE_OK)
        goto fail;
    s->broken = false;
    /* Prepare the lookup now (it reads the schema) and run it once for a
     * key no entry has (it reads the key index's upper pages and runs
     * SQLite's lookup code for the first time): the context is being
     * created, and its first kf_compile should not pay for it (a 31 KB
     * entry's first lookup in a new process: 10-20 us less on a 2-core VM).
     * A failure here is retried, and reported, by the lookup itself. */
    sqlite3_stmt *get = query(s, Q_GET);
    if (get) {
        static const uint8_t none[16];
        sqlite3_bind_blob(get, 1, none, 16, SQLITE_STATIC);
        sqlite3_step(get);
        sqlite3_reset(get);
    }
    *out = s;
    return KF_OK;
fail:
    snprintf(note, notelen, "%s", msg[0] ? msg : "cannot open the cache database");
    disconnect(s);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return st;
}

bool kf_store_read_only(const kf_store *s) { return !s || s->ro; }

bool kf_store_broken(kf_store *s)
{
    if (!s)
        return false;
    pthread_mutex_lock(&s->lock);
    bool b = s->broken;
    pthread_mutex_unlock(&s->lock);
    return b;
}

kf_status kf_store_recover(kf_store *s, char *note, size_t notelen)
{
    if (!s)
        return KF_ERR_INVALID_ARG;
    char msg[600] = "";
    note[0] = 0;
    pthread_mutex_lock(&s->lock);
    kf_status st = KF_OK;
    if (s->broken) {
        disconnect(s);
        bool moved = !s->ro && repair(s);
        s->broken = false;
        int rc = connect_db(s, msg, sizeof msg);
        if (rc != SQLITE_OK) {
            s->broken = true; /* stays unusable: every call fails fast */
            snprintf(note, notelen, "%s", msg);
            st = KF_ERR_IO;
        } else if (moved) {
            snprintf(note, notelen, "the cache database was damaged: moved aside to '%.600s.corrupt' and started afresh",
                     s->path);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}
const char *kf_store_path(const kf_store *s) { return s ? s->path : ""; }

/* -- Counters ----------------------------------------------------------------- */

void kf_store_count(kf_store *s, kf_backend backend, const kf_store_counts *d)
{
    if (!s || !d || (unsigned)backend >= NBACKENDS)
        return;
    pthread_mutex_lock(&s->lock);
    kf_store_counts *p = &s->pending[backend];
    p->hits += d->hits;
    p->misses += d->misses;
    p->compiles += d->compiles;
    p->compile_ms += d->compile_ms;
    p->bytes_read += d->bytes_read;
    p->bytes_written += d->bytes_written;
    p->evictions += d->evictions;
    p->dropped += d->dropped;
    s->dirty = true;
    pthread_mutex_unlock(&s->lock);
}

/* Inside a write transaction: write the gathered hits and add the pending
 * counters.  They are cleared by flushed() once the transaction committed. */
static int flush_touches(kf_store *s);

static int flush_counts(kf_store *s)
{
    int trc = flush_touches(s);
    if (trc != SQLITE_OK)
        return trc;
    if (!s->dirty)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        s->db,
        "INSERT INTO stats(backend, hits, misses, compiles, compile_ms, bytes_read, bytes_written, evictions,"
        " dropped) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(backend) DO UPDATE SET"
        " hits = hits + excluded.hits, misses = misses + excluded.misses, compiles = compiles + excluded.compiles,"
        " compile_ms = compile_ms + excluded.compile_ms, bytes_read = bytes_read + excluded.bytes_read,"
        " bytes_written = bytes_written + excluded.bytes_written, evictions = evictions + excluded.evictions,"
        " dropped = dropped + excluded.dropped",
        -1, &st, NULL);
    for (int b = 0; rc == SQLITE_OK && b < NBACKENDS; b++) {
        const kf_store_counts *p = &s->pending[b];
        if (!p->hits && !p->misses && !p->compiles && !p->bytes_read && !p->bytes_written && !p->evictions &&
            !p->dropped && p->compile_ms == 0)
            continue;
        sqlite3_bind_text(st, 1, kf_backend_name((kf_backend)b), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)p->hits);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)p->misses);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)p->compiles);
        sqlite3_bind_double(st, 5, p->compile_ms);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)p->bytes_read);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)p->bytes_written);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)p->evictions);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)p->dropped);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Inside a write transaction: the gathered hits (cleared by flushed()). */
static int flush_touches(kf_store *s)
{
    if (s->touch_done)
        return SQLITE_OK;
    int rc = SQLITE_OK;
    sqlite3_stmt *st = s->ntouch ? query(s, Q_TOUCH) : NULL;
    if (s->ntouch && !st)
        return sqlite3_errcode(s->db);
    for (int i = 0; i < s->ntouch && rc == SQLITE_OK; i++) {
        sqlite3_bind_int64(st, 1, s->touch_ms[i]);
        sqlite3_bind_int64(st, 2, s->touch_id[i]);
        sqlite3_bind_int64(st, 3, s->touch_n[i]);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
        sqlite3_reset(st);
    }
    s->touch_done = rc == SQLITE_OK;
    return rc;
}

/* The transaction that wrote the pending hits and counters committed. */
static void flushed(kf_store *s)
{
    memset(s->pending, 0, sizeof s->pending);
    s->dirty = false;
    s->ntouch = 0;
    s->touch_done = false;
}

/* Write the gathered hits and counters, waiting at most wait_ms for the
 * database (0: skip when another process is writing). */
static void flush_pending(kf_store *s, int wait_ms)
{
    if ((!s->dirty && !s->ntouch) || s->ro || s->broken || !s->db)
        return;
    sqlite3_busy_timeout(s->db, wait_ms);
    int rc = begin(s);
    sqlite3_busy_timeout(s->db, s->busy_ms);
    if (rc != SQLITE_OK)
        return;
    rc = flush_counts(s);
    if (end_tx(s, rc) == SQLITE_OK)
        flushed(s);
    else if (is_corrupt(rc))
        s->broken = true;
    s->touch_done = false;
}

/* -- Entries ------------------------------------------------------------------------ */

static int delete_id(kf_store *s, int64_t id)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "DELETE FROM payload WHERE id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_OK && (rc = sqlite3_prepare_v2(s->db, "DELETE FROM entry WHERE id = ?1", -1, &st, NULL)) ==
                               SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
    }
    sqlite3_finalize(st);
    return rc;
}

/* In a write transaction: delete least recently used entries (never
 * 'keep') until the total size is at most max. */
static int evict_to(kf_store *s, uint64_t max, int64_t keep, uint64_t *n, uint64_t *freed)
{
    int64_t total = 0;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT total(size) FROM entry", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        if ((rc = sqlite3_step(st)) == SQLITE_ROW)
            total = (int64_t)sqlite3_column_double(st, 0);
        rc = rc == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(s->db);
    }
    sqlite3_finalize(st);
    st = NULL;
    while (rc == SQLITE_OK && (uint64_t)total > max) {
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, size FROM entry WHERE id != ?1 ORDER BY last_used, id LIMIT 32", -1, &st,
                                NULL);
        if (rc != SQLITE_OK)
            break;
        sqlite3_bind_int64(st, 1, keep);
        int64_t ids[32], sizes[32];
        int k = 0;
        while (k < 32 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            ids[k] = sqlite3_column_int64(st, 0);
            sizes[k++] = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        st = NULL;
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            break;
        rc = SQLITE_OK;
        if (k == 0)
            break;
        for (int i = 0; i < k && rc == SQLITE_OK && (uint64_t)total > max; i++) {
            rc = delete_id(s, ids[i]);
            total -= sizes[i];
            if (n)
                (*n)++;
            if (freed)
                *freed += (uint64_t)sizes[i];
        }
    }
    return rc;
}

/* Record a hit: gathered, written with the next write transaction (never
 * a write of its own on the hit path). */
static void touch(kf_store *s, int64_t id)
{
    if (s->ro)
        return;
    int64_t now = now_ms();
    for (int i = 0; i < s->ntouch; i++)
        if (s->touch_id[i] == id) {
            s->touch_ms[i] = now;
            s->touch_n[i]++;
            return;
        }
    if (s->ntouch == 64)
        flush_pending(s, 0);
    if (s->ntouch < 64) {
        s->touch_id[s->ntouch] = id;
        s->touch_n[s->ntouch] = 1;
        s->touch_ms[s->ntouch++] = now;
    }
}

static bool text_eq(sqlite3_stmt *st, int col, const char *want)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t && strcmp((const char *)t, want) == 0;
}

static kf_store_result get_locked(kf_store *s, const kf_cache_key *k, kf_store_sink *sink, char *msg,
                                  size_t msglen)
{
    if (s->broken || !s->db) {
        snprintf(msg, msglen, "the cache database is unusable");
        return KF_STORE_ERROR;
    }
    sqlite3_stmt *st = query(s, Q_GET);
    if (!st) {
        sqlfail(s, sqlite3_errcode(s->db), "reading the cache", msg, msglen);
        return KF_STORE_ERROR;
    }
    sqlite3_bind_blob(st, 1, k->hash, 16, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return KF_STORE_MISS;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        sqlfail(s, rc, "reading the cache", msg, msglen);
        return KF_STORE_ERROR;
    }
    int64_t id = sqlite3_column_int64(st, 0);
    const void *src = sqlite3_column_blob(st, 10);
    size_t srclen = (size_t)sqlite3_column_bytes(st, 10);
    bool same = sqlite3_column_int(st, 1) == KF_CACHE_FORMAT && text_eq(st, 2, kf_cache_kfuse_version()) &&
                text_eq(st, 3, kf_backend_name(k->t->backend)) && text_eq(st, 4, k->t->target) &&
                text_eq(st, 5, k->t->compiler) && text_eq(st, 6, k->t->options) && srclen == k->srclen &&
                (srclen == 0 || (src && memcmp(src, k->src, srclen) == 0));
    if (!same) {
        /* an XXH3 collision: the entry belongs to other material */
        sqlite3_reset(st);
        return KF_STORE_MISS;
    }
    int64_t want_len = sqlite3_column_int64(st, 7);
    const void *want_hash = sqlite3_column_blob(st, 8);
    int hashlen = sqlite3_column_bytes(st, 8);
    const void *data = sqlite3_column_blob(st, 11);
    int64_t n = sqlite3_column_bytes(st, 11);
    char name[160];
    const unsigned char *nm = sqlite3_column_text(st, 9);
    snprintf(name, sizeof name, "%s", nm ? (const char *)nm : "?");
    const char *bad = NULL;
    char why[96];
    uint8_t h[16];
    if (n != want_len || n == 0) {
        snprintf(why, sizeof why, "%lld bytes where %lld were stored", (long long)n, (long long)want_len);
        bad = why;
    } else {
        hash128(data, (size_t)n, h);
        if (hashlen != 16 || memcmp(h, want_hash, 16) != 0)
            bad = "its checksum does not match";
    }
    kf_store_result r = bad ? KF_STORE_BAD : sink->take(sink, data, (size_t)n) ? KF_STORE_HIT : KF_STORE_REFUSED;
    sqlite3_reset(st);
    if (bad) {
        char hex[33];
        kf_cache_hex(k->hash, hex);
        snprintf(msg, msglen, "cache entry %s for %s is damaged (%s): dropped, compiling again", hex, name, bad);
        int b = backend_index(kf_backend_name(k->t->backend));
        if (b >= 0) {
            s->pending[b].dropped++;
            s->dirty = true;
        }
        if (!s->ro && begin(s) == SQLITE_OK) {
            rc = delete_id(s, id);
            if (rc == SQLITE_OK)
                rc = flush_counts(s);
            if (end_tx(s, rc) == SQLITE_OK)
                flushed(s);
        }
        return KF_STORE_BAD;
    }
    if (r == KF_STORE_HIT)
        touch(s, id); /* last use for the LRU; skipped when busy */
    return r;
}

static bool copy_take(kf_store_sink *self, const void *blob, size_t len)
{
    kf_store_copy *c = (kf_store_copy *)self;
    if (!(c->blob = malloc(len)))
        return false;
    memcpy(c->blob, blob, len);
    c->len = len;
    return true;
}

void kf_store_copy_init(kf_store_copy *c) { *c = (kf_store_copy){ { copy_take }, NULL, 0 }; }

kf_store_result kf_store_get(kf_store *s, const kf_cache_key *k, kf_store_sink *sink, char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = 0;
    if (!s || !k || !sink)
        return KF_STORE_ERROR;
    pthread_mutex_lock(&s->lock);
    kf_store_result r = get_locked(s, k, sink, msg, msglen);
    pthread_mutex_unlock(&s->lock);
    return r;
}

/* -- Claims ---------------------------------------------------------------------- */

static bool claim_live(const kf_store *s, const char *host, long pid, int64_t since)
{
    if (now_ms() - since > STALE_CLAIM_MS)
        return false;
    if (strcmp(host, s->host) != 0)
        return true; /* another machine's process: only age voids it */
    return pid == s->pid || kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* One attempt under the lock: 1 = entry present, 2 = claimed by us,
 * 3 = held by another live process, 0 = failed (compile anyway). */
static int claim_once(kf_store *s, const kf_cache_key *k)
{
    if (s->broken || !s->db || begin(s) != SQLITE_OK)
        return 0;
    int result = 0;
    sqlite3_stmt *st = query(s, Q_EXISTS);
    int rc = st ? SQLITE_OK : SQLITE_ERROR;
    if (st) {
        sqlite3_bind_blob(st, 1, k->hash, 16, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            result = 1;
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(st);
    }
    if (rc == SQLITE_OK && result == 0) {
        sqlite3_stmt *c = NULL;
        rc = sqlite3_prepare_v2(s->db, "SELECT host, pid, since FROM claim WHERE key = ?1", -1, &c, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_blob(c, 1, k->hash, 16, SQLITE_STATIC);
            rc = sqlite3_step(c);
            if (rc == SQLITE_ROW) {
                const unsigned char *h = sqlite3_column_text(c, 0);
                if (claim_live(s, h ? (const char *)h : "", (long)sqlite3_column_int64(c, 1),
                               sqlite3_column_int64(c, 2)))
                    result = 3;
            }
            rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(c);
        c = NULL;
        if (rc == SQLITE_OK && result == 0 &&
            (rc = sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO claim(key, host, pid, since) VALUES(?1, ?2, ?3, ?4)",
                                     -1, &c, NULL)) == SQLITE_OK) {
            sqlite3_bind_blob(c, 1, k->hash, 16, SQLITE_STATIC);
            sqlite3_bind_text(c, 2, s->host, -1, SQLITE_STATIC);
            sqlite3_bind_int64(c, 3, s->pid);
            sqlite3_bind_int64(c, 4, now_ms());
            rc = sqlite3_step(c) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
            if (rc == SQLITE_OK)
                result = 2;
        }
        sqlite3_finalize(c);
    }
    if (end_tx(s, rc) != SQLITE_OK) {
        if (is_corrupt(rc))
            s->broken = true;
        return 0;
    }
    return result;
}

/* While another process compiles k: a read-only look, 1 = its entry is
 * there, 3 = its claim still holds, 0 = neither (try to claim). */
static int claim_peek(kf_store *s, const kf_cache_key *k)
{
    if (s->broken || !s->db)
        return 0;
    sqlite3_stmt *st = NULL;
    int result = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT (SELECT count(*) FROM entry WHERE key = ?1), host, pid, since FROM"
                           " (SELECT 1) LEFT JOIN claim ON claim.key = ?1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_blob(st, 1, k->hash, 16, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *h = sqlite3_column_text(st, 1);
            if (sqlite3_column_int64(st, 0) > 0)
                result = 1;
            else if (h && claim_live(s, (const char *)h, (long)sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)))
                result = 3;
        }
    }
    sqlite3_finalize(st);
    return result;
}

kf_store_result kf_store_claim(kf_store *s, const kf_cache_key *k, int wait_ms, kf_store_sink *sink, char *msg,
                               size_t msglen)
{
    if (msg && msglen)
        msg[0] = 0;
    if (!s || !k || s->ro)
        return KF_STORE_CLAIMED;
    int64_t end = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    bool waiting = false;
    for (int wait = 2;; wait = wait < 50 ? wait * 2 : 50) {
        pthread_mutex_lock(&s->lock);
        /* waiting polls read-only; only a claim that went takes the write lock */
        int r = waiting ? claim_peek(s, k) : 0;
        if (r == 0)
            r = claim_once(s, k);
        kf_store_result res = KF_STORE_CLAIMED;
        if (r == 1) {
            res = get_locked(s, k, sink, msg, msglen);
            if (res != KF_STORE_HIT && res != KF_STORE_REFUSED) /* damaged or gone: compile it here */
                res = res == KF_STORE_BAD ? KF_STORE_BAD : KF_STORE_CLAIMED;
        }
        pthread_mutex_unlock(&s->lock);
        if (r != 3 || mono_ms() >= end)
            return res;
        waiting = true;
        sleep_ms(wait);
    }
}

void kf_store_unclaim(kf_store *s, const kf_cache_key *k)
{
    if (!s || !k || s->ro)
        return;
    pthread_mutex_lock(&s->lock);
    if (!s->broken && s->db && begin(s) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, "DELETE FROM claim WHERE key = ?1 AND host = ?2 AND pid = ?3", -1, &st,
                                    NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_blob(st, 1, k->hash, 16, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, s->host, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, s->pid);
            rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
        }
        sqlite3_finalize(st);
        end_tx(s, rc);
    }
    pthread_mutex_unlock(&s->lock);
}

/* -- Writing ---------------------------------------------------------------------- */

static int bind_put(sqlite3_stmt *st, const kf_cache_key *k, int64_t id, const char *name, int nkernels, size_t len,
                    const uint8_t *bh, uint64_t size, double compile_ms, int64_t now)
{
    const kf_cache_target *t = k->t;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_blob(st, 2, k->hash, 16, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, KF_CACHE_FORMAT);
    sqlite3_bind_text(st, 4, kf_cache_kfuse_version(), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, kf_backend_name(t->backend), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, t->target, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, t->compiler, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, t->options, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, name ? name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 10, nkernels);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)k->srclen);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)len);
    sqlite3_bind_blob(st, 13, bh, 16, SQLITE_STATIC);
    sqlite3_bind_int64(st, 14, (sqlite3_int64)size);
    sqlite3_bind_double(st, 15, compile_ms);
    sqlite3_bind_int64(st, 16, now);
    sqlite3_bind_int64(st, 17, now);
    return sqlite3_step(st);
}

kf_status kf_store_put(kf_store *s, const kf_cache_key *k, const char *name, int nkernels, const void *blob,
                       size_t len, double compile_ms, uint64_t *evicted, char *msg, size_t msglen)
{
    if (evicted)
        *evicted = 0;
    if (msg && msglen)
        msg[0] = 0;
    if (!s || !k || !blob || len == 0 || len > INT32_MAX || k->srclen > INT32_MAX)
        return KF_ERR_INVALID_ARG;
    if (s->ro) {
        snprintf(msg, msglen, "the cache is read-only");
        return KF_ERR_IO;
    }
    uint64_t size = (uint64_t)len + k->srclen + strlen(k->t->target) + strlen(k->t->compiler) +
                    strlen(k->t->options) + (name ? strlen(name) : 0) + ROW_OVERHEAD;
    if (s->max_bytes && size > s->max_bytes) {
        snprintf(msg, msglen, "a %llu-byte entry does not fit the %llu-byte cache cap: not stored",
                 (unsigned long long)size, (unsigned long long)s->max_bytes);
        kf_store_unclaim(s, k);
        return KF_ERR_LIMIT;
    }
    uint8_t bh[16];
    hash128(blob, len, bh);
    int b = backend_index(kf_backend_name(k->t->backend));
    pthread_mutex_lock(&s->lock);
    if (s->broken || !s->db) {
        pthread_mutex_unlock(&s->lock);
        snprintf(msg, msglen, "the cache database is unusable");
        return KF_ERR_IO;
    }
    uint64_t n = 0;
    int rc = begin(s);
    if (rc != SQLITE_OK) {
        sqlfail(s, rc, "storing a kernel", msg, msglen);
        pthread_mutex_unlock(&s->lock);
        return KF_ERR_IO;
    }
    bool present = false;
    rc = flush_touches(s); /* this process's hits count for the LRU order below */
    sqlite3_stmt *st = query(s, Q_EXISTS);
    if (rc != SQLITE_OK || !st)
        rc = rc != SQLITE_OK ? rc : sqlite3_errcode(s->db);
    else {
        sqlite3_bind_blob(st, 1, k->hash, 16, SQLITE_STATIC);
        rc = sqlite3_step(st);
        present = rc == SQLITE_ROW;
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(st);
    }
    int64_t id = 0;
    if (rc == SQLITE_OK && !present) {
        sqlite3_stmt *p = NULL;
        rc = sqlite3_prepare_v2(s->db, "INSERT INTO payload(source, blob) VALUES(?1, ?2)", -1, &p, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_blob(p, 1, k->src, (int)k->srclen, SQLITE_STATIC);
            sqlite3_bind_blob(p, 2, blob, (int)len, SQLITE_STATIC);
            rc = sqlite3_step(p) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
            id = sqlite3_last_insert_rowid(s->db);
        }
        sqlite3_finalize(p);
        p = NULL;
        if (rc == SQLITE_OK &&
            (rc = sqlite3_prepare_v2(s->db,
                                     "INSERT INTO entry(id, key, format, kfuse, backend, target, compiler, options,"
                                     " name, nkernels, source_len, blob_len, blob_hash, size, compile_ms, created,"
                                     " last_used) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
                                     " ?14, ?15, ?16, ?17)",
                                     -1, &p, NULL)) == SQLITE_OK)
            rc = bind_put(p, k, id, name, nkernels, len, bh, size, compile_ms, now_ms()) == SQLITE_DONE
                     ? SQLITE_OK
                     : sqlite3_errcode(s->db);
        sqlite3_finalize(p);
        if (rc == SQLITE_OK && s->max_bytes)
            rc = evict_to(s, s->max_bytes, id, &n, NULL);
    }
    if (rc == SQLITE_OK) {
        sqlite3_stmt *c = NULL;
        rc = sqlite3_prepare_v2(s->db, "DELETE FROM claim WHERE key = ?1", -1, &c, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_blob(c, 1, k->hash, 16, SQLITE_STATIC);
            rc = sqlite3_step(c) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
        }
        sqlite3_finalize(c);
    }
    kf_store_counts saved = b >= 0 ? s->pending[b] : (kf_store_counts){ 0 };
    if (rc == SQLITE_OK && b >= 0 && !present) {
        s->pending[b].bytes_written += len;
        s->pending[b].evictions += n;
        s->dirty = true;
    }
    if (rc == SQLITE_OK)
        rc = flush_counts(s);
    rc = end_tx(s, rc);
    kf_status status = KF_OK;
    if (rc == SQLITE_OK) {
        flushed(s);
        if (n > 0)
            sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
        if (evicted)
            *evicted = n;
    } else {
        if (b >= 0)
            s->pending[b] = saved;
        sqlfail(s, rc, "storing a kernel", msg, msglen);
        status = (rc & 0xff) == SQLITE_FULL ? KF_ERR_NO_MEMORY : KF_ERR_IO;
    }
    pthread_mutex_unlock(&s->lock);
    if (status != KF_OK)
        kf_store_unclaim(s, k);
    return status;
}

void kf_store_drop(kf_store *s, const kf_cache_key *k)
{
    if (!s || !k)
        return;
    pthread_mutex_lock(&s->lock);
    int b = backend_index(kf_backend_name(k->t->backend));
    if (b >= 0) {
        s->pending[b].dropped++;
        s->dirty = true;
    }
    if (!s->ro && !s->broken && s->db && begin(s) == SQLITE_OK) {
        sqlite3_stmt *st = query(s, Q_EXISTS);
        int rc = st ? SQLITE_OK : sqlite3_errcode(s->db);
        int64_t id = -1;
        if (st) {
            sqlite3_bind_blob(st, 1, k->hash, 16, SQLITE_STATIC);
            if ((rc = sqlite3_step(st)) == SQLITE_ROW)
                id = sqlite3_column_int64(st, 0);
            rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
            sqlite3_reset(st);
        }
        if (rc == SQLITE_OK && id >= 0)
            rc = delete_id(s, id);
        if (rc == SQLITE_OK)
            rc = flush_counts(s);
        if (end_tx(s, rc) == SQLITE_OK)
            flushed(s);
    }
    pthread_mutex_unlock(&s->lock);
}

void kf_store_close(kf_store *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    /* hits and counters are worth a short wait, not a slow exit */
    flush_pending(s, s->busy_ms < 200 ? s->busy_ms : 200);
    disconnect(s);
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* -- Maintenance ------------------------------------------------------------------ */

static const char list_sql[] =
    "SELECT e.key, e.backend, e.target, e.compiler, e.options, e.name, e.kfuse, e.format, e.nkernels, e.blob_len,"
    " e.size, e.hits, e.created, e.last_used, e.compile_ms, e.blob_hash, p.source, p.blob"
    " FROM entry e LEFT JOIN payload p ON p.id = e.id ORDER BY e.last_used, e.id";

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* Walk every entry; with check, verify each (reading its payload). */
static kf_status walk(kf_store *s, bool check, kf_store_entry_fn fn, void *user, uint64_t *bad, char *msg,
                      size_t msglen)
{
    if (bad)
        *bad = 0;
    pthread_mutex_lock(&s->lock);
    sqlite3_stmt *st = NULL;
    int rc = s->db ? sqlite3_prepare_v2(s->db, list_sql, -1, &st, NULL) : SQLITE_MISUSE;
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        kf_store_entry e;
        memset(&e, 0, sizeof e);
        if (sqlite3_column_bytes(st, 0) == 16)
            memcpy(e.key, sqlite3_column_blob(st, 0), 16);
        snprintf(e.backend, sizeof e.backend, "%s", col_text(st, 1));
        e.target = col_text(st, 2);
        e.compiler = col_text(st, 3);
        e.options = col_text(st, 4);
        e.name = col_text(st, 5);
        e.kfuse = col_text(st, 6);
        e.format = sqlite3_column_int(st, 7);
        e.nkernels = sqlite3_column_int(st, 8);
        e.blob_len = (uint64_t)sqlite3_column_int64(st, 9);
        e.size = (uint64_t)sqlite3_column_int64(st, 10);
        e.hits = (uint64_t)sqlite3_column_int64(st, 11);
        e.created_ms = sqlite3_column_int64(st, 12);
        e.last_used_ms = sqlite3_column_int64(st, 13);
        e.compile_ms = sqlite3_column_double(st, 14);
        e.ok = true;
        if (check) {
            /* the key is the hash of the stored material; the blob has its
             * length and checksum */
            uint8_t h[16];
            const void *src = sqlite3_column_blob(st, 16);
            size_t srclen = (size_t)sqlite3_column_bytes(st, 16);
            kf_cache_key_hash(e.format, e.kfuse, e.backend, e.target, e.compiler, e.options, src, srclen, h);
            const void *data = sqlite3_column_blob(st, 17);
            int64_t n = sqlite3_column_bytes(st, 17);
            const void *want = sqlite3_column_blob(st, 15);
            uint8_t bh[16] = { 0 };
            if (data && n > 0)
                hash128(data, (size_t)n, bh);
            if (sqlite3_column_type(st, 17) == SQLITE_NULL)
                e.problem = "its payload is missing";
            else if (memcmp(h, e.key, 16) != 0)
                e.problem = "its key is not the hash of its key material";
            else if ((uint64_t)n != e.blob_len || n == 0)
                e.problem = "its binary has the wrong length";
            else if (sqlite3_column_bytes(st, 15) != 16 || memcmp(bh, want, 16) != 0)
                e.problem = "its binary's checksum does not match";
            e.ok = e.problem == NULL;
            if (!e.ok && bad)
                (*bad)++;
        }
        if (fn)
            fn(user, &e);
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        sqlfail(s, rc, check ? "verifying the cache" : "listing the cache", msg, msglen);
    pthread_mutex_unlock(&s->lock);
    return rc == SQLITE_OK ? KF_OK : KF_ERR_IO;
}

kf_status kf_store_list(kf_store *s, kf_store_entry_fn fn, void *user, char *msg, size_t msglen)
{
    return s ? walk(s, false, fn, user, NULL, msg, msglen) : KF_ERR_INVALID_ARG;
}

kf_status kf_store_verify(kf_store *s, kf_store_entry_fn fn, void *user, uint64_t *bad, char *msg, size_t msglen)
{
    return s ? walk(s, true, fn, user, bad, msg, msglen) : KF_ERR_INVALID_ARG;
}

kf_status kf_store_prune(kf_store *s, uint64_t max_bytes, uint64_t *evicted, uint64_t *freed, char *msg,
                         size_t msglen)
{
    if (evicted)
        *evicted = 0;
    if (freed)
        *freed = 0;
    if (!s)
        return KF_ERR_INVALID_ARG;
    if (s->ro) {
        snprintf(msg, msglen, "the cache is read-only");
        return KF_ERR_IO;
    }
    pthread_mutex_lock(&s->lock);
    uint64_t n = 0, f = 0;
    int rc = begin(s);
    if (rc == SQLITE_OK)
        rc = evict_to(s, max_bytes, -1, &n, &f);
    if (rc == SQLITE_OK) {
        /* counted under no backend in particular: the evictor was a tool */
        rc = flush_counts(s);
    }
    rc = end_tx(s, rc);
    if (rc == SQLITE_OK) {
        flushed(s);
        sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    } else {
        sqlfail(s, rc, "pruning the cache", msg, msglen);
    }
    pthread_mutex_unlock(&s->lock);
    if (evicted)
        *evicted = n;
    if (freed)
        *freed = f;
    return rc == SQLITE_OK ? KF_OK : KF_ERR_IO;
}

kf_status kf_store_clear(kf_store *s, uint64_t *removed, char *msg, size_t msglen)
{
    if (removed)
        *removed = 0;
    if (!s)
        return KF_ERR_INVALID_ARG;
    if (s->ro) {
        snprintf(msg, msglen, "the cache is read-only");
        return KF_ERR_IO;
    }
    pthread_mutex_lock(&s->lock);
    int64_t n = 0;
    int rc = begin(s);
    if (rc == SQLITE_OK)
        rc = query_retry(s, "SELECT count(*) FROM entry", &n, NULL, 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "DELETE FROM payload; DELETE FROM entry; DELETE FROM claim; DELETE FROM stats", NULL,
                          NULL, NULL);
    rc = end_tx(s, rc);
    if (rc == SQLITE_OK) {
        flushed(s);
        sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    } else {
        sqlfail(s, rc, "clearing the cache", msg, msglen);
    }
    pthread_mutex_unlock(&s->lock);
    if (removed)
        *removed = (uint64_t)n;
    return rc == SQLITE_OK ? KF_OK : KF_ERR_IO;
}

kf_status kf_store_totals(kf_store *s, uint64_t *entries, uint64_t *bytes, char *msg, size_t msglen)
{
    if (!s)
        return KF_ERR_INVALID_ARG;
    pthread_mutex_lock(&s->lock);
    sqlite3_stmt *st = NULL;
    int rc = s->db ? sqlite3_prepare_v2(s->db, "SELECT count(*), total(size) FROM entry", -1, &st, NULL)
                   : SQLITE_MISUSE;
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (entries)
            *entries = (uint64_t)sqlite3_column_int64(st, 0);
        if (bytes)
            *bytes = (uint64_t)sqlite3_column_double(st, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        sqlfail(s, rc, "reading the cache", msg, msglen);
    pthread_mutex_unlock(&s->lock);
    return rc == SQLITE_OK ? KF_OK : KF_ERR_IO;
}

kf_status kf_store_stats(kf_store *s, kf_store_counts_fn fn, void *user, char *msg, size_t msglen)
{
    if (!s)
        return KF_ERR_INVALID_ARG;
    pthread_mutex_lock(&s->lock);
    sqlite3_stmt *st = NULL;
    kf_store_counts seen[NBACKENDS];
    bool listed[NBACKENDS] = { false };
    memset(seen, 0, sizeof seen);
    int rc = s->db ? sqlite3_prepare_v2(s->db,
                                        "SELECT backend, hits, misses, compiles, compile_ms, bytes_read,"
                                        " bytes_written, evictions, dropped FROM stats ORDER BY backend",
                                        -1, &st, NULL)
                   : SQLITE_MISUSE;
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        int b = backend_index(col_text(st, 0));
        if (b < 0)
            continue;
        kf_store_counts *c = &seen[b];
        c->hits = (uint64_t)sqlite3_column_int64(st, 1);
        c->misses = (uint64_t)sqlite3_column_int64(st, 2);
        c->compiles = (uint64_t)sqlite3_column_int64(st, 3);
        c->compile_ms = sqlite3_column_double(st, 4);
        c->bytes_read = (uint64_t)sqlite3_column_int64(st, 5);
        c->bytes_written = (uint64_t)sqlite3_column_int64(st, 6);
        c->evictions = (uint64_t)sqlite3_column_int64(st, 7);
        c->dropped = (uint64_t)sqlite3_column_int64(st, 8);
        listed[b] = true;
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        sqlfail(s, rc, "reading the cache's counters", msg, msglen);
    for (int b = 0; rc == SQLITE_OK && b < NBACKENDS; b++) {
        const kf_store_counts *p = &s->pending[b];
        seen[b].hits += p->hits;
        seen[b].misses += p->misses;
        seen[b].compiles += p->compiles;
        seen[b].compile_ms += p->compile_ms;
        seen[b].bytes_read += p->bytes_read;
        seen[b].bytes_written += p->bytes_written;
        seen[b].evictions += p->evictions;
        seen[b].dropped += p->dropped;
        bool any = p->hits || p->misses || p->compiles || p->bytes_read || p->bytes_written || p->evictions ||
                   p->dropped || p->compile_ms != 0;
        if ((listed[b] || any) && fn)
            fn(user, kf_backend_name((kf_backend)b), &seen[b]);
    }
    pthread_mutex_unlock(&s->lock);
    return rc == SQLITE_OK ? KF_OK : KF_ERR_IO;
}
