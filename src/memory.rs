//! The process's memory policy, in one place: the allocator settings each command runs with,
//! and, for the server, giving memory back to the OS once it has gone idle.
//!
//! Two allocators hold the heap: mimalloc for everything Rust allocates (the global
//! allocator), and the C library's malloc for SQLite (the bundled SQLite allocates with
//! `malloc`, unless [`sqlite_allocates_from_mimalloc`] has run, as it has in a server). A
//! server purges freed pages after a short delay, so that pages freed by one call are reused
//! by the next instead of being returned to the OS and faulted in again (with no delay that
//! churn cost about a third of a bundle RPC's CPU). Memory is then given back when the server
//! is idle ([`Trimmer`]): idle pooled SQLite connections (and their page caches) are closed,
//! the pool of answer buffers ([`answer_buffers`]) is emptied, mimalloc purges every freed page
//! at once, and the resident pages of code are let go of.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `mi_option_purge_delay` in mimalloc's option enum (v2 and v3 alike).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Every command's settings, made first thing in `main`, before anything is allocated: those
/// of [`for_ingest`] (a server adds its own, [`for_serving`]). Made later, after the main
/// thread had allocated, the purge delay did not hold for that thread, which reads and
/// validates the catalog: an ingest of the community catalog peaked at 68-72 MB against
/// 58-61 MB made first (measured by hand on 2026-11-27, release binary, 4 runs each,
/// alternately; mimalloc's statistics showed 150-195 MiB purged against 400-440).
pub fn at_start() {
    for_ingest();
}

/// For a one-shot command whose peak matters (ingest): purge freed memory 10 ms after it is
/// freed. mimalloc's default (one second, and only when the freeing thread allocates again)
/// let the peak grow well past what is live. A delay of zero kept the peak nearest to it, but
/// every large free then returned its pages at once (a TLB shootdown on the other core, a
/// page fault when the memory is used again): measured by hand on 2026-11-23 (release binary,
/// 3-4 runs each, alternately), the community catalog's ingest took 1.12-1.16 s with no delay
/// against 1.03-1.05 s with 10 ms, peak 49.1-50.1 MiB against 54.4-55.3 MiB (input 81.2 MiB);
/// the certified catalog's 0.89-0.93 s against 0.82 s, peak 52.4-56.2 MiB against
/// 57.7-58.1 MiB (input 59.2 MiB). An ingest from an image, whose unpacking frees more, peaked
/// at 71-75 MB against 50-51 MB in the benchmark's runs (BENCHMARKS.md, "Ingest from a
/// registry").
///
/// The C library's malloc (SQLite's, here) keeps one arena: by default the writer thread
/// gets an arena of its own besides the main thread's, and the two held about 4 MB more at
/// the peak of the community catalog's ingest. Only SQLite's writer thread allocates from it,
/// so there is no contention to avoid.
pub fn for_ingest() {
    // SAFETY: sets process-wide allocator options; no memory is touched.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// A server's settings.
///
/// Freed pages are purged 10 ms after they are freed: long enough that a loaded server reuses
/// them (a purged page is faulted in again by the next large answer; at a delay of zero, page
/// faults and TLB shootdowns were a third of GetBundle's CPU), short enough that a burst's
/// memory does not linger (mimalloc's default of one second held 60 MB under the stress load
/// against 45 MB).
///
/// The allocator asks for transparent huge pages for its arenas (madvise), so every touched
/// 2 MB region counts as resident: a serving process held about 10 MB more at idle and several
/// times its working set after a burst. The server's working set is small; opt this process
/// out (Linux only; a no-op elsewhere or when refused).
///
/// SQLite allocates from mimalloc ([`sqlite_allocates_from_mimalloc`]). Not in ingest, whose
/// peak was higher with it (64 MB against 57 MB on the certified catalog, above the input's
/// 62 MB): SQLite's page-sized allocations fit the C library's malloc more tightly.
pub fn for_serving() {
    sqlite_allocates_from_mimalloc();
    // SAFETY: sets a process-wide allocator option; no memory is touched.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag on this process; no memory is passed.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Makes SQLite allocate from mimalloc, like the rest of the process, instead of the C
/// library's malloc: one allocator then holds the whole heap, and [`give_back`] and the purge
/// settings cover SQLite's page caches too. The C library's malloc kept a 2 MB arena per thread
/// that had run a query, most of it free. Must run before SQLite is first used; later, SQLite
/// refuses it and keeps its default.
fn sqlite_allocates_from_mimalloc() {
    use rusqlite::ffi;
    use std::ffi::{c_int, c_void};
    unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
        // SAFETY: any size; mimalloc returns null when it cannot allocate, as SQLite expects.
        unsafe { libmimalloc_sys::mi_malloc(n.max(0) as usize) }
    }
    unsafe extern "C" fn free(p: *mut c_void) {
        // SAFETY: SQLite frees only what `malloc`/`realloc` above returned (or null).
        unsafe { libmimalloc_sys::mi_free(p) }
    }
    unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        // SAFETY: as `free`; SQLite never reallocates to a size of 0.
        unsafe { libmimalloc_sys::mi_realloc(p, n.max(0) as usize) }
    }
    unsafe extern "C" fn size(p: *mut c_void) -> c_int {
        // SAFETY: as `free`.
        unsafe { libmimalloc_sys::mi_usable_size(p) as c_int }
    }
    unsafe extern "C" fn roundup(n: c_int) -> c_int {
        // SAFETY: a pure size computation.
        unsafe { libmimalloc_sys::mi_good_size(n.max(0) as usize) as c_int }
    }
    unsafe extern "C" fn init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }
    unsafe extern "C" fn shutdown(_: *mut c_void) {}
    let methods = ffi::sqlite3_mem_methods {
        xMalloc: Some(malloc),
        xFree: Some(free),
        xRealloc: Some(realloc),
        xSize: Some(size),
        xRoundup: Some(roundup),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: SQLite copies the methods; they are plain functions over mimalloc's C API.
    unsafe {
        ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const _);
    }
}

