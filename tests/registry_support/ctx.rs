//! The binary under test, run in an isolated environment, and the reference outputs the
//! image tests compare against.

use super::{bundle_labels, dir_entries, Image, CONFIGS};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

// The test crate including this module declares `mod common` (tests/common/mod.rs).
use crate::common;

/// An isolated environment for the binary: its own HOME, cache, temp dir and no auth files
/// but the ones a test writes.
pub struct Ctx {
    dir: tempfile::TempDir,
}

impl Ctx {
    pub fn new() -> Ctx {
        let c = Ctx {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(c.tmp()).unwrap();
        c
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    pub fn tmp(&self) -> PathBuf {
        self.path("tmp")
    }
    pub fn cache(&self) -> PathBuf {
        self.path("cache/opreg/images")
    }
    /// The command for `opreg ARGS`. A `mirror` run that names no `--workspace` gets one in
    /// this environment's directory, so that no run writes `opreg-mirror/` into the repository.
    pub fn cmd(&self, args: &[&str], env: &[(&str, &Path)]) -> Command {
        let mut c = Command::new(common::bin());
        c.args(args);
        // (`mirror delete` finds its workspace from its list.)
        let mirrors = args.first() == Some(&"mirror") && args.get(1) != Some(&"delete");
        if mirrors && !args.iter().any(|a| a.starts_with("--workspace")) {
            c.arg("--workspace").arg(self.path("workspace"));
        }
        c.env("HOME", self.path("home"))
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("TMPDIR", self.tmp())
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("DOCKER_CONFIG")
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("OPREG_LOG");
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }
    /// Runs opreg; returns (exit code, stdout, stderr).
    pub fn run_env(&self, args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
        let out = self.cmd(args, env).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.run_env(args, &[])
    }
}

/// Renders a local SOURCE with opreg (the reference output).
pub fn render_local(src: &Path) -> String {
    let (code, out, err) = common::opreg(&["render", src.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    out
}

/// A directory holding `catalog.json` rendered from a shared package-manifest tree.
pub fn fbc_dir(ctx: &Ctx, package: &str) -> PathBuf {
    let d = ctx.path(&format!("fbc/{package}"));
    std::fs::create_dir_all(&d).unwrap();
    let src = common::shared(&format!("upstream-manifests/{package}"));
    std::fs::write(d.join("catalog.json"), render_local(&src)).unwrap();
    d
}

pub fn catalog_image(dir: &Path) -> Image {
    Image::new(&[(CONFIGS, "/configs")]).layer(&dir_entries(dir, "configs"))
}

/// The one error line of a failed run.
pub fn one_error_line(code: i32, err: &str, reference: &str) -> String {
    assert_eq!(code, 1, "expected exit 1, stderr: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "expected one error line: {err}");
    assert!(
        lines[0].contains(reference),
        "the error names {reference}: {err}"
    );
    assert!(!err.contains("panicked"), "no panic allowed: {err}");
    lines[0].to_string()
}

pub const BUNDLE_DIR: &str =
    "corpus/bundles-sample/certified-operators/operators/tvo-operator/6.1.10";

pub fn bundle_image() -> Image {
    let dir = common::shared(BUNDLE_DIR);
    let labels = bundle_labels("tvo-operator", "6.1.x", "6.1.x");
    let labels: Vec<(&str, &str)> = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut entries = dir_entries(&dir.join("manifests"), "manifests");
    entries.extend(dir_entries(&dir.join("metadata"), "metadata"));
    Image::new(&labels).layer(&entries)
}

/// The CSV of the shared bundle directory, read here independently of opreg.
pub fn csv_of_bundle_dir() -> Value {
    let dir = common::shared(BUNDLE_DIR).join("manifests");
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let v: Value = yaml_serde::from_str(&text).unwrap_or(Value::Null);
        if v["kind"] == "ClusterServiceVersion" {
            return v;
        }
    }
    panic!("no CSV in {BUNDLE_DIR}");
}

pub fn local_bundle() -> Value {
    let out = common::json_lines(&render_local(&common::shared(BUNDLE_DIR)));
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["schema"] == "olm.bundle")
        .unwrap()
}

/// A TCP server that accepts connections and never answers.
pub fn silent_server() -> (u16, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let mut held = Vec::new();
        l.set_nonblocking(true).unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(40) {
            if let Ok((s, _)) = l.accept() {
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    (port, h)
}

/// Package names a running server lists.
pub fn list_packages(server: &common::Server) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = server.registry().await;
        let mut s = c
            .list_packages(opreg::api::ListPackageRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut v = Vec::new();
        while let Some(p) = s.message().await.unwrap() {
            v.push(p.name);
        }
        v
    })
}

/// The health status (1 SERVING, 2 NOT_SERVING) of a gRPC server on `port`, if it answers.
pub fn health_status(port: u16) -> Option<i32> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ch = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect()
            .await
            .ok()?;
        let mut c = tonic_health::pb::health_client::HealthClient::new(ch);
        let req = tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        };
        c.check(req).await.ok().map(|r| r.get_ref().status)
    })
}
