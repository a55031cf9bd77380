//! Signatures as the Standard Webhooks specification (standardwebhooks.com) has them: the
//! secret is `whsec_` and base64 of 32 random bytes; a message is signed with HMAC-SHA256 of
//! `<webhook-id>.<webhook-timestamp>.<body>` under the secret's bytes, and the signature sent
//! as `v1,<base64>` in `webhook-signature`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

const PREFIX: &str = "whsec_";

/// A new secret.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{PREFIX}{}", STANDARD.encode(bytes))
}

/// The `webhook-signature` value of a message, or `None` for a secret that is not one.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let key = STANDARD.decode(secret.strip_prefix(PREFIX)?).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn the_specification_s_example_signs_alike() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body).as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn a_new_secret_signs() {
        let secret = new_secret();
        assert!(signature(&secret, "msg_1", 1, b"{}").is_some());
        assert_ne!(secret, new_secret());
    }
}
