//! Where a mirror goes, as the command line names it: `docker://REGISTRY[/PREFIX]` or
//! `file://DIR`, and `--from file://DIR`; each refused in one line naming what was given.

use crate::error::Error;
use std::path::PathBuf;

/// Where a mirror goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// `docker://REGISTRY[/PREFIX]`.
    Registry(String),
    /// `file://DIR`: an OCI layout and the plan, DIR being the workspace.
    Disk(PathBuf),
}

impl Destination {
    /// Parses `docker://REGISTRY[/PREFIX]` or `file://DIR`.
    pub fn parse(s: &str) -> Result<Destination, Error> {
        if let Some(rest) = s.strip_prefix("docker://") {
            let rest = rest.trim_end_matches('/');
            if rest.is_empty() || rest.contains('@') || rest.starts_with('/') {
                return Err(Error::Usage(format!(
                    "{s}: expected docker://REGISTRY[/PREFIX]"
                )));
            }
            crate::imageref::parse(&format!("{rest}/x"))
                .map_err(|e| Error::Usage(format!("{s}: {e}")))?;
            return Ok(Destination::Registry(rest.to_string()));
        }
        if let Some(dir) = s.strip_prefix("file://") {
            return disk_dir(s, dir).map(Destination::Disk);
        }
        Err(Error::Usage(format!(
            "{s}: the destination is docker://REGISTRY[/PREFIX] or file://DIR"
        )))
    }
}

/// Parses `--from file://DIR`.
pub fn parse_from(s: &str) -> Result<PathBuf, Error> {
    match s.strip_prefix("file://") {
        Some(dir) => disk_dir(s, dir),
        None => Err(Error::Usage(format!(
            "--from {s}: expected file://DIR, a mirror to disk"
        ))),
    }
}

fn disk_dir(given: &str, dir: &str) -> Result<PathBuf, Error> {
    if dir.is_empty() {
        return Err(Error::Usage(format!("{given}: expected file://DIR")));
    }
    Ok(PathBuf::from(dir))
}
