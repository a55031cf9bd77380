//! Webhooks: a job launched with `options.callback_url` has its end posted there, signed per
//! the Standard Webhooks specification with its owner's secret, at least once. A database
//! trigger writes the delivery in the transaction that ends the job (migration 0012); every
//! replica's dispatcher claims due deliveries for a while, posts them, and records the
//! outcome, so a replica killed mid-delivery leaves them to come due again. Claims take owners
//! in turn and keep a bound on the posts in flight to each destination (migration 0016), so a
//! receiver that never answers delays only its own callbacks.

pub mod policy;
pub mod sign;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::task::JoinSet;
use url::Url;

pub use self::policy::WebhookPolicy;
use crate::store::{
    JobStore, Millis, SecretHolder, WebhookClaim, WebhookDelivery, WebhookOutcome, now_millis,
};

/// After a failed attempt, the wait before the next; past the last, the delivery is given
/// up: retries for a little over a day, as the specification suggests.
const SCHEDULE: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];

/// How long a claimed delivery is this dispatcher's: longer than an attempt can take.
const HOLD: Duration = Duration::from_secs(60);

/// The longest one attempt waits, from the name lookup to the receiver's answer: a receiver
/// that never answers holds one of its destination's places for this long at most. 10 s, as
/// GitHub gives its webhooks, is ample for a receiver that acknowledges first and works later,
/// as the Standard Webhooks specification asks.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Deliveries this dispatcher posts at once.
const IN_FLIGHT: u32 = 32;

/// Deliveries posted at once to one destination (scheme, host and port), by all replicas
/// together. Four keep a healthy receiver busy (at 100 ms an answer, 40 callbacks a second)
/// without a burst of parallel posts against it, and leave a receiver that never answers
/// only four of a dispatcher's 32 places, so the other destinations' callbacks go on.
const PER_DESTINATION: u32 = 4;

/// How often a dispatcher with nothing to post, or with every place taken, looks again.
const IDLE: Duration = Duration::from_millis(250);

