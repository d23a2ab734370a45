//! The registry client's one retry policy, against real faults: a relay in front of a real
//! `docker-registry` resets a connection, answers 429 or 503, or cuts an answer or a request
//! in the middle of its body, once; each of a GET (manifest, blob), a HEAD, a blob upload and
//! a manifest PUT gets through, and the relay's count of requests shows it was tried exactly
//! once more (an upload from a new session). A certificate the trust settings reject is tried
//! once: a TCP relay counts the connections.

use crate::registry_support::faults::{Action, Faults, Seen};
use crate::registry_support::{sha, Entry, Image, Registry};
use opreg::oci::source::BlobSource;
use opreg::registry::retry::Retries;
use opreg::registry::upload::{self, Sending, Sent};
use opreg::registry::{Connection, Registry as Client};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The one policy with short waits, so that each fault costs milliseconds.
fn quick() -> Retries {
    Retries {
        attempts: 5,
        first_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(1),
    }
}

fn connection(use_http: bool) -> Connection {
    Connection {
        use_http,
        timeout: Duration::from_secs(10),
        retries: quick(),
        ..Connection::default()
    }
}

fn client(port: u16, repo: &str, use_http: bool) -> Client {
    let r = opreg::image::reference::parse(&format!("127.0.0.1:{port}/{repo}:v1")).unwrap();
    Client::new(&r, &connection(use_http)).unwrap()
}

fn sending() -> Sending {
    Sending {
        chunk_size: 16 << 20,
        retries: quick(),
    }
}

/// A fault, named.
type Fault = (&'static str, fn() -> Action);

/// The faults each request kind is put through, once each.
fn faults() -> Vec<Fault> {
    vec![
        ("reset", || Action::Reset),
        ("503", || Action::Answer(503, vec![])),
        ("429", || {
            Action::Answer(429, vec![("Retry-After".into(), "0".into())])
        }),
    ]
}

/// A relay that does `fault` to the first request `hit` picks, and relays everything else.
fn once(upstream: u16, hit: fn(&Seen) -> bool, fault: fn() -> Action) -> Faults {
    let done = Arc::new(AtomicUsize::new(0));
    Faults::start(
        upstream,
        Box::new(move |s: &Seen, _| {
            if hit(s) && done.fetch_add(1, Ordering::SeqCst) == 0 {
                fault()
            } else {
                Action::Relay
            }
        }),
    )
}

/// How many requests the relay saw that `hit` picks, whatever it did with them.
fn seen(f: &Faults, hit: fn(&Seen) -> bool) -> usize {
    f.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| hit(s))
        .count()
}

fn manifest_get(s: &Seen) -> bool {
    s.method == "GET" && s.path.contains("/manifests/")
}
fn blob_get(s: &Seen) -> bool {
    s.method == "GET" && s.path.contains("/blobs/sha256:")
}
fn blob_head(s: &Seen) -> bool {
    s.method == "HEAD" && s.path.contains("/blobs/sha256:")
}
fn upload_start(s: &Seen) -> bool {
    s.method == "POST" && s.path.contains("/blobs/uploads/")
}
fn upload_put(s: &Seen) -> bool {
    s.method == "PUT" && s.path.contains("/blobs/uploads/")
}
fn manifest_put(s: &Seen) -> bool {
    s.method == "PUT" && s.path.contains("/manifests/")
}

fn image() -> Image {
    // Gzip would shrink a run of one byte: the layer's bytes are varied.
    let big: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7919 % 251) as u8).collect();
    Image::new(&[("retry", "yes")]).layer(&[Entry::File("big.bin".into(), big)])
}

#[test]
fn a_get_is_tried_again_after_a_reset_a_429_a_503_or_a_cut_body() {
    let reg = Registry::http();
    let img = image();
    let digest = reg.push("app", "v1", &img);
    let layer = img.blobs().into_iter().last().unwrap();
    let layer_digest = sha(&layer);
    let mut cases = faults();
    cases.push(("cut mid-body", || Action::Truncate));
    for (what, fault) in cases {
        // A manifest: asked for again whole.
        let f = once(reg.port, manifest_get, fault);
        let mut c = client(f.port, "app", true);
        let got = c
            .manifest("v1", 4 << 20)
            .unwrap_or_else(|e| panic!("{what}: {e:#}"));
        assert_eq!(sha(&got.bytes), digest, "{what}");
        assert_eq!(seen(&f, manifest_get), 2, "{what}: one fault, one more try");

        // A blob: asked for again (from where it stopped, when cut).
        let f = once(reg.port, blob_get, fault);
        let mut c = client(f.port, "app", true);
        let mut bytes = Vec::new();
        c.blob(&layer_digest)
            .and_then(|mut r| Ok(r.read_to_end(&mut bytes)?))
            .unwrap_or_else(|e| panic!("{what}: {e:#}"));
        assert_eq!(bytes, layer, "{what}");
        assert_eq!(seen(&f, blob_get), 2, "{what}: one fault, one more try");
    }
}

