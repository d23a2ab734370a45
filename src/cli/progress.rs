//! The one drawer of the library's progress events ([`crate::progress::Event`]): on a terminal,
//! a spinner for a step, a bar for a counted task, a bar of the bytes a copy sent, or a bar of
//! the images a mirror copied with its bytes, rate and current image; with `--log-format json`,
//! one log line a copy's start and blob and a mirror's start and image (a mirror's also in text
//! when stderr is not a terminal); nothing with `-q`, or when stderr is not a terminal.

use crate::progress::{Event, Progress, Reporter, Sent, Unit};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Draws events on stderr (its bar cleared when dropped), logs them, or does nothing.
pub struct Drawer {
    mode: Mode,
    /// The one spinner or bar drawn.
    bar: Mutex<Option<indicatif::ProgressBar>>,
    /// A copy's or a mirror's bar is cleared when the drawer is dropped; a step's is left.
    clear_on_drop: bool,
    /// A mirror's bytes so far, and when it began.
    bytes: AtomicU64,
    start: Instant,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Drawn,
    Lines,
    Nothing,
}

impl Mode {
    fn of(quiet: bool) -> Mode {
        if quiet {
            Mode::Nothing
        } else if super::output::json() {
            Mode::Lines
        } else if !std::io::stderr().is_terminal() {
            Mode::Nothing
        } else {
            Mode::Drawn
        }
    }
}

impl Drawer {
    fn new(mode: Mode, bar: Option<indicatif::ProgressBar>) -> Drawer {
        Drawer {
            mode,
            clear_on_drop: bar.is_some(),
            bar: Mutex::new(bar),
            bytes: AtomicU64::new(0),
            start: Instant::now(),
        }
    }

    /// A copy's progress, its bar labelled `verb`.
    pub fn copy(quiet: bool, verb: &str) -> Drawer {
        let mode = Mode::of(quiet);
        let bar = (mode == Mode::Drawn).then(|| {
            styled(
                indicatif::ProgressBar::new(0),
                &format!("{verb} {{bar:30}} {{bytes}}/{{total_bytes}} [{{elapsed}}]"),
            )
        });
        Drawer::new(mode, bar)
    }

    /// A mirror's progress: images done of total, bytes, rate and the current image. Off a
    /// terminal (a CI job, a pod), where a mirror runs for minutes to hours, one log line a
    /// catalog pinned and an image done, in text as in JSON.
    pub fn mirror(quiet: bool) -> Drawer {
        Drawer::images(quiet, "mirroring")
    }

    /// Images done of total, `verb` first ("deleting"), as [`Drawer::mirror`] draws them.
    pub fn images(quiet: bool, verb: &str) -> Drawer {
        let mode = match Mode::of(quiet) {
            Mode::Nothing if !quiet => Mode::Lines,
            m => m,
        };
        let bar = (mode == Mode::Drawn).then(|| {
            let pb = styled(
                indicatif::ProgressBar::new(0),
                &format!("{verb} {{bar:25}} {{pos}}/{{len}} images {{msg}}"),
            );
            pb.enable_steady_tick(Duration::from_millis(200));
            pb
        });
        Drawer::new(mode, bar)
    }

    fn replace(&self, new: Option<indicatif::ProgressBar>) {
        let mut shown = self.shown();
        if let Some(old) = std::mem::replace(&mut *shown, new) {
            old.finish_and_clear();
        }
    }

    fn with_bar(&self, f: impl FnOnce(&indicatif::ProgressBar)) {
        if let Some(pb) = &*self.shown() {
            f(pb)
        }
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, Option<indicatif::ProgressBar>> {
        self.bar.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The library's steps and tasks ([`Reporter`]) drawn on stderr when it is a terminal.
/// Nothing with `-q` or `--log-format json`.
pub fn reporter(quiet: bool) -> Reporter {
    if super::show_progress(quiet) && !super::output::json() {
        Reporter::new(std::sync::Arc::new(Drawer::new(Mode::Drawn, None)))
    } else {
        Reporter::none()
    }
}

fn styled(pb: indicatif::ProgressBar, template: &str) -> indicatif::ProgressBar {
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        pb.set_style(style);
    }
    pb
}

impl Progress for Drawer {
    fn report(&self, event: Event<'_>) {
        match self.mode {
            Mode::Nothing => {}
            Mode::Lines => log(event),
            Mode::Drawn => self.draw(event),
        }
    }
}

impl Drawer {
    fn draw(&self, event: Event<'_>) {
        match event {
            Event::Step(what) => {
                let pb = indicatif::ProgressBar::new_spinner();
                pb.set_message(what.to_string());
                pb.enable_steady_tick(Duration::from_millis(120));
                self.replace(Some(pb));
            }
            Event::Task { label, total, unit } => {
                let template = match unit {
                    Unit::Bytes => {
                        format!("{label} {{bar:30}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}}")
                    }
                    Unit::Items(items) => {
                        format!("{label} {{bar:30}} {{pos}}/{{len}} {items} [{{elapsed}}] {{msg}}")
                    }
                };
                self.replace(Some(styled(indicatif::ProgressBar::new(total), &template)));
            }
            Event::Position(done) => self.with_bar(|pb| pb.set_position(done)),
            Event::Findings(n) => {
                self.with_bar(|pb| pb.set_message(format!("{n} findings so far")))
            }
            Event::Done => self.replace(None),
            Event::Images(n) => self.with_bar(|pb| pb.set_length(n as u64)),
            Event::ImageStarted(name) => {
                let b = self.bytes.load(Ordering::Relaxed);
                let rate = b as f64 / self.start.elapsed().as_secs_f64().max(0.001);
                let msg = match b {
                    0 => name.to_string(),
                    _ => format!("{} ({}/s) {name}", human(b), human(rate as u64)),
                };
                self.with_bar(|pb| pb.set_message(msg));
            }
            Event::Bytes(n) => {
                self.bytes.fetch_add(n, Ordering::Relaxed);
            }
            Event::ImageDone { .. } => self.with_bar(|pb| pb.inc(1)),
            Event::Blobs { bytes, .. } => self.with_bar(|pb| pb.set_length(bytes)),
            Event::Blob { size, .. } => self.with_bar(|pb| pb.inc(size)),
            Event::Manifest(_) => {}
            Event::Note(line) => match &*self.shown() {
                Some(pb) => pb.suspend(|| super::output::status(line)),
                None => super::output::status(line),
            },
        }
    }
}

/// The log lines of `--log-format json` (each under the target it has always had).
fn log(event: Event<'_>) {
    match event {
        Event::Blobs { count, bytes } => {
            tracing::info!(blobs = count, bytes, "copying blobs")
        }
        Event::Blob { digest, size, sent } => {
            let how = match sent {
                Sent::Skipped => "already there",
                Sent::Mounted => "mounted",
                Sent::Uploaded => "uploaded",
            };
            tracing::info!(digest, size, how, "blob")
        }
        Event::Images(images) => tracing::info!(target: "opreg::cli::mirror", images, "mirroring"),
        Event::ImageDone { name, ok } => {
            tracing::info!(target: "opreg::cli::mirror", image = name, ok, "image done")
        }
        Event::Note(line) => super::output::status(line),
        _ => {}
    }
}

/// Bytes as a person reads them: `512 B`, `1.5 KiB`, `2.0 MiB`, `1.1 GiB`.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

impl Drop for Drawer {
    fn drop(&mut self) {
        if self.clear_on_drop {
            self.replace(None);
        }
    }
}
