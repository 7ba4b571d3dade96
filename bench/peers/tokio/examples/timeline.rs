//! The "time combinators" exercise on Tokio's paused clock: a timeout, a
//! retry with exponential back-off and a debounce, each written by hand as
//! the exercise asks. Every event prints one line with its virtual time in
//! ms; pinwheel's examples/timeline_*.c print the same lines
//! (examples/timeline.expected).
//!
//! 1. Two futures of 30 ms and 300 ms run together, each bounded by a
//!    100 ms timeout: the first finishes at 30, the second times out at 100.
//! 2. A call retried up to 3 times, 100 ms back-off doubling after each
//!    failure, each attempt bounded by 50 ms: attempt 1 hangs (80 ms, cut at
//!    50), attempt 2 is refused after 20 ms, attempt 3 answers after 10 ms.
//! 3. A producer task types keys a..f into a channel at 0, 50, 100, 400,
//!    450 and 800 ms (from the start of the part) and hangs up; a 200 ms
//!    debounce prints the last key of each burst once the keys pause, and
//!    the held key at once when the channel closes.
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{sleep, sleep_until, Instant};

static START: OnceLock<Instant> = OnceLock::new();

// Prints a line prefixed by the virtual ms since the start.
macro_rules! log {
    ($($arg:tt)*) => {
        println!("{} {}", START.get().unwrap().elapsed().as_millis(), format!($($arg)*))
    };
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

struct Elapsed;

async fn timeout<F: Future>(limit: Duration, fut: F) -> Result<F::Output, Elapsed> {
    tokio::select! {
        biased;
        out = fut => Ok(out),
        _ = sleep(limit) => Err(Elapsed),
    }
}

async fn retry<T, F, Fut>(attempts: u32, base: Duration, mut op: F) -> Result<T, &'static str>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, &'static str>>,
{
    let mut delay = base;
    for n in 1..=attempts {
        match op(n).await {
            Ok(v) => {
                log!("retry: attempt {n} ok");
                return Ok(v);
            }
            Err(e) if n == attempts => return Err(e),
            Err(e) => {
                log!(
                    "retry: attempt {n} failed ({e}), next in {} ms",
                    delay.as_millis()
                );
                sleep(delay).await;
                delay *= 2;
            }
        }
    }
    unreachable!()
}

async fn debounce<T: Copy>(mut rx: mpsc::Receiver<T>, quiet: Duration, mut emit: impl FnMut(T)) {
    let mut held: Option<(T, Instant)> = None;
    loop {
        let deadline = held.map(|(_, at)| at);
        tokio::select! {
            key = rx.recv() => match key {
                Some(k) => held = Some((k, Instant::now() + quiet)),
                None => break,
            },
            _ = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                emit(held.take().unwrap().0);
            }
        }
    }
    if let Some((k, _)) = held {
        emit(k);
    }
}

// The call the retry repeats: hangs, then is refused, then answers.
async fn call(attempt: u32) -> Result<(), &'static str> {
    let (took, answer) = match attempt {
        1 => (80, Ok(())),
        2 => (20, Err("refused")),
        _ => (10, Ok(())),
    };
    sleep(ms(took)).await;
    answer
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    START.set(Instant::now()).unwrap();

    let race = |name, d| async move {
        match timeout(ms(100), sleep(ms(d))).await {
            Ok(()) => log!("timeout: {name} ok after {d} ms"),
            Err(Elapsed) => log!("timeout: {name} timed out"),
        }
    };
    tokio::join!(race("first", 30), race("second", 300));

    let bounded = |n| async move { timeout(ms(50), call(n)).await.unwrap_or(Err("timed out")) };
    let _ = retry(3, ms(100), bounded).await;

    let (tx, rx) = mpsc::channel(16);
    let t0 = Instant::now();
    tokio::spawn(async move {
        for (at, key) in [
            (0, 'a'),
            (50, 'b'),
            (100, 'c'),
            (400, 'd'),
            (450, 'e'),
            (800, 'f'),
        ] {
            sleep_until(t0 + ms(at)).await;
            log!("key: {key}");
            tx.send(key).await.unwrap();
        }
    });
    debounce(rx, ms(200), |k| log!("debounce: {k}")).await;
}
