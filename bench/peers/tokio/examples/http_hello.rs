//! HTTP/1.1 hello server on a plain TcpStream (no HTTP library, as
//! pinwheel's examples): every request gets "Hello, world!", and the
//! connection is kept alive for the next one; ctrl_c stops the server.
//! Listens on 127.0.0.1:PORT (the first argument, 8080 without one).
//! pinwheel's counterparts are examples/http_hello_*.c.
use std::env;
use tokio::io::{self, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
Content-Length: 13\r\n\r\nHello, world!";

async fn serve(socket: TcpStream) -> io::Result<()> {
    let mut conn = BufReader::new(socket);
    let mut line = String::new();
    loop {
        // The request head: lines up to the empty one.
        loop {
            line.clear();
            if conn.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
        }
        conn.get_mut().write_all(RESPONSE).await?;
    }
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
