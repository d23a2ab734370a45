//! Graceful shutdown of the real binary serving the real community catalog: SIGTERM lets
//! streams in flight finish and refuses new connections, and cuts off stalled streams after the
//! grace period. Runs under the stress tests' lock (`stress::serial`).

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use super::stress::{
    community_server, connect, drain, health_status, registry, serial, COMMUNITY_ENTRIES,
};
use crate::common;
use common::*;
use opreg::api;
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;
use tonic::transport::Channel;

// ---------------------------------------------------------------------------------------------
// Graceful shutdown.

/// Waits for the server process to exit (a stall detector, not a speed requirement) and
/// returns its exit code and how long it took.
fn wait_exit(server: &mut Server, limit: Duration) -> (Option<i32>, Duration) {
    let t = Instant::now();
    loop {
        if let Some(st) = server.child.try_wait().unwrap() {
            return (st.code(), t.elapsed());
        }
        assert!(
            t.elapsed() < limit,
            "the server still runs {limit:?} after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True when a new TCP connection to the port is refused (nothing listens).
fn refused(port: u16) -> bool {
    match std::net::TcpStream::connect(("127.0.0.1", port)) {
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionRefused,
        Ok(_) => false,
    }
}

#[test]
fn sigterm_lets_streams_in_flight_finish_and_refuses_new_connections() {
    let _turn = serial();
    // A grace period far longer than the streams need: every one must complete.
    let mut server = community_server(&["--grace-period", "120"]);
    let pid = server.child.id() as i32;
    let port = server.port;
    let rt = rt();
    let results = rt.block_on(async {
        let mut streams = Vec::new();
        for i in 0..8 {
            // Four connections, two streams each.
            let ch = if i % 2 == 0 {
                connect(&server).await
            } else {
                streams
                    .last()
                    .map(|(c, _): &(Channel, _)| c.clone())
                    .unwrap()
            };
            let mut s = registry(ch.clone())
                .list_bundles(api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner();
            // In flight: the first message has arrived.
            s.next().await.unwrap().unwrap();
            streams.push((ch, s));
        }
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        let mut readers = Vec::new();
        let mut channels = Vec::new();
        for (i, (ch, mut s)) in streams.into_iter().enumerate() {
            channels.push(ch);
            let mut go = go_rx.clone();
            readers.push(tokio::spawn(async move {
                // Half the readers are slow: stalled until after SIGTERM, then reading with
                // pauses; the others read at full speed.
                if i % 2 == 1 {
                    let _ = go.wait_for(|g| *g).await;
                }
                let mut n = 1;
                loop {
                    match s.next().await {
                        Some(Ok(_)) => n += 1,
                        Some(Err(e)) => return (n, Err(e)),
                        None => return (n, Ok(())),
                    }
                    if i % 2 == 1 && n % 500 == 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }));
        }
        unsafe_kill(pid, 15);
        // The listener closes at once: wait until a new connection is refused, while the slow
        // streams are still stalled (nothing has let them go yet).
        let t = Instant::now();
        while !refused(port) {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "still accepting new connections 60 s after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            server.child.try_wait().unwrap().is_none(),
            "the server exited with streams still in flight"
        );
        // A new call on an existing connection is not taken either (the server sent GOAWAY).
        // HTTP/2 graceful shutdown sends GOAWAY twice: first with the highest stream id, then,
        // after a PING round trip, with the last stream it accepted. Give that round trip time
        // so the call below meets the second one (it raced it about once in five runs).
        tokio::time::sleep(Duration::from_millis(500)).await;
        let late = registry(channels[0].clone())
            .get_package(api::GetPackageRequest {
                name: "etcd".into(),
            })
            .await;
        assert!(late.is_err(), "a call started after SIGTERM was served");
        let _ = go_tx.send(true);
        let mut out = Vec::new();
        for r in readers {
            out.push(r.await.unwrap());
        }
        out
    });
    for (i, (n, end)) in results.iter().enumerate() {
        assert!(end.is_ok(), "stream {i} failed after {n} messages: {end:?}");
        assert_eq!(*n, COMMUNITY_ENTRIES, "stream {i} was cut short");
    }
    let (code, took) = wait_exit(&mut server, Duration::from_secs(120));
    eprintln!(
        "shutdown: {} streams (4 of them stalled until after SIGTERM) completed; exit {code:?} {:.2} s after the streams ended",
        results.len(),
        took.as_secs_f64()
    );
    assert_eq!(code, Some(0));
    assert!(refused(port), "something still listens after the exit");
}

#[test]
fn sigterm_cuts_off_stalled_streams_after_the_grace_period() {
    let _turn = serial();
    let mut server = community_server(&["--grace-period", "1"]);
    let pid = server.child.id() as i32;
    let port = server.port;
    let rt = rt();
    let (mut stalled, shared, _own) = rt.block_on(async {
        let shared = connect(&server).await;
        let mut stalled = Vec::new();
        let mut own = Vec::new();
        for i in 0..4 {
            // Three on connections of their own, one on a connection shared with other calls.
            let ch = if i < 3 {
                own.push(connect(&server).await);
                own[i].clone()
            } else {
                shared.clone()
            };
            let mut s = registry(ch)
                .list_bundles(api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner();
            s.next().await.unwrap().unwrap();
            stalled.push(s);
        }
        // The shared connection still answers while they stall.
        let p = registry(shared.clone())
            .get_package(api::GetPackageRequest {
                name: "etcd".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.name, "etcd");
        (stalled, shared, own)
    });
    unsafe_kill(pid, 15);
    let (code, took) = wait_exit(&mut server, Duration::from_secs(60));
    eprintln!(
        "shutdown with 4 stalled streams and --grace-period 1: exit {code:?} {:.2} s after SIGTERM",
        took.as_secs_f64()
    );
    assert_eq!(
        code,
        Some(0),
        "the server must exit 0 after the grace period"
    );
    assert!(refused(port));
    // The stalled streams end (the connection is gone) instead of hanging, short of the end,
    // and with an error: a cut-off stream never looks complete.
    rt.block_on(async {
        for (i, s) in stalled.iter_mut().enumerate() {
            let (n, end) = drain(s).await;
            eprintln!(
                "stalled stream {i}: {} messages, then {:?}",
                n + 1,
                end.as_ref()
                    .map_err(|e| (e.code(), e.message().to_string()))
            );
            assert!(
                n + 1 < COMMUNITY_ENTRIES,
                "stalled stream {i} was not cut off ({} of {COMMUNITY_ENTRIES} messages)",
                n + 1
            );
            assert!(end.is_err(), "a cut-off stream must not look complete");
        }
        assert!(health_status(shared).await.is_err());
    });
}
