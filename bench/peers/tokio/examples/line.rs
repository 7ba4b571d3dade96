//! Line server: "PING" is answered "PONG", any other line comes back
//! upper-cased; a connection idle for 10 s is closed; ctrl_c stops the
//! server. The multi-thread runtime spreads connections over the cores
//! (pinwheel's examples run one acceptor per shard). Listens on
//! 127.0.0.1:PORT (the first argument, 8080 without one). pinwheel's
//! counterparts are examples/line_*.c.
use std::env;
use std::time::Duration;
use tokio::io::{self, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const IDLE: Duration = Duration::from_secs(10);

async fn serve(mut socket: TcpStream) -> io::Result<()> {
    let (rd, mut wr) = socket.split();
    let mut lines = BufReader::new(rd).lines();
    while let Ok(line) = timeout(IDLE, lines.next_line()).await {
        let Some(line) = line? else { break };
        let reply = if line == "PING" {
            "PONG".to_string()
        } else {
            line.to_uppercase()
        };
        wr.write_all(format!("{reply}\n").as_bytes()).await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let port = env::args().nth(1).unwrap_or_else(|| "8080".into());
    let listener = TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            conn = listener.accept() => {
                let (socket, _) = conn?;
                tokio::spawn(serve(socket));
            }
            _ = &mut ctrl_c => return Ok(()),
        }
    }
}
