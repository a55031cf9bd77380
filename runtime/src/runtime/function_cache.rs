//! The function cache: Cranelift's output per function on disk (wasmtime's incremental
//! compilation), beside the compile cache, so that a component whose bytes changed but whose
//! functions mostly did not compiles only what changed.
//!
//! The compile cache ([`super::cache`]) keys whole components by their sha256: any change
//! misses it. A plugin author's save changes little of the code: a JavaScript or Python
//! plugin is an interpreter of tens of thousands of functions with the author's code in its
//! data, so a rebuild leaves every function as it was, and Cranelift compiling them again
//! was most of `plugin check`'s time and the server's (about 30 s of the JavaScript loop's
//! 53). Cranelift keys each entry by the function's body and every setting that changes its
//! code; this store adds a checksum, so a damaged file is a miss, not bad code.
//!
//! Entries are files named after the sha256 of Cranelift's key, under 256 folders by the
//! hash's first byte. The store holds at most [`MAX_BYTES`]: the first time a process stores
//! an entry, a store over that is emptied (entries are not renewed when read, so there is no
//! recency to prune by; the compiles that follow refill it with what is in use). A process
//! that only reads, as a sandbox process loading code the server compiled usually is, never
//! walks the folder.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::CacheStore;

/// The most the store keeps, all entries together.
pub(crate) const MAX_BYTES: u64 = 512 << 20;

/// Compiled functions in a directory; shared by the engine's compiling threads.
#[derive(Debug)]
pub(crate) struct FunctionCache {
    dir: PathBuf,
    /// Done before this process's first entry: the check of the store's size.
    size_checked: Once,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// How many function lookups found their code, and how many did not, since the store opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Lookups {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

impl FunctionCache {
    /// The store in `dir`, created if missing.
    pub(crate) fn open(dir: &Path) -> std::io::Result<FunctionCache> {
        std::fs::create_dir_all(dir)?;
        Ok(FunctionCache {
            dir: dir.to_owned(),
            size_checked: Once::new(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    /// The lookups so far: a compile's share is the difference across it.
    pub(crate) fn lookups(&self) -> Lookups {
        Lookups {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    fn entry_path(&self, key: &[u8]) -> PathBuf {
        let name = hex::encode(Sha256::digest(key));
        self.dir.join(&name[..2]).join(&name[2..])
    }

    /// Empties the store if it holds over [`MAX_BYTES`]. A failure leaves it as it is.
    fn empty_if_full(&self) {
        let bytes = folder_bytes(&self.dir);
        if bytes <= MAX_BYTES {
            return;
        }
        tracing::info!(dir = %self.dir.display(), bytes, "function cache full; emptying it");
        let emptied =
            std::fs::remove_dir_all(&self.dir).and_then(|()| std::fs::create_dir_all(&self.dir));
        if let Err(error) = emptied {
            tracing::warn!(dir = %self.dir.display(), %error, "cannot empty the function cache");
        }
    }

    fn read(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut bytes = std::fs::read(self.entry_path(key)).ok()?;
        if bytes.len() < 32 || Sha256::digest(&bytes[32..])[..] != bytes[..32] {
            return None;
        }
        bytes.drain(..32);
        Some(bytes)
    }
}

impl CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let found = self.read(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found.map(Cow::Owned)
    }

    /// Written to a temporary file and renamed into place, so a reader never sees half of an
    /// entry. A failure costs a compile next time, nothing more.
    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        self.size_checked.call_once(|| self.empty_if_full());
        let path = self.entry_path(key);
        let Some(folder) = path.parent() else {
            return false;
        };
        let written = std::fs::create_dir_all(folder).and_then(|()| {
            let mut file = tempfile::NamedTempFile::new_in(folder)?;
            file.write_all(&Sha256::digest(&value))?;
            file.write_all(&value)?;
            file.persist(&path).map_err(|error| error.error)?;
            Ok(())
        });
        written.is_ok()
    }
}

/// The bytes of the files in `dir` and its folders, one level down.
fn folder_bytes(dir: &Path) -> u64 {
    let files = |dir: &Path| -> Vec<std::fs::Metadata> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.metadata().ok())
            .collect()
    };
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| {
            files(&entry.path())
                .iter()
                .map(|file| file.len())
                .sum::<u64>()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_and_a_damaged_one_is_a_miss() {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let cache = FunctionCache::open(dir.path()).expect("the store");
        assert!(cache.get(b"key").is_none());
        assert!(cache.insert(b"key", b"compiled code".to_vec()));
        assert_eq!(cache.get(b"key").as_deref(), Some(&b"compiled code"[..]));
        let path = cache.entry_path(b"key");
        let mut bytes = std::fs::read(&path).expect("the entry");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).expect("damaged");
        assert!(cache.get(b"key").is_none());
        assert_eq!(cache.lookups(), Lookups { hits: 1, misses: 2 });
    }

    #[test]
    fn a_store_over_its_size_is_emptied_before_a_process_adds_to_it() {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let cache = FunctionCache::open(dir.path()).expect("the store");
        assert!(cache.insert(b"small", vec![0; 16]));
        let big = dir.path().join("ff").join("big");
        std::fs::create_dir_all(big.parent().expect("a folder")).expect("the folder");
        std::fs::File::create(&big)
            .and_then(|file| file.set_len(MAX_BYTES + 1))
            .expect("a sparse file over the limit");
        // A process that only reads leaves it whole.
        let reader = FunctionCache::open(dir.path()).expect("the store");
        assert!(reader.get(b"small").is_some());
        assert!(big.exists());
        // The first entry a process stores empties it first; later ones do not look again.
        let writer = FunctionCache::open(dir.path()).expect("the store");
        assert!(writer.insert(b"new", vec![1; 16]));
        assert!(!big.exists());
        assert!(writer.get(b"small").is_none());
        assert!(writer.get(b"new").is_some());
    }
}
