//! Test helpers: run the real `opreg` binary, start servers on free ports, reach fixtures.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_opreg")
}

/// `../shared/testdata/<rel>`, the fixtures nobody here wrote.
pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/testdata")
        .join(rel)
}

/// `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `opreg ARGS`, returning (exit code, stdout, stderr).
pub fn opreg(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin()).args(args).output().expect("run opreg");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A running `opreg serve`, killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    /// Starts `opreg serve ARGS -p <free port>` and waits until health says SERVING.
    pub fn start(args: &[&str]) -> Server {
        let port = free_port();
        let child = Command::new(bin())
            .arg("serve")
            .args(args)
            .args(["-p", &port.to_string(), "-t", "/dev/null"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn opreg serve");
        let mut s = Server { child, port };
        s.wait_serving(Duration::from_secs(60));
        s
    }

    pub fn addr(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn wait_serving(&mut self, limit: Duration) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let addr = self.addr();
        let start = Instant::now();
        loop {
            let ok = rt.block_on(async {
                let Ok(ch) = tonic::transport::Endpoint::from_shared(addr.clone())
                    .unwrap()
                    .connect()
                    .await
                else {
                    return false;
                };
                let mut c = tonic_health::pb::health_client::HealthClient::new(ch);
                matches!(
                    c.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await,
                    Ok(r) if r.get_ref().status == 1
                )
            });
            if ok {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                panic!("opreg serve exited with {status} before SERVING:\n{err}");
            }
            assert!(
                start.elapsed() < limit,
                "server did not become SERVING within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub async fn registry(
        &self,
    ) -> opreg::api::registry_client::RegistryClient<tonic::transport::Channel> {
        let ch = tonic::transport::Endpoint::from_shared(self.addr())
            .unwrap()
            .connect()
            .await
            .unwrap();
        opreg::api::registry_client::RegistryClient::new(ch).max_decoding_message_size(64 << 20)
    }

    /// Sends SIGTERM and waits for the exit code.
    pub fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id() as i32;
        unsafe_kill(pid, 15);
        let start = Instant::now();
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            if start.elapsed() > Duration::from_secs(20) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub fn unsafe_kill(pid: i32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
