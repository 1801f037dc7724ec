//! The workloads ptbench runs inside its scheduler (bench/workloads/sched_workloads.c,
//! bench/workloads/sched_memory.c, bench/workloads/sched_rpc.c, bench/workloads/sched_conn.c) as
//! tokio tasks: the programs of
//! bench/peers/go/sched.go with tokio's idioms where Go's have none (a
//! bounded channel of one for an unbuffered one, `timeout` around a
//! receive for a select with a timer). Each counts what must add up as
//! ours do: every task it started finished, every wait ended once, no
//! sleep woke before its deadline.
use crate::{late_ns, rss, Flags, Phase, Row, SchedCounts};
use std::sync::atomic::{AtomicI64, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::time::{sleep, timeout};

pub fn runs(w: &str) -> bool {
    matches!(
        w,
        "spawn"
            | "pingpong"
            | "chan-timeout"
            | "sleep"
            | "sleep-1"
            | "busy-lateness"
            | "memory-g"
            | "spawn-burst"
            | "rpc-sched"
            | "conn-churn"
    )
}

/// Go's sync.WaitGroup: the last done wakes the waiter (a stored permit
/// if it is not waiting yet; a stale one costs it a second look).
#[derive(Default)]
struct WaitGroup {
    n: AtomicI64,
    notify: Notify,
}

impl WaitGroup {
    fn add(&self, k: i64) {
        self.n.fetch_add(k, AcqRel);
    }
    fn done(&self) {
        if self.n.fetch_sub(1, AcqRel) == 1 {
            self.notify.notify_one();
        }
    }
    async fn wait(&self) {
        while self.n.load(Acquire) != 0 {
            self.notify.notified().await;
        }
    }
}

/// What a workload's tasks share for the length of a repetition. Leaked,
/// so that a spawn costs tokio's spawn, not a reference count's atomics.
fn shared<T: Default>() -> &'static T {
    Box::leak(Box::<T>::default())
}

/// With -ops, ops x threads in all (-ops is per thread; threads are Ps).
fn ops_wanted(f: &Flags) -> i64 {
    f.ops * f.threads as i64
}

struct Run {
    f: &'static Flags,
    c: SchedCounts,
    late: Vec<i64>,
    ops: i64,
    bytes: f64,
    create_ns: f64,
    release_ns: f64,
}

const SPAWN_BATCH: i64 = 1000;

async fn spawn(r: &mut Run, end: Instant) {
    let want = ops_wanted(r.f);
    let wg: &'static WaitGroup = shared();
    let finished: &'static AtomicI64 = shared();
    while (want > 0 && r.c.gs_started < want) || (want == 0 && Instant::now() < end) {
        let n = if want > 0 {
            SPAWN_BATCH.min(want - r.c.gs_started)
        } else {
            SPAWN_BATCH
        };
        wg.add(n);
        for _ in 0..n {
            tokio::spawn(async move {
                finished.fetch_add(1, Relaxed);
                wg.done();
            });
        }
        r.c.gs_started += n;
        r.c.waits += 1;
        wg.wait().await;
        r.c.wakes += 1;
    }
    r.ops = r.c.gs_started;
    r.c.gs_finished = finished.load(Relaxed);
}

fn over(want: i64, i: i64, end: Instant) -> bool {
    if want > 0 {
        i >= want
    } else {
        i & 255 == 0 && Instant::now() >= end
    }
}

async fn pingpong(r: &mut Run, end: Instant) {
    let (ping, mut ping_rx) = mpsc::channel::<i64>(1);
    let (pong_tx, mut pong) = mpsc::channel::<i64>(1);
    let child = tokio::spawn(async move {
        let mut received = 0i64;
        while let Some(v) = ping_rx.recv().await {
            received += 1;
            if pong_tx.send(v).await.is_err() {
                break;
            }
        }
        received
    });
    r.c.gs_started = 1;
    let want = ops_wanted(r.f);
    let mut v = 0i64;
    while !over(want, v, end) {
        r.c.waits += 1;
        if ping.send(v).await.is_err() {
            break;
        }
        if pong.recv().await == Some(v) {
            r.c.wakes += 1;
        }
        r.ops += 1;
        v += 1;
    }
    drop(ping);
    let received = child.await.unwrap();
    r.c.gs_finished = 1;
    if received != r.c.waits {
        r.c.wakes = received;
    }
}

/// The call-with-timeout idiom: `timeout` of 100 ms around a receive
/// that a value already waits for.
async fn chan_timeout(r: &mut Run, end: Instant) {
    let (tx, mut rx) = mpsc::channel::<i64>(1);
    let want = ops_wanted(r.f);
    let mut i = 0i64;
    while !over(want, i, end) {
        let _ = tx.send(1).await;
        r.c.waits += 1;
        if let Ok(Some(1)) = timeout(Duration::from_millis(100), rx.recv()).await {
            r.c.wakes += 1;
        }
        r.ops += 1;
        i += 1;
    }
}

