//! Single sign-on: the test runs its own OpenID Connect issuer on 127.0.0.1 (keys made with
//! openssl in the test, a discovery document, a JWKS endpoint) and the server accepts its
//! RS256 and ES256 tokens, makes their users on first use with the role their claim names,
//! fetches the keys again for a key id it does not know, and refuses expired tokens, other
//! audiences and issuers, unknown keys, `alg: none`, HS256 signed with the public key, and
//! a local user's name.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::State;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ServerOptions, TestServer, expect_problem};

const AUDIENCE: &str = "caseload";

/// A key the issuer signs with, and its JWK.
struct Key {
    kid: &'static str,
    algorithm: Algorithm,
    pem: Vec<u8>,
    public_pem: Vec<u8>,
    jwk: Value,
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let output = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn make_key(dir: &Path, kid: &'static str, algorithm: Algorithm) -> Key {
    let path = dir.join(format!("{kid}.pem"));
    let path = path.to_str().unwrap();
    let options: &[&str] = match algorithm {
        Algorithm::RS256 => &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        _ => &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    };
    let mut args = vec!["genpkey"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["-out", path]);
    openssl(&args);
    let pem = std::fs::read(path).unwrap();
    let public_pem = openssl(&["pkey", "-in", path, "-pubout"]);
    let jwk = match algorithm {
        Algorithm::RS256 => {
            let modulus =
                String::from_utf8(openssl(&["rsa", "-in", path, "-noout", "-modulus"])).unwrap();
            let hex = modulus.trim().trim_start_matches("Modulus=");
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
                .collect();
            json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                   "n": URL_SAFE_NO_PAD.encode(bytes), "e": "AQAB"})
        }
        _ => {
            let der = openssl(&["pkey", "-in", path, "-pubout", "-outform", "DER"]);
            let point = &der[der.len() - 64..];
            json!({"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256",
                   "x": URL_SAFE_NO_PAD.encode(&point[..32]), "y": URL_SAFE_NO_PAD.encode(&point[32..])})
        }
    };
    Key {
        kid,
        algorithm,
        pem,
        public_pem,
        jwk,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn sign(key: &Key, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(key.algorithm);
    header.kid = Some(kid.to_owned());
    let encoding = match key.algorithm {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&key.pem).unwrap(),
        _ => EncodingKey::from_ec_pem(&key.pem).unwrap(),
    };
    jsonwebtoken::encode(&header, claims, &encoding).unwrap()
}

/// An issuer on 127.0.0.1: its URL, and the keys its JWKS endpoint lists.
async fn issuer() -> (String, Arc<Mutex<Vec<Value>>>) {
    let (url, keys, _) = controlled_issuer().await;
    (url, keys)
}

/// What a test can make its issuer do, and what it counts.
#[derive(Default)]
struct IssuerControl {
    /// Every request waits forever while this is set.
    hang: AtomicBool,
    /// Discovery documents asked for.
    discoveries: AtomicUsize,
}

/// [`issuer`], with its control.
async fn controlled_issuer() -> (String, Arc<Mutex<Vec<Value>>>, Arc<IssuerControl>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let keys: Arc<Mutex<Vec<Value>>> = Arc::default();
    let control = Arc::new(IssuerControl::default());
    let discovery = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")});
    let discovery_control = control.clone();
    let jwks_control = control.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move {
                discovery_control.discoveries.fetch_add(1, Ordering::SeqCst);
                if discovery_control.hang.load(Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                Json(discovery)
            }),
        )
        .route(
            "/jwks",
            get(
                move |State(keys): State<Arc<Mutex<Vec<Value>>>>| async move {
                    if jwks_control.hang.load(Ordering::SeqCst) {
                        std::future::pending::<()>().await;
                    }
                    Json(json!({"keys": keys.lock().unwrap().clone()}))
                },
            ),
        )
        .with_state(keys.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, keys, control)
}

