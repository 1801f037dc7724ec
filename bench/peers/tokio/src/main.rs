//! ptbench's tokio peer: the workloads ptbench runs on its timer designs
//! (timers.rs) and inside its scheduler (sched.rs), on tokio's timer wheel
//! and its tasks, as a user of tokio writes them. It prints one JSON line per
//! repetition in ptbench's peer format, the flags and fields of
//! bench/peers/go, so that a row of ours, Go's and tokio's differ in the
//! runtime only.
//!
//!     ptbench-tokio -workload W -threads N -reps R -duration-ms D -ops O
//!                   -preload P -window W -timeout-ms T -tickers K -gs G -timers M
//!                   -quantiles Q,... [-warm]
//!
//! One thread: the current_thread runtime; more: multi_thread with that
//! many workers. Every workload's body runs in a spawned task, as ptbench's
//! runs in a G on a P, never on the thread that blocks on the runtime.
//! -warm (rpc, rpc-pending): the loop yields to the runtime every 256 ops,
//! so that the driver parks and learns its next wake; without it the loop
//! never yields, and an arm earlier than the driver's last known wake
//! (always, before its first park) writes the driver's eventfd.
mod sched;
mod timers;

use std::time::{Duration, Instant};
use tokio::runtime::{Builder, Runtime};

pub struct Flags {
    pub workload: String,
    pub threads: usize,
    pub reps: usize,
    pub duration: Duration,
    pub ops: i64, // per thread; 0: for the duration
    pub preload: usize,
    pub window: usize,
    pub timeout: Duration,
    pub tickers: usize,
    pub gs: i64,
    pub timers: usize,
    pub warm: bool,
    pub quantiles: Vec<f64>,
}

fn die(msg: &str) -> ! {
    eprintln!("ptbench-tokio: {}", msg);
    std::process::exit(2)
}

fn number<T: std::str::FromStr>(name: &str, v: &str) -> T {
    v.parse()
        .unwrap_or_else(|_| die(&format!("-{}: not a number: {}", name, v)))
}

fn parse() -> Flags {
    let mut f = Flags {
        workload: "rpc".into(),
        threads: 1,
        reps: 3,
        duration: Duration::from_millis(300),
        ops: 0,
        preload: 32768,
        window: 10000,
        timeout: Duration::from_millis(100),
        tickers: 1000,
        gs: 100000,
        timers: 1000000,
        warm: false,
        quantiles: Vec::new(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].trim_start_matches('-');
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a, None),
        };
        i += 1;
        // the boolean flags take no value unless written -name=value
        if name == "warm" || name == "busy" {
            let on = inline.map_or(true, |v| v == "true");
            if name == "warm" {
                f.warm = on;
            } else if on {
                die("-busy: tokio cannot keep a worker busy and still run its timers");
            }
            continue;
        }
        let v = match inline {
            Some(v) => v,
            None if i < args.len() => {
                i += 1;
                args[i - 1].clone()
            }
            None => die(&format!("-{}: no value", name)),
        };
        match name {
            "workload" => f.workload = v,
            "threads" => f.threads = number(name, &v),
            "reps" => f.reps = number(name, &v),
            "duration-ms" => f.duration = Duration::from_millis(number(name, &v)),
            "ops" => f.ops = number(name, &v),
            "preload" => f.preload = number(name, &v),
            "window" => f.window = number(name, &v),
            "timeout-ms" => f.timeout = Duration::from_millis(number(name, &v)),
            "tickers" => f.tickers = number(name, &v),
            "gs" => f.gs = number(name, &v),
            "timers" => f.timers = number(name, &v),
            "quantiles" => {
                f.quantiles = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| {
                        let q: f64 = number(name, s);
                        if !(0.0..=1.0).contains(&q) {
                            die(&format!("bad quantile {}", s));
                        }
                        q
                    })
                    .collect()
            }
            _ => die(&format!("unknown flag -{}", name)),
        }
    }
    // ptbench passes every flag to every workload, 0 where one is not used
    let used = |w: &[&str]| w.contains(&f.workload.as_str());
    if f.threads == 0
        || (f.window == 0 && used(&["rpc-pending"]))
        || (f.tickers == 0 && used(&["ticker", "slack"]))
        || (f.gs <= 0 && used(&["memory-g", "spawn-burst"]))
        || (f.timers == 0 && used(&["memory"]))
    {
        die("-threads, and -window, -tickers or -gs where used, must be positive");
    }
    f
}

pub fn runtime(threads: usize) -> Runtime {
    let rt = if threads == 1 {
        Builder::new_current_thread().enable_all().build()
    } else {
        Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    };
    rt.unwrap_or_else(|e| die(&format!("runtime: {}", e)))
}