#[derive(Default)]
struct Sleeper {
    sleeps: i64,
    woke: i64,
    early: i64,
    late: Vec<i64>,
}

async fn sleeper(
    d: Duration,
    quota: i64,
    end: Instant,
    asleep: Option<&'static AtomicI64>,
) -> Sleeper {
    let mut z = Sleeper::default();
    loop {
        let t = Instant::now();
        if (quota > 0 && z.sleeps >= quota) || (quota == 0 && t >= end) {
            return z;
        }
        let deadline = t + d;
        z.sleeps += 1;
        if z.sleeps == 1 {
            if let Some(a) = asleep {
                a.fetch_add(1, Relaxed);
            }
        }
        sleep(d).await;
        let now = Instant::now();
        z.woke += 1;
        if now < deadline {
            z.early += 1;
        }
        z.late.push(late_ns(now, deadline));
    }
}

type Handles<T> = Vec<tokio::task::JoinHandle<T>>;

async fn merge(r: &mut Run, hs: Handles<Sleeper>) {
    for h in hs {
        let z = h.await.unwrap();
        r.c.gs_finished += 1;
        r.c.waits += z.sleeps;
        r.c.wakes += z.woke;
        r.c.early += z.early;
        r.late.extend_from_slice(&z.late);
    }
    r.ops = r.c.wakes;
}

async fn sleepers(r: &mut Run, end: Instant, n: i64, d: Duration, quota: i64) {
    let hs = (0..n)
        .map(|_| tokio::spawn(sleeper(d, quota, end, None)))
        .collect();
    r.c.gs_started = n;
    merge(r, hs).await;
}

