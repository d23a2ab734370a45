//! The lookups: each distinct reference once, on `--parallel` threads, at most
//! [`super::PER_REGISTRY`] at a time to any one registry; each reference at the locations a
//! cluster would pull it from ([`super::mirrors`]), in order, until one has it; a reference by
//! digest answered from the cache when a location's answer is kept there. A reference by tag
//! that the cache has a recent reading of is confirmed by its repository's tag list when two or
//! more such tags share the repository (one request then answers them all).

use super::cache::{repo_tag, Cache};
use super::refs::Wanted;
use super::remote::{Client, Reply, Served};
use super::Options;
use crate::progress::{Reporter, Unit};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

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

/// A tag list per repository worth listing, read once per run.
type List = Arc<OnceLock<Option<HashSet<String>>>>;

/// The repositories where two or more references by tag have a reading in the cache, and
/// their tag lists once read.
struct Listings {
    worth: HashSet<String>,
    lists: Mutex<HashMap<String, List>>,
}

impl Listings {
    fn new(wanted: &[Wanted], opts: &Options, cache: &Cache) -> Listings {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for w in wanted {
            for l in opts.mirrors.locations(&w.reference) {
                if cache.tagged(&l.reference).is_some() {
                    if let Some((repo, _)) = repo_tag(&l.reference) {
                        *counts.entry(repo).or_default() += 1;
                    }
                }
            }
        }
        Listings {
            worth: counts
                .into_iter()
                .filter(|(_, n)| *n >= 2)
                .map(|(r, _)| r)
                .collect(),
            lists: Mutex::default(),
        }
    }

    /// Whether `location`'s repository lists its tag (false when it is not worth listing, or
    /// the list cannot be read).
    fn lists(&self, location: &str, client: &Client, limiter: &Limiter) -> bool {
        let Some((repo, tag)) = repo_tag(location) else {
            return false;
        };
        if !self.worth.contains(&repo) {
            return false;
        }
        let list = self
            .lists
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(repo)
            .or_default()
            .clone();
        let tags = list.get_or_init(|| {
            let _held = limiter.acquire(&Client::host(location));
            client.tags(location)
        });
        tags.as_ref().is_some_and(|t| t.contains(&tag))
    }
}

/// Looks up every reference of `wanted`.
pub fn run(wanted: &[Wanted], opts: &Options, progress: &Reporter) -> Looked {
    let cache = Cache::open(opts.cache_dir.as_deref(), opts.no_cache);
    let client = Client::new(&opts.image);
    let limiter = Limiter {
        per: opts.per_registry.max(1),
        held: Mutex::default(),
        freed: Condvar::new(),
    };
    let listings = Listings::new(wanted, opts, &cache);
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
                let (answer, from_cache) = one(w, opts, &cache, &client, &limiter, &listings);
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
    listings: &Listings,
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
    let mut failures = Vec::new();
    for l in &locations {
        let known = cache.tagged(&l.reference).filter(|(_, s)| usable(s));
        if let Some((_, served)) = known {
            if listings.lists(&l.reference, client, limiter) {
                let found = Answer::Found {
                    served,
                    location: l.reference.clone(),
                    mirror: l.mirror,
                };
                return (found, true);
            }
        }
        let reply = {
            let _held = limiter.acquire(&Client::host(&l.reference));
            client.look(&l.reference, platforms, cache)
        };
        match reply {
            Reply::Found(served, digest) => {
                cache.put(&l.reference, &served);
                cache.put_tag(&l.reference, &digest, &served);
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
                Reply::Found(..) => String::new(),
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