/// User and system CPU seconds, and every thread's voluntary context
/// switches (slack's wake-ups, as ptbench counts its own).
fn rusage() -> (f64, f64, i64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime), ru.ru_nvcsw as i64)
}

/// A measured phase's clocks: wall, all CPU, and its system part.
pub struct Phase {
    pub start: Instant,
    cpu0: (f64, f64, i64),
}

pub struct Spent {
    pub elapsed: Duration,
    pub cpu: f64,
    pub sys: f64,
    pub wakeups: i64,
}

impl Phase {
    pub fn begin() -> Phase {
        let cpu0 = rusage();
        Phase {
            start: Instant::now(),
            cpu0,
        }
    }
    pub fn finish(&self) -> Spent {
        let elapsed = self.start.elapsed();
        let (u, s, csw) = rusage();
        Spent {
            elapsed,
            cpu: u + s - self.cpu0.0 - self.cpu0.1,
            sys: s - self.cpu0.1,
            wakeups: csw - self.cpu0.2,
        }
    }
}

/// Resident memory less shared pages, as ptbench counts its own designs'.
pub fn rss() -> i64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let v: Vec<i64> = s
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    if v.len() < 3 {
        return 0;
    }
    // SAFETY: sysconf has no preconditions.
    (v[1] - v[2]) * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64
}

/// now - deadline in nanoseconds, negative when early.
pub fn late_ns(now: Instant, deadline: Instant) -> i64 {
    if now >= deadline {
        (now - deadline).as_nanos() as i64
    } else {
        -((deadline - now).as_nanos() as i64)
    }
}

/// splitmix64: a generator per task, seeded by its index as Go's peer is.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// One repetition's figures, printed by emit; late is sorted by it.
#[derive(Default)]
pub struct Row {
    pub ops: i64,
    pub elapsed: Duration,
    pub cpu: f64,
    pub sys: f64,
    pub late: Vec<i64>,
    pub bytes: f64,
    pub create_ns: f64,
    pub cancel_ns: f64,
    pub fired: i64,
    pub expected: i64,
    pub wakeups: i64, // slack's; 0 elsewhere
    pub sched: Option<SchedCounts>,
}

/// What a scheduler workload counts, as ptbench checks its own runs.
#[derive(Default)]
pub struct SchedCounts {
    pub gs_started: i64,
    pub gs_finished: i64,
    pub waits: i64,
    pub wakes: i64,
    pub early: i64,
}

fn quantile(v: &[i64], p: f64) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v[(p * (v.len() - 1) as f64) as usize] as f64
    }
}

pub fn emit(f: &Flags, mut r: Row) {
    r.late.sort_unstable();
    let v = &r.late;
    let mut extra = String::new();
    if let Some(c) = &r.sched {
        extra = format!(
            ",\"gs_started\":{},\"gs_finished\":{},\"waits\":{},\"wakes\":{},\"early_wakes\":{}",
            c.gs_started, c.gs_finished, c.waits, c.wakes, c.early
        );
    }
    if !f.quantiles.is_empty() && !v.is_empty() {
        let qs: Vec<String> = f
            .quantiles
            .iter()
            .map(|&q| format!("{:.0}", quantile(v, q)))
            .collect();
        extra += &format!(",\"lat_q_ns\":[{}]", qs.join(","));
    }
    println!(
        "{{\"design\":\"tokio\",\"workload\":\"{}\",\"threads\":{},\"ops\":{},\"elapsed_ns\":{},\
         \"cpu_s\":{:.4},\"cpu_sys_s\":{:.4},\"wakeups\":{},\"lat_p50_ns\":{:.0},\"lat_p99_ns\":{:.0},\
         \"lat_p999_ns\":{:.0},\"lat_max_ns\":{:.0},\"bytes_per_timer\":{:.2},\"create_ns\":{:.2},\
         \"cancel_ns\":{:.2},\"fired\":{},\"expected_ticks\":{},\"rss_bytes\":{}{}}}",
        f.workload,
        f.threads,
        r.ops,
        r.elapsed.as_nanos(),
        r.cpu,
        r.sys,
        r.wakeups,
        quantile(v, 0.5),
        quantile(v, 0.99),
        quantile(v, 0.999),
        v.last().copied().unwrap_or(0) as f64,
        r.bytes,
        r.create_ns,
        r.cancel_ns,
        r.fired,
        r.expected,
        rss(),
        extra
    );
}

fn main() {
    let f: &'static Flags = Box::leak(Box::new(parse()));
    let rt = runtime(f.threads);
    for _ in 0..f.reps {
        let row = if sched::runs(&f.workload) {
            sched::run(f, &rt)
        } else if timers::runs(&f.workload) {
            timers::run(f, &rt)
        } else {
            die(&format!("no workload {}", f.workload))
        };
        emit(f, row);
    }
}
