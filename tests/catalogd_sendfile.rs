//! `/api/v1/all` over plain HTTP/1.1 is sent from the version's file by `sendfile`
//! (`conn::sendfile`); these tests speak HTTP/1.1 over a bare TCP socket to see what goes over
//! the wire: a body of many chunks, byte for byte the same as over HTTP/2 (streamed, no
//! sendfile); several answers on one keep-alive connection, pipelined, mixed with answers
//! that are not sent from a file (a filtered `/metas`, a HEAD, a 304, a range, gzip); a client
//! that leaves mid-body; many connections at once.

use crate::common;

use common::{free_port, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One package whose bundles carry about `kb` KB of padding each: a `/all` of many 64 KiB
/// chunks.
fn catalog(bundles: usize, kb: usize) -> String {
    let mut s = String::from(
        "{\"schema\":\"olm.package\",\"name\":\"big\",\"defaultChannel\":\"stable\"}\n",
    );
    // One chain, so that the channel has one head.
    let entries: Vec<String> = (0..bundles)
        .map(|i| match i {
            0 => "{\"name\":\"big.v1.0.0\"}".to_string(),
            _ => format!(
                "{{\"name\":\"big.v1.0.{i}\",\"replaces\":\"big.v1.0.{}\"}}",
                i - 1
            ),
        })
        .collect();
    s += &format!(
        "{{\"schema\":\"olm.channel\",\"package\":\"big\",\"name\":\"stable\",\"entries\":[{}]}}\n",
        entries.join(",")
    );
    for i in 0..bundles {
        let pad: String = (0..kb * 1024)
            .map(|j| (b'a' + ((i + j) % 26) as u8) as char)
            .collect();
        s += &format!(
            "{{\"schema\":\"olm.bundle\",\"package\":\"big\",\"name\":\"big.v1.0.{i}\",\"image\":\"example.com/big:{i}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"big\",\"version\":\"1.0.{i}\"}}}},{{\"type\":\"x.pad\",\"value\":\"{pad}\"}}]}}\n"
        );
    }
    s
}

struct Served {
    _server: Server,
    http: u16,
    _dir: tempfile::TempDir,
}

fn start() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("catalog");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("c.json"), catalog(12, 70)).unwrap();
    let http = free_port();
    let port = http.to_string();
    let server = Server::start(&[src.to_str().unwrap(), "--http-port", &port]);
    Served {
        _server: server,
        http,
        _dir: dir,
    }
}

/// `/all` over HTTP/2 (prior knowledge): streamed from the file, never by sendfile.
fn all_over_h2(http: u16) -> Vec<u8> {
    let url = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1/all");
    common::rt().block_on(async {
        let c = reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .unwrap();
        let r = c.get(&url).send().await.unwrap();
        assert_eq!(r.version(), reqwest::Version::HTTP_2);
        r.bytes().await.unwrap().to_vec()
    })
}

/// Reads one HTTP/1.1 response from `s` (with `Content-Length`, or none for a HEAD, a 304):
/// status, lower-cased headers, body. `rest` holds bytes read past the previous response.
fn response(
    s: &mut TcpStream,
    rest: &mut Vec<u8>,
    head_only: bool,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut buf = [0u8; 1 << 16];
    let end = loop {
        if let Some(i) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed before a response head");
        rest.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(rest[..end].to_vec()).unwrap();
    rest.drain(..end + 4);
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let len = match headers.iter().find(|(k, _)| k == "content-length") {
        Some((_, v)) if !head_only && status != 304 => v.parse::<usize>().unwrap(),
        _ => 0,
    };
    while rest.len() < len {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed mid-body");
        rest.extend_from_slice(&buf[..n]);
    }
    let body: Vec<u8> = rest.drain(..len).collect();
    (status, headers, body)
}

fn get(path: &str, extra: &str) -> String {
    format!("GET /catalogs/catalog/api/v1/{path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n")
}

fn header<'a>(h: &'a [(String, String)], k: &str) -> Option<&'a str> {
    h.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

