//! The Dockerfile `opm generate dockerfile` writes for an FBC directory, byte for byte for the
//! same flags, with opreg's image as the default base and builder: a builder stage that
//! pre-builds the cache with `serve --cache-only`, then the base with `/configs`, the cache,
//! `Entrypoint`/`Cmd` (not for a `scratch` base, which gets a note on binary-less catalogs
//! instead), the configs label and any extra labels, sorted by key.
//!
//! Unlike opm, label keys and values are quoted as Dockerfile words (`\`, `"` and `$`
//! escaped), and control characters in a label or an image are refused: a newline would start
//! a Dockerfile instruction of its own. A directory given as `.` or `..` is resolved to its
//! name first, so that the Dockerfile lands beside it, never inside the catalog.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// opreg's published image: the default base and builder.
pub const DEFAULT_IMAGE: &str = "quay.io/opreg/opreg:latest";

/// What to generate.
#[derive(Clone, Debug)]
pub struct DockerfileOptions {
    /// The FBC directory.
    pub dir: PathBuf,
    pub base_image: String,
    pub builder_image: String,
    /// `key=value` labels; for a key given twice, the last value.
    pub extra_labels: Vec<String>,
}

/// Why no Dockerfile was written.
#[derive(Debug, thiserror::Error)]
pub enum DockerfileError {
    #[error("invalid builder image: \"scratch\"")]
    ScratchBuilder,
    #[error("invalid label {0:?}: expected KEY=VALUE")]
    Label(String),
    #[error("invalid label {0:?}: the key is empty")]
    EmptyLabelKey(String),
    #[error("invalid {0} {1:?}: it holds a control character")]
    ControlCharacter(&'static str, String),
    #[error("{0:?} has no name to write NAME.Dockerfile beside it")]
    NoName(PathBuf),
    #[error("path {0:?}: file already exists")]
    Exists(PathBuf),
    #[error("provided root path {0:?} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{}: {}", .0.display(), .1)]
    Io(PathBuf, std::io::Error),
}

/// What a `scratch` base's Dockerfile says instead of `Entrypoint`/`Cmd`: opm's note, naming
/// only `catalogDir`. OLM's extractContent copies `cacheDir` for its own opm to serve with, and
/// the cache this Dockerfile builds is opreg's database, which opm cannot read; without
/// `cacheDir`, OLM's opm builds its own cache from `/configs` at start-up.
pub const SCRATCH_NOTE: &str = "# OLMv0 CatalogSources that use binary-less images must set:\n# spec:\n#   grpcPodConfig:\n#     extractContent:\n#       catalogDir: /configs\n# and not cacheDir: /tmp/cache holds opreg's cache, which OLM's opm cannot read.";

/// The Dockerfile's text for an FBC directory named `index_dir` (as it appears beside the
/// Dockerfile).
pub fn render(
    index_dir: &str,
    base_image: &str,
    builder_image: &str,
    labels: &BTreeMap<String, String>,
) -> String {
    let mut s = format!(
        "# The builder image is expected to contain\n# /bin/opm (with serve subcommand)\nFROM {builder_image} as builder\n\n# Copy FBC root into image at /configs and pre-populate serve cache\nADD {index_dir} /configs\nRUN [\"/bin/opm\", \"serve\", \"/configs\", \"--cache-dir=/tmp/cache\", \"--cache-only\"]\n\nFROM {base_image}\n"
    );
    if base_image != "scratch" {
        s.push_str("# The base image is expected to contain\n# /bin/opm (with serve subcommand) and /bin/grpc_health_probe\n\n# Configure the entrypoint and command\nENTRYPOINT [\"/bin/opm\"]\nCMD [\"serve\", \"/configs\", \"--cache-dir=/tmp/cache\"]");
    } else {
        s.push_str(SCRATCH_NOTE);
    }
    s.push_str(&format!(
        "\n\nCOPY --from=builder /configs /configs\nCOPY --from=builder /tmp/cache /tmp/cache\n\n# Set FBC-specific label for the location of the FBC root directory\n# in the image\nLABEL {}=/configs",
        super::kind::CONFIGS_LABEL
    ));
    if !labels.is_empty() {
        s.push_str("\n\n# Set other custom labels");
        for (k, v) in labels {
            s.push_str(&format!("\nLABEL \"{}\"=\"{}\"", quoted(k), quoted(v)));
        }
    }
    s.push('\n');
    s
}

/// Writes `DIR.Dockerfile` beside `DIR`; refuses to replace one. Returns its path.
pub fn generate(opts: &DockerfileOptions) -> Result<PathBuf, DockerfileError> {
    if opts.builder_image == "scratch" {
        return Err(DockerfileError::ScratchBuilder);
    }
    for (what, image) in [
        ("base image", &opts.base_image),
        ("builder image", &opts.builder_image),
    ] {
        if image.chars().any(char::is_control) {
            return Err(DockerfileError::ControlCharacter(what, image.clone()));
        }
    }
    let labels = parse_labels(&opts.extra_labels)?;
    let from = named(&clean(&opts.dir))?;
    let name = from
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| DockerfileError::NoName(opts.dir.clone()))?;
    let path = from.with_file_name(format!("{name}.Dockerfile"));
    match std::fs::metadata(&path) {
        Ok(_) => return Err(DockerfileError::Exists(path)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(DockerfileError::Io(path, e))
        }
        Err(_) => {}
    }
    match std::fs::metadata(&from) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(DockerfileError::NotADirectory(from)),
        Err(e) => return Err(DockerfileError::Io(from, e)),
    }
    let text = render(&name, &opts.base_image, &opts.builder_image, &labels);
    // Whole or not at all, and never over a file made since the check above.
    let opts = crate::atomic::Options::mode(crate::atomic::Mode::Create(0o666)).replace(false);
    crate::atomic::write(&path, text.as_bytes(), &opts)
        .map_err(|e| DockerfileError::Io(path.clone(), e))?;
    Ok(path)
}