#[test]
fn a_head_is_tried_again_after_a_reset_a_429_or_a_503() {
    let reg = Registry::http();
    let img = image();
    reg.push("app", "v1", &img);
    let layer_digest = sha(&img.blobs().into_iter().last().unwrap());
    for (what, fault) in faults() {
        let f = once(reg.port, blob_head, fault);
        let mut c = client(f.port, "app", true);
        let there = upload::exists(&mut c, &layer_digest);
        assert!(there.unwrap_or_else(|e| panic!("{what}: {e:#}")), "{what}");
        assert_eq!(seen(&f, blob_head), 2, "{what}: one fault, one more try");
    }
}

#[test]
fn a_blob_upload_starts_a_new_session_after_a_reset_a_429_a_503_or_a_cut_body() {
    let reg = Registry::http();
    let mut cases = faults();
    cases.push(("cut mid-body", || Action::Drop));
    for (i, (what, fault)) in cases.into_iter().enumerate() {
        let blob = format!("blob {i} of the upload test")
            .repeat(4096)
            .into_bytes();
        let digest = sha(&blob);
        let f = once(reg.port, upload_put, fault);
        let mut c = client(f.port, "pushed", true).for_push();
        let sent = upload::upload(
            &mut c,
            &digest,
            blob.len() as u64,
            None,
            &sending(),
            &mut || Ok(Box::new(std::io::Cursor::new(blob.clone()))),
        );
        assert_eq!(
            sent.unwrap_or_else(|e| panic!("{what}: {e:#}")),
            Sent::Uploaded,
            "{what}"
        );
        assert_eq!(seen(&f, upload_put), 2, "{what}: one fault, one more try");
        assert_eq!(seen(&f, upload_start), 2, "{what}: the upload started over");
        let mut direct = client(reg.port, "pushed", true);
        assert!(upload::exists(&mut direct, &digest).unwrap(), "{what}");
    }
}

#[test]
fn a_manifest_put_is_tried_again_after_a_reset_a_429_a_503_or_a_cut_body() {
    let reg = Registry::http();
    let img = image();
    reg.push("app", "v1", &img);
    let mut cases = faults();
    cases.push(("cut mid-body", || Action::Drop));
    for (i, (what, fault)) in cases.into_iter().enumerate() {
        let f = once(reg.port, manifest_put, fault);
        let mut c = client(f.port, "app", true).for_push();
        let tag = format!("again{i}");
        upload::put_manifest(&mut c, &img.media_type(), &img.manifest(), &tag, &sending())
            .unwrap_or_else(|e| panic!("{what}: {e:#}"));
        assert_eq!(seen(&f, manifest_put), 2, "{what}: one fault, one more try");
        let mut direct = client(reg.port, "app", true);
        let got = direct.manifest(&tag, 4 << 20).unwrap();
        assert_eq!(got.bytes, img.manifest(), "{what}");
    }
    // A refusal that will not pass is not tried again.
    let f = Faults::start(
        reg.port,
        Box::new(|s: &Seen, _| {
            if manifest_put(s) {
                Action::Answer(400, vec![])
            } else {
                Action::Relay
            }
        }),
    );
    let mut c = client(f.port, "app", true).for_push();
    let e = upload::put_manifest(&mut c, &img.media_type(), &img.manifest(), "no", &sending());
    assert!(e.is_err());
    assert_eq!(seen(&f, manifest_put), 1, "a 400 is final");
}

/// A TCP relay that counts the connections made through it.
fn counting_relay(upstream: u16) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let n = count.clone();
    std::thread::spawn(move || {
        for client in l.incoming().flatten() {
            n.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let pipe = |mut a: TcpStream, mut b: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut a, &mut b);
                    let _ = b.shutdown(std::net::Shutdown::Write);
                });
            };
            pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
            pipe(server, client);
        }
    });
    (port, count)
}

#[test]
fn a_certificate_the_trust_settings_reject_is_tried_once() {
    // A TLS registry whose self-signed certificate nothing trusts.
    let reg = Registry::tls_auth();
    let img = image();
    let digest = sha(&img.blobs()[0]);
    type Step = fn(&mut Client, &Image, &str) -> anyhow::Result<()>;
    let steps: [(&str, Step); 4] = [
        ("GET", |c, _, _| c.manifest("v1", 4 << 20).map(|_| ())),
        ("HEAD", |c, _, d| upload::exists(c, d).map(|_| ())),
        ("blob upload", |c, img, d| {
            let blob = img.blobs()[0].clone();
            let len = blob.len() as u64;
            upload::upload(c, d, len, None, &sending(), &mut || {
                Ok(Box::new(std::io::Cursor::new(blob.clone())))
            })
            .map(|_| ())
        }),
        ("manifest PUT", |c, img, _| {
            upload::put_manifest(c, &img.media_type(), &img.manifest(), "v1", &sending())
        }),
    ];
    for (what, step) in steps {
        let (port, connections) = counting_relay(reg.port);
        let mut c = client(port, "app", false).for_push();
        let e = step(&mut c, &img, &digest).expect_err(what);
        assert!(format!("{e:#}").contains("certificate"), "{what}: {e:#}");
        assert_eq!(connections.load(Ordering::SeqCst), 1, "{what}: tried once");
    }
}
