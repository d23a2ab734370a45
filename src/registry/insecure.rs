//! Registries reached without full TLS, one by one: those named by `--insecure-registry` and
//! those `registries.conf` marks `insecure = true` ([`super::registries_conf`]). As in
//! podman, such a registry's certificate is not verified, and it is asked in plain HTTP when
//! HTTPS gets no answer from it; every other registry of the same run keeps verified HTTPS.

use super::send::{request, Transport};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Whether `--insecure-registry` (`flags`, each `HOST[:PORT]`, a `docker://` or `https://`
/// before it and a `/` after it allowed) or registries.conf marks the image
/// `registry/repository` insecure.
pub fn marked(flags: &[String], registry: &str, repository: &str) -> anyhow::Result<bool> {
    let named = flags.iter().any(|f| host_of(f) == registry);
    Ok(named || super::registries_conf::current()?.insecure(registry, repository))
}

/// The `HOST[:PORT]` a flag's value names.
fn host_of(flag: &str) -> &str {
    let f = ["docker://", "https://", "http://"]
        .iter()
        .find_map(|s| flag.strip_prefix(s))
        .unwrap_or(flag);
    f.split('/').next().unwrap_or(f)
}

/// Whether the insecure registry behind `transport` is to be asked in plain HTTP: it is
/// asked for `/v2/` over HTTPS (unverified) first and, when that gets no answer at all, in
/// plain HTTP; HTTP is used when only HTTP answers. Decided once per host per
/// [`super::agents::MAX_AGE`].
pub(super) fn plain_http(transport: &Transport, api_host: &str) -> bool {
    static SEEN: OnceLock<Mutex<HashMap<String, (Instant, bool)>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let known = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(api_host)
        .filter(|(at, _)| at.elapsed() < super::agents::MAX_AGE)
        .map(|(_, http)| *http);
    if let Some(http) = known {
        return http;
    }
    let answers = |scheme: &str| {
        request("GET", &format!("{scheme}://{api_host}/v2/"), &[])
            .body(())
            .is_ok_and(|req| transport.send(req).is_ok())
    };
    let http = !answers("https") && answers("http");
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(api_host.to_string(), (Instant::now(), http));
    http
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flag_names_a_host_with_or_without_a_scheme_or_path() {
        for f in [
            "127.0.0.1:5000",
            "docker://127.0.0.1:5000",
            "https://127.0.0.1:5000/",
            "127.0.0.1:5000/some/repo",
        ] {
            assert_eq!(super::host_of(f), "127.0.0.1:5000", "{f}");
        }
    }
}
