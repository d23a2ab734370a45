//! Which registries containers' `registries.conf` marks `insecure = true` (reachable in plain
//! HTTP, or over TLS without verifying the certificate), read as podman and skopeo read it:
//! the main file (`$CONTAINERS_REGISTRIES_CONF`, else `~/.config/containers/registries.conf`
//! when it exists, else `/etc/containers/registries.conf`), then the `*.conf` drop-ins of
//! `registries.conf.d/` in name order (the system's and the user's; only the user's when the
//! user's main file is the one read). A drop-in's `[[registry]]` table replaces an earlier one
//! with the same prefix. Both file versions are read: version 2's `[[registry]]` tables
//! (`prefix` or `location`, `insecure`) and version 1's `[registries.insecure] registries`.
//! Every other setting (search registries, aliases, mirrors, blocking) is not opreg's and is
//! left alone.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The system's main file.
const SYSTEM_FILE: &str = "/etc/containers/registries.conf";
/// The system's drop-in directory.
const SYSTEM_DIR: &str = "/etc/containers/registries.conf.d";

/// What the files say about security: the insecure flag of each prefix, in file order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Prefix (a `HOST[:PORT][/PATH]`, or `*.DOMAIN`) -> insecure.
    prefixes: BTreeMap<String, bool>,
}

#[derive(Deserialize, Default)]
struct File {
    #[serde(default)]
    registry: Vec<Entry>,
    #[serde(default)]
    registries: Option<Version1>,
}

#[derive(Deserialize)]
struct Entry {
    prefix: Option<String>,
    location: Option<String>,
    #[serde(default)]
    insecure: bool,
}

#[derive(Deserialize, Default)]
struct Version1 {
    insecure: Option<List>,
}

#[derive(Deserialize, Default)]
struct List {
    #[serde(default)]
    registries: Vec<String>,
}

impl Rules {
    /// Adds one file's text (`name` is how an error names it) on top of what is read so far.
    pub fn add(&mut self, text: &str, name: &str) -> Result<()> {
        let file: File = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    let before = &text[..s.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                    format!(":{line}:{col}")
                })
                .unwrap_or_default();
            anyhow!(
                "{name}{at}: not a valid registries.conf: {}",
                e.message().trim()
            )
        })?;
        for (i, entry) in file.registry.into_iter().enumerate() {
            let prefix = entry
                .prefix
                .filter(|p| !p.is_empty())
                .or(entry.location.filter(|l| !l.is_empty()))
                .ok_or_else(|| {
                    anyhow!(
                        "{name}: [[registry]] number {} has neither a prefix nor a location",
                        i + 1
                    )
                })?;
            self.prefixes.insert(prefix, entry.insecure);
        }
        let listed = file.registries.and_then(|r| r.insecure);
        for host in listed.map(|l| l.registries).unwrap_or_default() {
            self.prefixes.insert(host, true);
        }
        Ok(())
    }

    /// Whether the image `registry/repository` is insecure: what the longest prefix matching it
    /// says (a `*.DOMAIN` prefix matches every host under DOMAIN); false when none matches.
    pub fn insecure(&self, registry: &str, repository: &str) -> bool {
        let name = format!("{registry}/{repository}");
        self.prefixes
            .iter()
            .filter(|(p, _)| matches(p, registry, &name))
            .max_by_key(|(p, _)| p.len())
            .is_some_and(|(_, insecure)| *insecure)
    }
}

/// Whether `prefix` matches the image `name` (whose host is `registry`): the whole name, or a
/// leading part of it that ends where a path, tag or digest begins.
fn matches(prefix: &str, registry: &str, name: &str) -> bool {
    if let Some(domain) = prefix.strip_prefix("*.") {
        let host = registry.split(':').next().unwrap_or(registry);
        return host.len() > domain.len() && host.ends_with(&format!(".{domain}"));
    }
    match name.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(['/', ':', '@']),
        None => false,
    }
}

