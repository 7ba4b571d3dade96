//! pinwheel-tokio-peer: micro-benchmarks of Tokio's scheduler, written so
//! that pinwheel can put its own numbers next to Tokio's on the same machine.
//!
//! Each invocation runs one scenario: a warm-up pass, then `--runs` timed
//! passes of `--n` operations each, and prints one JSON line on stdout with
//! the median ns/op and every run's ns/op.
//!
//! `pinwheel-tokio-peer http ...` instead runs an HTTP/1.1 server (see
//! http.rs), the peer of `pinwheel http` for scenario benchmarks.
//!
//! Tokio has no API for pinning threads; run it under `taskset` for that.

mod http;

use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::process::exit;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Runtime};
use tokio::sync::Notify;

const BATCH: u64 = 256;

const SCENARIOS: &[(&str, &str, u64)] = &[
    (
        "spawn_join_ct",
        "current_thread: tokio::spawn(async {}).await per op",
        2_000_000,
    ),
    (
        "spawn_detached_ct",
        "current_thread: spawn 256 empty tasks, yield_now so they run; per task",
        4_000_000,
    ),
    (
        "wake_ct",
        "current_thread: two tasks ping-pong via Notify; per wake-to-poll",
        4_000_000,
    ),
    (
        "wake_raw_ct",
        "current_thread: two tasks ping-pong by waking each other's stored Waker; per wake-to-poll",
        4_000_000,
    ),
    (
        "spawn_join_mt",
        "multi_thread: tokio::spawn(async {}).await per op",
        100_000,
    ),
    (
        "spawn_mt_throughput",
        "multi_thread: one task spawns N tasks (--work K each), awaits all",
        1_000_000,
    ),
    (
        "skewed_mt",
        "multi_thread: one task spawns N CPU tasks (--work K, default 2000), awaits all",
        100_000,
    ),
];

fn usage() -> String {
    let mut s = String::from(
        "usage: pinwheel-tokio-peer <scenario> [--n N] [--runs R] [--workers W] [--work K]\n\
         \x20                          [--in-task] [--enable-all]\n\
         \n\
         Prints one JSON line: {\"scenario\",\"ops\",\"ns_per_op\" (median),\"runs\":[..],..}\n\
         \n\
         scenarios (default --n in brackets):\n",
    );
    for (name, what, n) in SCENARIOS {
        s.push_str(&format!("  {:<20} {} [{}]\n", name, what, n));
    }
    s.push_str(
        "  http                 an HTTP/1.1 server until SIGINT/SIGTERM; see\n\
         \x20                      'pinwheel-tokio-peer http --help'\n",
    );
    s.push_str(
        "\noptions:\n\
         \x20 --n N        operations (tasks, wakes) per timed run\n\
         \x20 --runs R     timed runs after one warm-up run (default 5)\n\
         \x20 --workers W  multi_thread worker threads (default 2)\n\
         \x20 --work K     black_box arithmetic iterations per task in the mt\n\
         \x20              spawn scenarios (default 0; skewed_mt: 2000)\n\
         \x20 --in-task    spawn_join_ct / spawn_join_mt: run the loop inside a\n\
         \x20              spawned task instead of directly in block_on\n\
         \x20 --enable-all build runtimes with enable_all() (I/O + timer drivers),\n\
         \x20              as #[tokio::main] does; default: no drivers\n\
         \x20 --help       this text\n\
         \n\
         Pin with taskset, e.g. taskset -c 0 ... (ct), taskset -c 0,1 ... (mt).\n",
    );
    s
}

fn bad(msg: &str) -> ! {
    eprintln!("pinwheel-tokio-peer: {}", msg);
    eprintln!("try 'pinwheel-tokio-peer --help'");
    exit(2);
}

struct Opts {
    scenario: &'static str,
    n: u64,
    runs: usize,
    workers: usize,
    work: u64,
    in_task: bool,
    enable_all: bool,
}