/// A hog per worker spins for the whole phase and never yields: tokio
/// does not preempt a task, so what the sleepers see is how long a
/// worker is held.
async fn busy_lateness(r: &mut Run, end: Instant) {
    const N: i64 = 100;
    let asleep: &'static AtomicI64 = shared();
    let hs: Handles<Sleeper> = (0..N)
        .map(|_| tokio::spawn(sleeper(Duration::from_millis(1), 0, end, Some(asleep))))
        .collect();
    while asleep.load(Relaxed) < N {
        tokio::task::yield_now().await;
    }
    let hogs: Handles<()> = (0..r.f.threads)
        .map(|_| {
            tokio::spawn(async move {
                while Instant::now() < end {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    r.c.gs_started = N + r.f.threads as i64;
    for h in hogs {
        h.await.unwrap();
        r.c.gs_finished += 1;
    }
    merge(r, hs).await;
}

/// Waits until the gate (a semaphore with no permits) is closed.
async fn gate_wait(gate: &Semaphore) {
    let _ = gate.acquire().await;
}

struct Parking {
    parked: AtomicI64,
    released: AtomicI64,
    finished: WaitGroup,
    gate: Semaphore, // no permits: closed to open
    notify: Notify,
    open: std::sync::atomic::AtomicBool,
}

impl Default for Parking {
    fn default() -> Parking {
        Parking {
            parked: AtomicI64::new(0),
            released: AtomicI64::new(0),
            finished: WaitGroup::default(),
            gate: Semaphore::new(0),
            notify: Notify::new(),
            open: Default::default(),
        }
    }
}

/// memory-g: half the tasks wait on a closed-to-open semaphore, half on
/// a Notify (Go's peer: a WaitGroup and a channel receive).
async fn memory_g(r: &mut Run, ph: &mut Phase) {
    let n = r.f.gs;
    let p: &'static Parking = shared();
    p.finished.add(n);
    *ph = Phase::begin();
    let before = rss();
    let t0 = Instant::now();
    for i in 0..n {
        tokio::spawn(async move {
            if i & 1 == 1 {
                let woken = p.notify.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                p.parked.fetch_add(1, Relaxed);
                if !p.open.load(Acquire) {
                    woken.await;
                }
            } else {
                p.parked.fetch_add(1, Relaxed);
                gate_wait(&p.gate).await;
            }
            p.released.fetch_add(1, Relaxed);
            p.finished.done();
        });
    }
    r.c.gs_started = n;
    while p.parked.load(Relaxed) < n {
        tokio::task::yield_now().await;
    }
    tokio::task::yield_now().await;
    let t1 = Instant::now();
    let after = rss();
    p.open.store(true, std::sync::atomic::Ordering::Release);
    p.notify.notify_waiters();
    p.gate.close();
    p.finished.wait().await;
    let t2 = Instant::now();
    r.bytes = (after - before) as f64 / n as f64;
    r.create_ns = (t1 - t0).as_nanos() as f64 / n as f64;
    r.release_ns = (t2 - t1).as_nanos() as f64 / n as f64;
    r.ops = n;
    r.c.waits = p.parked.load(Relaxed);
    r.c.wakes = p.released.load(Relaxed);
    r.c.gs_finished = n - p.finished.n.load(Acquire);
}

/// spawn-burst: n tasks started by one, each waiting on a gate that opens
/// once all are started; the time per task from the first spawn until the
/// last has finished.
async fn spawn_burst(r: &mut Run, ph: &Phase) {
    let n = r.f.gs;
    let p: &'static Parking = shared();
    p.finished.add(n);
    for _ in 0..n {
        tokio::spawn(async move {
            gate_wait(&p.gate).await;
            p.released.fetch_add(1, Relaxed);
            p.finished.done();
        });
    }
    r.c.gs_started = n;
    let t1 = Instant::now();
    p.gate.close();
    p.finished.wait().await;
    let t2 = Instant::now();
    r.create_ns = (t1 - ph.start).as_nanos() as f64 / n as f64;
    r.release_ns = (t2 - t1).as_nanos() as f64 / n as f64;
    r.ops = n;
    r.c.waits = n;
    r.c.wakes = p.released.load(Relaxed);
    r.c.gs_finished = n - p.finished.n.load(Acquire);
}

/// rpc-sched: 64 client tasks doing request and response with a server
/// task each over a socketpair, a `timeout` of a second around each
/// request's write and read; late holds the round trips.
async fn rpc(r: &mut Run, end: Instant) {
    const PAIRS: i64 = 64;
    let quota = (ops_wanted(r.f) + PAIRS - 1) / PAIRS;
    let mut servers: Handles<i64> = Vec::new();
    let mut clients: Handles<(i64, i64, Vec<i64>, Option<String>)> = Vec::new();
    for _ in 0..PAIRS {
        let (mut c, mut s) = UnixStream::pair().unwrap_or_else(|e| {
            eprintln!("ptbench-tokio: rpc-sched: socketpair: {}", e);
            std::process::exit(1)
        });
        servers.push(tokio::spawn(async move {
            let mut buf = [0u8; 64];
            let mut served = 0i64;
            while s.read_exact(&mut buf).await.is_ok() {
                served += 1;
                if s.write_all(&buf).await.is_err() {
                    break;
                }
            }
            served
        }));
        clients.push(tokio::spawn(async move {
            let (mut req, mut rep) = ([b'q'; 64], [0u8; 64]);
            let (mut sent, mut answered, mut rtt, mut err) = (0i64, 0i64, Vec::new(), None);
            loop {
                let t = Instant::now();
                if (quota > 0 && sent >= quota) || (quota == 0 && t >= end) {
                    break;
                }
                req[..8].copy_from_slice(&(sent as u64).to_le_bytes());
                sent += 1;
                let exchange = async {
                    c.write_all(&req).await?;
                    c.read_exact(&mut rep).await
                };
                match timeout(Duration::from_secs(1), exchange).await {
                    Ok(Ok(_)) if rep == req => {}
                    Ok(Ok(_)) => err = Some("a response that is not its request".to_string()),
                    Ok(Err(e)) => err = Some(e.to_string()),
                    Err(_) => err = Some("timed out".to_string()),
                }
                if err.is_some() {
                    break;
                }
                answered += 1;
                rtt.push(late_ns(Instant::now(), t));
            }
            (sent, answered, rtt, err)
        }));
    }
    r.c.gs_started = 2 * PAIRS;
    let mut served = 0;
    for h in servers {
        served += h.await.unwrap();
        r.c.gs_finished += 1;
    }
    for h in clients {
        let (sent, answered, rtt, err) = h.await.unwrap();
        r.c.gs_finished += 1;
        r.c.waits += sent;
        r.c.wakes += answered;
        r.late.extend_from_slice(&rtt);
        if let Some(e) = err {
            eprintln!("ptbench-tokio: rpc-sched: a request failed: {}", e);
        }
    }
    if served != r.c.waits {
        r.c.wakes = served;
    }
    r.ops = r.c.wakes;
}

/// conn-churn: 64 client tasks each connect to a listener on 127.0.0.1,
/// send one 64-byte request, read the answer and drop the stream, over
/// and over; the accept loop spawns a task per connection that reads the
/// request under a `timeout` of a second, writes it back and drops its
/// end first. late holds each connection's connect-to-answer time.
async fn conn_churn(r: &mut Run, end: Instant) {
    const CLIENTS: i64 = 64;
    let quota = (ops_wanted(r.f) + CLIENTS - 1) / CLIENTS;
    let ln = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| {
        eprintln!("ptbench-tokio: conn-churn: listener: {}", e);
        std::process::exit(1)
    });
    let addr = ln.local_addr().unwrap();
    let served: &'static AtomicI64 = shared();
    let started: &'static AtomicI64 = shared();
    let handlers: &'static WaitGroup = shared();
    let acceptor = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = ln.accept().await else { continue };
            handlers.add(1);
            started.fetch_add(1, Relaxed);
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                if let Ok(Ok(_)) = timeout(Duration::from_secs(1), s.read_exact(&mut buf)).await {
                    if s.write_all(&buf).await.is_ok() {
                        served.fetch_add(1, Relaxed);
                    }
                }
                drop(s);
                handlers.done();
            });
        }
    });
    let mut clients: Handles<(i64, i64, Vec<i64>, Option<String>)> = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(tokio::spawn(async move {
            let (mut req, mut rep) = ([b'q'; 64], [0u8; 64]);
            let (mut opened, mut answered, mut rtt, mut err) = (0i64, 0i64, Vec::new(), None);
            loop {
                let t = Instant::now();
                if (quota > 0 && opened >= quota) || (quota == 0 && t >= end) {
                    break;
                }
                req[..8].copy_from_slice(&(opened as u64).to_le_bytes());
                opened += 1;
                let exchange = async {
                    let mut c = TcpStream::connect(addr).await?;
                    c.write_all(&req).await?;
                    c.read_exact(&mut rep).await
                };
                match timeout(Duration::from_secs(1), exchange).await {
                    Ok(Ok(_)) if rep == req => {}
                    Ok(Ok(_)) => err = Some("an answer that is not its request".to_string()),
                    Ok(Err(e)) => err = Some(e.to_string()),
                    Err(_) => err = Some("timed out".to_string()),
                }
                if err.is_some() {
                    break;
                }
                answered += 1;
                rtt.push(late_ns(Instant::now(), t));
            }
            (opened, answered, rtt, err)
        }));
    }
    for h in clients {
        let (opened, answered, rtt, err) = h.await.unwrap();
        r.c.gs_finished += 1;
        r.c.waits += opened;
        r.c.wakes += answered;
        r.late.extend_from_slice(&rtt);
        if let Some(e) = err {
            eprintln!("ptbench-tokio: conn-churn: a connection failed: {}", e);
        }
    }
    acceptor.abort(); /* its listener goes with it */
    let _ = acceptor.await;
    handlers.wait().await;
    let started = started.load(Relaxed);
    r.c.gs_started = 1 + CLIENTS + started;
    r.c.gs_finished += 1 + started;
    let served = served.load(Relaxed);
    if served != r.c.wakes {
        r.c.wakes = served;
    }
    r.ops = r.c.wakes;
}

