//! Putting a file or a tree in place whole, the one way opreg does it: the content goes to a
//! temporary file (or directory) beside the target, on the same file system, is synced, and is
//! then renamed over the target, whose directory is synced in turn. A reader sees the old
//! file or the new one, never half of one; a crash leaves at most a stray temporary file.
//!
//! The caller chooses the mode ([`Mode`]), whether to sync (a cache that is rebuilt when
//! lost may skip it), and whether an existing target may be replaced. [`File::path`] is a
//! real path, so SQLite can write a database there before it is put in place.
//!
//! Exempt, and not done here: files written inside a private temporary directory that is
//! itself put in place whole ([`Dir`]), and append-only records.
//!
//! Every temporary file and directory not yet put in place is known ([`remove_unfinished`]):
//! a process ended at once by an interrupt removes them first, so that nothing half-written
//! is left behind even then.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The permissions a file or directory put in place gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Readable by its owner only (0600 for a file, 0700 for a directory).
    Private,
    /// Created with these bits less the umask, like any new file (0666 → 0644 under 022).
    Create(u32),
    /// Exactly these bits, whatever the umask.
    Exact(u32),
}

/// How to put a file in place.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    pub mode: Mode,
    /// Sync the file before it is renamed and its directory after (default true).
    pub sync: bool,
    /// Replace an existing target (default true); false refuses with `AlreadyExists`.
    pub replace: bool,
    /// Where the temporary file is made, on the target's file system (default: beside it).
    pub temp_dir: Option<&'a Path>,
    /// The temporary file's name starts and ends so (for finding strays).
    pub prefix: &'a str,
    pub suffix: &'a str,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            mode: Mode::Private,
            sync: true,
            replace: true,
            temp_dir: None,
            prefix: ".tmp",
            suffix: "",
        }
    }
}

impl<'a> Options<'a> {
    /// Synced, replacing, with `mode`.
    pub fn mode(mode: Mode) -> Options<'a> {
        Options {
            mode,
            ..Options::default()
        }
    }
    pub fn sync(self, sync: bool) -> Self {
        Options { sync, ..self }
    }
    pub fn replace(self, replace: bool) -> Self {
        Options { replace, ..self }
    }
    pub fn temp_dir(self, dir: &'a Path) -> Self {
        Options {
            temp_dir: Some(dir),
            ..self
        }
    }
    pub fn named(self, prefix: &'a str, suffix: &'a str) -> Self {
        Options {
            prefix,
            suffix,
            ..self
        }
    }
}

/// The directory `path` is in (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Syncs directory `dir`, so that a rename into it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn builder<'b>(opts: &Options<'b>) -> tempfile::Builder<'b, 'b> {
    use std::os::unix::fs::PermissionsExt;
    let mut b = tempfile::Builder::new();
    b.prefix(opts.prefix).suffix(opts.suffix);
    if let Mode::Create(m) = opts.mode {
        b.permissions(std::fs::Permissions::from_mode(m));
    }
    b
}

/// The temporary files and directories of this process not yet put in place or removed.
static UNFINISHED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Called before each temporary file or directory is made ([`before_unfinished`]).
static BEFORE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Has `f` called before each temporary file or directory is made (the first call only
/// counts): for whoever must be ready to remove them ([`crate::interrupt`]).
pub fn before_unfinished(f: fn()) {
    let _ = BEFORE.set(f);
}

fn announce() {
    if let Some(f) = BEFORE.get() {
        f();
    }
}

fn unfinished() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    UNFINISHED.lock().unwrap_or_else(|p| p.into_inner())
}

/// A temporary path in [`UNFINISHED`] while this lives.
#[derive(Debug)]
struct Tracked(PathBuf);

impl Tracked {
    fn new(p: &Path) -> Tracked {
        unfinished().push(p.to_path_buf());
        Tracked(p.to_path_buf())
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        unfinished().retain(|p| p != &self.0);
    }
}