/// Gives freed memory back to the OS now: mimalloc purges every page freed by any thread
/// (a forced collect also collects the calling thread's own pages), and the C library's
/// malloc returns the free pages of all its arenas (what little still comes from it), and
/// the resident pages of code go ([`unmap_idle_code`]). Called by the idle trimmer, and by
/// the HTTP port's file writing between its phases (`serve`'s `with_content`,
/// `http::content`), so that each phase's peak does not carry what the ones before touched.
pub fn give_back() {
    // SAFETY: both calls only release memory the allocators hold as free.
    unsafe {
        libmimalloc_sys::mi_collect(true);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::malloc_trim(0);
    }
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    unmap_idle_code();
}

/// Lets go of the resident pages of code and read-only data mapped from the binary and its
/// libraries. What start-up, the integrity check and a load ran stays resident otherwise
/// (about 10 MB of the server's RSS, measured: 7.7 MB of the binary's text and 1.9 MB of its
/// read-only data at the peak of the stress load), though a serving process runs a fraction
/// of it. The pages stay in the page cache; what runs next faults back in from there.
///
/// Only segments loaded without write permission are touched, so no page holds anything but
/// the file's contents: for a private file mapping, `MADV_DONTNEED` means the next access
/// reads the file again. (64-bit Linux: the program headers are read as `Elf64_Phdr`.)
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn unmap_idle_code() {
    use std::ffi::{c_int, c_void, CStr};
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        _data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid entry for the duration of the callback.
        let info = unsafe { &*info };
        // The kernel's vDSO (`linux-vdso.so.1`) is no file's mapping.
        // SAFETY: a non-null dlpi_name is a NUL-terminated string owned by the loader.
        let vdso = !info.dlpi_name.is_null()
            && unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_bytes()
                .starts_with(b"linux-vdso");
        if info.dlpi_phdr.is_null() || vdso {
            return 0;
        }
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let range = |h: &libc::Elf64_Phdr| {
            let start = info.dlpi_addr as usize + h.p_vaddr as usize;
            (start, start + h.p_memsz as usize)
        };
        let relro: Vec<(usize, usize)> = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_GNU_RELRO)
            .map(range)
            .collect();
        for h in headers {
            if h.p_type != libc::PT_LOAD || h.p_flags & libc::PF_W != 0 {
                continue;
            }
            let (start, end) = range(h);
            // Relocated data made read-only holds written pages: never touch it.
            if relro.iter().any(|&(s, e)| s < end && start < e) {
                continue;
            }
            let (from, to) = (start.div_ceil(page) * page, end / page * page);
            if from < to {
                // SAFETY: the range lies in a read-only segment of a loaded object; its pages
                // hold the file's bytes, which the next access maps again.
                unsafe { libc::madvise(from as *mut c_void, to - from, libc::MADV_DONTNEED) };
            }
        }
        0
    }
    // SAFETY: the callback only reads the entries it is given.
    unsafe { libc::dl_iterate_phdr(Some(each), std::ptr::null_mut()) };
}

