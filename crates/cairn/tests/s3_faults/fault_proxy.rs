//! A TCP proxy in front of an HTTP server (the tests' S3) that misbehaves on demand: it passes
//! bytes through, answers every request `503`, resets every connection, or stalls.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// Bytes pass both ways.
    None,
    /// Every request is answered `503 Service Unavailable` (S3's "slow down").
    Unavailable,
    /// Every connection is reset; open ones are cut.
    Reset,
    /// Nothing moves: new connections are held without an answer, open ones stop forwarding.
    Stall,
}

pub struct FaultProxy {
    pub address: String,
    fault: Arc<AtomicU8>,
}

impl FaultProxy {
    /// Listen on a free loopback port and forward to `upstream` (`host:port`).
    pub fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let fault = Arc::new(AtomicU8::new(Fault::None as u8));
        let (upstream, shared) = (upstream.to_owned(), fault.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (upstream, fault) = (upstream.clone(), shared.clone());
                std::thread::spawn(move || serve(client, &upstream, &fault));
            }
        });
        Self { address, fault }
    }

    pub fn set(&self, fault: Fault) {
        self.fault.store(fault as u8, Ordering::SeqCst);
    }
}

fn current(fault: &AtomicU8) -> Fault {
    match fault.load(Ordering::SeqCst) {
        1 => Fault::Unavailable,
        2 => Fault::Reset,
        3 => Fault::Stall,
        _ => Fault::None,
    }
}

fn serve(mut client: TcpStream, upstream: &str, fault: &Arc<AtomicU8>) {
    match current(fault) {
        Fault::None => {}
        Fault::Unavailable => {
            // The request's head, then the answer; the body is not waited for.
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let body = "<Error><Code>SlowDown</Code></Error>";
            let _ = write!(
                client,
                "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Fault::Reset => return reset(client),
        Fault::Stall => {
            while current(fault) == Fault::Stall {
                std::thread::sleep(Duration::from_millis(20));
            }
            if current(fault) != Fault::None {
                return reset(client);
            }
        }
    }
    let Ok(server) = TcpStream::connect(upstream) else {
        return reset(client);
    };
    let (client_in, server_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let up = {
        let fault = fault.clone();
        std::thread::spawn(move || forward(client_in, server_out, &fault))
    };
    forward(server, client, fault);
    let _ = up.join();
}

/// Copy `from` to `to` until either closes, obeying the fault as it changes.
fn forward(mut from: TcpStream, mut to: TcpStream, fault: &AtomicU8) {
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while current(fault) == Fault::Stall {
            std::thread::sleep(Duration::from_millis(20));
        }
        if current(fault) == Fault::Reset {
            let _ = from.shutdown(Shutdown::Both);
            return reset(to);
        }
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Close with an RST rather than a FIN: linger on, for zero seconds.
fn reset(stream: TcpStream) {
    linger_zero(&stream);
    drop(stream);
}

fn linger_zero(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on an open socket with a properly sized value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}
