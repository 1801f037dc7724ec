/* ptstress: shakes out lost, doubled, early and late firings in a timer
 * design, through the engine table (ptimer/engine.h): a design built in,
 * or one loaded with --engine, whose every cell runs in a copy of this
 * program of its own, so that its crash or hang is that cell's verdict.
 * For each design x scenario: a verdict line, counts, violations by kind,
 * the seed and the command that reproduces the run; JSON lines with
 * --json. Exit status 1 on any violation, 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stress.h"

struct scenario {
    const char *name;
    const char *what;
    void (*run)(struct stress_run *r);
    bool needs_move;
    bool needs_tm; /* drives timer objects (the engine's tm_* ops) */
    bool sched;    /* runs inside the scheduler, on its designs only */
    bool slack;    /* runs with --slack: its designs are given the window */
    /* The default bound: how late a firing may be past the delays the
     * scenario itself causes and allows for (its stalls, its rounds) and
     * the stalls of the whole machine the witness saw (witness.c), that is,
     * the machine's jitter. The scheduler's adds its run queues: more Gs
     * than Ps, each running a few ms at most before it blocks. */
    double bound_ms;
};

static const struct scenario scenarios[] = {
    {"modtimer", "random arm/stop from Ps and outsiders, several threads on one timer", sc_modtimer,
     false, true, false, true, 50},
    {"ticker", "tickers reset and stopped at random while Ps stall", sc_ticker, false, true, false,
     true, 50},
    {"churn", "RPC-style arm/cancel at full speed: bounded memory, no leak", sc_churn, false, false,
     false, true, 50},
    {"move", "modtimer while Ps are removed (moveTimers) and added back", sc_move, true, true,
     false, true, 50},
#ifdef PTSTRESS_HAVE_SCHED
    {"sched", "inside the scheduler: sleeps, Timers, AfterFuncs, Tickers, while Ps come and go",
     sc_sched, false, false, true, true, 100},
    {"vtime", "the scheduler on its virtual clock: every wake, tick and timeout exactly on time",
     sc_sched_vtime, false, false, true, false, 100},
#endif
};
#define NSCENARIOS (int)(sizeof scenarios / sizeof scenarios[0])

/* The designs a run of "all" tries: every engine that holds timer
 * objects (kernel holds one timer per thread). */
static const char *const all_designs[] = {"pheap",      "pheap-sync", "pheap-staged", "timerthread",
                                          "globalheap", "floor",      "pwheel",       "lheap"};

static const struct pt_engine *find_design(const char *name)
{
#ifdef PTSTRESS_HAVE_SCHED
    for (int i = 0; stress_sched_design(i); i++)
        if (strcmp(stress_sched_design(i)->name, name) == 0)
            return stress_sched_design(i);
#endif
    return engine_find(name);
}

/* One arm and cancel through a design on a thread of its own, before any
 * run: what the library keeps for the whole process (the TimerThread's
 * table of thread indices) is then there before the leak check's first
 * reading, and only what a run leaves behind counts. */
static void *prime_thread(void *eng)
{
    const struct pt_engine *e = eng;
    void *inst = e->create(1, NULL);
    if (!inst)
        return NULL;
    void *th = e->thread_start(inst, 0);
    if (th) {
        pt_engine_handle h = e->schedule(th, pt_nanotime() + 1000000000, 0, NULL);
        if (h)
            e->cancel(th, h);
        e->thread_stop(th);
    }
    e->destroy(inst);
    return NULL;
}

static void prime(const struct pt_engine *e)
{
    pthread_t t;
    if (!e->create)
        return; /* a scheduler design: the sched scenario primes its own */
    if (pthread_create(&t, NULL, prime_thread, (void *)e) == 0)
        pthread_join(t, NULL);
}

static bool is_sched(const struct pt_engine *e)
{
#ifdef PTSTRESS_HAVE_SCHED
    return stress_is_sched(e);
#else
    (void)e;
    return false;
#endif
}

/* Names an engine of the user's may not take: the scheduler's designs
 * (the built-in engines engine_load checks itself). */
static bool reserved(const char *name)
{
#ifdef PTSTRESS_HAVE_SCHED
    for (int i = 0; stress_sched_design(i); i++)
        if (strcmp(stress_sched_design(i)->name, name) == 0)
            return true;
#endif
    (void)name;
    return false;
}

