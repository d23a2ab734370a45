//! Compiles `proto/` with protox (no protoc needed) into tonic/prost code, and keeps the encoded
//! descriptor set for gRPC reflection; records the git commit for `--version`.
use std::path::PathBuf;
use std::process::Command;

/// `git rev-parse ARGS` in the crate's directory, or None without git or outside a clone.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Sets `OPREG_GIT_COMMIT` (12 hex digits, or "unknown" when not built from a clone) and
/// rebuilds when HEAD moves.
fn record_commit() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=OPREG_GIT_COMMIT={commit}");
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(r);
    }
    for w in watched {
        if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    record_commit();
    let fds = protox::compile(["proto/registry.proto", "proto/upgrades.proto"], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    // The served side of api.Registry once more, with every api type taken from the code
    // above except Bundle, which the server sends as stored bytes (wire::EncodedBundle).
    let mut served = fds.clone();
    served.file.retain(|f| f.name() == "registry.proto");
    for f in &mut served.file {
        f.service.retain(|s| s.name() == "Registry");
    }
    let served_dir = out_dir.join("served");
    std::fs::create_dir_all(&served_dir)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".api", "crate::api")
        .extern_path(".api.Bundle", "crate::wire::EncodedBundle")
        .out_dir(&served_dir)
        .compile_fds(served)?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    println!("cargo:rerun-if-changed=proto");
    // The migrations are embedded by `include_dir!`, which cargo does not track: a new
    // migration must rebuild the crate.
    println!("cargo:rerun-if-changed=migrations");
    Ok(())
}
