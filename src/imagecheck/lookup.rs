//! The lookups: each distinct reference once, on `--parallel` threads, at most
//! [`super::PER_REGISTRY`] at a time to any one registry; each reference at the locations a
//! cluster would pull it from ([`super::mirrors`]), in order, until one has it; a reference by
//! digest answered from the cache when a location's answer is kept there.

use super::cache::Cache;
use super::refs::Wanted;
use super::remote::{Client, Reply, Served};
use super::Options;
use crate::progress::{Reporter, Unit};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// What the lookups found for one reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not looked up (not a reference the registry client reads).
    Skipped,
    Found {
        served: Served,
        /// The location that answered.
        location: String,
        /// That location is a mirror.
        mirror: bool,
    },
    /// Every location said it does not exist.
    Missing { detail: String },
    /// Some location could not be asked, or denied access.
    Unreachable { detail: String, denied: bool },
}

/// The answers, in the order of the references, and how many the cache gave.
pub struct Looked {
    pub answers: Vec<Answer>,
    pub from_cache: usize,
}

/// At most `per` holders of any one key at a time.
struct Limiter {
    per: usize,
    held: Mutex<HashMap<String, usize>>,
    freed: Condvar,
}

impl Limiter {
    fn acquire(&self, key: &str) -> Held<'_> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while held.get(key).copied().unwrap_or(0) >= self.per {
            held = self.freed.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        *held.entry(key.to_string()).or_default() += 1;
        Held {
            limiter: self,
            key: key.to_string(),
        }
    }
}

struct Held<'a> {
    limiter: &'a Limiter,
    key: String,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut held = self.limiter.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
        self.limiter.freed.notify_all();
    }
}

/// Looks up every reference of `wanted`.
pub fn run(wanted: &[Wanted], opts: &Options, progress: &Reporter) -> Looked {
    let cache = Cache::open(opts.cache_dir.as_deref());
    let client = Client::new(&opts.image);
    let limiter = Limiter {
        per: opts.per_registry.max(1),
        held: Mutex::default(),
        freed: Condvar::new(),
    };
    let (next, done, cached, problems) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let answers: Mutex<Vec<Answer>> = Mutex::new(vec![Answer::Skipped; wanted.len()]);
    progress.task(
        "checking images",
        wanted.len() as u64,
        Unit::Items("images"),
    );
    let workers = opts.parallel.max(1).min(wanted.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(w) = wanted.get(i) else { break };
                let (answer, from_cache) = one(w, opts, &cache, &client, &limiter);
                if from_cache {
                    cached.fetch_add(1, Ordering::Relaxed);
                }
                if matches!(answer, Answer::Missing { .. } | Answer::Unreachable { .. }) {
                    progress.findings(problems.fetch_add(1, Ordering::Relaxed) as u64 + 1);
                }
                answers.lock().unwrap_or_else(|p| p.into_inner())[i] = answer;
                progress.position(done.fetch_add(1, Ordering::Relaxed) as u64 + 1);
            });
        }
    });
    progress.done();
    if let Err(e) = cache.save() {
        tracing::warn!(error = %e, "the image check cache was not written");
    }
    Looked {
        answers: answers.into_inner().unwrap_or_else(|p| p.into_inner()),
        from_cache: cached.into_inner(),
    }
}

/// One reference: from the cache, else from each location in turn. True when the cache
/// answered.
fn one(
    w: &Wanted,
    opts: &Options,
    cache: &Cache,
    client: &Client,
    limiter: &Limiter,
) -> (Answer, bool) {
    let Ok(parsed) = crate::imageref::parse(&w.reference) else {
        return (Answer::Skipped, false);
    };
    let locations = opts.mirrors.locations(&w.reference);
    if locations.is_empty() {
        let by = if parsed.digest.is_some() {
            "digest"
        } else {
            "tag"
        };
        return (
            Answer::Unreachable {
                detail: format!(
                    "nowhere to pull it from: its mirror source is NeverContactSource and no mirror serves references by {by}"
                ),
                denied: false,
            },
            false,
        );
    }
    let platforms = w.needs_platforms();
    let usable = |s: &Served| !(platforms && *s == Served::Image(None));
    if !opts.no_cache {
        for l in &locations {
            if let Some(served) = cache.get(&l.reference).filter(usable) {
                let found = Answer::Found {
                    served,
                    location: l.reference.clone(),
                    mirror: l.mirror,
                };
                return (found, true);
            }
        }
    }
    let mut failures = Vec::new();
    for l in &locations {
        let reply = {
            let _held = limiter.acquire(&Client::host(&l.reference));
            client.look(&l.reference, platforms)
        };
        match reply {
            Reply::Found(served) => {
                cache.put(&l.reference, &served);
                let found = Answer::Found {
                    served,
                    location: l.reference.clone(),
                    mirror: l.mirror,
                };
                return (found, false);
            }
            other => failures.push((l, other)),
        }
    }
    let alone = failures.len() == 1 && !failures[0].0.mirror;
    let detail = failures
        .iter()
        .map(|(l, r)| {
            let text = match r {
                Reply::Missing(t) => t.clone(),
                Reply::Denied(t) => format!("access denied: {t}"),
                Reply::Failed(t) => t.clone(),
                Reply::Found(_) => String::new(),
            };
            if alone {
                text
            } else {
                format!("at {}: {text}", l.reference)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let answer = if failures.iter().all(|(_, r)| matches!(r, Reply::Missing(_))) {
        Answer::Missing { detail }
    } else {
        let denied = failures.iter().any(|(_, r)| matches!(r, Reply::Denied(_)));
        Answer::Unreachable { detail, denied }
    };
    (answer, false)
}
