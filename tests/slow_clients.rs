//! Slow and idle clients cannot hold the server: connections that send half a request header,
//! or nothing at all, are closed after `--request-timeout` on both ports while normal calls
//! keep being answered; `--max-connections` bounds the open connections. Real binary, raw TCP
//! clients, reqwest and the gRPC client.

use crate::common;

use common::{free_port, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Far above the 1 s timeout used here and below hyper's own 30 s default, so that a
/// connection still open after it was not closed by our timeout.
const PATIENCE: Duration = Duration::from_secs(25);

fn half_request(port: u16, bytes: &[u8]) -> TcpStream {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(bytes).unwrap();
    c.set_read_timeout(Some(PATIENCE)).unwrap();
    c
}

/// True when the server closed the connection (end of stream or a reset), false when the
/// read timed out with the connection still open.
fn closed_by_server(c: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            // An HTTP/2 server may write its SETTINGS and a GOAWAY first.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn half_sent_requests_are_closed_while_calls_are_answered() {
    let http = free_port();
    let s = Server::start(&["--http-port", &http.to_string(), "--request-timeout", "1"]);
    let mut held = Vec::new();
    for i in 0..800 {
        held.push(match i % 4 {
            // Half an HTTP/1.1 request header.
            0 | 1 => half_request(
                http,
                b"GET /catalogs/catalog/api/v1/all HTTP/1.1\r\nHost: x\r\n",
            ),
            // An HTTP/2 connection preface, and no stream.
            2 => half_request(s.port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            // Nothing at all, on the HTTP port.
            _ => half_request(http, b""),
        });
    }
    common::rt().block_on(async {
        let c = reqwest::Client::new();
        let mut grpc = s.registry().await;
        for _ in 0..5 {
            let r = c
                .get(format!(
                    "http://127.0.0.1:{http}/catalogs/catalog/api/v1/all"
                ))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            assert!(!r.bytes().await.unwrap().is_empty());
            let pkgs = grpc
                .list_packages(opreg::api::ListPackageRequest {})
                .await
                .unwrap();
            let mut stream = pkgs.into_inner();
            assert!(stream.message().await.unwrap().is_some());
        }
    });
    for (i, c) in held.iter_mut().enumerate() {
        assert!(closed_by_server(c), "connection {i} is still open");
    }
    assert_eq!(s.terminate(), Some(0));
}

/// The timeout is for a connection's first request only: a keep-alive connection in use, and
/// a gRPC connection making calls, outlive it by far.
#[test]
fn connections_in_use_outlive_the_request_timeout() {
    let http = free_port();
    let s = Server::start(&["--http-port", &http.to_string(), "--request-timeout", "1"]);
    let mut c = TcpStream::connect(("127.0.0.1", http)).unwrap();
    c.set_read_timeout(Some(PATIENCE)).unwrap();
    let started = std::time::Instant::now();
    let mut answered = 0;
    while started.elapsed() < Duration::from_millis(3500) {
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&got).contains("\r\n\r\nok") {
            let n = c.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "closed after {answered} answers, {:?}",
                started.elapsed()
            );
            got.extend_from_slice(&buf[..n]);
        }
        answered += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    // Calls in flight all the time on one HTTP/2 connection: closing it would fail some.
    let failed = common::rt().block_on(async {
        let grpc = s.registry().await;
        let started = std::time::Instant::now();
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let mut grpc = grpc.clone();
                tokio::spawn(async move {
                    let mut failed = Vec::new();
                    while started.elapsed() < Duration::from_millis(3500) {
                        let r = grpc.list_packages(opreg::api::ListPackageRequest {}).await;
                        let r = match r {
                            Ok(r) => r.into_inner().message().await.map(|_| ()),
                            Err(e) => Err(e),
                        };
                        if let Err(e) = r {
                            failed.push(format!("{:?}: {e}", started.elapsed()));
                        }
                    }
                    failed
                })
            })
            .collect();
        let mut failed = Vec::new();
        for t in tasks {
            failed.extend(t.await.unwrap());
        }
        failed
    });
    assert!(failed.is_empty(), "calls failed: {failed:?}");
    assert_eq!(s.terminate(), Some(0));
}

#[test]
fn open_connections_are_bounded() {
    let http = free_port();
    let s = Server::start(&[
        "--http-port",
        &http.to_string(),
        "--request-timeout",
        "1",
        "--max-connections",
        "2",
    ]);
    let mut idle: Vec<TcpStream> = (0..2)
        .map(|_| half_request(http, b"GET / HTTP/1.1\r\n"))
        .collect();
    // A third connection is accepted only when one of the two is closed by the timeout: when
    // its answer arrives, one idle connection at least has been closed already.
    let code = common::rt().block_on(async {
        reqwest::get(format!("http://127.0.0.1:{http}/healthz"))
            .await
            .unwrap()
            .status()
    });
    assert_eq!(code, 200);
    let closed = idle
        .iter_mut()
        .filter(|c| {
            let mut c: &TcpStream = c;
            c.set_nonblocking(true).unwrap();
            let mut buf = [0u8; 64];
            match c.read(&mut buf) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            }
        })
        .count();
    assert!(
        closed >= 1,
        "both idle connections were open beside a third one"
    );
    assert_eq!(s.terminate(), Some(0));
}