/// Removes every temporary file and directory still being written: for a process about to
/// end at once (an interrupt), which runs no destructors.
pub fn remove_unfinished() {
    for p in unfinished().drain(..) {
        if std::fs::remove_file(&p).is_err() {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// A file being written, put in place at [`File::commit`]; dropped uncommitted, it is removed.
#[derive(Debug)]
pub struct File {
    tmp: tempfile::NamedTempFile,
    _tracked: Tracked,
    target: PathBuf,
    mode: Mode,
    sync: bool,
    replace: bool,
}

impl File {
    /// A temporary file for `target` (see [`Options`]).
    pub fn create(target: &Path, opts: &Options<'_>) -> io::Result<File> {
        use std::os::unix::fs::PermissionsExt;
        let dir = opts.temp_dir.unwrap_or_else(|| parent(target));
        announce();
        let tmp = builder(opts).tempfile_in(dir).map_err(unnamed)?;
        if let Mode::Exact(m) = opts.mode {
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(m))?;
        }
        Ok(File {
            _tracked: Tracked::new(tmp.path()),
            tmp,
            target: target.to_path_buf(),
            mode: opts.mode,
            sync: opts.sync,
            replace: opts.replace,
        })
    }

    /// Where the content is written until it is committed.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Where it goes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    pub fn file(&self) -> &std::fs::File {
        self.tmp.as_file()
    }

    pub fn file_mut(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// Syncs the file, renames it over the target (or, when not replacing, refuses an
    /// existing one) and syncs the directory.
    pub fn commit(self) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        if let Mode::Exact(m) = self.mode {
            // Again: a caller may have changed it through `file()`.
            let now = self.tmp.as_file().metadata()?.permissions().mode() & 0o7777;
            if now != m {
                self.tmp
                    .as_file()
                    .set_permissions(std::fs::Permissions::from_mode(m))?;
            }
        }
        if self.sync {
            self.tmp.as_file().sync_all()?;
        }
        let placed = if self.replace {
            self.tmp.persist(&self.target)
        } else {
            self.tmp.persist_noclobber(&self.target)
        };
        placed.map_err(|e| e.error)?;
        if self.sync {
            sync_dir(parent(&self.target))?;
        }
        Ok(())
    }
}

// Through the file itself: tempfile's own writer adds the temporary name to every error, and
// the caller names the target, the file the user knows.
impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.as_file_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.as_file_mut().flush()
    }
}

/// An error of tempfile's, which names the temporary file (`.tmpXXXXXX`), as its kind alone:
/// the caller names the target.
fn unnamed(e: io::Error) -> io::Error {
    match e.get_ref() {
        Some(_) => io::Error::from(e.kind()),
        None => e,
    }
}

/// Writes `bytes` to `target` whole or not at all.
pub fn write(target: &Path, bytes: &[u8], opts: &Options<'_>) -> io::Result<()> {
    let mut f = File::create(target, opts)?;
    f.write_all(bytes)?;
    f.commit()
}

/// [`write`], creating the target's directory first.
pub fn write_creating_dir(target: &Path, bytes: &[u8], opts: &Options<'_>) -> io::Result<()> {
    std::fs::create_dir_all(parent(target))?;
    write(target, bytes, opts)
}

/// A private temporary directory: a tree is written into it, then it is put in place whole
/// ([`Dir::commit`]). Dropped uncommitted, it is removed with what it holds.
#[derive(Debug)]
pub struct Dir {
    dir: tempfile::TempDir,
    _tracked: Tracked,
}

