//! A copy's progress ([`crate::image::copy::Progress`]): a bar of the bytes done on stderr when
//! it is a terminal; one JSON log line a blob with `--log-format json`; nothing with `-q`, or
//! when stderr is not a terminal.

use crate::image::copy::{Progress, Sent};
use crate::progress::{Reporter, Unit};
use std::io::IsTerminal;
use std::sync::Mutex;

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

/// The library's progress reports ([`crate::progress::Progress`]) on stderr when it is a
/// terminal: a spinner for a step, a bar for a task. Nothing with `-q` or `--log-format json`.
pub fn reporter(quiet: bool) -> Reporter {
    if super::show_progress(quiet) && !super::output::json() {
        Reporter::new(std::sync::Arc::new(Steps::default()))
    } else {
        Reporter::none()
    }
}

/// The one spinner or bar drawn at a time.
#[derive(Default)]
struct Steps(Mutex<Option<indicatif::ProgressBar>>);

impl Steps {
    fn replace(&self, new: Option<indicatif::ProgressBar>) {
        let mut shown = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = std::mem::replace(&mut *shown, new) {
            old.finish_and_clear();
        }
    }
}

impl crate::progress::Progress for Steps {
    fn step(&self, what: &str) {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message(what.to_string());
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        self.replace(Some(pb));
    }

    fn task(&self, label: &str, total: u64, unit: Unit) {
        let template = match unit {
            Unit::Bytes => {
                format!("{label} {{bar:30}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}}")
            }
            Unit::Items(items) => {
                format!("{label} {{bar:30}} {{pos}}/{{len}} {items} [{{elapsed}}]")
            }
        };
        let pb = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
            pb.set_style(style);
        }
        self.replace(Some(pb));
    }

    fn position(&self, done: u64) {
        let shown = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pb) = &*shown {
            pb.set_position(done);
        }
    }

    fn done(&self) {
        self.replace(None);
    }
}
