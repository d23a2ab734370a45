//! The schema of the served version, built once per version: on the first query that version
//! gets, by one builder while concurrent queries wait for it (catalogd's singleflight). The
//! entry is keyed by the version itself, so a reload needs no invalidation: a query on the new
//! version builds the new schema, and requests still on the old one keep theirs. Holding only
//! a weak reference, the cache never keeps a replaced version (and its file) alive.

use std::sync::{Arc, Mutex, Weak};

struct Entry<K, V> {
    version: Weak<K>,
    value: V,
}

/// What was built for the latest version asked for.
pub struct VersionCache<K, V> {
    slot: Mutex<Option<Entry<K, V>>>,
    building: tokio::sync::Mutex<()>,
}

impl<K, V> Default for VersionCache<K, V> {
    fn default() -> Self {
        VersionCache {
            slot: Mutex::new(None),
            building: tokio::sync::Mutex::new(()),
        }
    }
}

impl<K: Send + Sync + 'static, V: Clone + Send + 'static> VersionCache<K, V> {
    fn cached(&self, version: &Arc<K>) -> Option<V> {
        let slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref()
            .filter(|e| std::ptr::eq(e.version.as_ptr(), Arc::as_ptr(version)))
            .map(|e| e.value.clone())
    }

    /// The value for `version`, made by `build` (on the blocking pool) if it has none yet.
    pub async fn get_or_build(
        &self,
        version: &Arc<K>,
        build: impl FnOnce(Arc<K>) -> V + Send + 'static,
    ) -> V {
        if let Some(v) = self.cached(version) {
            return v;
        }
        let _one = self.building.lock().await;
        if let Some(v) = self.cached(version) {
            return v;
        }
        let k = version.clone();
        let value = match tokio::task::spawn_blocking(move || build(k)).await {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(Entry {
            version: Arc::downgrade(version),
            value: value.clone(),
        });
        value
    }
}

#[cfg(test)]
mod tests {
    //! catalogd's graphql_service_test.go, with versions for catalogs.
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn cache_hit() {
        rt().block_on(async {
            let c: VersionCache<u8, Arc<String>> = VersionCache::default();
            let v = Arc::new(1u8);
            let a = c.get_or_build(&v, |_| Arc::new("s".into())).await;
            let b = c.get_or_build(&v, |_| Arc::new("t".into())).await;
            assert!(Arc::ptr_eq(&a, &b), "same instance from the cache");
        });
    }

    #[test]
    fn new_version_rebuilds() {
        rt().block_on(async {
            let c: VersionCache<u8, Arc<String>> = VersionCache::default();
            let v1 = Arc::new(1u8);
            let a = c.get_or_build(&v1, |_| Arc::new("a".into())).await;
            let v2 = Arc::new(2u8);
            let b = c.get_or_build(&v2, |_| Arc::new("b".into())).await;
            assert!(!Arc::ptr_eq(&a, &b));
            assert_eq!(*b, "b");
            // The cache holds no version alive.
            drop(v1);
            assert_eq!(Arc::strong_count(&v2), 1);
        });
    }

    #[test]
    fn concurrent_access_builds_once() {
        rt().block_on(async {
            let c: Arc<VersionCache<u8, Arc<usize>>> = Arc::default();
            let builds = Arc::new(AtomicUsize::new(0));
            let v = Arc::new(0u8);
            let mut tasks = Vec::new();
            for _ in 0..20 {
                let (c, v, builds) = (c.clone(), v.clone(), builds.clone());
                tasks.push(tokio::spawn(async move {
                    c.get_or_build(&v, move |_| {
                        let n = builds.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        Arc::new(n)
                    })
                    .await
                }));
            }
            let mut got = Vec::new();
            for t in tasks {
                got.push(t.await.unwrap());
            }
            assert_eq!(builds.load(Ordering::SeqCst), 1, "one build for 20 callers");
            assert!(got.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])));
        });
    }
}
