//! `opreg serve IMAGE --poll-interval D`: every D, ask the registry (or the OCI layout) which
//! digest the image's tag names now, from its manifest alone, and reload when it is neither
//! the digest being served nor one a reload was already asked for. The reload itself is
//! [`super::reload`]'s (debounced, one build at a time, an invalid image keeps the old version).
//!
//! With a signature policy, a new digest is checked before a reload is asked for: one the
//! policy refuses is not loaded (the log says why, once per digest, and a metric counts it),
//! and is checked again at the next poll, so that signing it later gets it served.

use crate::image::ImageOptions;
use crate::metrics::Metrics;
use crate::server::State;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub struct Poll {
    pub source: PathBuf,
    pub image: ImageOptions,
    pub every: Duration,
    pub metrics: Arc<Metrics>,
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
        let mut refused = None::<String>;
        tracing::info!(every_ms = self.every.as_millis() as u64, image = %self.source.display(), "polling the image tag");
        loop {
            tick.tick().await;
            let (src, args, st) = (self.source.clone(), self.image.clone(), state.clone());
            let before = asked.clone();
            let found = tokio::task::spawn_blocking(move || {
                let now = crate::image::current_digest(&src, &args)?;
                let served = served_digest(&st);
                // Only a digest that would be loaded is checked: no signature is read for
                // the one being served.
                let verdict = match &now {
                    Some(d) if served.as_ref() != Some(d) && before.as_ref() != Some(d) => {
                        crate::image::check_signature_policy(&src, &args, d).err()
                    }
                    _ => None,
                };
                Ok::<_, anyhow::Error>((now, served, verdict))
            })
            .await;
            let (now, served) = match found {
                Ok(Ok((Some(now), _, Some(why)))) => {
                    if refused.as_deref() != Some(&now) {
                        tracing::warn!(
                            digest = %now,
                            "the image tag moved to an image the signature policy refuses; still serving the current version: {}",
                            crate::text::one_line(&why)
                        );
                        self.metrics.refused_images.inc();
                        refused = Some(now);
                    }
                    continue;
                }
                Ok(Ok((Some(now), served, None))) => (now, served),
                Ok(Ok((None, _, _))) => return,
                Ok(Err(e)) => {
                    // Said once per outage, not every interval.
                    if !failing {
                        tracing::warn!(
                            "polling the image failed; still serving the current version: {}",
                            crate::text::one_line(&e)
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
            tracing::info!(
                digest = %now,
                served = %served.as_deref().unwrap_or("none"),
                "the image tag moved: reloading"
            );
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
