//! A token server for the registry's bearer-token auth: it checks basic credentials and answers
//! with a JWT (RS256, signed by `openssl dgst`) carrying its certificate in `x5c`, which the
//! registry trusts through `rootcertbundle`.

use super::{PASSWORD, USER};
use base64::Engine;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const SERVICE: &str = "opreg-test-registry";
pub const ISSUER: &str = "opreg-test-issuer";

pub struct TokenServer {
    pub port: u16,
    pub cert: PathBuf,
    key: PathBuf,
    /// Token requests answered, and refused.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

fn b64url(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

impl TokenServer {
    pub fn start(dir: &Path) -> TokenServer {
        let (cert, key) = (dir.join("token-cert.pem"), dir.join("token-key.pem"));
        super::self_signed(&key, &cert, &["-subj", "/CN=opreg-test-token-issuer"]);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = TokenServer {
            port,
            cert,
            key,
            log: Default::default(),
        };
        let (c, k, log) = (server.cert.clone(), server.key.clone(), server.log.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                let mut authorized = false;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if request.is_empty() {
                        request = line.trim().to_string();
                    }
                    let l = line.to_ascii_lowercase();
                    if l.starts_with("authorization:") {
                        authorized = line.trim()[14..].trim() == super::basic(USER, PASSWORD);
                    }
                }
                let (status, body) = if authorized {
                    let jwt = sign(&c, &k);
                    (200, format!("{{\"token\":\"{jwt}\",\"expires_in\":3600}}"))
                } else {
                    (401, "{}".to_string())
                };
                log.lock().unwrap().push(format!("{status} {request}"));
                let mut s = stream;
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        server
    }

    pub fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }

    /// A token for the test helpers' own pushes.
    pub fn mint(&self) -> String {
        sign(&self.cert, &self.key)
    }
}

/// A JWT granting pull, push and delete on every repository the tests use.
fn sign(cert: &Path, key: &Path) -> String {
    let der = Command::new("openssl")
        .args(["x509", "-outform", "DER", "-in"])
        .arg(cert)
        .output()
        .unwrap()
        .stdout;
    let x5c = base64::engine::general_purpose::STANDARD.encode(der);
    let header = serde_json::json!({"typ": "JWT", "alg": "RS256", "x5c": [x5c]});
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let access: Vec<serde_json::Value> = ["cat", "secure/cat"]
        .iter()
        .map(|n| serde_json::json!({"type": "repository", "name": n, "actions": ["pull", "push", "delete"]}))
        .collect();
    let claims = serde_json::json!({
        "iss": ISSUER, "sub": USER, "aud": SERVICE, "exp": now + 3600, "nbf": now - 60,
        "iat": now - 60, "jti": format!("{now}-{}", rand_suffix()), "access": access
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(signing_input.as_bytes())
        .unwrap();
    let sig = child.wait_with_output().unwrap().stdout;
    format!("{signing_input}.{}", b64url(&sig))
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
