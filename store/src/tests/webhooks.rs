//! Webhooks: the outbox a job's end fills and the fair claims of dispatchers.

use super::*;

/// The end of a job with a callback queues one delivery, in the transaction that ends it;
/// a claimed delivery is held from other dispatchers until settled or its hold runs out.
pub(super) async fn a_job_s_end_queues_its_callback_once(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let job = NewJob {
        callback_url: Some("https://hooks.example.com/end".into()),
        ..new_job(&alice)
    };
    store.insert_job(&job).await.expect("insert");
    // A job without a callback queues nothing.
    store.insert_job(&new_job(&alice)).await.expect("insert");
    assert!(
        store
            .claim_webhooks(&webhook_claim(10, LONG))
            .await
            .expect("claim")
            .is_empty()
    );
    for _ in 0..2 {
        complete_next(store, "1").await;
    }
    let claimed = store
        .claim_webhooks(&webhook_claim(10, LONG))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let delivery = &claimed[0];
    assert_eq!(delivery.job_id, job.id);
    assert_eq!(delivery.owner_id, alice.id);
    assert_eq!(delivery.status, JobStatus::Completed);
    assert_eq!(delivery.attempts, 1);
    // Held: another dispatcher finds nothing.
    assert!(
        store
            .claim_webhooks(&webhook_claim(10, LONG))
            .await
            .expect("claim")
            .is_empty()
    );
    // Due again at once, then delivered.
    store
        .settle_webhook(
            &delivery.id,
            &WebhookOutcome::RetryAt {
                at: 0,
                error: "503".into(),
            },
        )
        .await
        .expect("settle");
    let again = store
        .claim_webhooks(&webhook_claim(10, LONG))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 2);
    store
        .settle_webhook(&delivery.id, &WebhookOutcome::Delivered)
        .await
        .expect("settle");
    assert!(
        store
            .claim_webhooks(&webhook_claim(10, Duration::ZERO))
            .await
            .expect("claim")
            .is_empty()
    );
    // The secret is made once and kept, until rotated.
    let secret = store
        .webhook_secret(SecretHolder::User(&alice.id), "whsec_first", false)
        .await
        .expect("secret");
    assert_eq!(secret.as_deref(), Some("whsec_first"));
    let kept = store
        .webhook_secret(SecretHolder::User(&alice.id), "whsec_second", false)
        .await
        .expect("secret");
    assert_eq!(kept.as_deref(), Some("whsec_first"));
    let rotated = store
        .webhook_secret(SecretHolder::User(&alice.id), "whsec_third", true)
        .await
        .expect("secret");
    assert_eq!(rotated.as_deref(), Some("whsec_third"));
}

/// A claim of up to `deliveries`, with no bound per destination that matters.
pub(super) fn webhook_claim(deliveries: u32, hold: Duration) -> WebhookClaim {
    WebhookClaim {
        deliveries,
        per_destination: deliveries,
        hold,
    }
}

/// Ends one job of `owner`'s with a callback to `url`, which queues its delivery.
pub(super) async fn end_with_callback(store: &dyn JobStore, owner: &User, url: &str) {
    let job = NewJob {
        callback_url: Some(url.into()),
        ..new_job(owner)
    };
    store.insert_job(&job).await.expect("insert");
    complete_next(store, "1").await;
}

/// A delivery's destination: its URL's scheme, host and port.
pub(super) fn destination(delivery: &WebhookDelivery) -> String {
    let url = url::Url::parse(&delivery.url).expect("a URL");
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().expect("a host"),
        url.port_or_known_default().expect("a port")
    )
}

/// A backlog at one receiver (one that never answers, say) neither takes every place nor
/// goes first: owners take turns, and at most `per_destination` deliveries are in flight to
/// one scheme, host and port at once, those of earlier claims counted.
pub(super) async fn webhook_claims_take_owners_in_turn_within_a_bound_per_destination(
    backend: Backend,
) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    let carol = user(store, "carol").await;
    for _ in 0..10 {
        end_with_callback(store, &alice, "https://stuck.example.com/hook").await;
    }
    end_with_callback(store, &alice, "https://stuck.example.com:8443/hook").await;
    end_with_callback(store, &bob, "https://stuck.example.com/bob").await;
    end_with_callback(store, &carol, "http://hooks.example.org/carol").await;
    let claim = |deliveries| WebhookClaim {
        deliveries,
        per_destination: 4,
        hold: LONG,
    };
    let stuck = "https://stuck.example.com:443";

    // Owners in turn: one each, though alice's eleven are older.
    let first = store.claim_webhooks(&claim(3)).await.expect("claim");
    let owners: HashSet<&str> = first
        .iter()
        .map(|delivery| delivery.owner_id.as_str())
        .collect();
    assert_eq!(
        owners,
        HashSet::from([alice.id.as_str(), bob.id.as_str(), carol.id.as_str()])
    );

    // Then what the bound leaves: four in flight to the stuck receiver, bob's among them.
    let second = store.claim_webhooks(&claim(32)).await.expect("claim");
    let claimed: Vec<&WebhookDelivery> = first.iter().chain(&second).collect();
    let mut per_destination: HashMap<String, usize> = HashMap::new();
    for delivery in &claimed {
        *per_destination.entry(destination(delivery)).or_default() += 1;
    }
    assert_eq!(
        per_destination,
        HashMap::from([
            (stuck.to_owned(), 4),
            ("https://stuck.example.com:8443".to_owned(), 1),
            ("http://hooks.example.org:80".to_owned(), 1),
        ])
    );
    assert!(
        claimed
            .iter()
            .any(|delivery| delivery.owner_id == bob.id && destination(delivery) == stuck)
    );
    assert!(
        store
            .claim_webhooks(&claim(32))
            .await
            .expect("claim")
            .is_empty()
    );

    // An attempt recorded frees its place, for one more of the backlog.
    let settled = claimed
        .iter()
        .find(|delivery| destination(delivery) == stuck)
        .expect("one to the stuck receiver");
    store
        .settle_webhook(
            &settled.id,
            &WebhookOutcome::RetryAt {
                at: now_millis() + 3_600_000,
                error: "no answer within 10 s".into(),
            },
        )
        .await
        .expect("settle");
    let next = store.claim_webhooks(&claim(32)).await.expect("claim");
    assert_eq!(next.len(), 1);
    assert_eq!(destination(&next[0]), stuck);
    assert_eq!(next[0].owner_id, alice.id);

    // A claim that ran out (its dispatcher died) holds no place: all come due again.
    let dave = user(store, "dave").await;
    for _ in 0..4 {
        end_with_callback(store, &dave, "http://gone.example.net/hook").await;
    }
    let expiring = WebhookClaim {
        hold: Duration::ZERO,
        ..claim(32)
    };
    for _ in 0..2 {
        let claimed = store.claim_webhooks(&expiring).await.expect("claim");
        assert_eq!(claimed.len(), 4, "{claimed:?}");
    }
}
