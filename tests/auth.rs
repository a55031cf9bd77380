//! Login and bearer tokens: every way a token can be wrong answers 401 with a Bearer challenge.

use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{
    ADMIN_PASSWORD, Contract, KillOnDrop, TestServer, assert_contract, expect_problem,
};

#[tokio::test]
async fn login_issues_an_eddsa_token_with_a_kid() {
    let server = TestServer::start();
    let response = server.login("admin", ADMIN_PASSWORD).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_contract(Contract::Token, &body);
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    // The user's role, so that a client such as the console offers only what it may do.
    assert_eq!(body["role"], "admin");
    for (name, role) in [("mark", "member"), ("vera", "viewer")] {
        let (ok, output) = server.user_command(
            &["add", name, "--password-stdin", "--role", role],
            Some("a-password-1"),
        );
        assert!(ok, "{output}");
        let answer: Value = server
            .login(name, "a-password-1")
            .await
            .json()
            .await
            .unwrap();
        assert_contract(Contract::Token, &answer);
        assert_eq!(answer["role"], role);
    }
    let token = body["access_token"].as_str().unwrap();
    let header = jsonwebtoken::decode_header(token).unwrap();
    assert_eq!(header.alg, Algorithm::EdDSA);
    assert!(header.kid.is_some_and(|kid| !kid.is_empty()));

    let response = server.get(token, "/problems").await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn bad_credentials_answer_one_401_in_about_the_same_time() {
    let server = TestServer::start();
    let wrong_password = expect_problem(
        server.login("admin", "wrong").await,
        StatusCode::UNAUTHORIZED,
    )
    .await;
    let unknown_user = expect_problem(
        server.login("nobody", "wrong").await,
        StatusCode::UNAUTHORIZED,
    )
    .await;
    assert_eq!(
        wrong_password, unknown_user,
        "the two failures must not be told apart"
    );

    // Both run one argon2 verification; compare the medians of interleaved attempts, each
    // from an address of its own, so that the failed-login throttle never answers instead.
    let mut wrong_times = Vec::new();
    let mut unknown_times = Vec::new();
    for attempt in 0..7u8 {
        for (user, times, subnet) in [
            ("admin", &mut wrong_times, 2u8),
            ("nobody", &mut unknown_times, 3),
        ] {
            let client = client_from([127, 0, subnet, attempt + 1]);
            let started = Instant::now();
            let response = login_from(&server, &client, user, "wrong").await;
            times.push(started.elapsed());
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        }
    }
    wrong_times.sort();
    unknown_times.sort();
    let ratio = wrong_times[3].as_secs_f64() / unknown_times[3].as_secs_f64();
    assert!(
        (0.33..3.0).contains(&ratio),
        "wrong password {:?} vs unknown user {:?}",
        wrong_times[3],
        unknown_times[3]
    );

    // Malformed bodies are told apart from wrong credentials.
    let response = server
        .client
        .post(server.url("/login"))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::BAD_REQUEST).await;
    let response = server
        .client
        .post(server.url("/login"))
        .json(&json!({"username": "admin"}))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
}

fn sign(header: &Header, claims: &Value, key: &SigningKey) -> String {
    let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
    jsonwebtoken::encode(
        header,
        claims,
        &EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn every_bad_token_answers_401_with_a_bearer_challenge() {
    let server = TestServer::start();
    let good = server.admin_token().await;
    let kid = jsonwebtoken::decode_header(&good).unwrap().kid.unwrap();
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(good.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    let now = chrono::Utc::now().timestamp();

    // The server's own key, read from its data directory, to mint an expired token.
    let pem = std::fs::read_to_string(server.data_dir().join("jwt-ed25519.pem")).unwrap();
    let server_key = SigningKey::from_pkcs8_pem(&pem).unwrap();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.clone());
    let mut expired_claims = claims.clone();
    expired_claims["exp"] = json!(now - 3600);
    expired_claims["iat"] = json!(now - 7200);
    let expired = sign(&header, &expired_claims, &server_key);

    // Same claims and kid, signed by another key.
    let forged = sign(
        &header,
        &claims,
        &SigningKey::generate(&mut rand::rngs::OsRng),
    );

    // `alg: none` with no signature.
    let none_header =
        URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": "JWT", "kid": kid}).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let unsigned = format!("{none_header}.{payload}.");

    // A valid signature over tampered claims.
    let parts: Vec<&str> = good.split('.').collect();
    let mut tampered_claims = claims.clone();
    tampered_claims["sub"] = json!("someone-else");
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(tampered_claims.to_string()),
        parts[2]
    );

    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("not bearer", Some(format!("Basic {good}"))),
        ("malformed", Some("Bearer not-a-jwt".into())),
        ("empty", Some("Bearer ".into())),
        ("expired", Some(format!("Bearer {expired}"))),
        ("forged", Some(format!("Bearer {forged}"))),
        ("alg none", Some(format!("Bearer {unsigned}"))),
        ("tampered", Some(format!("Bearer {tampered}"))),
    ];
    for (name, authorization) in cases {
        let mut request = server.client.get(server.url("/job/anything"));
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "case {name}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(challenge.starts_with("Bearer"), "case {name}: {challenge}");
        expect_problem(response, StatusCode::UNAUTHORIZED).await;
    }
}