/// Starts this replica's dispatcher on the current tokio runtime: it keeps up to
/// `IN_FLIGHT` posts going, claiming more as each one ends.
pub fn start(store: Arc<dyn JobStore>, policy: Arc<WebhookPolicy>) {
    tokio::spawn(async move {
        let mut posts = JoinSet::new();
        loop {
            let free = IN_FLIGHT.saturating_sub(u32::try_from(posts.len()).unwrap_or(u32::MAX));
            if free > 0 {
                let claim = WebhookClaim {
                    deliveries: free,
                    per_destination: PER_DESTINATION,
                    hold: HOLD,
                };
                match store.claim_webhooks(&claim).await {
                    Ok(deliveries) => {
                        for delivery in deliveries {
                            let (store, policy) = (store.clone(), policy.clone());
                            posts.spawn(async move {
                                deliver(store.as_ref(), &policy, &delivery).await;
                            });
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot claim webhook deliveries");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
            // Until a post ends (its place and its destination's are free again), or a while
            // for deliveries that came due meanwhile.
            tokio::select! {
                Some(_) = posts.join_next(), if !posts.is_empty() => {
                    while posts.try_join_next().is_some() {}
                }
                () = tokio::time::sleep(IDLE) => {}
            }
        }
    });
}

async fn deliver(store: &dyn JobStore, policy: &WebhookPolicy, delivery: &WebhookDelivery) {
    let outcome = match send(store, policy, delivery).await {
        Ok(()) => WebhookOutcome::Delivered,
        Err(error) => after_failure(delivery.attempts, error, now_millis()),
    };
    match &outcome {
        WebhookOutcome::Delivered => {
            tracing::info!(job = %delivery.job_id, attempt = delivery.attempts, "webhook delivered");
        }
        WebhookOutcome::RetryAt { error, .. } | WebhookOutcome::GiveUp { error } => {
            tracing::warn!(job = %delivery.job_id, attempt = delivery.attempts, %error, "webhook not delivered");
        }
    }
    if let Err(error) = store.settle_webhook(&delivery.id, &outcome).await {
        // The claim runs out and the delivery is tried again: at least once, not exactly once.
        tracing::warn!(%error, "cannot record a webhook delivery");
    }
}

/// What follows a failed attempt `attempt`: the next one after the schedule's wait, or none.
fn after_failure(attempt: u32, error: String, now: Millis) -> WebhookOutcome {
    match SCHEDULE.get(attempt.saturating_sub(1) as usize) {
        Some(wait) => WebhookOutcome::RetryAt {
            at: now.saturating_add(wait.as_millis() as Millis),
            error,
        },
        None => WebhookOutcome::GiveUp { error },
    }
}

async fn send(
    store: &dyn JobStore,
    policy: &WebhookPolicy,
    delivery: &WebhookDelivery,
) -> Result<(), String> {
    let url = Url::parse(&delivery.url).map_err(|error| error.to_string())?;
    // Read, not guessed: a shared project's job signed with its owner's secret would not
    // verify, so a read that fails fails the attempt, to be tried again.
    let job = store
        .job(&delivery.owner_id, &delivery.job_id)
        .await
        .map_err(|error| error.to_string())?;
    // A shared project's job is signed with the project's secret, whoever launched it.
    let holder = match job.as_ref().and_then(|job| job.project_id.as_deref()) {
        Some(project) if project != delivery.owner_id => SecretHolder::Project(project),
        _ => SecretHolder::User(&delivery.owner_id),
    };
    let secret = store
        .webhook_secret(holder, &sign::new_secret(), false)
        .await
        .map_err(|error| error.to_string())?
        .ok_or("the job's owner or project no longer exists")?;
    let rfc3339 = |millis: Millis| {
        chrono::DateTime::from_timestamp_millis(millis)
            .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    };
    let body = json!({
        "type": "job.ended",
        "timestamp": rfc3339(now_millis()),
        "data": {
            "job": delivery.job_id,
            "status": delivery.status.as_str(),
            "problem": job.as_ref().map(|job| job.problem.clone()),
            "ended_at": job.as_ref().and_then(|job| job.ended_at).and_then(rfc3339),
            "labels": job
                .as_ref()
                .and_then(|job| job.labels.as_deref())
                .and_then(|labels| serde_json::from_str::<serde_json::Value>(labels).ok())
                .unwrap_or_else(|| json!({})),
            "objective": job.as_ref().and_then(|job| job.objective).map(|objective| objective.value),
            "objective_sense": job
                .as_ref()
                .and_then(|job| job.objective)
                .map(|objective| objective.sense.as_str()),
        },
    })
    .to_string();
    let timestamp = now_millis() / 1000;
    let signature = sign::signature(&secret, &delivery.id, timestamp, body.as_bytes())
        .ok_or("the owner's secret is not a webhook secret")?;
    let headers = [
        ("webhook-id", delivery.id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
        ("content-type", "application/json".to_owned()),
    ];
    let attempt = async {
        let address = policy.resolve(&url).await?;
        // To the address just checked: a second lookup could answer another.
        crate::http_post::post(crate::http_post::Post {
            url: &url,
            address,
            headers: &headers,
            body: body.into(),
            read_at_most: 0,
            user_agent: concat!("caseload-webhooks/", env!("CARGO_PKG_VERSION")),
        })
        .await
        .map(|answer| answer.status)
    };
    let status = tokio::time::timeout(ATTEMPT_TIMEOUT, attempt)
        .await
        .map_err(|_| format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs()))??;
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(format!("the receiver answered {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_retried_on_the_schedule_then_given_up() {
        let first = after_failure(1, "500".into(), 1_000);
        assert_eq!(
            first,
            WebhookOutcome::RetryAt {
                at: 6_000,
                error: "500".into()
            }
        );
        let total: Duration = SCHEDULE.iter().sum();
        assert!(total > Duration::from_secs(24 * 3600), "{total:?}");
        assert_eq!(
            after_failure(8, "500".into(), 0),
            WebhookOutcome::GiveUp {
                error: "500".into()
            }
        );
    }
}
