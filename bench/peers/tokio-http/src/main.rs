//! The tokio server examples/httpd.c is measured against: the same
//! plaintext answer, keep-alive and pipelining, a read deadline per
//! request's head (the idle timeout) and a write deadline, a task per
//! connection, as a user of tokio writes one without a framework.
//!
//!     ptbench-tokio-http [-P WORKERS] [-idle-ms MS] [-port N]
//!
//! One worker: the current_thread runtime; more: multi_thread with that
//! many workers. Prints "listening on 127.0.0.1:PORT" once it accepts.
use std::io::Write as _;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn wants_close(head: &[u8]) -> bool {
    head.split(|&b| b == b'\n')
        .any(|l| l.len() >= 17 && l[..17].eq_ignore_ascii_case(b"Connection: close"))
}

async fn serve(mut c: TcpStream, idle: Duration) {
    let _ = c.set_nodelay(true);
    let mut buf = vec![0u8; 8192];
    let mut have = 0usize;
    let mut out = Vec::with_capacity(4096);
    loop {
        // answer every whole head buffered, then write them at once
        let mut close_after = false;
        while let Some(end) = find(&buf[..have], b"\r\n\r\n") {
            let end = end + 4;
            close_after = wants_close(&buf[..end]);
            out.extend_from_slice(REPLY);
            buf.copy_within(end..have, 0);
            have -= end;
            if close_after {
                break;
            }
        }
        if !out.is_empty() {
            match timeout(WRITE_TIMEOUT, c.write_all(&out)).await {
                Ok(Ok(())) => out.clear(),
                _ => return,
            }
        }
        if close_after || have == buf.len() {
            return;
        }
        match timeout(idle, c.read(&mut buf[have..])).await {
            Ok(Ok(n)) if n > 0 => have += n,
            _ => return, // closed, an error, or idle past the timeout
        }
    }
}

fn main() {
    let mut workers = 1usize;
    let mut idle_ms = 10000u64;
    let mut port = 0u16;
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "-P" => workers = args[i + 1].parse().unwrap_or(1),
            "-idle-ms" => idle_ms = args[i + 1].parse().unwrap_or(10000),
            "-port" => port = args[i + 1].parse().unwrap_or(0),
            other => {
                eprintln!("ptbench-tokio-http: unknown option {}", other);
                std::process::exit(2);
            }
        }
        i += 2;
    }
    let rt = if workers <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
    .expect("runtime");
    let idle = Duration::from_millis(idle_ms);
    rt.block_on(async move {
        let ln = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        println!("listening on {}", ln.local_addr().unwrap());
        let _ = std::io::stdout().flush();
        loop {
            match ln.accept().await {
                Ok((c, _)) => {
                    tokio::spawn(serve(c, idle));
                }
                // out of descriptors: let some close
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
}