fn parse_num(flag: &str, v: Option<String>, min: u64) -> u64 {
    let v = v.unwrap_or_else(|| bad(&format!("{} needs a value", flag)));
    match v.parse::<u64>() {
        Ok(x) if x >= min => x,
        _ => bad(&format!("{}: bad value '{}' (want an integer >= {})", flag, v, min)),
    }
}

fn parse_args() -> Opts {
    let mut args = std::env::args().skip(1);
    let first = match args.next() {
        Some(a) => a,
        None => {
            eprint!("{}", usage());
            exit(2);
        }
    };
    if first == "--help" || first == "-h" {
        print!("{}", usage());
        exit(0);
    }
    let (scenario, default_n) = match SCENARIOS.iter().find(|s| s.0 == first) {
        Some(s) => (s.0, s.2),
        None => bad(&format!("unknown scenario '{}'", first)),
    };
    let mut o = Opts {
        scenario,
        n: default_n,
        runs: 5,
        workers: 2,
        work: if scenario == "skewed_mt" { 2000 } else { 0 },
        in_task: false,
        enable_all: false,
    };
    while let Some(a) = args.next() {
        // Accept both "--flag value" and "--flag=value".
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut val = || inline.clone().or_else(|| args.next());
        match flag.as_str() {
            "--help" | "-h" => {
                print!("{}", usage());
                exit(0);
            }
            "--n" => o.n = parse_num("--n", val(), 1),
            "--runs" => o.runs = parse_num("--runs", val(), 1) as usize,
            "--workers" => o.workers = parse_num("--workers", val(), 1) as usize,
            "--work" => o.work = parse_num("--work", val(), 0),
            "--in-task" if inline.is_none() => o.in_task = true,
            "--enable-all" if inline.is_none() => o.enable_all = true,
            _ => bad(&format!("unknown or malformed option '{}'", a)),
        }
    }
    o
}

// ---------------------------------------------------------------- helpers

