//! Authentication: argon2id password hashes and Ed25519-signed JWT access tokens. The
//! extractor that checks a request's token is the API's (`api/accounts/bearer.rs`).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::api_key::KeyGrant;
use crate::store::Role;

/// The signing key's file in the data directory, unless `--jwt-key-file` names another.
pub const SIGNING_KEY_FILE: &str = "jwt-ed25519.pem";

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("cannot read or write the signing key {path}: {source}")]
    KeyFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the signing key {path} is not a PKCS#8 Ed25519 key: {message}")]
    KeyFormat { path: PathBuf, message: String },
    #[error("cannot hash the password: {0}")]
    Hash(String),
}

/// Hashes a password with argon2id and a random salt, in PHC string form.
pub fn hash_password(password: &str) -> Result<String, AuthError> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| AuthError::Hash(error.to_string()))
}

/// Checks a password against a PHC hash; a malformed hash never matches.
pub fn verify_password(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// What an access token says.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    /// The user's id.
    sub: String,
    /// The user's name, for logs.
    name: String,
    iat: u64,
    exp: u64,
    /// The token's own id.
    #[serde(default)]
    jti: String,
    /// When it was issued, in milliseconds: `iat` is in seconds, too coarse to tell a token
    /// issued just before a revocation from one issued just after. Tokens from before this
    /// claim existed read as 0, and so as issued before any revocation.
    #[serde(default)]
    issued_ms: u64,
}

/// The server's token signer and verifier.
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    kid: String,
    validation: Validation,
    ttl: Duration,
    /// A hash verified when the user does not exist, so that an unknown name costs as much
    /// time as a wrong password.
    decoy_hash: String,
    /// Tokens whose signature was verified, with their user and expiry: a client sends the
    /// same token with every request, and an Ed25519 verification costs more than the rest of
    /// a status read. Only a byte-identical token hits, so nothing unverified ever does.
    verified: Mutex<HashMap<String, (AuthUser, u64)>>,
}

/// Replicas' clocks may differ this much when one checks a token another issued.
const CLOCK_LEEWAY_SECONDS: u64 = 5;