#[test]
fn pipelined_answers_on_one_connection_are_whole_and_in_order() {
    let s = start();
    let all = all_over_h2(s.http);
    assert!(all.len() > 10 * 64 * 1024, "a body of many chunks");
    let mut c = TcpStream::connect(("127.0.0.1", s.http)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Everything at once: hyper answers them in order on this one connection.
    let requests = [
        get("all", ""),
        get("metas?schema=olm.package", ""),
        get("all", ""),
        get("all", "Range: bytes=100000-300000\r\n"),
        get("all", "Accept-Encoding: gzip\r\n"),
        "HEAD /catalogs/catalog/api/v1/all HTTP/1.1\r\nHost: x\r\n\r\n".to_string(),
        get("metas", ""),
        get("all", ""),
    ];
    c.write_all(requests.concat().as_bytes()).unwrap();
    let mut rest = Vec::new();
    let (code, h, body) = response(&mut c, &mut rest, false);
    assert_eq!(code, 200);
    assert_eq!(
        header(&h, "content-length"),
        Some(all.len().to_string().as_str())
    );
    assert!(body == all, "the first /all is the file's bytes");
    let lm = header(&h, "last-modified").unwrap().to_string();
    let (code, _, body) = response(&mut c, &mut rest, false);
    assert_eq!(code, 200);
    assert_eq!(
        body,
        b"{\"defaultChannel\":\"stable\",\"name\":\"big\",\"schema\":\"olm.package\"}\n"
    );
    let (code, _, body) = response(&mut c, &mut rest, false);
    assert_eq!(code, 200);
    assert!(body == all, "the second /all, after a /metas");
    let (code, h, body) = response(&mut c, &mut rest, false);
    assert_eq!(code, 206);
    assert_eq!(
        header(&h, "content-range"),
        Some(format!("bytes 100000-300000/{}", all.len()).as_str())
    );
    assert!(body == all[100_000..=300_000], "the range's bytes");
    let (code, h, body) = response(&mut c, &mut rest, false);
    assert_eq!((code, header(&h, "content-encoding")), (200, Some("gzip")));
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut plain)
        .unwrap();
    assert!(plain == all, "the gzip copy decodes to the file");
    let (code, h, body) = response(&mut c, &mut rest, true);
    assert_eq!((code, body.len()), (200, 0));
    assert_eq!(
        header(&h, "content-length"),
        Some(all.len().to_string().as_str())
    );
    let (code, _, body) = response(&mut c, &mut rest, false);
    assert_eq!(code, 200);
    assert!(body == all, "/metas without a filter is the whole file");
    let (code, _, body) = response(&mut c, &mut rest, false);
    assert!(code == 200 && body == all, "the last /all");
    // The connection is still good for more: a 304, then the whole file again.
    let again = get("all", &format!("If-Modified-Since: {lm}\r\n")) + &get("all", "");
    c.write_all(again.as_bytes()).unwrap();
    let (code, _, body) = response(&mut c, &mut rest, false);
    assert_eq!((code, body.len()), (304, 0));
    let (code, _, body) = response(&mut c, &mut rest, false);
    assert!(code == 200 && body == all, "/all after a 304");
    assert!(rest.is_empty(), "nothing more than the answers was sent");
}

#[test]
fn a_client_leaving_mid_body_leaves_the_server_serving() {
    let s = start();
    let all = all_over_h2(s.http);
    for _ in 0..3 {
        let mut c = TcpStream::connect(("127.0.0.1", s.http)).unwrap();
        c.write_all(get("all", "").as_bytes()).unwrap();
        let mut some = vec![0u8; 100_000];
        c.read_exact(&mut some).unwrap();
        drop(c);
    }
    // Many clients at once, each twice over one connection.
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let http = s.http;
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", http)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                c.write_all((get("all", "") + &get("all", "")).as_bytes())
                    .unwrap();
                let mut rest = Vec::new();
                let a = response(&mut c, &mut rest, false);
                let b = response(&mut c, &mut rest, false);
                (a.0, a.2, b.0, b.2)
            })
        })
        .collect();
    for t in threads {
        let (ca, a, cb, b) = t.join().unwrap();
        assert_eq!((ca, cb), (200, 200));
        assert!(
            a == all && b == all,
            "every client gets the whole file twice"
        );
    }
}
