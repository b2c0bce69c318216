/* First-call latency (problem 5 of DESIGN.md): y = x+x+x+x+x called twice
 * in this process, then once more in a new process (this program started
 * again), each call timed (kf_compile + kf_run + wait) and followed by the
 * context's cache stats, on the best device present.  The first call of a
 * machine compiles; the second is answered by the plan cache in memory; the
 * new process loads the compiled kernel from the disk cache and compiles
 * nothing.  docs/examples/first_call.md reads the numbers.
 * Usage: first_call [N]                 N elements (default 1000000)
 *        first_call --new-process N     (how the first run starts itself) */
#define _POSIX_C_SOURCE 200809L /* fork, execl, waitpid, clock_gettime */
#include <kfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* y = x+x+x+x+x over a symbolic length n, built as an application would. */
static kf_graph *build_x5(void)
{
    kf_graph *g = kf_graph_new("x5");
    kf_dim n = KF_SYM("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n), y = x;
    for (int i = 0; i < 4; i++)
        y = kf_binary(g, KF_OP_ADD, y, x);
    kf_output(g, y, "y");
    return g;
}

static void print_stats(kf_context *ctx)
{
    kf_stats s;
    kf_context_stats(ctx, &s);
    printf("  cache: memory_hits=%llu disk_hits=%llu misses=%llu compiles=%llu compile_ms=%.1f bytes_read=%llu "
           "bytes_written=%llu\n",
           (unsigned long long)s.memory_hits, (unsigned long long)s.disk_hits, (unsigned long long)s.misses,
           (unsigned long long)s.compiles, s.compile_ms, (unsigned long long)s.bytes_read,
           (unsigned long long)s.bytes_written);
}

/* One call as an application makes it: compile (answered by a cache when it
 * can be), run, wait.  Prints its time, then checks y on the host. */
static bool call(kf_context *ctx, const kf_graph *g, kf_view in, kf_view out, const float *hx, float *hy,
                 const char *label)
{
    int64_t n = in.shape[0];
    kf_program *p = NULL;
    double t0 = now_ms();
    bool ok = kf_compile(ctx, g, &p) == KF_OK && kf_run(p, NULL, &in, 1, NULL, 0, &out, 1) == KF_OK &&
              kf_stream_sync(ctx, NULL) == KF_OK;
    double ms = now_ms() - t0;
    ok = ok && kf_download(hy, out.buf, 0, (size_t)n * sizeof *hy, NULL) == KF_OK;
    int64_t bad = 0;
    for (int64_t i = 0; ok && i < n; i++)
        bad += hy[i] != hx[i] + hx[i] + hx[i] + hx[i] + hx[i];
    if (!ok)
        printf("%-24s failed: %s\n", label, kf_context_error(ctx));
    else
        printf("%-24s %10.3f ms  %s\n", label, ms, bad ? "WRONG" : "correct");
    kf_program_free(p);
    return ok && !bad;
}

/* Start this program again as a new process; true when it exited 0. */
static bool new_process(const char *argv0, int64_t n)
{
    char arg[32];
    snprintf(arg, sizeof arg, "%lld", (long long)n);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv0, "--new-process", arg, (char *)NULL);
        perror("first_call: /proc/self/exe");
        _exit(127);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
    bool child = argc > 1 && !strcmp(argv[1], "--new-process");
    int64_t n = argc > 1 + child ? atoll(argv[1 + child]) : 1000000;
    if (n < 1) {
        fprintf(stderr, "usage: first_call [N]\n");
        return 2;
    }
    kf_graph *g = build_x5();
    float *hx = malloc((size_t)n * sizeof *hx), *hy = malloc((size_t)n * sizeof *hy);
    for (int64_t i = 0; hx && i < n; i++)
        hx[i] = (float)(i % 1000) * 0.25f - 100.0f;

    /* the context: device, driver, the cache opened (not part of a call) */
    kf_context *ctx = NULL;
    char why[512];
    double t0 = now_ms();
    if (!hx || !hy || kf_context_create(NULL, &ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "first_call: %s\n", hx && hy ? why : "out of memory");
        return 1;
    }
    double ctx_ms = now_ms() - t0;
    kf_device_info info;
    kf_stats s;
    kf_context_info(ctx, &info);
    kf_context_stats(ctx, &s);
    if (!child)
        printf("x+x+x+x+x over %lld f32 elements on %s (%s); kernel cache: %s\n", (long long)n, info.name,
               kf_backend_name(info.backend), s.cache_dir[0] ? s.cache_dir : "none (memory only)");
    printf("%s: context created in %.1f ms\n", child ? "new process" : "this process", ctx_ms);

    kf_buffer *bx = NULL, *by = NULL;
    bool ok = kf_buffer_alloc(ctx, (size_t)n * sizeof(float), &bx) == KF_OK &&
              kf_buffer_alloc(ctx, (size_t)n * sizeof(float), &by) == KF_OK &&
              kf_upload(bx, 0, hx, (size_t)n * sizeof(float), NULL) == KF_OK && kf_stream_sync(ctx, NULL) == KF_OK;
    kf_view in = kf_view_dense(bx, 0, KF_F32, 1, &n), out = kf_view_dense(by, 0, KF_F32, 1, &n);
    if (!ok)
        fprintf(stderr, "first_call: buffers: %s\n", kf_context_error(ctx));
    int calls = child ? 1 : 2;
    for (int c = 0; ok && c < calls; c++) {
        ok = call(ctx, g, in, out, hx, hy, child ? "new process, first call" : c ? "second call" : "first call");
        print_stats(ctx);
    }
    kf_context_stats(ctx, &s);
    if (child && ok && s.compiles == 0)
        printf("new process: compiled nothing (the kernel came from the disk cache)\n");
    else if (child && ok)
        printf("new process: compiled %llu kernel module(s)%s%s\n", (unsigned long long)s.compiles,
               s.warning[0] ? ": " : " (is the disk cache off?)", s.warning);
    else if (ok) {
        ok = new_process(argv[0], n);
        printf("%s\n", ok ? "3 calls, all correct" : "the new process failed");
    }
    kf_context_destroy(ctx);
    kf_graph_free(g);
    free(hx);
    free(hy);
    return ok ? 0 : 1;
}
