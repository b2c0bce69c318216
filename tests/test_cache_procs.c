/* The kernel cache across processes: cache_helper (the child) runs graphs
 * on OpenCL or hammers the store; this file starts, releases, kills and
 * checks them.  Every test works in its own temporary directory.
 * Usage: test_cache_procs second|concurrent|kill|sizecap|diskfull|fusec HELPER FUSEC */
#include "cache_util.h"
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>

static const char *helper, *fusec;

/* Start argv with extra environment ("NAME=value", NULL-terminated), stdout
 * and stderr to out/err (NULL: /dev/null); keep_fd stays open in the child
 * (the barrier's read end), close_fd is closed (its write end). */
static pid_t spawn(const char *const *argv, const char *const *env, const char *out, const char *err, int close_fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    for (int i = 0; env && env[i]; i++)
        putenv((char *)env[i]);
    if (close_fd >= 0)
        close(close_fd);
    int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(o, 1);
    dup2(e, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

static int wait_rc(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return calloc(1, 1);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

/* A number after "name=" in text, or -1. */
static long long field(const char *text, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(text, key);
    return p ? atoll(p + strlen(key)) : -1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* Run the helper once (no barrier); its stdout text (free it) and exit code. */
static char *run_helper(const char *const *args, const char *const *env, int *rc, const char *tmp, const char *tag)
{
    char out[400], err[400];
    snprintf(out, sizeof out, "%s/%s.out", tmp, tag);
    snprintf(err, sizeof err, "%s/%s.err", tmp, tag);
    *rc = wait_rc(spawn(args, env, out, err, -1));
    char *e = slurp(err);
    if (*rc != 0 || e[0])
        fprintf(stderr, "[%s exit %d] stderr:\n%s\n", tag, *rc, e);
    free(e);
    return slurp(out);
}

static bool device_present(const char *tmp)
{
    char file[400];
    snprintf(file, sizeof file, "%s/probe.kir", tmp);
    write_file(file, "kfuse 1\ngraph probe(x: f32[n]) -> (y) {\n  y = add x, x\n}\n");
    const char *args[] = { helper, "run", file, NULL };
    const char *env[] = { "KFUSE_CACHE=off", NULL };
    int rc;
    free(run_helper(args, env, &rc, tmp, "probe"));
    if (rc == 3)
        printf("no OpenCL device: skipped\n");
    return rc != 3;
}

/* The OpenCL devices `fusec build --target opencl` compiles for (every one
 * present: a GPU machine may have a vendor's and PoCL's), and how many
 * distinct cache targets they are (equal devices share every entry). */
typedef struct ocl_devices {
    int n, distinct;
} ocl_devices;

static ocl_devices opencl_devices(const char *tmp)
{
    const char *args[] = { helper, "devices", NULL };
    int rc;
    char *o = run_helper(args, NULL, &rc, tmp, "devices");
    ocl_devices d = { (int)field(o, "devices"), (int)field(o, "distinct") };
    CHECK_MSG(rc == 0 && d.distinct >= 1 && d.distinct <= d.n, "cache_helper devices: %s", o);
    free(o);
    printf("%d OpenCL device%s, %d distinct cache target%s\n", d.n, d.n == 1 ? "" : "s", d.distinct,
           d.distinct == 1 ? "" : "s");
    return d;
}

/* The summary of `fusec build --target opencl` for graphs one-kernel graphs
 * on devices d: all compiled on an empty cache (each distinct target once),
 * or all found when built before (again). */
static void build_summary(char *buf, size_t len, int graphs, ocl_devices d, bool again)
{
    int modules = graphs * d.n, compiled = again ? 0 : graphs * d.distinct;
    snprintf(buf, len, "%d kernel module%s (%d kernel%s) for %d target%s: %d compiled, %d already cached, 0 failed",
             modules, modules == 1 ? "" : "s", modules, modules == 1 ? "" : "s", d.n, d.n == 1 ? "" : "s", compiled,
             modules - compiled);
}

static kf_store *open_store(const char *dir, bool ro)
{
    kf_store *s = NULL;
    char note[600];
    kf_store_config sc = { dir, ro, false, 0, 0 };
    kf_status st = kf_store_open(&sc, &s, note, sizeof note);
    CHECK_MSG(st == KF_OK, "opening the store: %s", note);
    return s;
}

/* Every entry verifies and the database passes SQLite's own check. */
static uint64_t verify_all(const char *dir)
{
    kf_store *s = open_store(dir, true);
    uint64_t n = 0, bad = 1;
    char msg[600] = "";
    if (s) {
        CHECK_STATUS(kf_store_verify(s, NULL, NULL, &bad, msg, sizeof msg), KF_OK);
        CHECK_STATUS(kf_store_totals(s, &n, NULL, msg, sizeof msg), KF_OK);
        CHECK_MSG(bad == 0, "%llu of %llu entries do not verify", (unsigned long long)bad, (unsigned long long)n);
        kf_store_close(s);
    }
    char db[400];
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        CHECK_MSG(strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0, "integrity_check: %s",
                  sqlite3_column_text(st, 0));
    else
        CHECK_MSG(0, "integrity_check could not run: %s", sqlite3_errmsg(h));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

static void env_dir(char *buf, size_t len, const char *dir) { snprintf(buf, len, "KFUSE_CACHE_DIR=%s", dir); }

/* -- A second process compiles nothing; must-hit after fusec build -------------------------- */

static void test_second(const char *tmp)
{
    char dir[400], dir2[400], file[400], other[400], ed[500], ed2[500];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(dir2, sizeof dir2, "%s/built", tmp);
    snprintf(file, sizeof file, "%s/five.kir", tmp);
    snprintf(other, sizeof other, "%s/other.kir", tmp);
    char *text = distinct_graphs(5, 1);
    write_file(file, text);
    free(text);
    write_file(other, "kfuse 1\ngraph not_built(x: f32[n]) -> (y) {\n  y = sqrt x\n}\n");
    env_dir(ed, sizeof ed, dir);
    env_dir(ed2, sizeof ed2, dir2);
    const char *args[] = { helper, "run", file, NULL };
    const char *env[] = { ed, NULL };
    int rc;
    char *a = run_helper(args, env, &rc, tmp, "first");
    CHECK_MSG(rc == 0 && field(a, "compiles") == 5, "first process: %s", a);
    char *b = run_helper(args, env, &rc, tmp, "second");
    CHECK_MSG(rc == 0 && field(b, "compiles") == 0 && field(b, "disk_hits") == 5, "second process: %s", b);
    free(a);
    free(b);

    /* fusec build, then a must-hit process: zero compiles */
    ocl_devices devs = opencl_devices(tmp);
    char want[200], cmd[2000];
    snprintf(cmd, sizeof cmd, "'%s' build --target opencl --cache '%s' '%s' > '%s/build.out' 2>&1", fusec, dir2, file,
             tmp);
    rc = system(cmd);
    snprintf(cmd, sizeof cmd, "%s/build.out", tmp);
    char *bo = slurp(cmd);
    CHECK_MSG(rc == 0, "fusec build: %s", bo);
    build_summary(want, sizeof want, 5, devs, false);
    CHECK_CONTAINS(bo, want);
    free(bo);
    const char *env2[] = { ed2, "KFUSE_CACHE_MUST_HIT=1", NULL };
    char *c = run_helper(args, env2, &rc, tmp, "musthit");
    CHECK_MSG(rc == 0 && field(c, "compiles") == 0 && field(c, "disk_hits") == 5, "must-hit process: %s", c);
    free(c);
    const char *margs[] = { helper, "miss", other, "not_built", NULL };
    char *d = run_helper(margs, env2, &rc, tmp, "miss");
    CHECK_CONTAINS(d, "status not in the cache");
    CHECK_CONTAINS(d, "graph 'not_built'");
    CHECK_CONTAINS(d, "not_built_k0_");
    CHECK_CONTAINS(d, "compiles=0");
    free(d);
    /* building again finds everything */
    snprintf(cmd, sizeof cmd, "'%s' build --target opencl --cache '%s' '%s' > '%s/build2.out' 2>&1", fusec, dir2,
             file, tmp);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/build2.out", tmp);
    bo = slurp(cmd);
    build_summary(want, sizeof want, 5, devs, true);
    CHECK_CONTAINS(bo, want);
    free(bo);
    CHECK(verify_all(dir) == 5);
    CHECK(verify_all(dir2) == 5 * (uint64_t)devs.distinct);
}

/* -- 8 processes x 50 graphs x 20 rounds on an empty cache ----------------------------------- */

static void test_concurrent(const char *tmp)
{
    enum { PROCS = 8, GRAPHS = 50, ROUNDS = 20 };
    char dir[400], file[400], ed[500];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(file, sizeof file, "%s/fifty.kir", tmp);
    char *text = distinct_graphs(GRAPHS, 2);
    write_file(file, text);
    free(text);
    env_dir(ed, sizeof ed, dir);
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", pfd[0]);
    /* Under ASan, LeakSanitizer's exit-time scan of eight processes at
     * once, each with the OpenCL driver's threads still running, now and
     * then crashes in its own tracer ("Tracer caught signal 11"); the other
     * helper runs keep the leak check. */
    char asan[600];
    const char *ao = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sdetect_leaks=0", ao ? ao : "", ao && *ao ? ":" : "");
    char rounds[16];
    snprintf(rounds, sizeof rounds, "%d", ROUNDS);
    const char *env[] = { ed, asan, NULL };
    pid_t pids[PROCS];
    char out[PROCS][400], err[PROCS][400], offset[PROCS][16];
    for (int i = 0; i < PROCS; i++) {
        snprintf(out[i], sizeof out[i], "%s/p%d.out", tmp, i);
        snprintf(err[i], sizeof err[i], "%s/p%d.err", tmp, i);
        /* each starts at another graph, as workers of one job would: the
         * first round then compiles side by side (the same order would make
         * all of them wait for one compile at a time) */
        snprintf(offset[i], sizeof offset[i], "%d", i * GRAPHS / PROCS);
        const char *args[] = { helper,  "run",     file,  "--rounds", rounds,   "--fresh",
                               "--wait-fd", fdarg, "--offset", offset[i], NULL };
        pids[i] = spawn(args, env, out[i], err[i], pfd[1]);
    }
    close(pfd[0]);
    double t0 = now_s();
    close(pfd[1]); /* release them together */
    long long compiles = 0, disk = 0, memory = 0;
    for (int i = 0; i < PROCS; i++) {
        int rc = wait_rc(pids[i]);
        char *o = slurp(out[i]), *e = slurp(err[i]);
        CHECK_MSG(rc == 0, "process %d exited %d: %s", i, rc, e);
        CHECK_MSG(!strstr(e, "locked") && !strstr(e, "busy") && !strstr(o, "locked"), "process %d: %s", i, e);
        CHECK_MSG(field(o, "warnings") == 0, "process %d warned: %s", i, o);
        compiles += field(o, "compiles");
        disk += field(o, "disk_hits");
        memory += field(o, "memory_hits");
        free(o);
        free(e);
    }
    printf("concurrent: %d processes x %d graphs x %d rounds in %.1f s: %lld compiles, %lld disk hits, %lld memory "
           "hits\n",
           PROCS, GRAPHS, ROUNDS, now_s() - t0, compiles, disk, memory);
    /* no kernel compiled twice: a process that finds another compiling it waits */
    CHECK_MSG(compiles == GRAPHS, "%lld compiles for %d distinct graphs", compiles, GRAPHS);
    CHECK(compiles + disk == (long long)PROCS * GRAPHS * ROUNDS);
    CHECK(verify_all(dir) == GRAPHS);
}

/* -- kill -9 of writers at random points, 200 times --------------------------------------- */

static void test_kill(const char *tmp)
{
    enum { KILLS = 200, LIVE = 3 };
    char dir[400];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    mkdir(dir, 0700);
    rt_rng rng = { (uint64_t)time(NULL) };
    pid_t live[LIVE] = { 0 };
    char seed[LIVE][24];
    int kills = 0, started = 0, failures = 0;
    double t0 = now_s();
    while (kills < KILLS) {
        for (int i = 0; i < LIVE; i++)
            if (!live[i]) {
                snprintf(seed[i], sizeof seed[i], "%d", started++ % 7);
                const char *args[] = { helper, "writer", dir, seed[i], NULL };
                char out[400];
                snprintf(out, sizeof out, "%s/w%d.out", tmp, i);
                live[i] = spawn(args, NULL, out, NULL, -1);
            }
        sleep_ms(1 + (int)(rt_next(&rng) % 40));
        int victim = (int)(rt_next(&rng) % LIVE);
        kill(live[victim], SIGKILL);
        int rc = wait_rc(live[victim]);
        if (rc != 128 + SIGKILL) {
            char out[400];
            snprintf(out, sizeof out, "%s/w%d.out", tmp, victim);
            char *o = slurp(out);
            CHECK_MSG(0, "writer exited %d before the kill: %s", rc, o);
            free(o);
            failures++;
        }
        live[victim] = 0;
        kills++;
    }
    for (int i = 0; i < LIVE; i++)
        if (live[i]) {
            kill(live[i], SIGKILL);
            wait_rc(live[i]);
        }
    uint64_t n = verify_all(dir);
    printf("kill: %d writers killed at random points in %.1f s; %llu entries left, all verify\n", kills, now_s() - t0,
           (unsigned long long)n);
    CHECK(failures == 0);
}

/* -- Size cap: 4 processes, 48 distinct graphs, room for 8 entries ------------------------- */

/* The total and the largest entry size in the database at db; false when
 * it cannot be read (yet). */
static bool db_sizes(const char *db, uint64_t *total, uint64_t *largest)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = access(db, F_OK) == 0 && sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(h, "SELECT total(size), max(size) FROM entry", -1, &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW;
    if (ok) {
        *total = (uint64_t)sqlite3_column_double(st, 0);
        *largest = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return ok;
}

static void test_sizecap(const char *tmp)
{
    enum { PROCS = 4, GRAPHS = 12, ROOM = 8 };
    char dir[400], ed[500], files[PROCS][400], db[420];
    /* An entry's size depends on the device's binaries (~90 KB on PoCL,
     * ~10 KB on NVIDIA's OpenCL): measure one like the test's, then cap
     * the cache at ROOM of them, so that 48 must evict whatever the device */
    snprintf(dir, sizeof dir, "%s/measure", tmp);
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    snprintf(files[0], sizeof files[0], "%s/one.kir", tmp);
    char *text = distinct_graphs(1, 9);
    write_file(files[0], text);
    free(text);
    env_dir(ed, sizeof ed, dir);
    const char *margs[] = { helper, "run", files[0], NULL };
    const char *menv[] = { ed, NULL };
    int rc;
    free(run_helper(margs, menv, &rc, tmp, "measure"));
    uint64_t one = 0, one_total = 0;
    struct stat st;
    CHECK(rc == 0 && db_sizes(db, &one_total, &one) && one > 0 && stat(db, &st) == 0);
    if (kf_test_fail)
        return;
    /* the file of a database with one entry: pages of the schema and the tables */
    uint64_t base = (uint64_t)st.st_size, cap = ROOM * one;

    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    env_dir(ed, sizeof ed, dir);
    char capenv[64];
    snprintf(capenv, sizeof capenv, "KFUSE_CACHE_MAX_SIZE=%llu", (unsigned long long)cap);
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", pfd[0]);
    const char *env[] = { ed, capenv, NULL };
    pid_t pids[PROCS];
    char out[PROCS][400], err[PROCS][400];
    for (int i = 0; i < PROCS; i++) {
        snprintf(files[i], sizeof files[i], "%s/g%d.kir", tmp, i);
        text = distinct_graphs(GRAPHS, 10 + i);
        write_file(files[i], text);
        free(text);
        snprintf(out[i], sizeof out[i], "%s/s%d.out", tmp, i);
        snprintf(err[i], sizeof err[i], "%s/s%d.err", tmp, i);
        const char *args[] = { helper, "run", files[i], "--wait-fd", fdarg, NULL };
        pids[i] = spawn(args, env, out[i], err[i], pfd[1]);
    }
    close(pfd[0]);
    close(pfd[1]);
    /* watch the database while they run */
    uint64_t worst = 0, largest = 0;
    long long evictions = 0;
    int done = 0, samples = 0;
    bool finished[PROCS] = { false };
    while (done < PROCS) {
        uint64_t total, mx;
        if (db_sizes(db, &total, &mx)) {
            worst = total > worst ? total : worst;
            largest = mx > largest ? mx : largest;
            samples++;
        }
        for (int i = 0; i < PROCS; i++) {
            int stt;
            if (!finished[i] && waitpid(pids[i], &stt, WNOHANG) == pids[i]) {
                finished[i] = true;
                done++;
                char *o = slurp(out[i]), *e = slurp(err[i]);
                CHECK_MSG(WIFEXITED(stt) && WEXITSTATUS(stt) == 0 && field(o, "warnings") == 0, "process %d: %s %s",
                          i, o, e);
                evictions += field(o, "evictions");
                free(o);
                free(e);
            }
        }
        sleep_ms(20);
    }
    kf_store *s = open_store(dir, true);
    uint64_t n = 0, bytes = 0;
    char msg[600];
    if (s) {
        kf_store_totals(s, &n, &bytes, msg, sizeof msg);
        kf_store_close(s);
    }
    stat(db, &st);
    printf("sizecap: %d samples, largest total %llu bytes (cap %llu = %d x %llu, largest entry %llu); at the end "
           "%llu entries, %llu bytes, %lld evicted; file %lld bytes (%llu with one entry)\n",
           samples, (unsigned long long)worst, (unsigned long long)cap, ROOM, (unsigned long long)one,
           (unsigned long long)largest, (unsigned long long)n, (unsigned long long)bytes, evictions,
           (long long)st.st_size, (unsigned long long)base);
    CHECK_MSG(worst <= cap + largest && bytes <= cap, "over the cap: %llu", (unsigned long long)worst);
    CHECK(n > 0 && n < PROCS * GRAPHS && evictions > 0);
    /* the file itself: the tables' pages, plus the entries, each at worst
     * doubled by page slack; evicted pages go back with
     * incremental vacuum, so it does not keep all 48 */
    CHECK_MSG((uint64_t)st.st_size <= base + 2 * (cap + largest), "file %lld bytes", (long long)st.st_size);
    verify_all(dir);
}

/* -- A full disk: stores fail, runs go on ------------------------------------------------------ */

static void test_diskfull(const char *tmp)
{
    char dir[400], file[400], ed[500];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(file, sizeof file, "%s/four.kir", tmp);
    char *text = distinct_graphs(4, 3);
    write_file(file, text);
    free(text);
    env_dir(ed, sizeof ed, dir);
    const char *args[] = { helper, "run", file, NULL };
    int rc;
    /* make the database (one other graph in it) while there is room */
    char probe[400];
    snprintf(probe, sizeof probe, "%s/probe.kir", tmp);
    const char *pargs[] = { helper, "run", probe, NULL };
    const char *penv[] = { ed, NULL };
    free(run_helper(pargs, penv, &rc, tmp, "prime"));
    CHECK(rc == 0);
    /* then no database file may grow past 48 KiB: every store of a binary
     * (~90 KB on PoCL) fails with SQLITE_FULL, as on a full disk */
    const char *env[] = { ed, "CACHE_HELPER_FULL=49152", NULL };
    char *a = run_helper(args, env, &rc, tmp, "full");
    CHECK_MSG(rc == 0 && field(a, "compiles") == 4 && field(a, "warnings") >= 1 && field(a, "written") == 0,
              "disk full: %s", a);
    CHECK_CONTAINS(a, "warning cache:");
    free(a);
    const char *env2[] = { ed, NULL };
    char *b = run_helper(args, env2, &rc, tmp, "room");
    CHECK_MSG(rc == 0 && field(b, "compiles") == 4 && field(b, "warnings") == 0, "with room: %s", b);
    free(b);
    char *c = run_helper(args, env2, &rc, tmp, "again");
    CHECK_MSG(rc == 0 && field(c, "compiles") == 0 && field(c, "disk_hits") == 4, "after: %s", c);
    free(c);
    verify_all(dir);
}

/* -- fusec build and fusec cache -------------------------------------------------------------- */

static int fusec_run(const char *tmp, const char *args, char **out)
{
    char cmd[2000], path[400];
    snprintf(path, sizeof path, "%s/fusec.out", tmp);
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2>&1", fusec, args, path);
    int rc = system(cmd);
    *out = slurp(path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_fusec(const char *tmp)
{
    char dir[400], file[400], a[1500], db[420], want[200];
    ocl_devices devs = opencl_devices(tmp);
    int entries = 3 * devs.distinct;
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(file, sizeof file, "%s/three.kir", tmp);
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    char *text = distinct_graphs(3, 4);
    write_file(file, text);
    free(text);
    char *o;
    snprintf(a, sizeof a, "cache stats --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 0);
    CHECK_CONTAINS(o, "no kernel cache");
    free(o);
    snprintf(a, sizeof a, "build --target opencl --cache '%s' '%s'", dir, file);
    CHECK(fusec_run(tmp, a, &o) == 0);
    build_summary(want, sizeof want, 3, devs, false);
    CHECK_CONTAINS(o, want);
    free(o);
    snprintf(a, sizeof a, "cache stats --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 0);
    snprintf(want, sizeof want, "entries: %d,", entries);
    CHECK_CONTAINS(o, want);
    CHECK_CONTAINS(o, "opencl");
    free(o);
    snprintf(a, sizeof a, "cache list --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 0);
    CHECK_CONTAINS(o, "g0 (1 kernel: g0_k0_");
    CHECK_CONTAINS(o, "g2 (1 kernel");
    free(o);
    snprintf(a, sizeof a, "cache verify --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 0);
    snprintf(want, sizeof want, "%d entries checked, 0 bad", entries);
    CHECK_CONTAINS(o, want);
    free(o);
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "UPDATE payload SET blob = zeroblob(length(blob)) WHERE id = 2", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(h);
    CHECK(fusec_run(tmp, a, &o) == 1);
    CHECK_CONTAINS(o, "BAD ");
    CHECK_CONTAINS(o, "checksum");
    snprintf(want, sizeof want, "%d entries checked, 1 bad", entries);
    CHECK_CONTAINS(o, want);
    free(o);
    snprintf(a, sizeof a, "cache prune --max-size 1K --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 0);
    snprintf(want, sizeof want, "pruned %d entries", entries);
    CHECK_CONTAINS(o, want);
    free(o);
    snprintf(a, sizeof a, "build --target opencl --cache '%s' '%s'", dir, file);
    CHECK(fusec_run(tmp, a, &o) == 0);
    free(o);
    snprintf(a, sizeof a, "cache clear --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 0);
    snprintf(want, sizeof want, "removed %d entries", entries);
    CHECK_CONTAINS(o, want);
    free(o);
    /* usage errors */
    CHECK(fusec_run(tmp, "cache", &o) == 2);
    free(o);
    CHECK(fusec_run(tmp, "cache bogus", &o) == 2);
    free(o);
    snprintf(a, sizeof a, "cache prune --cache '%s'", dir);
    CHECK(fusec_run(tmp, a, &o) == 2);
    CHECK_CONTAINS(o, "--max-size");
    free(o);
    snprintf(a, sizeof a, "build '%s'", file);
    CHECK(fusec_run(tmp, a, &o) == 2);
    CHECK_CONTAINS(o, "missing --target");
    free(o);
    snprintf(a, sizeof a, "build --target cuda:sm_9x '%s'", file);
    CHECK(fusec_run(tmp, a, &o) == 2);
    free(o);
    CHECK(fusec_run(tmp, "help build", &o) == 0);
    CHECK_CONTAINS(o, "cuda:sm_XX");
    free(o);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_cache_procs second|concurrent|kill|sizecap|diskfull|fusec HELPER FUSEC\n");
        return 2;
    }
    helper = argv[2];
    fusec = argv[3];
    signal(SIGPIPE, SIG_IGN);
    char tmp[256];
    temp_dir(tmp, sizeof tmp, argv[1]);
    static const struct {
        const char *name;
        void (*fn)(const char *);
        bool device;
    } tests[] = {
        { "second", test_second, true },   { "concurrent", test_concurrent, true }, { "kill", test_kill, false },
        { "sizecap", test_sizecap, true }, { "diskfull", test_diskfull, true },     { "fusec", test_fusec, true },
    };
    int found = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strcmp(argv[1], tests[i].name)) {
            found = 1;
            if (!tests[i].device || device_present(tmp))
                tests[i].fn(tmp);
        }
    if (!found) {
        fprintf(stderr, "test_cache_procs: unknown test '%s'\n", argv[1]);
        rm_rf(tmp);
        return 2;
    }
    if (kf_test_fail == 0)
        rm_rf(tmp);
    else
        fprintf(stderr, "kept %s for a look\n", tmp);
    return kf_test_done();
}
