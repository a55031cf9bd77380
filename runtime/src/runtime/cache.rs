//! The compile cache: compiled components on disk, so that a restart does not recompile.
//!
//! An entry is named `<sha256 of the .wasm>-<engine compatibility hash>.cwasm`: the same bytes
//! compiled by an engine with the same wasmtime version and settings. Its content is a magic
//! tag, the sha256 of the payload, and the payload (`Component::serialize`). An entry is used
//! only if the tag and the hash match and wasmtime accepts its header; anything else is logged
//! and recompiled, and the new code overwrites the entry. Entries are written to a temporary
//! file and renamed into place, so a reader never sees half of one.
//!
//! The directory holds at most [`MAX_BYTES`]: storing an entry removes the least recently used
//! others (by modification time, which a load renews) until the rest fit. Without it, `caseload
//! plugin watch` on a Python plugin would add a 35 MB entry on every save, for ever.
//!
//! I chose this over wasmtime's own cache (`Config::cache`): that one is keyed the same way but
//! is invisible to the embedder (no way to say "loaded from cache" in the log or to test it),
//! and it checks entries only by wasmtime's header, so a flipped byte in the code would run.

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The first bytes of every entry: what it is, and the layout's version.
const MAGIC: &[u8; 8] = b"CLCACHE1";

/// The most the cache keeps, all entries together: about 30 builds of a Python plugin, or
/// hundreds of a Rust one.
pub(crate) const MAX_BYTES: u64 = 1 << 30;

/// Compiled components in a directory, for one engine configuration.
#[derive(Debug)]
pub(crate) struct CompileCache {
    dir: PathBuf,
    /// Hex of `Engine::precompile_compatibility_hash`: wasmtime's version and every setting
    /// that changes the compiled code.
    engine_hash: String,
    /// Entries beyond this many bytes in all are removed, least recently used first.
    max_bytes: u64,
}

/// Why an entry was not used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntryRejected {
    /// The entry could not be read.
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
    /// The entry is shorter than its header, or its content does not match its hash.
    #[error("it is truncated or corrupted (its checksum does not match)")]
    Corrupt,
    /// wasmtime refused the payload (another version or settings, despite the name).
    #[error("wasmtime refused it: {0:#}")]
    Refused(wasmtime::Error),
}

impl CompileCache {
    /// A cache in `dir` (created if missing) for code `engine` compiles.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> std::io::Result<CompileCache> {
        std::fs::create_dir_all(dir)?;
        let mut hasher = Sha256Hasher::default();
        std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
        let engine_hash = hex::encode(&hasher.0.finalize()[..8]);
        Ok(CompileCache {
            dir: dir.to_owned(),
            engine_hash,
            max_bytes: MAX_BYTES,
        })
    }

    /// Where the code compiled from a component with this sha256 (hex) lives.
    pub(crate) fn entry_path(&self, wasm_sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{wasm_sha256}-{}.cwasm", self.engine_hash))
    }

    /// The cached code of the component with this sha256: `Ok(None)` if there is none.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        wasm_sha256: &str,
    ) -> Result<Option<Component>, EntryRejected> {
        let path = self.entry_path(wasm_sha256);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(EntryRejected::Io(error)),
        };
        let header = MAGIC.len() + 32;
        if bytes.len() < header || &bytes[..MAGIC.len()] != MAGIC {
            return Err(EntryRejected::Corrupt);
        }
        let payload = &bytes[header..];
        if Sha256::digest(payload)[..] != bytes[MAGIC.len()..header] {
            return Err(EntryRejected::Corrupt);
        }
        let component = deserialize(engine, payload).map_err(EntryRejected::Refused)?;
        // Recently used: the last to be pruned. A failure only makes it older.
        let _ = std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_modified(SystemTime::now()));
        Ok(Some(component))
    }

    /// Writes the code of the component with this sha256. A failure only costs a compile at
    /// the next start, so it is logged, not returned.
    pub(crate) fn store(&self, wasm_sha256: &str, component: &Component) {
        let path = self.entry_path(wasm_sha256);
        let written = component
            .serialize()
            .map_err(|error| std::io::Error::other(format!("{error:#}")))
            .and_then(|payload| {
                let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
                file.write_all(MAGIC)?;
                file.write_all(&Sha256::digest(&payload))?;
                file.write_all(&payload)?;
                file.persist(&path).map_err(|error| error.error)?;
                Ok(())
            });
        if let Err(error) = written {
            tracing::warn!(entry = %path.display(), %error, "cannot write the compile cache entry");
        }
        self.prune(&path);
    }

    /// Removes the least recently used entries but `keep` until the rest fit in `max_bytes`.
    fn prune(&self, keep: &Path) {
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "cwasm"))
            .filter_map(|entry| {
                let metadata = entry.metadata().ok()?;
                let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                Some((modified, metadata.len(), entry.path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
        entries.sort();
        for (_, size, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    total -= size;
                    tracing::info!(entry = %path.display(), bytes = size, "compile cache entry pruned");
                }
                Err(error) => {
                    tracing::warn!(entry = %path.display(), %error, "cannot prune the compile cache entry");
                }
            }
        }
    }
}