/// K iterations of arithmetic the compiler can neither fold nor vectorise.
#[inline(never)]
fn spin_work(k: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for i in 0..k {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

/// Per-worker task counters for skewed_mt: shows how the work got spread.
const MAX_SLOTS: usize = 64;

#[repr(align(128))]
struct Slot(AtomicU64);

#[allow(clippy::declare_interior_mutable_const)]
const SLOT0: Slot = Slot(AtomicU64::new(0));
static SLOTS: [Slot; MAX_SLOTS] = [SLOT0; MAX_SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: Cell<usize> = Cell::new(usize::MAX);
}

fn count_here() {
    let s = MY_SLOT.with(|c| c.get());
    if s < MAX_SLOTS {
        SLOTS[s].0.fetch_add(1, Ordering::Relaxed);
    }
}

fn ct_runtime(o: &Opts) -> Runtime {
    let mut b = Builder::new_current_thread();
    if o.enable_all {
        b.enable_all();
    }
    b.build().unwrap_or_else(|e| {
        eprintln!("pinwheel-tokio-peer: runtime: {}", e);
        exit(1)
    })
}

fn mt_runtime(o: &Opts) -> Runtime {
    let mut b = Builder::new_multi_thread();
    b.worker_threads(o.workers).on_thread_start(|| {
        let s = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
        MY_SLOT.with(|c| c.set(if s < MAX_SLOTS { s } else { usize::MAX }));
    });
    if o.enable_all {
        b.enable_all();
    }
    b.build().unwrap_or_else(|e| {
        eprintln!("pinwheel-tokio-peer: runtime: {}", e);
        exit(1)
    })
}

// ---------------------------------------------------------------- scenarios
// Each body runs `n` operations and returns the elapsed wall time.

async fn spawn_join_loop(n: u64) -> Duration {
    let t0 = Instant::now();
    for _ in 0..n {
        tokio::spawn(async {}).await.unwrap();
    }
    t0.elapsed()
}

fn spawn_join(rt: &Runtime, n: u64, in_task: bool) -> Duration {
    if in_task {
        rt.block_on(async move { tokio::spawn(spawn_join_loop(n)).await.unwrap() })
    } else {
        rt.block_on(spawn_join_loop(n))
    }
}

/// Always inside a spawned task: yield_now() defers the waker, and the
/// block_on future is polled ahead of queued tasks, so driving this loop from
/// block_on itself would let the run queue grow instead of draining it.
fn spawn_detached(rt: &Runtime, n: u64) -> Duration {
    rt.block_on(async move {
        tokio::spawn(async move {
            let batches = (n + BATCH - 1) / BATCH;
            let t0 = Instant::now();
            for _ in 0..batches {
                for _ in 0..BATCH {
                    tokio::spawn(async {});
                }
                tokio::task::yield_now().await;
            }
            t0.elapsed()
        })
        .await
        .unwrap()
    })
}

/// Two tasks; each round trip is two wakes (A wakes B, B wakes A).
fn wake_pingpong(rt: &Runtime, n: u64) -> Duration {
    let rounds = (n + 1) / 2;
    rt.block_on(async move {
        let a = Arc::new(Notify::new());
        let b = Arc::new(Notify::new());
        let (a2, b2) = (a.clone(), b.clone());
        let t0 = Instant::now();
        let ping = tokio::spawn(async move {
            for _ in 0..rounds {
                b.notify_one();
                a.notified().await;
            }
        });
        let pong = tokio::spawn(async move {
            for _ in 0..rounds {
                b2.notified().await;
                a2.notify_one();
            }
        });
        ping.await.unwrap();
        pong.await.unwrap();
        t0.elapsed()
    })
}

/// What wake_raw_ct's two tasks share: each one's Waker and whose turn it
/// is. Both tasks run on the one current_thread worker, so a Cell is never
/// touched from two threads at once; `Send`/`Sync` are asserted only so
/// that tokio::spawn accepts the futures.
struct RawPingPong {
    waker: [Cell<Option<Waker>>; 2],
    turn: Cell<usize>,
    left: Cell<u64>,
}

unsafe impl Send for RawPingPong {}
unsafe impl Sync for RawPingPong {}

/// One player of wake_raw_ct, as pinwheel's bm_wake_to_poll's poll
/// function: on its turn it hands the turn over and wakes the other by
/// reference; otherwise it leaves its Waker (cloned only when it changed)
/// and is pending.
fn raw_player(pp: Arc<RawPingPong>, me: usize) -> impl Future<Output = ()> + Send {
    std::future::poll_fn(move |cx| {
        let w = pp.waker[me].take();
        let w = match w {
            Some(w) if w.will_wake(cx.waker()) => w,
            _ => cx.waker().clone(),
        };
        pp.waker[me].set(Some(w));
        if pp.left.get() == 0 {
            if let Some(o) = pp.waker[1 - me].take() {
                o.wake();
            }
            return Poll::Ready(());
        }
        if pp.turn.get() == me {
            pp.left.set(pp.left.get() - 1);
            pp.turn.set(1 - me);
            let o = pp.waker[1 - me].take();
            if let Some(o) = &o {
                o.wake_by_ref();
            }
            pp.waker[1 - me].set(o);
        }
        Poll::Pending
    })
}

/// Two tasks waking each other through their stored Wakers, with no
/// synchronisation primitive in between: the same work per operation as
/// pinwheel's bm_wake_to_poll (a local wake by reference, then the poll it
/// causes). n operations in all.
fn wake_raw(rt: &Runtime, n: u64) -> Duration {
    rt.block_on(async move {
        let pp = Arc::new(RawPingPong {
            waker: [Cell::new(None), Cell::new(None)],
            turn: Cell::new(0),
            left: Cell::new(n),
        });
        let t0 = Instant::now();
        let a = tokio::spawn(raw_player(pp.clone(), 0));
        let b = tokio::spawn(raw_player(pp.clone(), 1));
        a.await.unwrap();
        b.await.unwrap();
        t0.elapsed()
    })
}

/// One task spawns n tasks, each running spin_work(k), then awaits them all.
fn spawn_many(rt: &Runtime, n: u64, k: u64, count: bool) -> Duration {
    rt.block_on(async move {
        tokio::spawn(async move {
            let mut handles = Vec::with_capacity(n as usize);
            let t0 = Instant::now();
            for _ in 0..n {
                handles.push(tokio::spawn(async move {
                    if count {
                        count_here();
                    }
                    black_box(spin_work(black_box(k)));
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
            t0.elapsed()
        })
        .await
        .unwrap()
    })
}

// ---------------------------------------------------------------- driver

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("http") {
        http::main(std::env::args().skip(2));
    }
    let o = parse_args();
    let mt = o.scenario.ends_with("_mt") || o.scenario == "spawn_mt_throughput";
    let rt = if mt { mt_runtime(&o) } else { ct_runtime(&o) };
    let counting = o.scenario == "skewed_mt";

    let one = |n: u64| -> Duration {
        match o.scenario {
            "spawn_join_ct" | "spawn_join_mt" => spawn_join(&rt, n, o.in_task),
            "spawn_detached_ct" => spawn_detached(&rt, n),
            "wake_ct" => wake_pingpong(&rt, n),
            "wake_raw_ct" => wake_raw(&rt, n),
            "spawn_mt_throughput" | "skewed_mt" => spawn_many(&rt, n, o.work, counting),
            _ => unreachable!(),
        }
    };

    // Operations actually performed per run (batches/rounds round up).
    let ops = match o.scenario {
        "spawn_detached_ct" => (o.n + BATCH - 1) / BATCH * BATCH,
        "wake_ct" => (o.n + 1) / 2 * 2,
        _ => o.n,
    };

    // Warm-up: a quarter of a run (at least one batch) to fault in memory,
    // grow the task slab and the run queues, and wake the workers.
    one((o.n / 4).max(BATCH));

    let mut runs = Vec::with_capacity(o.runs);
    let mut per_worker: Vec<u64> = Vec::new();
    for _ in 0..o.runs {
        if counting {
            for s in SLOTS.iter() {
                s.0.store(0, Ordering::Relaxed);
            }
        }
        let d = one(o.n);
        runs.push(d.as_nanos() as f64 / ops as f64);
        if counting {
            let used = NEXT_SLOT.load(Ordering::Relaxed).min(MAX_SLOTS);
            per_worker = SLOTS[..used]
                .iter()
                .map(|s| s.0.load(Ordering::Relaxed))
                .collect();
        }
    }
    drop(rt);

    let med = median(&runs);
    let fmt = |x: f64| format!("{:.2}", x);
    let mut line = format!(
        "{{\"scenario\":\"{}\",\"ops\":{},\"ns_per_op\":{},\"runs\":[{}]",
        o.scenario,
        ops,
        fmt(med),
        runs.iter().map(|&r| fmt(r)).collect::<Vec<_>>().join(",")
    );
    if mt {
        line.push_str(&format!(",\"workers\":{}", o.workers));
    }
    if o.scenario == "spawn_mt_throughput" || o.scenario == "skewed_mt" {
        line.push_str(&format!(
            ",\"work\":{},\"tasks_per_s\":{:.0},\"wall_ms\":{:.3}",
            o.work,
            1e9 / med,
            med * ops as f64 / 1e6
        ));
    }
    if counting {
        line.push_str(&format!(
            ",\"tasks_per_worker_last_run\":[{}]",
            per_worker
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if o.scenario == "spawn_join_ct" || o.scenario == "spawn_join_mt" {
        line.push_str(&format!(
            ",\"body\":\"{}\"",
            if o.in_task { "task" } else { "block_on" }
        ));
    }
    line.push_str(&format!(
        ",\"drivers\":\"{}\",\"tokio\":\"{}\"}}",
        if o.enable_all { "all" } else { "none" },
        TOKIO_VERSION
    ));
    println!("{}", line);
}

/// Set by build.rs from Cargo.lock (the tokio version Cargo resolved).
const TOKIO_VERSION: &str = match option_env!("PEER_TOKIO_VERSION") {
    Some(v) => v,
    None => "1",
};
