//! `opreg serve IMAGE --poll-interval D`: every D, ask the registry (or the OCI layout) which
//! digest the image's tag names now, from its manifest alone, and reload when it is neither
//! the digest being served nor one a reload was already asked for. The reload itself is
//! [`super::reload`]'s (debounced, one build at a time, an invalid image keeps the old version).

use crate::image::ImageOptions;
use crate::server::State;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub struct Poll {
    pub source: PathBuf,
    pub image: ImageOptions,
    pub every: Duration,
}

impl Poll {
    /// Polls until `tx` is closed, sending "poll" when the tag has moved.
    pub async fn run(
        self,
        state: Arc<State>,
        tx: tokio::sync::mpsc::UnboundedSender<&'static str>,
    ) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        let (mut asked, mut failing) = (None::<String>, false);
        tracing::info!(every_ms = self.every.as_millis() as u64, image = %self.source.display(), "polling the image tag");
        loop {
            tick.tick().await;
            let (src, args, st) = (self.source.clone(), self.image.clone(), state.clone());
            let found = tokio::task::spawn_blocking(move || {
                let now = crate::image::current_digest(&src, &args)?;
                Ok::<_, anyhow::Error>((now, served_digest(&st)))
            })
            .await;
            let (now, served) = match found {
                Ok(Ok((Some(now), served))) => (now, served),
                Ok(Ok((None, _))) => return,
                Ok(Err(e)) => {
                    // Said once per outage, not every interval.
                    if !failing {
                        tracing::warn!(
                            "polling the image failed; still serving the current version: {}",
                            crate::image::one_line(&e)
                        );
                    }
                    failing = true;
                    continue;
                }
                Err(_) => continue,
            };
            if std::mem::take(&mut failing) {
                tracing::info!("polling the image works again");
            }
            if served.as_deref() == Some(&now) || asked.as_deref() == Some(&now) {
                continue;
            }
            tracing::info!(digest = %now, served = ?served, "the image tag moved: reloading");
            asked = Some(now);
            if tx.send("poll").is_err() {
                return;
            }
        }
    }
}

/// The digest of the image the served version was built from (its `images` catalog info).
fn served_digest(state: &State) -> Option<String> {
    let images = state.store().ok()?.info("images").ok()??;
    let v: serde_json::Value = serde_json::from_str(&images).ok()?;
    v.get(0)?.get("digest")?.as_str().map(str::to_string)
}
