//! Single sign-on: bearer JWTs from one OpenID Connect issuer (`--oidc-issuer`), verified
//! against the issuer's published keys. The keys come from the `jwks_uri` of the issuer's
//! discovery document, are kept, and are fetched again when a token names a key id they do
//! not hold (at most once per [`REFETCH_AFTER`], so that tokens with made-up key ids cannot
//! make the server hammer the issuer) or once they are [`KEYS_FRESH_FOR`] old.
//!
//! Only RS256 (RSA keys) and ES256 (P-256 keys) are accepted, the algorithm taken from the
//! key, never from the token: `alg: none`, HMAC tokens (an HS256 token signed with the
//! issuer's public key as the secret) and a token whose `alg` does not match its key are
//! refused. `iss` must be the issuer, `aud` must hold the audience, `exp` must not have
//! passed (30 s of leeway for clocks).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::http_post::{Get, address_of, get};
use crate::user_name;

/// The password hash of a user made by single sign-on: no password ever matches it (it is
/// not a PHC string), and it marks the name as the issuer's.
pub const NO_PASSWORD: &str = "!oidc";

/// A key set older than this is fetched again before it is used.
const KEYS_FRESH_FOR: Duration = Duration::from_secs(600);

/// An unknown key id fetches the keys again at most this often.
const REFETCH_AFTER: Duration = Duration::from_secs(5);

/// How long the issuer has to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of a discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// How the issuer's tokens are read: whose they must be, for whom, and which claims say
/// what.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    pub issuer: String,
    pub audience: String,
    /// The claim that names the user (`preferred_username`, else `sub`).
    pub username_claim: String,
    /// The claim that names the user's role (`admin`, `member`, `viewer`), if any.
    pub role_claim: Option<String>,
    /// The claim that lists the user's projects (`["routing", "ops:viewer"]`), if any.
    pub projects_claim: Option<String>,
}

/// Who a verified token is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    pub username: String,
    /// The role claim's value, if the token has one.
    pub role: Option<String>,
    /// The projects claim's entries (`name` or `name:role`), if the server reads one; an
    /// empty list where the token lacks it (the user is then in no project).
    pub projects: Option<Vec<String>>,
    /// When the token was issued, in milliseconds (0 if it does not say).
    pub issued_ms: u64,
    /// When it stops being accepted (its `exp` and the leeway), in milliseconds.
    pub expires_ms: u64,
}

/// Why a token was refused; the message is the client's 401.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub &'static str);

/// The issuer's keys as last fetched.
struct Keys {
    set: JwkSet,
    fetched_at: Instant,
}

pub struct OidcVerifier {
    config: OidcConfig,
    keys: Mutex<Option<Keys>>,
    /// One fetch of the keys at a time.
    fetch_turn: tokio::sync::Mutex<()>,
    /// How many fetches ended, with keys or not: requests that waited behind a fetch read
    /// what it brought rather than fetch again, so an issuer that hangs holds each of them up
    /// for one fetch at most, not for a queue of them.
    fetches_ended: AtomicU64,
    /// When the keys were last fetched for an unknown key id.
    last_refetch: Mutex<Option<Instant>>,
    /// The projects claim last applied for each user, by user id: applied again only when
    /// a token says otherwise.
    applied_projects: Mutex<HashMap<String, Vec<String>>>,
}

/// Users whose applied projects claim is remembered at most; beyond, it starts over.
const MAX_REMEMBERED_CLAIMS: usize = 10_000;

