//! The timer workloads (bench/workloads/workloads.c) on tokio's wheel. A tokio timer
//! is a `Sleep`: it enters the wheel when first polled, leaves it when
//! dropped, so "arm" here is a first poll (Arm) and "cancel" a drop, which
//! is what a `timeout` around a pending future does.
use crate::{late_ns, rss, Flags, Phase, Rng, Row};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio::time::{interval_at, sleep, sleep_until, MissedTickBehavior, Sleep};

pub fn runs(w: &str) -> bool {
    matches!(
        w,
        "rpc" | "rpc-pending" | "reset" | "latency" | "ticker" | "slack" | "memory"
    )
}

/// Polls a Sleep once, which puts it in the wheel, and is ready at once.
struct Arm<'a>(Pin<&'a mut Sleep>);

impl Future for Arm<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let _ = self.0.as_mut().poll(cx);
        Poll::Ready(())
    }
}

/// A Sleep in the wheel, kept past the statement that made it.
async fn armed(deadline: Instant) -> Pin<Box<Sleep>> {
    let mut s = Box::pin(sleep_until(deadline.into()));
    Arm(s.as_mut()).await;
    s
}

#[derive(Default)]
struct Shared {
    ops: AtomicI64,
    fired: AtomicI64,
    expected: AtomicI64,
    late: Mutex<Vec<i64>>,
    memory: Mutex<(f64, f64, f64)>, // bytes, create ns, cancel ns
}

/// A ticker's task from `first` every `period` until `end`, each tick's
/// lateness recorded; what it owes counted in `expected`. Skip: a late
/// tick keeps the phase, as Go's ticker does.
fn ticker(
    sh: &Arc<Shared>,
    first: Instant,
    period: Duration,
    end: Instant,
) -> tokio::task::JoinHandle<()> {
    if first <= end {
        let owed = (end - first).as_nanos() / period.as_nanos() + 1;
        sh.expected.fetch_add(owed as i64, Relaxed);
    }
    let sh = sh.clone();
    tokio::spawn(async move {
        let mut tk = interval_at(first.into(), period);
        tk.set_missed_tick_behavior(MissedTickBehavior::Skip);
        loop {
            tk.tick().await;
            let t = Instant::now();
            if t > end {
                return;
            }
            let k = ((t - first).as_nanos() / period.as_nanos()) as u32;
            sh.late.lock().unwrap().push(late_ns(t, first + period * k));
            sh.fired.fetch_add(1, Relaxed);
        }
    })
}

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

struct Loop {
    f: &'static Flags,
    end: Instant,
    mask: i64,
}

impl Loop {
    /// Fast loops look at the clock every 256 ops, sleeping ones every op.
    fn done(&self, ops: i64) -> bool {
        if self.f.ops > 0 {
            ops >= self.f.ops
        } else {
            ops & self.mask == 0 && Instant::now() >= self.end
        }
    }
    async fn warm(&self, ops: i64) {
        if self.f.warm && ops & 255 == 0 {
            tokio::task::yield_now().await;
        }
    }
}

