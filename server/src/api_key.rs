//! API keys as text, and what they may do. A key reads `cl_<id>_<secret>`: `cl_<id>` is its
//! prefix, shown in lists and logs; the secret is 256 random bits, kept only as its SHA-256
//! and compared in constant time. A key works wherever a token does, within its scopes and
//! its owner's rights.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::store::{ApiKeyRecord, Millis, Role};

/// What every key starts with.
pub const KEY_PREFIX: &str = "cl_";

/// Characters of a key's id: 12 of `[a-z0-9]`, about 62 bits.
const ID_CHARS: usize = 12;

/// What a key may do. `read` is every `GET`; `launch` adds what runs and changes jobs,
/// datasets and experiments; `publish` adds the plugin registry's changes (its owner must be
/// an administrator); `admin` is everything its owner may do. `launch` and `publish` include
/// `read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Read,
    Launch,
    Publish,
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Launch, Scope::Publish, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Launch => "launch",
            Scope::Publish => "publish",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == text)
    }

    /// Whether a key with `scopes` may do what needs `self`.
    pub fn granted_by(self, scopes: &[Scope]) -> bool {
        scopes.iter().any(|&scope| {
            scope == self || scope == Scope::Admin || (self == Scope::Read && scope != self)
        })
    }

    /// Whether only an administrator may hold it.
    pub fn needs_admin(self) -> bool {
        matches!(self, Scope::Publish | Scope::Admin)
    }

    /// The most a user of `role` may do, and so the highest scope its keys may have: a
    /// viewer reads, a member launches, an administrator does everything.
    pub fn highest_for(role: Role) -> Scope {
        match role {
            Role::Viewer => Scope::Read,
            Role::Member => Scope::Launch,
            Role::Admin => Scope::Admin,
        }
    }

    /// Whether a user of `role` may make a request that needs `self` at `path`: what its
    /// role allows, and every user its own keys (a viewer's only `read` ones).
    pub fn permitted_to(self, role: Role, path: &str) -> bool {
        self <= Scope::highest_for(role) || path.starts_with("/api_keys")
    }

    /// What a request needs, by its method and path.
    pub fn needed_for(method: &axum::http::Method, path: &str) -> Scope {
        use axum::http::Method;
        if path.starts_with("/admin") {
            return Scope::Admin;
        }
        // Reading a webhook signing secret lets its holder sign callbacks: a launcher's
        // right, not a reader's.
        if path == "/webhook_secret" {
            return Scope::Launch;
        }
        // The MCP server's tools are calls of this API, each checked as its own request.
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) || path == "/mcp" {
            return Scope::Read;
        }
        let registry = path == "/plugins"
            || (path.starts_with("/problem/")
                && (path.ends_with("/current") || path.contains("/versions/")));
        if registry {
            Scope::Publish
        } else if path.starts_with("/api_keys") {
            Scope::Admin
        } else {
            Scope::Launch
        }
    }
}

/// What a request that came with a key may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyGrant {
    /// The key's id (its prefix is `cl_<id>`).
    pub id: String,
    pub scopes: Vec<Scope>,
    /// The project the key is bound to: its launches, uploads and lists go there, and it
    /// reads no job of another.
    pub project: Option<String>,
}

/// A key just made: its text, shown once, and what is stored of it.
pub struct NewKey {
    pub text: String,
    pub record: ApiKeyRecord,
}

