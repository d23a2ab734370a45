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
/// The OAuth2 refresh token (a docker config's `identitytoken`) the token server accepts in
/// the POST flow.
pub const REFRESH_TOKEN: &str = "opreg-test-refresh-7f3a9c";

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
                let mut length = 0usize;
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
                    if let Some(v) = l.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                // The OAuth2 POST flow of the distribution token spec: a form with grant_type,
                // service, client_id, scope and (for grant_type=refresh_token) the refresh token.
                let mut oauth = false;
                if request.starts_with("POST ") {
                    let mut body = vec![0u8; length.min(64 * 1024)];
                    let _ = std::io::Read::read_exact(&mut reader, &mut body);
                    let form: std::collections::BTreeMap<String, String> =
                        form_urlencoded::parse(&body).into_owned().collect();
                    let get = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
                    oauth = true;
                    authorized = get("grant_type") == "refresh_token"
                        && get("refresh_token") == REFRESH_TOKEN
                        && get("service") == SERVICE
                        && !get("client_id").is_empty();
                    // The log names the grant and the scope, never the token.
                    request = format!(
                        "{request} grant_type={} service={} scope={}",
                        get("grant_type"),
                        get("service"),
                        get("scope")
                    );
                }
                let (status, body) = if authorized {
                    let jwt = sign(&c, &k);
                    if oauth {
                        // The OAuth2 answer names it access_token.
                        (
                            200,
                            format!("{{\"access_token\":\"{jwt}\",\"expires_in\":3600}}"),
                        )
                    } else {
                        (200, format!("{{\"token\":\"{jwt}\",\"expires_in\":3600}}"))
                    }
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
