//! A copy's progress ([`crate::image::copy::Progress`]) as a bar of the bytes done on stderr,
//! when it is a terminal and the command is not quiet; nothing otherwise.

use crate::image::copy::{Progress, Sent};

/// A bar of the bytes done, cleared when dropped; or nothing.
pub struct Bar {
    pb: Option<indicatif::ProgressBar>,
}

impl Bar {
    /// A bar labelled `verb` when `show`, else nothing.
    pub fn new(show: bool, verb: &str) -> Bar {
        let pb = show.then(|| {
            let pb = indicatif::ProgressBar::new(0);
            pb.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{verb} {{bar:30}} {{bytes}}/{{total_bytes}} [{{elapsed}}]"
                ))
                .expect("static template"),
            );
            pb
        });
        Bar { pb }
    }
}

impl Progress for Bar {
    fn start(&self, _blobs: usize, bytes: u64) {
        if let Some(pb) = &self.pb {
            pb.set_length(bytes);
        }
    }

    fn blob(&self, _digest: &str, size: u64, _sent: Sent) {
        if let Some(pb) = &self.pb {
            pb.inc(size);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(pb) = &self.pb {
            pb.finish_and_clear();
        }
    }
}