#[tokio::test]
async fn a_hanging_issuer_holds_logins_up_for_one_fetch_not_a_queue_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let rsa = make_key(dir.path(), "rsa-1", Algorithm::RS256);
    let (url, published, control) = controlled_issuer().await;
    published.lock().unwrap().push(rsa.jwk.clone());
    control.hang.store(true, Ordering::SeqCst);
    let args = ["--oidc-issuer", url.as_str(), "--oidc-audience", AUDIENCE];
    let server = TestServer::start_with(ServerOptions {
        args: &args,
        ..Default::default()
    });
    let claims = |user: &str| {
        json!({"iss": url, "aud": AUDIENCE, "sub": user, "preferred_username": user,
               "iat": now(), "exp": now() + 300})
    };
    // Four first logins at once, with no keys fetched yet: they wait for one fetch, which
    // the issuer never answers, and are refused together.
    let tokens: Vec<String> = (0..4)
        .map(|index| sign(&rsa, rsa.kid, &claims(&format!("sso-{index}"))))
        .collect();
    let answers =
        futures_util::future::join_all(tokens.iter().map(|token| status_of(&server, token))).await;
    for (status, problem) in &answers {
        assert_eq!(*status, StatusCode::UNAUTHORIZED, "{problem}");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("cannot be fetched"),
            "{problem}"
        );
    }
    assert_eq!(
        control.discoveries.load(Ordering::SeqCst),
        1,
        "each waiting login fetched the keys again"
    );
    // Once the issuer answers, logins work.
    control.hang.store(false, Ordering::SeqCst);
    let answer = loop {
        let answer = status_of(&server, &tokens[0]).await;
        if answer.0 == StatusCode::OK || control.discoveries.load(Ordering::SeqCst) > 3 {
            break answer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
}

async fn status_of(server: &TestServer, token: &str) -> (StatusCode, Value) {
    let response = server.get(token, "/jobs").await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn tokens_of_the_configured_issuer_are_accepted_and_bad_ones_refused() {
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("skipped: this test makes its keys with openssl, which is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rsa = make_key(dir.path(), "rsa-1", Algorithm::RS256);
    let ec = make_key(dir.path(), "ec-1", Algorithm::ES256);
    let rotated = make_key(dir.path(), "rsa-2", Algorithm::RS256);
    let (url, published) = issuer().await;
    published
        .lock()
        .unwrap()
        .extend([rsa.jwk.clone(), ec.jwk.clone()]);
    let args = [
        "--oidc-issuer",
        url.as_str(),
        "--oidc-audience",
        AUDIENCE,
        "--oidc-role-claim",
        "caseload_role",
        "--oidc-projects-claim",
        "caseload_projects",
    ];
    let server = TestServer::start_with(ServerOptions {
        args: &args,
        ..Default::default()
    });
    let admin = server.admin_token().await;
    let claims = |user: &str, extra: Value| {
        let mut claims = json!({"iss": url, "aud": AUDIENCE, "sub": format!("id-{user}"),
                                "preferred_username": user, "iat": now(), "exp": now() + 300});
        for (name, value) in extra.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let launch = json!({"num_nodes": 2, "edges": [[0, 1, 1]]});

    // RS256: made on first use, a member.
    let alice = sign(&rsa, rsa.kid, &claims("sso-alice", json!({})));
    assert_eq!(status_of(&server, &alice).await.0, StatusCode::OK);
    assert_eq!(
        server
            .post_json(&alice, "/problem/maxcut", &launch)
            .await
            .status(),
        StatusCode::ACCEPTED
    );
    // ES256, with a role claim: a viewer.
    let bob = sign(
        &ec,
        ec.kid,
        &claims("sso-bob", json!({"caseload_role": "viewer"})),
    );
    assert_eq!(status_of(&server, &bob).await.0, StatusCode::OK);
    expect_problem(
        server.post_json(&bob, "/problem/maxcut", &launch).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    let users: Value = server
        .get(&admin, "/admin/users")
        .await
        .json()
        .await
        .unwrap();
    let roles: Vec<(String, String)> = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|user| {
            (
                user["username"].as_str().unwrap().to_owned(),
                user["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        roles.contains(&("sso-alice".into(), "member".into())),
        "{roles:?}"
    );
    assert!(
        roles.contains(&("sso-bob".into(), "viewer".into())),
        "{roles:?}"
    );
    // The claim changes the role on the next request.
    let bob = sign(
        &ec,
        ec.kid,
        &claims("sso-bob", json!({"caseload_role": "member"})),
    );
    assert_eq!(
        server
            .post_json(&bob, "/problem/maxcut", &launch)
            .await
            .status(),
        StatusCode::ACCEPTED
    );
    // The projects claim says which projects the user is in, and how.
    for name in ["routing", "ops"] {
        server.make_project(&admin, name).await;
    }
    let projects_of = |entries: Value| {
        let token = sign(
            &rsa,
            rsa.kid,
            &claims("sso-dave", json!({"caseload_projects": entries})),
        );
        let server = &server;
        async move {
            let listed: Value = server.get(&token, "/projects").await.json().await.unwrap();
            listed["projects"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|project| project["personal"] == false)
                .map(|project| {
                    format!(
                        "{}:{}",
                        project["name"].as_str().unwrap(),
                        project["role"].as_str().unwrap()
                    )
                })
                .collect::<Vec<String>>()
        }
    };
    assert_eq!(
        projects_of(json!(["routing", "ops:viewer", "nowhere"])).await,
        ["ops:viewer", "routing:member"]
    );
    assert_eq!(projects_of(json!(["ops"])).await, ["ops:member"]);
    assert_eq!(projects_of(json!(null)).await, Vec::<String>::new());

    // An SSO user has no password to log in with.
    assert_eq!(
        server.login("sso-alice", "!oidc").await.status(),
        StatusCode::UNAUTHORIZED
    );

    // The issuer rotates its key: the server fetches the keys again for the new kid.
    published.lock().unwrap().push(rotated.jwk.clone());
    let carol = sign(&rotated, rotated.kid, &claims("sso-carol", json!({})));
    assert_eq!(status_of(&server, &carol).await.0, StatusCode::OK);
    // A name in capitals is folded, as every user name is: one user, not two.
    for spelled in ["SSO-Erin", "sso-erin"] {
        let erin = sign(&rsa, rsa.kid, &claims(spelled, json!({})));
        assert_eq!(status_of(&server, &erin).await.0, StatusCode::OK);
    }
    let users: Value = server
        .get(&admin, "/admin/users")
        .await
        .json()
        .await
        .unwrap();
    let erins = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|user| {
            user["username"]
                .as_str()
                .unwrap()
                .eq_ignore_ascii_case("sso-erin")
        })
        .count();
    assert_eq!(erins, 1, "{users}");

    // And refuses, each with a reason.
    let refusals = [
        (
            "expired",
            sign(
                &rsa,
                rsa.kid,
                &claims("sso-alice", json!({"iat": now() - 600, "exp": now() - 300})),
            ),
            "expired",
        ),
        (
            "another audience",
            sign(
                &rsa,
                rsa.kid,
                &claims("sso-alice", json!({"aud": "someone-else"})),
            ),
            "aud",
        ),
        (
            "another issuer",
            sign(
                &rsa,
                rsa.kid,
                &claims("sso-alice", json!({"iss": "https://evil.example"})),
            ),
            "issuer",
        ),
        (
            "an unknown key",
            sign(&rotated, "rsa-9", &claims("sso-alice", json!({}))),
            "kid",
        ),
        (
            "a key of another kind",
            sign(&rsa, ec.kid, &claims("sso-alice", json!({}))),
            "algorithm",
        ),
        (
            "a local user's name",
            sign(&rsa, rsa.kid, &claims("admin", json!({}))),
            "local user",
        ),
        (
            "a local user's name in capitals",
            sign(&rsa, rsa.kid, &claims("Admin", json!({}))),
            "local user",
        ),
        (
            "a name with a zero-width space",
            sign(&rsa, rsa.kid, &claims("admin\u{200b}", json!({}))),
            "user name",
        ),
        (
            "a name of 100,000 characters",
            sign(&rsa, rsa.kid, &claims(&"n".repeat(100_000), json!({}))),
            "user name",
        ),
        (
            "not valid yet",
            sign(
                &rsa,
                rsa.kid,
                &claims("sso-alice", json!({"nbf": now() + 600})),
            ),
            "nbf",
        ),
        (
            "alg none",
            {
                let header = URL_SAFE_NO_PAD
                    .encode(json!({"alg": "none", "typ": "JWT", "kid": rsa.kid}).to_string());
                let payload = URL_SAFE_NO_PAD.encode(claims("sso-alice", json!({})).to_string());
                format!("{header}.{payload}.")
            },
            "header",
        ),
        (
            "HS256 keyed with the public key",
            {
                let mut header = Header::new(Algorithm::HS256);
                header.kid = Some(rsa.kid.to_owned());
                jsonwebtoken::encode(
                    &header,
                    &claims("sso-alice", json!({})),
                    &EncodingKey::from_secret(&rsa.public_pem),
                )
                .unwrap()
            },
            "RS256 and ES256",
        ),
    ];
    for (what, token, reason) in refusals {
        let (status, problem) = status_of(&server, &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: {problem}");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap_or_default()
                .contains(reason),
            "{what}: {problem}"
        );
    }
    // The server's own tokens still work beside the issuer's.
    assert_eq!(status_of(&server, &admin).await.0, StatusCode::OK);
}
