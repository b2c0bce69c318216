/* wake.c: how long a thread blocked on a condition variable takes to run
 * after it is signalled, by how long it slept first.  It decided against
 * a cache look-ahead thread (bench/results/cache-h200-2026-11-21-s4.md):
 * on the H200 VM, 100-130 us after a millisecond or more of sleep.
 * Build and run: cc -O2 bench/wake.c -o /tmp/wake -lpthread && /tmp/wake */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int asked;
static double woke;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!asked)
            pthread_cond_wait(&cv, &mu);
        woke = now_us();
        asked = 0;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    static const int idle_us[] = { 100, 1000, 10000, 100000 };
    for (int k = 0; k < 4; k++) {
        double sum = 0, max = 0;
        for (int i = 0; i < 10; i++) {
            usleep((useconds_t)idle_us[k]);
            pthread_mutex_lock(&mu);
            double t0 = now_us();
            asked = 1;
            pthread_cond_broadcast(&cv);
            while (asked)
                pthread_cond_wait(&cv, &mu);
            double l = woke - t0;
            pthread_mutex_unlock(&mu);
            sum += l;
            max = l > max ? l : max;
        }
        printf("woken after %6d us asleep: mean %6.1f us, max %6.1f us\n", idle_us[k], sum / 10, max);
    }
    return 0;
}