/* In a copy that runs one cell of a loaded engine (--cell-fd, given by
 * the parent, which then runs the cell here instead of starting another
 * copy): the descriptor it writes a byte to once it has given its verdict.
 * A copy that ends without one died (a sanitizer reports a crash and
 * exits, it is not killed). */
static int cell_fd = -1;

static void cell_said(void)
{
    if (cell_fd >= 0 && write(cell_fd, "v", 1) != 1)
        cell_fd = -1;
}

static const char *signame(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    static char buf[24];
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}

/* One cell of a loaded engine, in this program executed afresh with the
 * command that reproduces it: its verdict line and JSON line are its own;
 * a death by signal, or no end, gets one here. 0 if it passed. */
static int run_cell_apart(const char *argv0, const struct pt_engine *e, const char *scenario,
                          const struct stress_opts *o, double bound_ms, double hang_s,
                          const char *json)
{
    char t[16], out[16], n[16], dur[32], bound[32], seed[32], hang[32];
    snprintf(hang, sizeof hang, "%g", hang_s);
    snprintf(t, sizeof t, "%d", o->threads);
    snprintf(out, sizeof out, "%d", o->outsiders);
    snprintf(n, sizeof n, "%d", o->timers);
    snprintf(dur, sizeof dur, "%g", (double)o->duration / 1e9);
    snprintf(bound, sizeof bound, "%g", bound_ms);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    const char *args[32] = {argv0, "--engine", engine_path(e), "-d", e->name, "-s",       scenario,
                            "-t",  t,          "-o",           out,  "-n",    n,          "-T",
                            dur,   "-b",       bound,          "-S", seed,    "--hang-s", hang};
    int na = 21;
    if (json) {
        args[na++] = "-j";
        args[na++] = json;
    }
    char cmd[1024] = ""; /* the rerun, as a user types it */
    for (int i = 0; i < na; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", args[i]);
    int said[2];
    if (pipe(said) != 0) {
        printf("FAIL %s %s: cannot make a pipe: %s\n", e->name, scenario, strerror(errno));
        return 1;
    }
    /* --cell-fd first: the copy reads it before it loads the engine */
    char fd[16];
    snprintf(fd, sizeof fd, "%d", said[1]);
    const char *exec_args[36] = {argv0, "--cell-fd", fd};
    for (int i = 1; i < na; i++)
        exec_args[i + 2] = args[i];
    fflush(NULL);
    pt_nanos t0 = pt_nanotime();
    pid_t pid = fork();
    if (pid < 0) {
        printf("FAIL %s %s: cannot fork: %s\n", e->name, scenario, strerror(errno));
        close(said[0]);
        close(said[1]);
        return 1;
    }
    if (pid == 0) {
        close(said[0]);
        execv("/proc/self/exe", (char *const *)exec_args);
        fprintf(stderr, "ptstress: cannot execute /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    /* The copy's own watchdog ends a hang a minute past the run with a
     * verdict; this one is for a copy that cannot even do that. */
    pt_nanos deadline = t0 + o->duration + (pt_nanos)(2 * hang_s * 1e9) + 5000000000 +
                        40 * (pt_nanos)(bound_ms * 1e6);
    int status = 0;
    bool hung = false;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            status = 0;
            break;
        }
        if (pt_nanotime() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            hung = true;
            break;
        }
        stress_sleep(20000000);
    }
    close(said[1]);
    char v;
    bool verdict_given = read(said[0], &v, 1) == 1; /* the copy is gone: no wait */
    close(said[0]);
    if (!hung && WIFEXITED(status) && verdict_given)
        return WEXITSTATUS(status) != 0;
    const char *verdict = hung ? "HANG" : "CRASH";
    char what[96];
    if (hung)
        snprintf(what, sizeof what, "no end %.0f s after it started (killed)",
                 (double)(pt_nanotime() - t0) / 1e9);
    else if (WIFSIGNALED(status))
        snprintf(what, sizeof what, "killed by %s", signame(WTERMSIG(status)));
    else
        snprintf(what, sizeof what, "died without a verdict, exit status %d (its report above)",
                 WEXITSTATUS(status));
    printf("%s %s %s: %s; rerun: %s\n", verdict, e->name, scenario, what, cmd);
    fflush(stdout);
    if (json) {
        FILE *jf = strcmp(json, "-") == 0 ? stdout : fopen(json, "a");
        if (jf) {
            fprintf(jf,
                    "{\"tool\":\"ptstress\",\"design\":\"%s\",\"scenario\":\"%s\","
                    "\"verdict\":\"%s\",\"seed\":%llu,\"why\":\"%s\",\"rerun\":\"%s\"}\n",
                    e->name, scenario, verdict, (unsigned long long)o->seed, what, cmd);
            if (jf != stdout)
                fclose(jf);
            else
                fflush(jf);
        }
    }
    return 1;
}

static void usage(FILE *f, const char *argv0)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  -d, --design LIST     designs, comma-separated, or all (default all):\n"
            "                        pheap, pheap-sync, pheap-staged, pwheel, lheap, timerthread,\n"
            "                        globalheap, floor,\n"
            "                        and the scheduler's sched-perp, sched-lheap, sched-tt\n"
            "                        (scenario sched)\n"
            "  -s, --scenario LIST   scenarios, comma-separated, or all (default all)\n"
            "  -t, --threads N       Ps (default 4; sched: the most, set at random)\n"
            "  -o, --outsiders N     mutator threads that are not Ps (default 2)\n"
            "  -n, --timers N        timers (modtimer, move) or tickers (default 128);\n"
            "                        sched: N/8 Gs of each kind\n"
            "  -T, --duration SEC    per design x scenario (default 2)\n"
            "  -b, --bound MS        how late a firing may be, past the delays a scenario\n"
            "                        causes itself (default or 0: the scenario's, 50; sched 100)\n"
            "      --slack MS        each timer's window, [when, when + MS]: never early,\n"
            "                        late past its end plus the bound (the engine's\n"
            "                        set_slack; sched: the scheduler's timer_slack; vtime\n"
            "                        is skipped)\n"
            "  -S, --seed N          (default: from the clock; printed)\n"
            "      --soak            long runs: duration 3600 s unless given, progress lines\n"
            "  -p, --progress SEC    a progress line every SEC seconds (--soak: 60)\n"
            "  -j, --json FILE       one JSON line per run (- for stdout)\n"
            "      --hang-s SEC      a run still going SEC seconds past its end is hung\n"
            "                        (default 60)\n"
            "      --engine PATH     a design of your own, a shared object built against\n"
            "                        ptimer/engine.h, run beside -d's (repeatable); each of\n"
            "                        its cells runs in a process of its own: a crash or a\n"
            "                        hang is that cell's verdict, and the run goes on\n"
            "scenarios:\n",
            argv0);
    for (int i = 0; i < NSCENARIOS; i++)
        fprintf(f, "  %-9s %s\n", scenarios[i].name, scenarios[i].what);
}