async fn run_one(f: &'static Flags, end: Instant, id: usize, sh: Arc<Shared>) {
    let mut r = Rng::new(id as u64 + 1);
    let sleeping = f.workload == "latency";
    let l = Loop {
        f,
        end,
        mask: if sleeping { 0 } else { 255 },
    };
    let mut ops: i64 = 0;
    match f.workload.as_str() {
        "rpc" => {
            while !l.done(ops) {
                let s = sleep(f.timeout + ns(r.below(1_000_000)));
                tokio::pin!(s);
                Arm(s.as_mut()).await;
                ops += 1;
                l.warm(ops).await;
            }
        }
        "rpc-pending" => {
            let mut ring: Vec<Option<Pin<Box<Sleep>>>> = (0..f.window).map(|_| None).collect();
            let mut i = 0;
            while !l.done(ops) {
                ring[i] = None;
                ring[i] = Some(armed(Instant::now() + f.timeout + ns(r.below(1_000_000))).await);
                i = (i + 1) % f.window;
                ops += 1;
                l.warm(ops).await;
            }
        }
        "reset" => {
            const K: usize = 1000;
            let mut ts = Vec::with_capacity(K);
            for _ in 0..K {
                ts.push(armed(Instant::now() + ns(1_000_000_000 + r.below(1_000_000_000))).await);
            }
            while !l.done(ops) {
                let k = r.below(K as u64) as usize;
                let when = Instant::now() + ns(1_000_000_000 + r.below(1_000_000_000));
                ts[k].as_mut().reset(when.into());
                ops += 1;
            }
        }
        "latency" => {
            while !l.done(ops) {
                let d = ns(300_000 + r.below(700_000));
                let deadline = Instant::now() + d;
                sleep(d).await;
                sh.late
                    .lock()
                    .unwrap()
                    .push(late_ns(Instant::now(), deadline));
                sh.fired.fetch_add(1, Relaxed);
                ops += 1;
            }
        }
        "ticker" => {
            let mut n = f.tickers / f.threads;
            if id < f.tickers % f.threads {
                n += 1;
            }
            let start = Instant::now();
            let mut hs = Vec::with_capacity(n);
            for _ in 0..n {
                let period = ns(1_000_000 + r.below(9_000_000));
                let first = start + period;
                hs.push(ticker(&sh, first, period, end));
            }
            for h in hs {
                h.await.unwrap();
            }
        }
        "slack" => {
            // 100 ms intervals with random phases, a task each, and a tenth
            // as many sleeps over the run: tokio has no window to give them
            let mut n = f.tickers / f.threads;
            if id < f.tickers % f.threads {
                n += 1;
            }
            let start = Instant::now();
            let period = ns(100_000_000);
            let mut hs = Vec::with_capacity(n + n / 10);
            for _ in 0..n {
                let first = start + ns(r.below(100_000_000));
                hs.push(ticker(&sh, first, period, end));
            }
            for _ in 0..n / 10 {
                let deadline = start + ns(r.below((end - start).as_nanos() as u64));
                sh.expected.fetch_add(1, Relaxed);
                let sh = sh.clone();
                hs.push(tokio::spawn(async move {
                    sleep_until(deadline.into()).await;
                    sh.late.lock().unwrap().push(late_ns(Instant::now(), deadline));
                    sh.fired.fetch_add(1, Relaxed);
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        }
        "memory" => {
            let n = f.timers;
            // The handle vector is the harness's: touched before the first reading.
            let mut ts: Vec<Option<Pin<Box<Sleep>>>> = Vec::with_capacity(n);
            ts.resize_with(n, || None);
            for t in ts.iter_mut() {
                // SAFETY: a write of the value already there, kept from being elided
                unsafe { std::ptr::write_volatile(t, None) };
            }
            let before = rss();
            let t0 = Instant::now();
            for (i, t) in ts.iter_mut().enumerate() {
                *t = Some(armed(t0 + Duration::from_secs(3600) + ns(i as u64)).await);
            }
            let t1 = Instant::now();
            let after = rss();
            for t in ts.iter_mut() {
                *t = None;
            }
            let t2 = Instant::now();
            *sh.memory.lock().unwrap() = (
                (after - before) as f64 / n as f64,
                (t1 - t0).as_nanos() as f64 / n as f64,
                (t2 - t1).as_nanos() as f64 / n as f64,
            );
            ops = n as i64;
        }
        w => unreachable!("{}", w),
    }
    sh.ops.fetch_add(ops, Relaxed);
}

pub fn run(f: &'static Flags, rt: &Runtime) -> Row {
    rt.block_on(async {
        tokio::spawn(async move {
            let sh = Arc::new(Shared::default());
            // far-future timers per thread first, as in every design's run
            let mut pre = Vec::new();
            if f.workload != "memory" {
                let mut r = Rng::new(7);
                for _ in 0..f.threads * f.preload {
                    pre.push(
                        armed(Instant::now() + ns(3_600_000_000_000 + r.below(1_000_000_000)))
                            .await,
                    );
                }
            }
            let ph = Phase::begin();
            let end = ph.start + f.duration;
            let hs: Vec<_> = (0..f.threads)
                .map(|id| tokio::spawn(run_one(f, end, id, sh.clone())))
                .collect();
            for h in hs {
                h.await.unwrap();
            }
            let spent = ph.finish();
            drop(pre);
            let (bytes, create_ns, cancel_ns) = *sh.memory.lock().unwrap();
            let fired = sh.fired.load(Relaxed);
            let late = std::mem::take(&mut *sh.late.lock().unwrap());
            Row {
                ops: if f.workload == "ticker" || f.workload == "slack" {
                    fired
                } else {
                    sh.ops.load(Relaxed)
                },
                wakeups: if f.workload == "slack" { spent.wakeups } else { 0 },
                elapsed: spent.elapsed,
                cpu: spent.cpu,
                sys: spent.sys,
                late,
                bytes,
                create_ns,
                cancel_ns,
                fired,
                expected: sh.expected.load(Relaxed),
                sched: None,
            }
        })
        .await
        .unwrap()
    })
}
