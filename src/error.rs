//! The error every application function returns ([`crate::ingest`], [`crate::load`],
//! [`crate::serve`], …), so that the command line maps failures to exit codes in one place
//! (`cli::exit_code`).
//!
//! Catalog problems come all at once ([`Error::Invalid`]: every diagnostic, and the warnings
//! found on the way); operational failures (I/O, SQLite, the network) come one at a time, the
//! first one, as `anyhow` chains; arguments that contradict each other are [`Error::Usage`].

use crate::diag::Diagnostic;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The catalog is invalid. `errors` is never empty.
    #[error("{} error(s): the catalog is invalid", errors.len())]
    Invalid {
        errors: Vec<Diagnostic>,
        warnings: Vec<Diagnostic>,
    },
    /// Options that cannot be used together, or a value that makes no sense for them.
    #[error("{0}")]
    Usage(String),
    /// Stopped by SIGINT or SIGTERM before the work was done; nothing was left behind.
    #[error("interrupted")]
    Interrupted,
    /// An I/O, SQLite or registry failure.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl Error {
    /// An invalid catalog with these problems (and no warnings).
    pub fn invalid(errors: Vec<Diagnostic>) -> Error {
        Error::Invalid {
            errors,
            warnings: Vec::new(),
        }
    }

    /// The whole story on one line: every diagnostic of an invalid catalog (each with its
    /// help), or the error's chain of causes.
    pub fn detail(&self) -> String {
        match self {
            Error::Invalid { errors, .. } => {
                let all: Vec<String> = errors.iter().map(diagnostic_line).collect();
                format!("{self}: {}", all.join("; "))
            }
            Error::Failed(e) => crate::text::one_line(e),
            other => other.to_string(),
        }
    }

    /// An operational failure with this message.
    pub fn failed(msg: impl std::fmt::Display) -> Error {
        Error::Failed(anyhow::anyhow!("{msg}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Failed(e.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A diagnostic on one line (its `help:` line, if any, joined to it).
pub fn diagnostic_line(d: &Diagnostic) -> String {
    d.to_string()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}
