//! `pinwheel-tokio-peer http`: the Tokio counterpart of `pinwheel http`, so
//! that a load generator can drive both with the same scenarios.
//!
//! A multi_thread runtime (or current_thread with --current-thread) with the
//! I/O and timer drivers, one TcpListener and one task per connection. Each
//! connection reads into its buffer, answers every complete request head
//! (found by "\r\n\r\n") in order, drops Content-Length bodies, and writes
//! all the responses one read produced in one write (pipelining). The
//! response is fixed (no Date header), with Content-Length, and
//! "Connection: close" for HTTP/1.0 without keep-alive or a request that
//! asks for it.
//!
//! Scenario options, as pinwheel's:
//! - `--work K`: per request, `tokio::spawn` a task doing spin_work(K) and
//!   await it before responding (idle workers may steal it);
//! - `--timeout-ms T`: a `tokio::time::sleep` per connection, reset by every
//!   request; the connection closes when it fires while waiting for bytes.
//!
//! Stops on SIGINT or SIGTERM (tokio::signal; Debian's tokio 1.24.2 has the
//! "signal" feature, with signal-hook-registry), or after `--duration-s S`.

use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Builder;
use tokio::time::{sleep, Instant};

const HEAD_MAX: usize = 64 * 1024;

struct Cfg {
    work: u64,
    timeout: Option<Duration>,
    keep: Vec<u8>,
    close: Vec<u8>,
    conns: AtomicU64,
    requests: AtomicU64,
    timeouts: AtomicU64,
}

fn usage() -> &'static str {
    "usage: pinwheel-tokio-peer http --listen ADDR [--workers W] [--current-thread]\n\
     \x20                              [--work K] [--timeout-ms T] [--body TEXT]\n\
     \x20                              [--duration-s S]\n\
     \n\
     A fixed-body HTTP/1.1 keep-alive server on Tokio (pipelining, one task per\n\
     connection). Stops on SIGINT/SIGTERM and prints its counts on stderr.\n\
     \n\
     options:\n\
     \x20 --listen ADDR     address to listen on, e.g. 127.0.0.1:8080 (required)\n\
     \x20 --workers W       multi_thread worker threads (default 2)\n\
     \x20 --current-thread  a current_thread runtime instead (--workers ignored)\n\
     \x20 --work K          per request, spawn a task doing K spin iterations and\n\
     \x20                   await it before responding (default 0: none)\n\
     \x20 --timeout-ms T    close a connection that completes no request for T ms;\n\
     \x20                   every request resets it (default 0: none)\n\
     \x20 --body TEXT       response body (default \"Hello, world!\")\n\
     \x20 --duration-s S    also stop after S seconds (default 0: only on a signal)\n\
     \x20 --help            this text\n"
}

fn bad(msg: &str) -> ! {
    eprintln!("pinwheel-tokio-peer http: {}", msg);
    exit(2);
}

fn num(flag: &str, v: Option<String>, min: u64, max: u64) -> u64 {
    let v = v.unwrap_or_else(|| bad(&format!("{} needs a value", flag)));
    match v.parse::<u64>() {
        Ok(x) if x >= min && x <= max => x,
        _ => bad(&format!(
            "{}: bad value '{}' (want an integer in {}..{})",
            flag, v, min, max
        )),
    }
}

fn response(body: &[u8], keep: bool) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nServer: tokio\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        if keep { "keep-alive" } else { "close" }
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn find_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Whether the request keeps the connection, and its body length.
fn head_info(head: &[u8]) -> (bool, usize) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut keep = !first.ends_with("HTTP/1.0");
    let mut len = 0usize;
    for l in lines {
        let (name, value) = match l.split_once(':') {
            Some((n, v)) => (n.trim(), v.trim()),
            None => continue,
        };
        if name.eq_ignore_ascii_case("content-length") {
            len = value.parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep = true;
            }
        }
    }
    (keep, len)
}