static bool in_list(const char *list, const char *name)
{
    if (strcmp(list, "all") == 0)
        return true;
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',')) {
        if (*p == ',')
            p++;
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
            return true;
    }
    return false;
}

static void put_json(FILE *f, const struct stress_run *r, bool pass, double secs)
{
    const struct stress_opts *o = r->o;
    fprintf(f,
            "{\"tool\":\"ptstress\",\"design\":\"%s\",\"scenario\":\"%s\",\"verdict\":\"%s\","
            "\"seed\":%llu,\"threads\":%d,\"outsiders\":%d,\"timers\":%d,\"duration_s\":%.3f,"
            "\"bound_ms\":%.0f,\"ops\":%llu,\"firings\":%llu,\"untracked\":%llu,\"excused\":%llu,"
            "\"violations\":%llu,\"quiet_checks\":%u",
            r->eng->name, r->scenario, pass ? "PASS" : "FAIL", (unsigned long long)o->seed,
            o->threads, o->outsiders, o->timers, secs, (double)o->bound / 1e6,
            (unsigned long long)atomic_load(&r->ops), (unsigned long long)atomic_load(&r->firings),
            (unsigned long long)atomic_load(&r->untracked),
            (unsigned long long)atomic_load(&r->excused), (unsigned long long)stress_violations(r),
            atomic_load(&r->quiet_checks));
    for (int k = 0; k < V_NKINDS; k++)
        fprintf(f, ",\"%s\":%llu", viol_names[k], (unsigned long long)atomic_load(&r->viol[k]));
    if (r->io)
        fprintf(f, ",\"io\":\"%s\"", r->io);
    fprintf(f, "}\n");
    fflush(f);
}