impl Dir {
    /// A temporary directory in `parent_dir` (the target's directory, or another on its file
    /// system), named `PREFIX…`.
    pub fn create_in(parent_dir: &Path, prefix: &str) -> io::Result<Dir> {
        announce();
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(parent_dir)
            .map_err(unnamed)?;
        Ok(Dir {
            _tracked: Tracked::new(dir.path()),
            dir,
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Puts the tree at `target`, with mode bits `mode` when given (a temporary directory is
    /// private, 0700, until then),
    /// syncing the target's directory (best effort) when `sync`. An existing non-empty `target` is not
    /// replaced: the error is returned with the directory, for the caller to try again or
    /// drop.
    pub fn commit(
        self,
        target: &Path,
        mode: Option<u32>,
        sync: bool,
    ) -> Result<(), (Dir, io::Error)> {
        use std::os::unix::fs::PermissionsExt;
        if let Some(m) = mode {
            if let Err(e) =
                std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(m))
            {
                return Err((self, e));
            }
        }
        if let Err(e) = std::fs::rename(self.path(), target) {
            return Err((self, e));
        }
        // Renamed: nothing is left for the temporary directory to remove.
        let _ = self.dir.keep();
        if sync {
            // Best effort: the tree is in place and whole; a failed directory sync only
            // risks losing the rename in a crash, which leaves the old state, never half.
            let _ = sync_dir(parent(target));
        }
        Ok(())
    }
}

/// Moves `from` to `to` on one file system (rename(2)): a file or tree already whole put in
/// place, or one moved inside a private directory, or out of the way before it is removed.
/// Syncs `to`'s directory when `sync`.
pub fn move_path(from: &Path, to: &Path, sync: bool) -> io::Result<()> {
    std::fs::rename(from, to)?;
    if sync {
        sync_dir(parent(to))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn errors_do_not_name_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("missing-dir").join("key");
        let opts = Options::default().named(".opreg-key-", "");
        let e = write(&target, b"x", &opts).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!e.to_string().contains(".opreg-key-"), "{e}");
        let e = Dir::create_in(&dir.path().join("missing-dir"), ".tmp-").unwrap_err();
        assert!(!e.to_string().contains(".tmp-"), "{e}");
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_file_is_whole_or_absent() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out");
        let mut f = File::create(&target, &Options::default()).unwrap();
        f.write_all(b"half").unwrap();
        assert!(!target.exists(), "nothing at the target before commit");
        drop(f);
        assert!(names(d.path()).is_empty(), "a dropped file leaves nothing");

        std::fs::write(&target, b"old").unwrap();
        let mut f = File::create(&target, &Options::default()).unwrap();
        f.write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(names(d.path()), ["out"]);
    }

    #[test]
    fn the_caller_chooses_the_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("private");
        write(&p, b"k", &Options::default()).unwrap();
        assert_eq!(mode_of(&p), 0o600);
        let p = d.path().join("exact");
        write(&p, b"k", &Options::mode(Mode::Exact(0o640))).unwrap();
        assert_eq!(mode_of(&p), 0o640);
        // Exact even when the file was loosened on the way.
        let mut f = File::create(&p, &Options::mode(Mode::Exact(0o600))).unwrap();
        f.file()
            .set_permissions(std::fs::Permissions::from_mode(0o666))
            .unwrap();
        f.write_all(b"x").unwrap();
        f.commit().unwrap();
        assert_eq!(mode_of(&p), 0o600);
        let p = d.path().join("create");
        write(&p, b"k", &Options::mode(Mode::Create(0o644))).unwrap();
        assert_eq!(mode_of(&p) & !0o644, 0, "at most 0644 less the umask");
    }

    #[test]
    fn not_replacing_refuses_an_existing_target() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("key");
        std::fs::write(&p, b"mine").unwrap();
        let e = write(&p, b"theirs", &Options::default().replace(false)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"mine");
        assert_eq!(names(d.path()), ["key"], "no temporary file left");
    }

    #[test]
    fn temp_files_are_named_and_placed_as_asked() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("tmp")).unwrap();
        let tmp_dir = d.path().join("tmp");
        let target = d.path().join("blob");
        let f = File::create(
            &target,
            &Options::default()
                .temp_dir(&tmp_dir)
                .named(".opreg-x-", ".part"),
        )
        .unwrap();
        let name = f.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(".opreg-x-") && name.ends_with(".part"),
            "{name}"
        );
        assert_eq!(f.path().parent(), Some(tmp_dir.as_path()));
        f.commit().unwrap();
        assert!(target.is_file());
        assert!(names(&tmp_dir).is_empty());
        // A missing directory is an error, not a panic; write_creating_dir makes it.
        let deep = d.path().join("a/b/c");
        assert!(write(&deep, b"x", &Options::default()).is_err());
        write_creating_dir(&deep, b"x", &Options::default()).unwrap();
        assert_eq!(std::fs::read(&deep).unwrap(), b"x");
    }

    #[test]
    fn a_tree_is_put_in_place_whole() {
        let d = tempfile::tempdir().unwrap();
        let t = Dir::create_in(d.path(), ".tree-").unwrap();
        std::fs::write(t.path().join("a"), b"1").unwrap();
        let target = d.path().join("out");
        t.commit(&target, Some(0o755), true).unwrap();
        assert_eq!(std::fs::read(target.join("a")).unwrap(), b"1");
        assert_eq!(mode_of(&target), 0o755);
        assert_eq!(names(d.path()), ["out"]);

        // A non-empty target is not replaced; the tree comes back to the caller.
        let t = Dir::create_in(d.path(), ".tree-").unwrap();
        std::fs::write(t.path().join("b"), b"2").unwrap();
        let (back, _) = t.commit(&target, None, false).unwrap_err();
        assert!(back.path().join("b").is_file());
        assert!(!target.join("b").exists());
        drop(back);
        assert_eq!(names(d.path()), ["out"], "dropped, the tree is removed");

        let moved = d.path().join("moved");
        move_path(&target, &moved, true).unwrap();
        assert!(moved.join("a").is_file() && !target.exists());
    }
}
