//! `opreg serve IMAGE --poll-interval D`: every D, ask the registry (or the OCI layout) which
//! digest the image's tag names now, from its manifest alone, and reload when it is neither
//! the digest being served nor one a reload was already asked for. The reload itself is
//! `cli::reload`'s (debounced, one build at a time, an invalid image keeps the old version).

use crate::image::ImageArgs;
use crate::server::State;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct Poll {
    pub source: PathBuf,
    pub image: ImageArgs,
    pub every: Duration,
}

/// `--poll-interval`: Go's duration syntax (`30s`, `5m`, `1h30m`, `1.5s`, `500ms`, parsed as
/// the health probe parses its flags), at least 100 ms and at most a day.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = super::health_probe::parse_duration(s)
        .map_err(|_| format!("{s:?} is not a duration like 30s, 5m or 1h30m"))?;
    if !(Duration::from_millis(100)..=Duration::from_secs(86400)).contains(&d) {
        return Err(format!("{s:?} must be between 100ms and 24h"));
    }
    Ok(d)
}

/// `--poll-interval` only makes sense for an image SOURCE (a usage error otherwise).
pub fn check_source(source: Option<&Path>) -> Result<(), String> {
    match source {
        Some(s) if !crate::image::is_local(s) => Ok(()),
        _ => Err("--poll-interval needs an image SOURCE (registry/repository:tag or oci:DIR:TAG); watch a directory or file with --watch".into()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_as_go_writes_them() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_interval("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "1", "s", "1x", "-1s", "1..2s", "50ms", "25h"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_image_sources_are_polled() {
        assert!(check_source(Some(Path::new("quay.io/x/y:latest"))).is_ok());
        assert!(check_source(Some(Path::new("./catalog"))).is_err());
        assert!(check_source(None).is_err());
    }
}