#[tokio::test]
async fn tokens_survive_a_restart() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let data_dir = server.kill();
    let server = TestServer::start_in(data_dir, &[]);
    let response = server.get(&token, "/problems").await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn first_start_without_a_password_generates_one_for_admin() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir.path())
        .env_remove("CASELOAD_ADMIN_PASSWORD")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let _server = KillOnDrop(child);
    let mut printed = Vec::new();
    let mut base_url = None;
    for line in std::io::BufRead::lines(stdout).map_while(Result::ok) {
        if let Some(address) = line.strip_prefix("listening on ") {
            base_url = Some(address.to_owned());
            break;
        }
        printed.push(line);
    }
    let base_url = base_url.expect("the server listens");
    let path = data_dir.path().join("admin-password");
    let password = std::fs::read_to_string(&path).unwrap().trim().to_owned();
    assert!(password.len() >= 16);
    assert!(
        printed.iter().any(|line| line.contains(&password)),
        "printed once: {printed:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let response = reqwest::Client::new()
        .post(format!("{base_url}/login"))
        .json(&json!({"username": "admin", "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

/// Polls `GET /jobs` with `token` until it answers `status`: a user's change reaches every
/// request within the access check's cache time (2 s).
async fn wait_for_jobs_status(server: &TestServer, token: &str, status: StatusCode) {
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let response = server.get(token, "/jobs").await;
        if response.status() == status {
            if status == StatusCode::UNAUTHORIZED {
                expect_problem(response, status).await;
            }
            return;
        }
        assert!(
            Instant::now() < deadline,
            "GET /jobs never answered {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_deleted_or_disabled_user_s_tokens_are_refused() {
    let server = TestServer::start();
    server.add_user("alice", "alice's password");
    server.add_user("bob", "bob's password");
    let alice = server.token("alice", "alice's password").await;
    let bob = server.token("bob", "bob's password").await;

    let (ok, output) = server.user_command(&["delete", "alice"], None);
    assert!(ok, "{output}");
    wait_for_jobs_status(&server, &alice, StatusCode::UNAUTHORIZED).await;
    // Not the 500 of a foreign key: the user is checked first.
    let response = server
        .post_json(
            &alice,
            "/problem/maxcut",
            &json!({"num_nodes": 2, "edges": []}),
        )
        .await;
    let body = expect_problem(response, StatusCode::UNAUTHORIZED).await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("no longer exists"),
        "{body}"
    );
    let (ok, output) = server.user_command(&["delete", "alice"], None);
    assert!(!ok && output.contains("no user \"alice\""), "{output}");

    let (ok, output) = server.user_command(&["disable", "bob"], None);
    assert!(ok, "{output}");
    wait_for_jobs_status(&server, &bob, StatusCode::UNAUTHORIZED).await;
    let refused = server.login("bob", "bob's password").await;
    expect_problem(refused, StatusCode::UNAUTHORIZED).await;
    let (ok, output) = server.user_command(&["enable", "bob"], None);
    assert!(ok, "{output}");
    // Enabled again, bob logs in anew: the tokens issued before the disable stay refused.
    let fresh = server.token("bob", "bob's password").await;
    wait_for_jobs_status(&server, &fresh, StatusCode::OK).await;
    let old = server.get(&bob, "/jobs").await;
    expect_problem(old, StatusCode::UNAUTHORIZED).await;
}

#[tokio::test]
async fn revoked_tokens_and_a_new_password_end_old_tokens() {
    let server = TestServer::start();
    server.add_user("carol", "first password");
    let first = server.token("carol", "first password").await;

    let (ok, output) = server.user_command(&["revoke", "carol"], None);
    assert!(ok, "{output}");
    wait_for_jobs_status(&server, &first, StatusCode::UNAUTHORIZED).await;
    let second = server.token("carol", "first password").await;
    wait_for_jobs_status(&server, &second, StatusCode::OK).await;

    let (ok, output) = server.user_command(
        &["passwd", "carol", "--password-stdin"],
        Some("second password"),
    );
    assert!(ok, "{output}");
    wait_for_jobs_status(&server, &second, StatusCode::UNAUTHORIZED).await;
    expect_problem(
        server.login("carol", "first password").await,
        StatusCode::UNAUTHORIZED,
    )
    .await;
    let third = server.token("carol", "second password").await;
    wait_for_jobs_status(&server, &third, StatusCode::OK).await;
}

#[tokio::test]
async fn a_token_signed_with_the_real_key_for_no_user_is_refused() {
    let server = TestServer::start();
    server.admin_token().await;
    let keys = caseload::auth::TokenKeys::load_or_create(
        &server.data_dir().join("jwt-ed25519.pem"),
        std::time::Duration::from_secs(600),
    )
    .unwrap();
    let forged = keys.issue("01a00000-0000-7000-8000-000000000000", "mallory");
    let response = server
        .post_json(
            &forged,
            "/problem/maxcut",
            &json!({"num_nodes": 2, "edges": []}),
        )
        .await;
    let body = expect_problem(response, StatusCode::UNAUTHORIZED).await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("no longer exists"),
        "{body}"
    );
    expect_problem(server.get(&forged, "/jobs").await, StatusCode::UNAUTHORIZED).await;
}

/// A client whose connections come from `address` (any of 127.0.0.0/8 reaches the server).
fn client_from(address: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(address))
        .build()
        .unwrap()
}

async fn login_from(
    server: &TestServer,
    client: &reqwest::Client,
    user: &str,
    password: &str,
) -> reqwest::Response {
    client
        .post(server.url("/login"))
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_password_guesser_is_throttled_and_the_owner_is_not_locked_out() {
    let server = TestServer::start();
    server.add_user("erin", "erin's password");
    let guesser = client_from([127, 0, 0, 2]);
    let owner = client_from([127, 0, 0, 3]);
    for attempt in 0..5 {
        let response = login_from(&server, &guesser, "erin", &format!("guess {attempt}")).await;
        expect_problem(response, StatusCode::UNAUTHORIZED).await;
    }
    let throttled = login_from(&server, &guesser, "erin", "guess 5").await;
    let retry_after: u64 = throttled.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    let body = expect_problem(throttled, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(body["type"], "urn:caseload:problem:too-many-attempts");
    // The 429 came late, after the 1 s wait: the next guess is heard, and fails, and the
    // wait doubles.
    let response = login_from(&server, &guesser, "erin", "guess 6").await;
    expect_problem(response, StatusCode::UNAUTHORIZED).await;
    // Even the right password waits, from the guessing address...
    let throttled = login_from(&server, &guesser, "erin", "erin's password").await;
    let retry_after: u64 = throttled.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    expect_problem(throttled, StatusCode::TOO_MANY_REQUESTS).await;
    // ...but not from the owner's, which never failed.
    let response = login_from(&server, &owner, "erin", "erin's password").await;
    assert_eq!(response.status(), StatusCode::OK);

    let metrics = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|line| line == "caseload_logins_failed_total 6"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|line| line == "caseload_logins_throttled_total 2"),
        "{metrics}"
    );

    // Once the wait is over, the guessing address is heard again.
    tokio::time::sleep(std::time::Duration::from_secs(retry_after)).await;
    let response = login_from(&server, &guesser, "erin", "erin's password").await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn administrators_are_made_and_the_last_one_stays() {
    let server = TestServer::start();
    // The first user, made at the first start, is one; so is a user added with --admin.
    server.add_user("alice", "alice's password");
    let (ok, output) = server.user_command(
        &["add", "root2", "--password-stdin", "--admin"],
        Some("root2 password"),
    );
    assert!(ok && output.contains("administrator"), "{output}");
    // A name and password of the rule only.
    for (name, password) in [("bob smith", "bob's password"), ("bob", "short")] {
        let (ok, output) = server.user_command(&["add", name, "--password-stdin"], Some(password));
        assert!(!ok, "{name}: {output}");
    }
    let (ok, output) = server.user_command(&["admin", "admin", "off"], None);
    assert!(ok, "{output}");
    // root2 is the last one now: it stays.
    let (ok, output) = server.user_command(&["admin", "root2", "off"], None);
    assert!(!ok && output.contains("last administrator"), "{output}");
    let (ok, output) = server.user_command(&["admin", "alice", "on"], None);
    assert!(ok, "{output}");
    let (ok, output) = server.user_command(&["admin", "root2", "off"], None);
    assert!(ok, "{output}");
    let (ok, output) = server.user_command(&["admin", "nobody", "on"], None);
    assert!(!ok && output.contains("no user"), "{output}");
}
