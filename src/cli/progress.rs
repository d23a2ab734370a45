//! A copy's progress ([`crate::image::copy::Progress`]): a bar of the bytes done on stderr when
//! it is a terminal; one JSON log line a blob with `--log-format json`; nothing with `-q`, or
//! when stderr is not a terminal.

use crate::image::copy::{Progress, Sent};
use std::io::IsTerminal;

/// A bar of the bytes done (cleared when dropped), log lines, or nothing.
pub enum Bar {
    Drawn(indicatif::ProgressBar),
    Lines,
    Nothing,
}

impl Bar {
    /// What the command shows, labelled `verb`.
    pub fn new(quiet: bool, verb: &str) -> Bar {
        if quiet {
            return Bar::Nothing;
        }
        if super::output::json() {
            return Bar::Lines;
        }
        if !std::io::stderr().is_terminal() {
            return Bar::Nothing;
        }
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{verb} {{bar:30}} {{bytes}}/{{total_bytes}} [{{elapsed}}]"
            ))
            .expect("static template"),
        );
        Bar::Drawn(pb)
    }
}

impl Progress for Bar {
    fn start(&self, blobs: usize, bytes: u64) {
        match self {
            Bar::Drawn(pb) => pb.set_length(bytes),
            Bar::Lines => tracing::info!(blobs, bytes, "copying blobs"),
            Bar::Nothing => {}
        }
    }

    fn blob(&self, digest: &str, size: u64, sent: Sent) {
        let how = match sent {
            Sent::Skipped => "already there",
            Sent::Mounted => "mounted",
            Sent::Uploaded => "uploaded",
        };
        match self {
            Bar::Drawn(pb) => pb.inc(size),
            Bar::Lines => tracing::info!(digest, size, how, "blob"),
            Bar::Nothing => {}
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Bar::Drawn(pb) = self {
            pb.finish_and_clear();
        }
    }
}