static void put_verdict(const struct stress_run *r, double took)
{
    const struct stress_opts *o = r->o;
    uint64_t v = stress_violations(r);
    printf("%s %s %s: %llu ops, %llu firings, %llu violations", v ? "FAIL" : "PASS", r->eng->name,
           r->scenario, (unsigned long long)atomic_load(&r->ops),
           (unsigned long long)atomic_load(&r->firings), (unsigned long long)v);
    for (int k = 0; k < V_NKINDS; k++)
        if (atomic_load(&r->viol[k]))
            printf(" %s=%llu", viol_names[k], (unsigned long long)atomic_load(&r->viol[k]));
    printf(" (seed %llu, %d Ps + %d outsiders, %.1f s", (unsigned long long)o->seed, o->threads,
           o->outsiders, took);
    if (r->io)
        printf(", I/O through the %s", r->io);
    if (o->slack)
        printf(", windows of %g ms", (double)o->slack / 1e6);
    if (atomic_load(&r->quiet_checks))
        printf(", %u quiescent checks mid-run", atomic_load(&r->quiet_checks));
    /* The witness's waits for a CPU, which the checks allowed for: how
     * many, and how many checks only they explained. */
    pt_nanos longest;
    unsigned long stalls = witness_tally(&longest);
    if (stalls)
        printf("; the witness kept off the CPUs %lu times, at most %.1f ms; %llu late checks "
               "excused by that",
               stalls, (double)longest / 1e6, (unsigned long long)atomic_load(&r->excused));
    printf(")\n");
    fflush(stdout);
    cell_said();
}

/* The watchdog: a design that never returns from a call (a lost wake-up
 * in a stop that waits, a G parked for ever) would hang the run, and a
 * soak would end in a timeout with nothing said. Past its deadline, the
 * run in progress is given its verdict, hung, and the process exits 1. */
static struct stress_run *_Atomic wd_run;
static _Atomic pt_nanos wd_t0, wd_deadline;
static FILE *wd_json;
/* Its own end, at the process's: no thread left for ThreadSanitizer's
 * exit to wait a second on. */
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv;
static bool wd_stop; /* guarded by wd_mu */

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_mu);
    while (!wd_stop) {
        pt_nanos until = pt_nanotime() + 100000000;
        struct timespec ts = {until / 1000000000, until % 1000000000};
        pthread_cond_timedwait(&wd_cv, &wd_mu, &ts);
        struct stress_run *r = atomic_load(&wd_run);
        pt_nanos deadline = atomic_load(&wd_deadline), now = pt_nanotime();
        if (wd_stop || !r || now < deadline || r != atomic_load(&wd_run))
            continue;
        stress_violation(r, V_HUNG, -1, 0, "the run to end", "still running %.0f s after its end",
                         (double)(now - atomic_load(&wd_t0) - r->o->duration) / 1e9);
        double took = (double)(now - atomic_load(&wd_t0)) / 1e9;
        put_verdict(r, took);
        if (wd_json) {
            put_json(wd_json, r, false, took);
            fflush(wd_json);
        }
        _exit(1);
    }
    pthread_mutex_unlock(&wd_mu);
    return NULL;
}

static int watchdog_start(pthread_t *t)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* pt_nanotime's clock */
    pthread_cond_init(&wd_cv, &a);
    pthread_condattr_destroy(&a);
    return pthread_create(t, NULL, watchdog, NULL);
}

