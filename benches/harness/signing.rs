//! `serve REF`'s time to SERVING on a signed catalog image, with and without
//! `--signature-policy` requiring the signature, rounds alternated, in the same run against the
//! same registry (`scripts/bench.sh --signing`). The bound: verifying adds at most 5 %.

use crate::image::Pushed;
use crate::measure::median;
use crate::procs::{free_port, Server};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One `serve REF` until it logs that it is serving; returns the seconds it took.
fn serve_once(
    bin: &Path,
    reference: &str,
    policy: Option<&Path>,
    log: &Path,
) -> Result<f64, String> {
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.args(["serve", reference, "--use-http", "--no-image-cache"])
        .args(["-p", &port.to_string(), "-t", "/dev/null"])
        .env_remove("OPREG_SIGNATURE_POLICY")
        .env_remove("OPREG_LOG");
    if let Some(p) = policy {
        cmd.arg("--signature-policy").arg(p);
    }
    let mut s = Server::spawn_command(cmd, port, log);
    if !s.wait_log("catalog loaded; serving", Duration::from_secs(300)) {
        return Err(format!("serve {reference} did not start: {}", s.log_text()));
    }
    let took = s.started.elapsed().as_secs_f64();
    s.interrupt();
    Ok(took)
}

/// Pushes `catalog`, signs it with a new key, and times `serve REF` `rounds` times each way.
pub fn measure(bin: &Path, catalog: &Path, work: &Path, rounds: usize) -> Result<String, String> {
    // The converted catalogs hold a few icons upstream rejects (see corpus.rs).
    let catalog = crate::corpus::repaired_copy(catalog, &work.join("corpus"))
        .map_err(|e| format!("writing the repaired corpus copy: {e}"))?;
    let pushed = Pushed::new(&catalog, work)?;
    let dir = work.join("signing");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let run = |args: &[&str]| -> Result<(), String> {
        let out = Command::new(bin)
            .args(args)
            .env("COSIGN_PASSWORD", "bench")
            .output()
            .map_err(|e| e.to_string())?;
        out.status
            .success()
            .then_some(())
            .ok_or_else(|| String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let prefix = dir.join("bench");
    let _ = std::fs::remove_file(dir.join("bench.key"));
    let _ = std::fs::remove_file(dir.join("bench.pub"));
    run(&[
        "image",
        "generate-key-pair",
        "--output-key-prefix",
        &prefix.to_string_lossy(),
    ])?;
    let key = dir.join("bench.key");
    run(&[
        "image",
        "sign",
        &pushed.reference,
        "--key",
        &key.to_string_lossy(),
        "--use-http",
    ])?;
    let policy = dir.join("policy.json");
    let text = serde_json::json!({"default": [{"type": "sigstoreSigned", "keyPath": dir.join("bench.pub"),
        "signedIdentity": {"type": "matchRepository"}}]});
    std::fs::write(&policy, text.to_string()).map_err(|e| e.to_string())?;
    let (mut plain, mut checked) = (Vec::new(), Vec::new());
    let log = dir.join("serve.log");
    for _ in 0..rounds {
        plain.push(serve_once(bin, &pushed.reference, None, &log)?);
        checked.push(serve_once(bin, &pushed.reference, Some(&policy), &log)?);
    }
    let (p, c) = (median(&plain), median(&checked));
    Ok(format!(
        "| serve REF to SERVING | median of {rounds} |\n|---|---|\n| without a policy | {p:.3} s |\n| with --signature-policy (sigstoreSigned, one signature) | {c:.3} s ({:.3}x) |\n",
        c / p
    ))
}
