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

/// The names of a destination's record (`standing.json`, or a mirror on disk's listing and
/// layout) and of a `DeleteImageList`: at a registry the image's reference, in a mirror on
/// disk its name in the layout (its source reference, or a catalog's target path and tag).
impl Destination {
    /// The list's `imageReference` of the image named `name`: `docker://REF`, or
    /// `oci:DIR:NAME` (containers' transport for a name in a layout).
    pub fn reference(&self, name: &str) -> String {
        match self {
            Destination::Registry(_) => format!("docker://{name}"),
            Destination::Disk(dir) => format!("oci:{}:{name}", dir.display()),
        }
    }

    /// The name an `imageReference` gives, when it is of this destination's form.
    pub fn name_of<'a>(&self, reference: &'a str) -> Option<&'a str> {
        match self {
            Destination::Registry(_) => reference.strip_prefix("docker://"),
            Destination::Disk(dir) => reference
                .strip_prefix("oci:")
                .and_then(|r| r.strip_prefix(dir.to_str()?))
                .and_then(|r| r.strip_prefix(':')),
        }
    }

    /// Whether the record's `name` is under this destination (`REGISTRY/PREFIX/…`; every name
    /// of a mirror on disk is).
    pub fn holds(&self, name: &str) -> bool {
        match self {
            Destination::Registry(d) => name.starts_with(&format!("{}/", d.trim_end_matches('/'))),
            Destination::Disk(_) => true,
        }
    }

    /// The image named `name` with `digest`, to read: `REPOSITORY@DIGEST`, or `oci:DIR:NAME`.
    pub fn pinned(&self, name: &str, digest: &str) -> String {
        match self {
            Destination::Registry(_) => {
                format!("{}@{digest}", super::standing::repository_of(name))
            }
            Destination::Disk(dir) => format!("oci:{}:{name}", dir.display()),
        }
    }

    /// As the command line names it.
    pub fn given(&self) -> String {
        match self {
            Destination::Registry(d) => format!("docker://{d}"),
            Destination::Disk(dir) => format!("file://{}", dir.display()),
        }
    }
}