static void watchdog_stop(pthread_t t)
{
    pthread_mutex_lock(&wd_mu);
    wd_stop = true;
    pthread_cond_signal(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    struct stress_opts o = {.threads = 4, .outsiders = 2, .timers = 128, .argv0 = argv[0]};
    const char *designs = "all", *scens = "all", *json = NULL;
    double secs = -1, bound_ms = 0; /* 0: the scenario's */
    double hang_s = 60;
    bool soak = false, seeded = false, designs_given = false;
    static const struct option longs[] = {
        {"design", required_argument, NULL, 'd'},  {"scenario", required_argument, NULL, 's'},
        {"threads", required_argument, NULL, 't'}, {"outsiders", required_argument, NULL, 'o'},
        {"timers", required_argument, NULL, 'n'},  {"duration", required_argument, NULL, 'T'},
        {"bound", required_argument, NULL, 'b'},   {"seed", required_argument, NULL, 'S'},
        {"soak", no_argument, NULL, 'k'},          {"progress", required_argument, NULL, 'p'},
        {"json", required_argument, NULL, 'j'},    {"engine", required_argument, NULL, 'E'},
        {"hang-s", required_argument, NULL, 'H'},  {"cell-fd", required_argument, NULL, 'C'},
        {"slack", required_argument, NULL, 'L'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct pt_engine *loaded[8];
    int nloaded = 0, refused = 0;
    int c;
    while ((c = getopt_long(argc, argv, "d:s:t:o:n:T:b:S:p:j:E:H:C:h", longs, NULL)) != -1) {
        switch (c) {
        case 'd':
            designs = optarg;
            designs_given = true;
            break;
        case 's':
            scens = optarg;
            break;
        case 't':
            o.threads = atoi(optarg);
            break;
        case 'o':
            o.outsiders = atoi(optarg);
            break;
        case 'n':
            o.timers = atoi(optarg);
            break;
        case 'T':
            secs = atof(optarg);
            break;
        case 'b':
            bound_ms = atof(optarg);
            break;
        case 'L': {
            char *end;
            double ms = strtod(optarg, &end);
            if (end == optarg || *end || !(ms >= 0 && ms <= 1e6)) {
                fprintf(stderr, "%s: --slack %s: a window of 0 to 1000000 ms\n", argv[0], optarg);
                return 2;
            }
            o.slack = (pt_nanos)(ms * 1e6);
            break;
        }
        case 'S':
            o.seed = strtoull(optarg, NULL, 0);
            seeded = true;
            break;
        case 'k':
            soak = true;
            break;
        case 'p':
            o.progress_s = atoi(optarg);
            break;
        case 'j':
            json = optarg;
            break;
        case 'E': {
            char why[600];
            const struct pt_engine *e = engine_load(optarg, reserved, why, sizeof why);
            if (!e) { /* said, left out; the others run */
                fprintf(stderr, "ptstress: --engine %s\n", why);
                refused++;
            } else if (nloaded < 8) {
                if (cell_fd < 0) /* said once, not by each cell's copy */
                    fprintf(stderr, "ptstress: loaded %s (%s)%s%s\n", e->name, engine_path(e),
                            e->what ? ": " : "", e->what ? e->what : "");
                loaded[nloaded++] = e;
            }
            break;
        }
        case 'H':
            hang_s = atof(optarg);
            break;
        case 'C': /* a cell's copy (run_cell_apart); not for users */
            cell_fd = atoi(optarg);
            break;
        case 'h':
            usage(stdout, argv[0]);
            return 0;
        default:
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if (optind != argc || o.threads < 1 || o.outsiders < 0 || bound_ms < 0 || hang_s <= 0) {
        usage(stderr, argv[0]);
        return 2;
    }
    if (secs < 0)
        secs = soak ? 3600 : 2;
    if (soak && !o.progress_s)
        o.progress_s = 60;
    o.duration = (pt_nanos)(secs * 1e9);
    if (!seeded)
        o.seed = (uint64_t)pt_nanotime() % 1000000007u;
    FILE *jf = NULL;
    if (json)
        jf = strcmp(json, "-") == 0 ? stdout : fopen(json, "a");
    if (json && !jf) {
        perror(json);
        return 2;
    }

    /* Designs named that do not exist, or cannot be stressed, are usage
     * errors: a CI line with a typo must not pass by running nothing. */
    const struct pt_engine *list[16];
    int nd = 0;
    if (strcmp(designs, "all") == 0 && (nloaded || refused) && !designs_given) {
        /* --engine alone: the user's designs, nothing else */
    } else if (strcmp(designs, "all") == 0) {
        for (size_t i = 0; i < sizeof all_designs / sizeof all_designs[0]; i++) {
            char why[400];
            list[nd] = engine_find(all_designs[i]);
            if (engine_check_table(list[nd], why, sizeof why)) {
                fprintf(stderr, "%s: a built-in design's table: %s\n", argv[0], why);
                return 2;
            }
            nd++;
        }
#ifdef PTSTRESS_HAVE_SCHED
        for (int i = 0; stress_sched_design(i); i++)
            list[nd++] = stress_sched_design(i);
#endif
    } else {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", designs);
        for (char *s = strtok(buf, ","); s && nd < 16; s = strtok(NULL, ",")) {
            const struct pt_engine *e = find_design(s);
            if (!e || (!e->tm_new && !is_sched(e) && !engine_is_loaded(e))) {
                fprintf(stderr, "%s: no design %s that holds timer objects\n", argv[0], s);
                return 2;
            }
            list[nd++] = e;
        }
    }
    for (int k = 0; k < nloaded && nd < 16; k++) {
        bool named = false;
        for (int d = 0; d < nd; d++)
            named |= list[d] == loaded[k];
        if (!named)
            list[nd++] = loaded[k];
    }
    if (!nd) {
        fprintf(stderr, "%s: no design to run\n", argv[0]);
        return refused ? 1 : 2;
    }
    int nsc = 0;
    for (int i = 0; i < NSCENARIOS; i++)
        nsc += in_list(scens, scenarios[i].name);
    if (!nsc) {
        fprintf(stderr, "%s: no scenario %s\n", argv[0], scens);
        return 2;
    }

    uint64_t failed = 0;
    /* A loaded engine is primed in each cell's own copy. */
    bool apart = cell_fd < 0;
    for (int d = 0; d < nd; d++)
        if (!(apart && engine_is_loaded(list[d])))
            prime(list[d]);
    wd_json = jf;
    pthread_t wd;
    if (watchdog_start(&wd) != 0) {
        perror("ptstress: watchdog");
        return 2;
    }
    witness_start();
    for (int d = 0; d < nd; d++) {
        for (int i = 0; i < NSCENARIOS; i++) {
            const struct scenario *sc = &scenarios[i];
            if (!in_list(scens, sc->name))
                continue;
            if (sc->sched != is_sched(list[d])) {
                /* Named both: say why not; from an "all", just not run. */
                if (strcmp(designs, "all") != 0 && strcmp(scens, "all") != 0)
                    printf(
                        "SKIP %s %s: %s\n", list[d]->name, sc->name,
                        sc->sched
                            ? "runs inside the scheduler: designs sched-perp, sched-lheap, sched-tt"
                            : "runs on a timer design, not inside the scheduler");
                continue;
            }
            if (o.slack && !sc->slack) {
                printf("SKIP %s %s: --slack: the scenario gives its designs no window\n",
                       list[d]->name, sc->name);
                continue;
            }
            if (o.slack && !sc->sched && !list[d]->set_slack) {
                printf("SKIP %s %s: --slack: the design has no set_slack (engine ABI 2)\n",
                       list[d]->name, sc->name);
                continue;
            }
            if (engine_has(list[d], PT_ENGINE_LATENCY_ONLY)) {
                printf("SKIP %s %s: the design holds one timer per worker (latency only)\n",
                       list[d]->name, sc->name);
                continue;
            }
            if (sc->needs_tm && !list[d]->tm_new) {
                printf("SKIP %s %s: the design has no timer objects (tm_new)\n", list[d]->name,
                       sc->name);
                continue;
            }
            if (sc->needs_move && !list[d]->move) {
                printf("SKIP %s %s: the design has no way to move timers between Ps\n",
                       list[d]->name, sc->name);
                continue;
            }
            struct stress_opts ro = o;
            ro.bound = (pt_nanos)((bound_ms > 0 ? bound_ms : sc->bound_ms) * 1e6);
            if (apart && engine_is_loaded(list[d])) {
                failed += run_cell_apart(argv[0], list[d], sc->name, &ro,
                                         bound_ms > 0 ? bound_ms : sc->bound_ms, hang_s, json);
                continue;
            }
            struct stress_run r = {.eng = list[d], .scenario = sc->name, .o = &ro};
            witness_tally_begin();
            pt_nanos t0 = pt_nanotime();
            /* A minute past the end, and twenty bounds: a slow machine's
             * drain and final checks take far less. */
            atomic_store(&wd_t0, t0);
            atomic_store(&wd_deadline, t0 + o.duration + (pt_nanos)(hang_s * 1e9) + 20 * ro.bound);
            atomic_store(&wd_run, &r);
            sc->run(&r);
            atomic_store(&wd_run, NULL);
            double took = (double)(pt_nanotime() - t0) / 1e9;
            uint64_t v = stress_violations(&r);
            failed += v != 0;
            put_verdict(&r, took);
            if (jf)
                put_json(jf, &r, v == 0, took);
        }
    }
    witness_stop();
    watchdog_stop(wd);
    if (jf && jf != stdout)
        fclose(jf);
    if (refused)
        fprintf(stderr, "%s: %d --engine refused (said at the start)\n", argv[0], refused);
    return failed || refused ? 1 : 0;
}
