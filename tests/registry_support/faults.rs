//! An HTTP relay in front of the test registry that answers some requests itself (an error
//! status, a `Retry-After`) or cuts the connection in the middle of a request's body, so a
//! test can see what a push does when the registry refuses or the network drops. Every
//! connection carries one request (`Connection: close` is added), and each request is seen
//! whole before it is relayed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A request as the relay saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
}

/// What the relay does with a request.
pub enum Action {
    Relay,
    /// Answers with this status and these headers, without asking the registry.
    Answer(u16, Vec<(String, String)>),
    /// Reads half of the body, then closes the connection.
    Drop,
    /// Resets the connection (a TCP RST) without answering.
    Reset,
    /// Relays the request, then sends the answer's head and half its body, and closes.
    Truncate,
}

/// Decides, for the `n`-th request (from 0), what happens to it.
pub type Rule = dyn Fn(&Seen, usize) -> Action + Send + Sync;

pub struct Faults {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<(Seen, &'static str)>>>,
}

impl Faults {
    pub fn start(upstream: u16, rule: Box<Rule>) -> Faults {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let rule: Arc<Rule> = Arc::from(rule);
        std::thread::spawn(move || {
            for client in l.incoming().flatten() {
                let (rule, log) = (rule.clone(), log.clone());
                std::thread::spawn(move || {
                    let _ = one(client, upstream, &*rule, &log);
                });
            }
        });
        Faults { port, seen }
    }

    /// How many requests got `what` ("relayed", "answered", "dropped").
    pub fn count(&self, what: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, w)| *w == what)
            .count()
    }
}

fn one(
    client: TcpStream,
    upstream: u16,
    rule: &Rule,
    log: &Mutex<Vec<(Seen, &'static str)>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if !lower.starts_with("connection:") {
            head.push(line);
        }
    }
    let mut parts = head[0].split_whitespace();
    let seen = Seen {
        method: parts.next().unwrap_or("").to_string(),
        path: parts.next().unwrap_or("").to_string(),
    };
    let n = log.lock().unwrap().len();
    let action = rule(&seen, n);
    let mut client = client;
    match action {
        Action::Drop => {
            log.lock().unwrap().push((seen, "dropped"));
            let mut half = vec![0u8; length / 2];
            reader.read_exact(&mut half)?;
            let _ = client.shutdown(std::net::Shutdown::Both);
            Ok(())
        }
        Action::Reset => {
            log.lock().unwrap().push((seen, "reset"));
            reset(&client);
            Ok(())
        }
        Action::Answer(status, headers) => {
            log.lock().unwrap().push((seen, "answered"));
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body)?;
            let mut out =
                format!("HTTP/1.1 {status} Fault\r\nContent-Length: 0\r\nConnection: close\r\n");
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            client.write_all(out.as_bytes())
        }
        Action::Truncate => {
            log.lock().unwrap().push((seen, "truncated"));
            let mut server = forward(&mut reader, &head, length, upstream)?;
            let mut answer = Vec::new();
            server.read_to_end(&mut answer)?;
            let end = answer
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(answer.len(), |p| p + 4);
            let keep = end + (answer.len() - end) / 2;
            client.write_all(&answer[..keep])?;
            reset(&client);
            Ok(())
        }
        Action::Relay => {
            log.lock().unwrap().push((seen, "relayed"));
            let mut server = forward(&mut reader, &head, length, upstream)?;
            std::io::copy(&mut server, &mut client)?;
            Ok(())
        }
    }
}

/// Reads the request's body and sends the request to the registry, on a connection of its own
/// that closes after the answer.
fn forward(
    reader: &mut impl Read,
    head: &[String],
    length: usize,
    upstream: u16,
) -> std::io::Result<TcpStream> {
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
    let mut req = head.concat();
    req.push_str("Connection: close\r\n\r\n");
    server.write_all(req.as_bytes())?;
    server.write_all(&body)?;
    Ok(server)
}

/// Closes `s` with a RST: SO_LINGER on with a zero timeout, then close.
fn reset(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized option value.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    let _ = s.shutdown(std::net::Shutdown::Read);
}
