//! A TCP relay in front of the test registry that can slow its answers down, so a test can
//! catch a pull in the middle of a blob (to kill it, or to see a progress bar drawn), and that
//! counts the connections made through it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Relays 127.0.0.1:`port` to the registry; registry → client bytes go at most
/// `bytes_per_sec` (0: unlimited), settable at any time.
pub struct Throttle {
    pub port: u16,
    rate: Arc<AtomicU64>,
    /// Connections accepted so far.
    connections: Arc<AtomicUsize>,
}

impl Throttle {
    pub fn start(upstream: u16, bytes_per_sec: u64) -> Throttle {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let rate = Arc::new(AtomicU64::new(bytes_per_sec));
        let r = rate.clone();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        std::thread::spawn(move || {
            for client in l.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pipe(c2, s2, None));
                let r = r.clone();
                std::thread::spawn(move || pipe(server, client, Some(r)));
            }
        });
        Throttle {
            port,
            rate,
            connections,
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn set_rate(&self, bytes_per_sec: u64) {
        self.rate.store(bytes_per_sec, Ordering::Relaxed);
    }
}

/// Copies `from` to `to` in 16 KiB steps, sleeping to keep to the rate.
fn pipe(mut from: TcpStream, mut to: TcpStream, rate: Option<Arc<AtomicU64>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        let r = rate.as_ref().map_or(0, |r| r.load(Ordering::Relaxed));
        if r > 0 {
            std::thread::sleep(Duration::from_secs_f64(n as f64 / r as f64));
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
