//! Compiles `proto/` with protox (no protoc needed) into tonic/prost code, and keeps the encoded
//! descriptor set for gRPC reflection; records the git commit for `--version`; hands the linker
//! the layout of the functions a loaded server runs (`scripts/hot-functions.txt`).
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

/// Lays the functions that a loaded server runs out together at the start of the binary's
/// text: `scripts/hot-functions.txt` (written by `scripts/hot-functions.sh`) goes to the linker
/// as lld's `--symbol-ordering-file`, on x86_64 Linux, where rustc links with lld. Under the
/// stress load the server then keeps 2.8 MB of code resident where it kept 6.5 MB, since each
/// page fault maps the 64 KB around it and the hot functions were spread over the text.
/// `OPREG_NO_SYMBOL_ORDER=1` leaves the layout to the linker (for another linker).
fn order_hot_functions() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=scripts/hot-functions.txt");
    println!("cargo:rerun-if-env-changed=OPREG_NO_SYMBOL_ORDER");
    let list =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("scripts/hot-functions.txt");
    let lld_target = std::env::var("TARGET")? == "x86_64-unknown-linux-gnu";
    if lld_target && list.is_file() && std::env::var_os("OPREG_NO_SYMBOL_ORDER").is_none() {
        // -Xlinker: the path is one argument, whatever it holds (-Wl, would split at commas).
        for arg in [
            "-Xlinker".to_string(),
            format!("--symbol-ordering-file={}", list.display()),
            "-Xlinker".to_string(),
            "--no-warn-symbol-ordering".to_string(),
        ] {
            println!("cargo:rustc-link-arg-bin=opreg={arg}");
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    record_commit();
    order_hot_functions()?;
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
    Ok(())
}