/// Gives back now the freed memory the calling thread's allocator heap holds, which only that
/// thread can collect. For a blocking-pool thread at the end of a one-off job (the server's
/// integrity check): it may live on idle for [`Trimmer::BLOCKING_KEEP_ALIVE`] before its heap
/// goes back with it.
pub fn collect_this_thread() {
    // SAFETY: releases memory this thread's heap holds as free.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Bumped by every trim; each runtime worker thread collects its own allocator pages once
/// per bump ([`on_worker_park`]), since a thread can only collect its own.
static TRIM_EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static SEEN_EPOCH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// For the runtime's `on_thread_park` hook: after a trim, a worker that goes idle collects the
/// pages its own allocator heap still holds. Otherwise one atomic load.
pub fn on_worker_park() {
    let epoch = TRIM_EPOCH.load(Ordering::Relaxed);
    if SEEN_EPOCH.get() != epoch {
        SEEN_EPOCH.set(epoch);
        // SAFETY: releases memory this thread's heap holds as free.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}

/// Calls started and calls in flight, as the server's call layer sees them.
#[derive(Default)]
pub struct Activity {
    started: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn begin(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }
    fn end(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
    /// Work in flight until the guard is dropped (a call, or the server's integrity check).
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.begin();
        Busy(self.clone())
    }
    fn snapshot(&self) -> (u64, usize) {
        (
            self.started.load(Ordering::Relaxed),
            self.in_flight.load(Ordering::Relaxed),
        )
    }
}

/// See [`Activity::busy`].
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Watches [`Activity`] from a thread of its own. Once no call has started or been in flight
/// for each of [`Trimmer::ROUNDS`], it trims: asks every worker to collect its heap when it
/// next parks, frees the pooled answer buffers, runs `release` (the server closes its idle
/// store connections and wakes its workers), and then [`give_back`]. The later round catches
/// the heaps of blocking threads that have exited in between (see
/// [`Trimmer::BLOCKING_KEEP_ALIVE`]). A server that stays idle is not woken again.
pub struct Trimmer;

impl Trimmer {
    /// Idle times at which the server trims.
    /// A trim costs about a millisecond and the next call reopens a store connection (a few
    /// hundred microseconds), so even a server called a few times a second can afford one
    /// after every quiet quarter second.
    pub const ROUNDS: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(3)];
    /// How long an idle blocking thread lives: it gives its heap back when it exits.
    pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(2);
    const TICK: Duration = Duration::from_millis(100);

    /// Starts the watcher; it lives as long as the process.
    pub fn spawn(activity: Arc<Activity>, release: impl Fn() + Send + 'static) {
        let spawned = std::thread::Builder::new()
            .name("opreg-trim".into())
            .spawn(move || {
                let mut seen = activity.snapshot().0;
                let mut quiet = Duration::ZERO;
                // Rounds done in this idle period. Loading and the integrity check are work
                // too: the server trims after them as well.
                let mut done = 0;
                loop {
                    std::thread::sleep(Self::TICK);
                    let (started, in_flight) = activity.snapshot();
                    if started != seen || in_flight > 0 {
                        seen = started;
                        quiet = Duration::ZERO;
                        done = 0;
                        continue;
                    }
                    quiet += Self::TICK;
                    if done < Self::ROUNDS.len() && quiet >= Self::ROUNDS[done] {
                        TRIM_EPOCH.fetch_add(1, Ordering::Relaxed);
                        // Before the workers are woken: a pooled buffer freed here goes back
                        // to the heap of the worker that allocated it, which collects it
                        // when it next parks.
                        answer_buffers::clear();
                        release();
                        // Let the woken workers park (and collect) first.
                        std::thread::sleep(Duration::from_millis(50));
                        give_back();
                        done += 1;
                        tracing::debug!(round = done, "idle: memory given back");
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("memory is not given back when idle: cannot start a thread: {e}");
        }
    }
}

/// Buffers that answers are read into, reused from one call to the next.
///
/// A bundle RPC's answer (tens of kilobytes) is sent after the call has returned, and its
/// buffer freed when the connection has written it. Freed to the allocator, such a buffer's
/// pages are purged shortly after ([`for_serving`]) and the next answer faults fresh pages in
/// (about two page faults per GetBundleForChannel on the community catalog). Here a freed
/// buffer goes back to a small pool instead, up to [`answer_buffers::KEEP`] bytes in all;
/// the [`Trimmer`] empties it.
pub mod answer_buffers {
    use std::sync::Mutex;

    /// At most this many bytes of buffers wait in the pool.
    pub const KEEP: usize = 1 << 20;
    /// Buffers are at least this large, and a power of two, so that most fit most answers.
    const MIN: usize = 16 << 10;

    static POOL: Mutex<(Vec<Vec<u8>>, usize)> = Mutex::new((Vec::new(), 0));

    /// An empty buffer with room for at least `len` bytes.
    pub fn take(len: usize) -> Vec<u8> {
        if let Ok(mut p) = POOL.lock() {
            let (bufs, held) = &mut *p;
            if let Some(i) = bufs.iter().rposition(|b| b.capacity() >= len) {
                let b = bufs.swap_remove(i);
                *held -= b.capacity();
                return b;
            }
        }
        Vec::with_capacity(len.max(MIN).next_power_of_two())
    }

    /// Owns a buffer taken from the pool (for `Bytes::from_owner`) and returns it on drop.
    pub struct Reused(pub Vec<u8>);

    impl AsRef<[u8]> for Reused {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }

    impl Drop for Reused {
        fn drop(&mut self) {
            let mut b = std::mem::take(&mut self.0);
            if let Ok(mut p) = POOL.lock() {
                let (bufs, held) = &mut *p;
                if *held + b.capacity() <= KEEP {
                    b.clear();
                    *held += b.capacity();
                    bufs.push(b);
                }
            }
        }
    }

    /// Bytes of buffers waiting in the pool.
    pub fn held() -> usize {
        POOL.lock().map(|p| p.1).unwrap_or(0)
    }

    /// Frees every pooled buffer.
    pub fn clear() {
        // Taken out under the lock, freed after it.
        let bufs = POOL.lock().map(|mut p| {
            p.1 = 0;
            std::mem::take(&mut p.0)
        });
        drop(bufs);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A buffer comes back to the pool when its owner is dropped, and the pool never
        /// holds more than KEEP bytes, however many buffers are returned at once. (Other
        /// tests of this binary may use the pool at the same time; neither check depends on
        /// them.)
        #[test]
        fn returned_buffers_are_kept_up_to_the_bound() {
            let big: Vec<Reused> = (0..3 * KEEP / MIN).map(|_| Reused(take(MIN))).collect();
            drop(big);
            assert!(held() <= KEEP, "{} bytes held", held());
            assert!(held() > 0, "returned buffers are kept");
            let b = take(10);
            assert!(b.is_empty() && b.capacity() >= 10);
        }
    }
}
