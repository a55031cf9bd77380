//! Files that hold secrets (the signing key, the SQLite database with its password hashes and
//! users' datasets) are readable by their owner alone: made so at start if they were not.

use std::path::Path;

/// Takes group and other permissions off `path` if it has any, and says so in the log;
/// whether it had to. A file that is missing is left to whoever creates it; one whose mode
/// cannot be changed (another owner) is an error, since the server would be serving a secret
/// others can read.
pub fn make_private(path: &Path, what: &str) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;

        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error),
        };
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 == 0 {
            return Ok(false);
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))?;
        tracing::warn!(
            path = %path.display(),
            was = format!("{mode:o}"),
            "{what} was readable by others; it is now readable by its owner alone"
        );
        Ok(true)
    }
    #[cfg(not(unix))]
    {
        let _ = (path, what);
        Ok(false)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_others_can_read_is_tightened_and_a_private_one_left_alone() {
        let directory = tempfile::tempdir().expect("a directory");
        let path = directory.path().join("key.pem");
        std::fs::write(&path, "secret").expect("written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(make_private(&path, "the key").expect("tightened"));
        let mode = std::fs::metadata(&path)
            .expect("there")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!make_private(&path, "the key").expect("left alone"));
        assert!(!make_private(&directory.path().join("missing"), "x").expect("no file"));
    }
}