pub fn run(f: &'static Flags, rt: &Runtime) -> Row {
    rt.block_on(async {
        tokio::spawn(async move {
            let mut r = Run {
                f,
                c: SchedCounts::default(),
                late: Vec::new(),
                ops: 0,
                bytes: 0.0,
                create_ns: 0.0,
                release_ns: 0.0,
            };
            let mut ph = Phase::begin();
            let end = ph.start + f.duration;
            let want = ops_wanted(f);
            match f.workload.as_str() {
                "spawn" => spawn(&mut r, end).await,
                "pingpong" => pingpong(&mut r, end).await,
                "chan-timeout" => chan_timeout(&mut r, end).await,
                "sleep" => {
                    sleepers(
                        &mut r,
                        end,
                        1000,
                        Duration::from_micros(50),
                        (want + 999) / 1000,
                    )
                    .await
                }
                // timed, as ours: ptbench runs latency workloads for their time
                "sleep-1" => sleepers(&mut r, end, 1, Duration::from_micros(50), 0).await,
                "busy-lateness" => busy_lateness(&mut r, end).await,
                "memory-g" => memory_g(&mut r, &mut ph).await,
                "spawn-burst" => spawn_burst(&mut r, &ph).await,
                "rpc-sched" => rpc(&mut r, end).await,
                "conn-churn" => conn_churn(&mut r, end).await,
                w => unreachable!("{}", w),
            }
            let spent = ph.finish();
            Row {
                ops: r.ops,
                elapsed: spent.elapsed,
                cpu: spent.cpu,
                sys: spent.sys,
                late: r.late,
                bytes: r.bytes,
                create_ns: r.create_ns,
                cancel_ns: r.release_ns,
                sched: Some(r.c),
                ..Row::default()
            }
        })
        .await
        .unwrap()
    })
}