impl OidcVerifier {
    pub fn new(config: OidcConfig) -> OidcVerifier {
        OidcVerifier {
            config,
            keys: Mutex::new(None),
            fetch_turn: tokio::sync::Mutex::new(()),
            fetches_ended: AtomicU64::new(0),
            last_refetch: Mutex::new(None),
            applied_projects: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `projects` differs from the projects claim last applied for the user here.
    pub fn projects_changed(&self, user_id: &str, projects: &[String]) -> bool {
        let applied = self
            .applied_projects
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        applied.get(user_id).map(Vec::as_slice) != Some(projects)
    }

    /// Remembers that the user's memberships now follow `projects`.
    pub fn projects_applied(&self, user_id: &str, projects: &[String]) {
        let mut applied = self
            .applied_projects
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if applied.len() >= MAX_REMEMBERED_CLAIMS {
            applied.clear();
        }
        applied.insert(user_id.to_owned(), projects.to_vec());
    }

    /// Whether `token` is one this verifier should read: a JWT whose algorithm is not the
    /// server's own (EdDSA).
    /// `alg: none` and algorithms jsonwebtoken does not know come here too, to be refused
    /// with a reason rather than as a malformed token of the server's.
    pub fn claims_token(token: &str) -> bool {
        token
            .split('.')
            .next()
            .and_then(base64_json)
            .is_some_and(|header| header["alg"] != "EdDSA")
    }

    /// Verifies a token; who it is for.
    pub async fn verify(&self, token: &str) -> Result<OidcIdentity, Refused> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Refused("the token's header is not one this server accepts"))?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(Refused(
                "only RS256 and ES256 tokens are accepted from the issuer",
            ));
        }
        let kid = header.kid.ok_or(Refused("the token names no key (kid)"))?;
        let jwk = self.key(&kid).await?;
        let algorithm =
            algorithm_of(&jwk).ok_or(Refused("the issuer's key is not RS256 or ES256"))?;
        if algorithm != header.alg {
            return Err(Refused("the token's algorithm is not its key's"));
        }
        let key =
            DecodingKey::from_jwk(&jwk).map_err(|_| Refused("the issuer's key is unusable"))?;
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[self.config.issuer.as_str()]);
        validation.set_audience(&[self.config.audience.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = 30;
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation).map_err(|error| {
            use jsonwebtoken::errors::ErrorKind;
            Refused(match error.kind() {
                ErrorKind::ExpiredSignature => "the token has expired",
                ErrorKind::InvalidAudience => "the token is not for this server (aud)",
                ErrorKind::InvalidIssuer => "the token is not from the issuer this server trusts",
                ErrorKind::InvalidSignature => "the token's signature does not verify",
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
                _ => "the token is invalid",
            })
        })?;
        let claims = data.claims;
        let claimed = claims[self.config.username_claim.as_str()]
            .as_str()
            .or_else(|| claims["sub"].as_str())
            .ok_or(Refused("the token names no user"))?;
        // The name is held to the rule every user name follows (case folded), so a token
        // cannot make `Admin` beside `admin`, or a name that prints as another.
        let username = user_name::normalise(claimed).map_err(|why| {
            tracing::warn!(issuer = %self.config.issuer, %why, "a token's user name is refused");
            Refused("the token's user name is not one this server takes (1 to 64 of a-z 0-9 ._@+-)")
        })?;
        let role = self
            .config
            .role_claim
            .as_deref()
            .and_then(|claim| claims[claim].as_str())
            .map(str::to_owned);
        let projects = self.config.projects_claim.as_deref().map(|claim| {
            claims[claim]
                .as_array()
                .map(|entries| {
                    entries
                        .iter()
                        .filter_map(|entry| entry.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        });
        let issued_ms = claims["iat"].as_u64().unwrap_or(0).saturating_mul(1000);
        let expires_ms = claims["exp"]
            .as_u64()
            .unwrap_or(0)
            .saturating_add(validation.leeway)
            .saturating_mul(1000);
        Ok(OidcIdentity {
            username,
            role,
            projects,
            issued_ms,
            expires_ms,
        })
    }

    /// The issuer's key with this id: from the keys kept, else from the keys fetched again.
    /// Keys past [`KEYS_FRESH_FOR`] are fetched again by one request while the others use
    /// them as they are.
    async fn key(&self, kid: &str) -> Result<Jwk, Refused> {
        let (known, fresh) = self.kept_key(kid);
        if let Some(jwk) = &known
            && fresh
        {
            return Ok(jwk.clone());
        }
        if known.is_none() && !self.kept_any() {
            // No keys yet: every request needs the first fetch.
        } else if known.is_none() && !self.may_refetch() {
            return Err(Refused("the token's key (kid) is not the issuer's"));
        }
        let seen = self.fetches_ended.load(Ordering::Acquire);
        let turn = match (&known, self.fetch_turn.try_lock()) {
            (_, Ok(turn)) => turn,
            // Stale keys, and another request is fetching them: use them meanwhile.
            (Some(jwk), Err(_)) => return Ok(jwk.clone()),
            (None, Err(_)) => self.fetch_turn.lock().await,
        };
        if self.fetches_ended.load(Ordering::Acquire) == seen {
            // Nobody fetched while this request waited: fetch now.
            match self.fetch_keys().await {
                Ok(set) => {
                    *self.keys.lock().unwrap_or_else(PoisonError::into_inner) = Some(Keys {
                        set,
                        fetched_at: Instant::now(),
                    });
                }
                Err(error) => {
                    tracing::warn!(issuer = %self.config.issuer, %error, "cannot fetch the issuer's keys");
                }
            }
            self.fetches_ended.fetch_add(1, Ordering::AcqRel);
        }
        drop(turn);
        match self.kept_key(kid) {
            (Some(jwk), _) => Ok(jwk),
            (None, _) if self.kept_any() => {
                Err(Refused("the token's key (kid) is not the issuer's"))
            }
            (None, _) => Err(Refused("the issuer's keys cannot be fetched now")),
        }
    }

    /// The kept key with this id, and whether the kept keys are fresh.
    fn kept_key(&self, kid: &str) -> (Option<Jwk>, bool) {
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        match keys.as_ref() {
            Some(keys) => (
                keys.set.find(kid).cloned(),
                keys.fetched_at.elapsed() <= KEYS_FRESH_FOR,
            ),
            None => (None, false),
        }
    }

    fn kept_any(&self) -> bool {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    fn may_refetch(&self) -> bool {
        let mut last = self
            .last_refetch
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.is_some_and(|at| at.elapsed() < REFETCH_AFTER) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        #[derive(Deserialize)]
        struct Discovery {
            issuer: String,
            jwks_uri: String,
        }
        let discovery_url = format!(
            "{}/.well-known/openid-configuration",
            self.config.issuer.trim_end_matches('/')
        );
        let discovery: Discovery = fetch_json(&discovery_url).await?;
        if discovery.issuer.trim_end_matches('/') != self.config.issuer.trim_end_matches('/') {
            return Err(format!(
                "the discovery document names the issuer {:?}",
                discovery.issuer
            ));
        }
        fetch_json(&discovery.jwks_uri).await
    }
}

/// What a key verifies: RS256 for an RSA key, ES256 for a P-256 key, nothing else; a key
/// that says its own `alg` must say that one.
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    let algorithm = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(params) if params.curve == EllipticCurve::P256 => {
            Algorithm::ES256
        }
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(algorithm),
        Some(declared) if declared.to_string() == format!("{algorithm:?}") => Some(algorithm),
        Some(_) => None,
    }
}

fn base64_json(part: &str) -> Option<Value> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// An `https` URL, or `http` to a loopback address (a test's issuer).
pub fn check_issuer_url(issuer: &str) -> Result<(), String> {
    let url = Url::parse(issuer).map_err(|error| format!("{issuer:?} is not a URL: {error}"))?;
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "the OIDC issuer {issuer:?} must be https (http only on a loopback address)"
        )),
    }
}