/// Loads code this process's [`CompileCache::store`] wrote.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, payload: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `Component::deserialize` trusts its bytes to be wasmtime's own output, since
    // they are native code. These bytes come from the server's own cache directory, where only
    // `CompileCache::store` writes, with `Component::serialize` output; the entry's name ties
    // them to the sha256 of the exact .wasm and to this engine's compatibility hash; their
    // sha256 was checked just now, so a truncated or damaged file never gets here; and
    // wasmtime itself checks the header (its version, the target and the engine's settings).
    // The cache directory must be as trusted as the binary: whoever can write there can run
    // native code in the server, as they could by replacing the binary.
    unsafe { Component::deserialize(engine, payload) }
}

/// Feeds `Hash` into sha256: a digest that stays the same across Rust releases, unlike
/// `DefaultHasher`'s.
#[derive(Default)]
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }
}

#[cfg(test)]
mod tests {
    use wasmtime::ModuleVersionStrategy;

    use super::*;
    use crate::plugins::MAXCUT_WASM;

    /// An engine like the server's, but stamping its code as another wasmtime release's.
    fn engine_of_release(version: &str) -> Engine {
        let mut config = super::super::engine::base_config(&super::super::RuntimeConfig::default());
        config
            .module_version(ModuleVersionStrategy::Custom(version.into()))
            .expect("a version string");
        Engine::new(&config).expect("an engine")
    }

    /// Code compiled by an older wasmtime is never run by this one: its entry has another
    /// name, so it is not even read, and an entry of the old engine's code under this
    /// engine's name is refused by wasmtime's own check; either way the plugin is compiled
    /// again.
    #[test]
    fn entries_of_another_wasmtime_release_are_recompiled_not_run() {
        let dir = tempfile::tempdir().expect("a directory");
        let wasm_sha256 = hex::encode(Sha256::digest(MAXCUT_WASM.as_slice()));
        let old_engine = engine_of_release("48.0.8");
        let old_cache = CompileCache::open(dir.path(), &old_engine).expect("the old cache");
        let component = Component::new(&old_engine, MAXCUT_WASM.as_slice()).expect("compiles");
        old_cache.store(&wasm_sha256, &component);
        assert!(matches!(
            old_cache.load(&old_engine, &wasm_sha256),
            Ok(Some(_))
        ));

        let engine = Engine::new(&super::super::engine::base_config(
            &super::super::RuntimeConfig::default(),
        ))
        .expect("an engine");
        let cache = CompileCache::open(dir.path(), &engine).expect("the cache");
        assert_ne!(
            cache.entry_path(&wasm_sha256),
            old_cache.entry_path(&wasm_sha256)
        );
        assert!(matches!(cache.load(&engine, &wasm_sha256), Ok(None)));

        std::fs::rename(
            old_cache.entry_path(&wasm_sha256),
            cache.entry_path(&wasm_sha256),
        )
        .expect("renamed");
        match cache.load(&engine, &wasm_sha256) {
            Err(EntryRejected::Refused(error)) => {
                assert!(format!("{error:#}").contains("48.0.8"), "{error:#}")
            }
            Err(other) => panic!("refused for the wrong reason: {other}"),
            Ok(found) => panic!("an old release's code was accepted: {}", found.is_some()),
        }
    }

    /// The cache keeps to its size: storing an entry removes the least recently used others,
    /// and a load counts as a use.
    #[test]
    fn the_least_recently_used_entries_are_pruned_to_fit() {
        let dir = tempfile::tempdir().expect("a directory");
        let engine = Engine::new(&super::super::engine::base_config(
            &super::super::RuntimeConfig::default(),
        ))
        .expect("an engine");
        let mut cache = CompileCache::open(dir.path(), &engine).expect("the cache");
        let component = Component::new(&engine, MAXCUT_WASM.as_slice()).expect("compiles");
        let entries = ["a", "b", "c", "d"].map(|name| name.repeat(64));
        cache.store(&entries[0], &component);
        let entry_bytes = std::fs::metadata(cache.entry_path(&entries[0]))
            .expect("stored")
            .len();
        cache.max_bytes = entry_bytes * 5 / 2;
        let age = |path: PathBuf, seconds: u64| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .and_then(|file| {
                    file.set_modified(SystemTime::now() - std::time::Duration::from_secs(seconds))
                })
                .expect("aged");
        };
        age(cache.entry_path(&entries[0]), 30);
        cache.store(&entries[1], &component);
        age(cache.entry_path(&entries[1]), 20);
        // `a` is the oldest but is used now, so `b` is the least recently used.
        assert!(matches!(cache.load(&engine, &entries[0]), Ok(Some(_))));
        cache.store(&entries[2], &component);
        let kept = |entry: &str| cache.entry_path(entry).exists();
        assert!(kept(&entries[0]) && !kept(&entries[1]) && kept(&entries[2]));
        cache.store(&entries[3], &component);
        assert!(kept(&entries[3]), "the entry just written is never pruned");
        let left = entries.iter().filter(|entry| kept(entry)).count();
        assert_eq!(left, 2);
    }
}