/// `KEY=VALUE` labels; for a key given twice, the last value. An empty key and a control
/// character are refused.
fn parse_labels(given: &[String]) -> Result<BTreeMap<String, String>, DockerfileError> {
    let mut labels = BTreeMap::new();
    for l in given {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| DockerfileError::Label(l.clone()))?;
        if k.is_empty() {
            return Err(DockerfileError::EmptyLabelKey(l.clone()));
        }
        if l.chars().any(char::is_control) {
            return Err(DockerfileError::ControlCharacter("label", l.clone()));
        }
        labels.insert(k.to_string(), v.to_string());
    }
    Ok(labels)
}

/// A Dockerfile double-quoted word's content: `\`, `"` and `$` (variable expansion) escaped.
fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '$') {
            q.push('\\');
        }
        q.push(c);
    }
    q
}

/// The path itself when it ends in a name; `.`, `..` and the like resolved to the absolute
/// directory they mean.
fn named(p: &Path) -> Result<PathBuf, DockerfileError> {
    match p.components().next_back() {
        Some(Component::Normal(_)) => Ok(p.to_path_buf()),
        _ => std::fs::canonicalize(p).map_err(|e| DockerfileError::Io(p.to_path_buf(), e)),
    }
}

/// `filepath.Clean` for the cases that matter here: trailing slashes and `.` components.
fn clean(p: &Path) -> PathBuf {
    let c: PathBuf = p.components().collect();
    if c.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opms_text() {
        let mut labels = BTreeMap::new();
        labels.insert("b".to_string(), "2".to_string());
        labels.insert("a".to_string(), "1".to_string());
        let t = render("catalog", "img:1", "bld:1", &labels);
        assert!(t.starts_with("# The builder image is expected to contain\n# /bin/opm (with serve subcommand)\nFROM bld:1 as builder\n"));
        assert!(t.contains("\nFROM img:1\n# The base image is expected"));
        assert!(t.ends_with(
            "=/configs\n\n# Set other custom labels\nLABEL \"a\"=\"1\"\nLABEL \"b\"=\"2\"\n"
        ));
        let s = render("catalog", "scratch", "bld:1", &BTreeMap::new());
        assert!(s.contains("FROM scratch\n# OLMv0 CatalogSources"));
        assert!(s.ends_with("index.configs.v1=/configs\n"));
    }
}