async fn fetch_json<T: serde::de::DeserializeOwned>(url: &str) -> Result<T, String> {
    check_issuer_url(url)?;
    let parsed = Url::parse(url).map_err(|error| error.to_string())?;
    let address = address_of(&parsed).await?;
    let request = get(Get {
        url: &parsed,
        address,
        read_at_most: MAX_DOCUMENT_BYTES,
        user_agent: "caseload-oidc",
    });
    let answer = tokio::time::timeout(FETCH_TIMEOUT, request)
        .await
        .map_err(|_| format!("{url} did not answer within {FETCH_TIMEOUT:?}"))??;
    if answer.status != 200 {
        return Err(format!("{url} answered {}", answer.status));
    }
    serde_json::from_slice(&answer.body).map_err(|error| format!("{url}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_is_https_or_a_loopback_address() {
        assert!(check_issuer_url("https://login.example.com/realms/x").is_ok());
        assert!(check_issuer_url("http://127.0.0.1:8081").is_ok());
        assert!(check_issuer_url("http://login.example.com").is_err());
        assert!(check_issuer_url("not a url").is_err());
    }

    #[test]
    fn only_the_server_s_own_tokens_are_left_to_it() {
        let header = |alg: &str| encoded(&serde_json::json!({"alg": alg}));
        assert!(!OidcVerifier::claims_token(&format!(
            "{}.e30.x",
            header("EdDSA")
        )));
        assert!(OidcVerifier::claims_token(&format!(
            "{}.e30.x",
            header("RS256")
        )));
        assert!(OidcVerifier::claims_token(&format!(
            "{}.e30.",
            header("none")
        )));
        assert!(!OidcVerifier::claims_token("cl_abc_def"));
    }

    fn encoded(value: &Value) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    }
}