/// The most verified tokens remembered; past it, the memory starts afresh.
const VERIFIED_TOKENS: usize = 4096;

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TokenKeys")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl TokenKeys {
    /// Loads the Ed25519 signing key (PKCS#8 PEM) from `path`, generating it on first start.
    /// Several processes starting at once agree on one key: it is written to a temporary file
    /// and hard-linked into place, which fails if another process got there first. Replicas
    /// share tokens by sharing this file (`--jwt-key-file`).
    pub fn load_or_create(path: &Path, ttl: Duration) -> Result<TokenKeys, AuthError> {
        let path = path.to_path_buf();
        let key_error = |source| AuthError::KeyFile {
            path: path.clone(),
            source,
        };
        if !path.exists() {
            let key = SigningKey::generate(&mut rand::rngs::OsRng);
            let pem = key
                .to_pkcs8_pem(LineEnding::LF)
                .map_err(|error| AuthError::KeyFormat {
                    path: path.clone(),
                    message: error.to_string(),
                })?;
            let file_name = path
                .file_name()
                .map_or_else(|| "key".into(), |name| name.to_string_lossy());
            let temporary = path.with_file_name(format!(".{file_name}.{}", uuid::Uuid::new_v4()));
            write_private_file(&temporary, pem.as_bytes()).map_err(key_error)?;
            let linked = std::fs::hard_link(&temporary, &path);
            let _ = std::fs::remove_file(&temporary);
            match linked {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(key_error(error)),
            }
        }
        // A key others can read signs tokens others can forge.
        crate::private_file::make_private(&path, "the signing key").map_err(key_error)?;
        let pem = std::fs::read_to_string(&path).map_err(key_error)?;
        let format_error = |message: String| AuthError::KeyFormat {
            path: path.clone(),
            message,
        };
        let key =
            SigningKey::from_pkcs8_pem(&pem).map_err(|error| format_error(error.to_string()))?;
        let public_pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|error| format_error(error.to_string()))?;
        let encoding = EncodingKey::from_ed_pem(pem.as_bytes())
            .map_err(|error| format_error(error.to_string()))?;
        let decoding = DecodingKey::from_ed_pem(public_pem.as_bytes())
            .map_err(|error| format_error(error.to_string()))?;
        let kid = hex::encode(&Sha256::digest(key.verifying_key().as_bytes())[..8]);

        // The algorithm is pinned: a token naming any other (or `none`) is rejected.
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = CLOCK_LEEWAY_SECONDS;
        validation.set_required_spec_claims(&["exp", "sub"]);

        Ok(TokenKeys {
            encoding,
            decoding,
            kid,
            validation,
            ttl,
            decoy_hash: hash_password("decoy password, never matches")?,
            verified: Mutex::new(HashMap::new()),
        })
    }

    /// The key id put in every token's header.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn decoy_hash(&self) -> &str {
        &self.decoy_hash
    }

    /// Issues an access token for the user.
    pub fn issue(&self, user_id: &str, username: &str) -> String {
        let now_ms = chrono::Utc::now().timestamp_millis() as u64;
        let now = now_ms / 1000;
        let claims = Claims {
            sub: user_id.to_owned(),
            name: username.to_owned(),
            iat: now,
            exp: now + self.ttl.as_secs(),
            jti: uuid::Uuid::new_v4().to_string(),
            issued_ms: now_ms,
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding)
            .expect("an Ed25519 key signs any claims")
    }

    /// Verifies a token and returns the user it was issued to.
    pub fn verify(&self, token: &str) -> Option<AuthUser> {
        let now = chrono::Utc::now().timestamp() as u64;
        if let Some((user, expires)) = self
            .verified
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
        {
            return (now <= *expires).then(|| user.clone());
        }
        let header = jsonwebtoken::decode_header(token).ok()?;
        if header.kid.as_deref() != Some(self.kid.as_str()) {
            return None;
        }
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?;
        let user = AuthUser {
            id: data.claims.sub,
            username: data.claims.name,
            issued_ms: data.claims.issued_ms,
            admin: false,
            role: Role::Viewer,
            key: None,
            expires_ms: Some(
                data.claims
                    .exp
                    .saturating_add(CLOCK_LEEWAY_SECONDS)
                    .saturating_mul(1000),
            ),
        };
        let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        if verified.len() >= VERIFIED_TOKENS {
            verified.clear();
        }
        // Valid exactly as long as the full verification would accept it.
        let expires = data.claims.exp.saturating_add(CLOCK_LEEWAY_SECONDS);
        verified.insert(token.to_owned(), (user.clone(), expires));
        Some(user)
    }
}

/// Writes a file only its owner can read (mode 0600), flushed to disk.
pub fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// The user a request's bearer token (or API key) was issued to.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub id: String,
    pub username: String,
    /// When the token was issued, in milliseconds since the epoch.
    pub issued_ms: u64,
    /// Whether the user is an administrator, as its access was last read (not a claim of
    /// the token: a change holds within the access check's time), and the key, if the
    /// request came with one, lets it act as one.
    pub admin: bool,
    /// The user's role, as its access was last read.
    pub role: Role,
    /// The API key the request came with, if it came with one rather than a token.
    pub key: Option<KeyGrant>,
    /// When its token or key stops being accepted, in milliseconds since the epoch (`None`:
    /// a key without an expiry). A request held open ends then.
    pub expires_ms: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_token_lets_no_forgery_through() {
        let directory = tempfile::tempdir().expect("a directory");
        let keys =
            TokenKeys::load_or_create(&directory.path().join("key.pem"), Duration::from_secs(60))
                .expect("a key");
        let token = keys.issue("user-1", "alice");
        for _ in 0..2 {
            let user = keys
                .verify(&token)
                .expect("the token verifies, then is remembered");
            assert_eq!(
                (user.id.as_str(), user.username.as_str()),
                ("user-1", "alice")
            );
        }
        // The same claims with a changed signature, and another user's claims under this
        // token's signature: neither is the remembered token, and neither verifies.
        let (signed, signature) = token.rsplit_once('.').expect("three parts");
        let flipped = if signature.starts_with('A') { 'B' } else { 'A' };
        let forged_signature = format!("{signed}.{flipped}{}", &signature[1..]);
        assert!(keys.verify(&forged_signature).is_none());
        let other = keys.issue("user-2", "mallory");
        let (other_signed, _) = other.rsplit_once('.').expect("three parts");
        assert!(
            keys.verify(&format!("{other_signed}.{signature}"))
                .is_none()
        );
    }
}