async fn serve(mut sock: TcpStream, cfg: Arc<Cfg>) {
    let _ = sock.set_nodelay(true);
    let mut buf = vec![0u8; 8192];
    let mut len = 0usize;
    let mut skip = 0usize; // body bytes still to drop
    let mut out: Vec<u8> = Vec::with_capacity(8192);
    let idle = sleep(cfg.timeout.unwrap_or(Duration::from_secs(86400)));
    tokio::pin!(idle);

    loop {
        // Answer every complete request in the buffer, in order.
        let mut off = 0usize;
        let mut closing = false;
        loop {
            if skip > 0 {
                let n = skip.min(len - off);
                off += n;
                skip -= n;
                if skip > 0 {
                    break;
                }
            }
            let end = match find_end(&buf[off..len]) {
                Some(e) => e,
                None => break,
            };
            let (keep, body) = head_info(&buf[off..off + end]);
            off += end;
            skip = body;
            if cfg.work > 0 {
                let k = cfg.work;
                let _ = tokio::spawn(async move { super::spin_work(k) }).await;
            }
            if let Some(t) = cfg.timeout {
                idle.as_mut().reset(Instant::now() + t);
            }
            out.extend_from_slice(if keep { &cfg.keep } else { &cfg.close });
            cfg.requests.fetch_add(1, Ordering::Relaxed);
            if !keep {
                closing = true;
                break;
            }
        }
        buf.copy_within(off..len, 0);
        len -= off;
        if !out.is_empty() {
            if sock.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if closing {
            let _ = sock.shutdown().await;
            return;
        }
        if len == buf.len() {
            if buf.len() >= HEAD_MAX {
                return; // a head this long is not served
            }
            buf.resize(buf.len() * 2, 0);
        }
        let r = if cfg.timeout.is_some() {
            tokio::select! {
                r = sock.read(&mut buf[len..]) => r,
                _ = &mut idle => {
                    cfg.timeouts.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        } else {
            sock.read(&mut buf[len..]).await
        };
        match r {
            Ok(0) | Err(_) => return,
            Ok(n) => len += n,
        }
    }
}

async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pinwheel-tokio-peer http: SIGTERM: {}", e);
            exit(1)
        }
    };
    let mut int = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pinwheel-tokio-peer http: SIGINT: {}", e);
            exit(1)
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

pub fn main(mut args: impl Iterator<Item = String>) -> ! {
    let mut listen: Option<String> = None;
    let mut workers = 2u64;
    let mut current = false;
    let mut work = 0u64;
    let mut timeout_ms = 0u64;
    let mut duration_s = 0u64;
    let mut body = String::from("Hello, world!");
    while let Some(a) = args.next() {
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
            "--listen" => listen = Some(val().unwrap_or_else(|| bad("--listen needs a value"))),
            "--workers" => workers = num("--workers", val(), 1, 1024),
            "--current-thread" if inline.is_none() => current = true,
            "--work" => work = num("--work", val(), 0, 1_000_000_000),
            "--timeout-ms" => timeout_ms = num("--timeout-ms", val(), 0, 86_400_000),
            "--duration-s" => duration_s = num("--duration-s", val(), 0, 31_536_000),
            "--body" => body = val().unwrap_or_else(|| bad("--body needs a value")),
            _ => bad(&format!("unknown or malformed option '{}' (see --help)", a)),
        }
    }
    let listen = listen.unwrap_or_else(|| bad("--listen ADDR is required (see --help)"));
    let addr: std::net::SocketAddr = listen
        .parse()
        .unwrap_or_else(|_| bad(&format!("--listen: bad address '{}'", listen)));

    let cfg = Arc::new(Cfg {
        work,
        timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
        keep: response(body.as_bytes(), true),
        close: response(body.as_bytes(), false),
        conns: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        timeouts: AtomicU64::new(0),
    });
    let mut b = if current {
        Builder::new_current_thread()
    } else {
        let mut b = Builder::new_multi_thread();
        b.worker_threads(workers as usize);
        b
    };
    let rt = b.enable_all().build().unwrap_or_else(|e| {
        eprintln!("pinwheel-tokio-peer http: runtime: {}", e);
        exit(1)
    });
    let c = cfg.clone();
    rt.block_on(async move {
        let l = TcpListener::bind(addr).await.unwrap_or_else(|e| {
            eprintln!("pinwheel-tokio-peer http: cannot listen on {}: {}", addr, e);
            exit(1)
        });
        let at = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
        println!(
            "pinwheel-tokio-peer http: listening on {} ({}, tokio {})",
            at,
            if current {
                "current_thread".to_string()
            } else {
                format!("multi_thread, {} workers", workers)
            },
            option_env!("PEER_TOKIO_VERSION").unwrap_or("?")
        );
        let accept = async {
            loop {
                match l.accept().await {
                    Ok((s, _)) => {
                        c.conns.fetch_add(1, Ordering::Relaxed);
                        tokio::spawn(serve(s, c.clone()));
                    }
                    Err(e) => {
                        eprintln!("pinwheel-tokio-peer http: accept: {}", e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        };
        let limit = async {
            if duration_s > 0 {
                tokio::time::sleep(Duration::from_secs(duration_s)).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = accept => {}
            _ = stop_signal() => {}
            _ = limit => {}
        }
    });
    rt.shutdown_timeout(Duration::from_millis(100));
    println!(
        "pinwheel-tokio-peer http: stopped; {} connections, {} requests, {} idle timeouts",
        cfg.conns.load(Ordering::Relaxed),
        cfg.requests.load(Ordering::Relaxed),
        cfg.timeouts.load(Ordering::Relaxed)
    );
    exit(0)
}