/// The files read, in order: the main file (if any) then the drop-ins.
pub fn files() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let user_file = home
        .as_ref()
        .map(|h| h.join(".config/containers/registries.conf"));
    let user_dir = home
        .as_ref()
        .map(|h| h.join(".config/containers/registries.conf.d"));
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::from(SYSTEM_DIR)];
    match std::env::var_os("CONTAINERS_REGISTRIES_CONF") {
        Some(p) if !p.is_empty() => out.push(PathBuf::from(p)),
        _ => match user_file.filter(|f| f.is_file()) {
            Some(f) => {
                out.push(f);
                dirs.clear();
            }
            None if Path::new(SYSTEM_FILE).is_file() => out.push(PathBuf::from(SYSTEM_FILE)),
            None => {}
        },
    }
    dirs.extend(user_dir);
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "conf") && p.is_file())
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// Reads [`files`]; a file that cannot be read or does not parse is an error naming it.
pub fn read() -> Result<Rules> {
    let mut rules = Rules::default();
    for f in files() {
        let text =
            std::fs::read_to_string(&f).map_err(|e| anyhow!("cannot read {}: {e}", f.display()))?;
        rules.add(&text, &f.display().to_string())?;
    }
    Ok(rules)
}

/// The rules last read, and when.
type Held = Mutex<Option<(Instant, Arc<Rules>)>>;

/// [`read`], once per [`super::agents::MAX_AGE`] (a long-lived process sees edits).
pub fn current() -> Result<Arc<Rules>> {
    static READ: OnceLock<Held> = OnceLock::new();
    let cell = READ.get_or_init(Default::default);
    let mut held = cell.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, rules)) = held.as_ref() {
        if at.elapsed() < super::agents::MAX_AGE {
            return Ok(rules.clone());
        }
    }
    let rules = Arc::new(read()?);
    *held = Some((Instant::now(), rules.clone()));
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(files: &[&str]) -> Rules {
        let mut r = Rules::default();
        for (i, f) in files.iter().enumerate() {
            r.add(f, &format!("file{i}")).unwrap();
        }
        r
    }

    #[test]
    fn version_2_tables_match_by_the_longest_prefix() {
        let r = rules(&[r#"
unqualified-search-registries = ["docker.io"]
[[registry]]
location = "localhost:5000"
insecure = true
[[registry]]
prefix = "quay.io/team"
location = "mirror.example:443/team"
insecure = true
[[registry]]
prefix = "quay.io/team/safe"
location = "quay.io/team/safe"
[[registry]]
prefix = "*.lab.example"
insecure = true
[[registry.mirror]]
location = "elsewhere"
[aliases]
"ubi" = "registry.access.redhat.com/ubi9"
"#]);
        assert!(r.insecure("localhost:5000", "a/b"));
        assert!(!r.insecure("localhost:5001", "a/b"));
        assert!(!r.insecure("localhost", "a"));
        assert!(r.insecure("quay.io", "team/app"));
        assert!(!r.insecure("quay.io", "teams/app"));
        assert!(!r.insecure("quay.io", "team/safe/app"));
        assert!(r.insecure("reg.lab.example:8443", "x"));
        assert!(!r.insecure("lab.example", "x"));
        assert!(!r.insecure("mirror.example:443", "team/app"));
    }

    #[test]
    fn version_1_lists_and_a_later_file_replacing_a_prefix() {
        let r = rules(&[
            "[registries.search]\nregistries = ['docker.io']\n[registries.insecure]\nregistries = ['10.0.0.1:5000']\n",
            "[[registry]]\nlocation = \"10.0.0.1:5000\"\ninsecure = false\n",
        ]);
        assert!(!r.insecure("10.0.0.1:5000", "x"));
        let r = rules(&["[registries.insecure]\nregistries = ['10.0.0.1:5000']\n"]);
        assert!(r.insecure("10.0.0.1:5000", "x"));
    }

    #[test]
    fn a_malformed_file_is_named_with_the_line() {
        let mut r = Rules::default();
        let e = r
            .add(
                "[[registry]]\nlocation = \"a\"\ninsecure = \"yes\"\n",
                "x.conf",
            )
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.conf:3:"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = r
            .add("[[registry]]\ninsecure = true\n", "y.conf")
            .unwrap_err();
        assert!(e.to_string().contains("neither a prefix nor a location"));
    }
}