/// Makes a key for `owner_id`.
pub fn generate(
    owner_id: &str,
    name: &str,
    scopes: &[Scope],
    expires_at: Option<Millis>,
    project_id: Option<&str>,
    now: Millis,
) -> NewKey {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut random = rand::rngs::OsRng;
    let id: String = (0..ID_CHARS)
        .map(|_| char::from(ALPHABET[(random.next_u32() % ALPHABET.len() as u32) as usize]))
        .collect();
    let mut secret = [0u8; 32];
    random.fill_bytes(&mut secret);
    let secret = URL_SAFE_NO_PAD.encode(secret);
    NewKey {
        text: format!("{KEY_PREFIX}{id}_{secret}"),
        record: ApiKeyRecord {
            id,
            owner_id: owner_id.to_owned(),
            owner_name: String::new(),
            name: name.to_owned(),
            secret_hash: secret_hash(&secret),
            scopes: scopes
                .iter()
                .map(|scope| scope.as_str().to_owned())
                .collect(),
            created_at: now,
            expires_at,
            last_used_at: None,
            project_id: project_id.map(str::to_owned),
        },
    }
}

/// A key's id and secret, if `text` has a key's form.
pub fn parse(text: &str) -> Option<(&str, &str)> {
    let (id, secret) = text.strip_prefix(KEY_PREFIX)?.split_once('_')?;
    (id.len() == ID_CHARS && !secret.is_empty()).then_some((id, secret))
}

fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Whether `secret` is the key's, in time that does not depend on where they differ.
pub fn secret_matches(record: &ApiKeyRecord, secret: &str) -> bool {
    let given = secret_hash(secret);
    let (given, stored) = (given.as_bytes(), record.secret_hash.as_bytes());
    given.len() == stored.len()
        && given
            .iter()
            .zip(stored)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// The scopes a stored key has; names this version does not know give nothing.
pub fn scopes_of(record: &ApiKeyRecord) -> Vec<Scope> {
    record
        .scopes
        .iter()
        .filter_map(|scope| Scope::parse(scope))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_back_and_only_its_secret_matches() {
        let key = generate("user-1", "ci", &[Scope::Launch], None, None, 0);
        assert!(key.text.starts_with("cl_"));
        let (id, secret) = parse(&key.text).expect("a key's form");
        assert_eq!(id, key.record.id);
        assert!(secret.len() >= 43, "256 bits");
        assert!(secret_matches(&key.record, secret));
        assert!(!secret_matches(&key.record, "not-the-secret"));
        assert!(!key.record.secret_hash.contains(secret));
        assert_eq!(parse("cl_short_x"), None);
        assert_eq!(parse("eyJhbGciOi.x.y"), None);
    }

    #[test]
    fn scopes_grant_what_they_name_and_read() {
        use axum::http::Method;
        assert_eq!(Scope::needed_for(&Method::GET, "/jobs"), Scope::Read);
        assert_eq!(
            Scope::needed_for(&Method::POST, "/problem/maxcut"),
            Scope::Launch
        );
        assert_eq!(Scope::needed_for(&Method::DELETE, "/job/x"), Scope::Launch);
        assert_eq!(Scope::needed_for(&Method::POST, "/mcp"), Scope::Read);
        assert_eq!(Scope::needed_for(&Method::POST, "/plugins"), Scope::Publish);
        assert_eq!(
            Scope::needed_for(&Method::PUT, "/problem/maxcut/current"),
            Scope::Publish
        );
        assert_eq!(
            Scope::needed_for(&Method::DELETE, "/problem/maxcut/versions/1.0.0"),
            Scope::Publish
        );
        assert_eq!(Scope::needed_for(&Method::POST, "/api_keys"), Scope::Admin);
        assert_eq!(
            Scope::needed_for(&Method::GET, "/webhook_secret"),
            Scope::Launch
        );
        assert_eq!(
            Scope::needed_for(&Method::GET, "/admin/audit"),
            Scope::Admin
        );
        assert!(Scope::Read.granted_by(&[Scope::Launch]));
        assert!(!Scope::Launch.granted_by(&[Scope::Read]));
        assert!(!Scope::Publish.granted_by(&[Scope::Launch]));
        assert!(Scope::Publish.granted_by(&[Scope::Admin]));
        assert!(!Scope::Admin.granted_by(&[Scope::Publish, Scope::Launch]));
    }
}
