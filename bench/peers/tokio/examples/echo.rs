//! TCP echo server: a task per connection, stopped by ctrl_c. Listens on
//! 127.0.0.1:PORT (the first argument, 8080 without one). pinwheel's
//! counterparts are examples/echo_*.c.
use std::env;
use tokio::io;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> io::Result<()> {
    let port = env::args().nth(1).unwrap_or_else(|| "8080".into());
    let listener = TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            conn = listener.accept() => {
                let (mut socket, _) = conn?;
                tokio::spawn(async move {
                    let (mut rd, mut wr) = socket.split();
                    let _ = io::copy(&mut rd, &mut wr).await;
                });
            }
            _ = &mut ctrl_c => return Ok(()),
        }
    }
}
