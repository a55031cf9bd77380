//! A PostgreSQL batch's launches ([`postgres_launches`]): stored together as each would be
//! alone. Each test writes the same launches two ways, on two scratch databases, and
//! compares what they stored.

use sqlx::Connection;
use sqlx::postgres::PgConnection;

use super::super::batch::{BatchWriter, Outcome, Write};
use super::super::postgres::PostgresWriter;
use super::super::postgres_backend::PostgresStore;
use super::super::postgres_launches;
use super::super::statement::SqlxConnection;
use super::*;
use crate::scratch::ScratchDatabase;

/// What writing launches stored: each launch's answer, the jobs' rows ([`job_rows`]), and
/// alice's and bob's usage ([`usages`]).
type Stored = (Vec<Inserted>, Vec<String>, Vec<(u64, u64)>);

/// Runs `write` twice, each time on a scratch database of its own with users alice and bob:
/// one by one (`false`), then together (`true`). Both must store the same, which it returns.
/// `write` gets the way, the store, its database's URL, alice and bob.
async fn one_by_one_and_together(
    base: Millis,
    write: impl AsyncFn(bool, &PostgresStore, &str, &User, &User) -> Vec<Inserted>,
) -> Stored {
    let mut stored = Vec::new();
    for together in [false, true] {
        let database = ScratchDatabase::create().await;
        let store = PostgresStore::open(&database.url).await.expect("opens");
        let alice = user(&store, "alice").await;
        let bob = user(&store, "bob").await;
        let inserted = write(together, &store, &database.url, &alice, &bob).await;
        let rows = job_rows(&database.url, base).await;
        let usage = usages(&store, &[&alice, &bob]).await;
        stored.push((inserted, rows, usage));
    }
    let together = stored.pop().expect("stored together");
    let one_by_one = stored.pop().expect("stored one by one");
    assert_eq!(together, one_by_one);
    one_by_one
}

/// Every job of the store, one line each, in the order of their ids: its id, its owner's
/// name, its place in the queue and its launch time (both after `base`), whether it is in
/// its owner's own project, then every other column.
async fn job_rows(url: &str, base: Millis) -> Vec<String> {
    let mut connection = PgConnection::connect(url).await.expect("connects");
    sqlx::query_scalar(
        "SELECT concat_ws(' ', jobs.id, users.username, jobs.fair_key - $1,
             jobs.created_at - $1, jobs.project_id = jobs.owner_id,
             to_jsonb(jobs) - 'owner_id' - 'project_id' - 'fair_key' - 'created_at')
         FROM jobs JOIN users ON users.id = jobs.owner_id ORDER BY jobs.id",
    )
    .bind(base)
    .fetch_all(&mut connection)
    .await
    .expect("rows")
}

/// Each owner's pending jobs and dataset bytes, as its quotas count them.
async fn usages(store: &dyn JobStore, owners: &[&User]) -> Vec<(u64, u64)> {
    let mut usages = Vec::new();
    for owner in owners {
        let usage = store
            .usage(&owner.id)
            .await
            .expect("usage")
            .expect("a user");
        usages.push((usage.pending_jobs, usage.dataset_bytes));
    }
    usages
}

/// The places in the queue of [`job_rows`]' jobs.
fn places(rows: &[String]) -> Vec<i64> {
    rows.iter()
        .map(|row| {
            let place = row.split(' ').nth(2).expect("a place");
            place.parse().expect("a number")
        })
        .collect()
}

/// A job of `owner` with id `id`, launched at `created_at`, under `key` if given; its input
/// names it (11 bytes).
fn launch(owner: &User, id: &str, created_at: Millis, key: Option<&str>) -> NewJob {
    NewJob {
        id: id.into(),
        created_at,
        idempotency: key.map(|key| Idempotency {
            key: key.into(),
            request_hash: format!("hash of {id}"),
        }),
        input: format!(r#"{{"id":"{id}"}}"#),
        ..new_job(owner)
    }
}

/// Plain launches inserted in one statement get what each inserted alone gets, in order: the
/// same rows, column by column, the same places in their owners' queues, the same counts,
/// and the same answer for a job stored before (a batch retried), for an idempotency key
/// used before, and for a key used twice in the statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_launches_together_are_stored_as_launches_alone() {
    let base = now_millis();
    let write = async |together, store: &PostgresStore, url: &str, alice: &User, bob: &User| {
        // Stored before: two of alice's jobs pending, one of them under a key.
        for stored in [
            launch(alice, "a0", base, None),
            launch(alice, "a1", base, Some("used")),
        ] {
            store.insert_job(&stored).await.expect("insert");
        }
        // Each optional column set on one job, to a value of its own.
        let launches = [
            NewJob {
                labels: Some(r#"{"labels":"a2"}"#.into()),
                callback_url: Some("http://127.0.0.1:9/a2".into()),
                ..launch(alice, "a2", base + 1, None)
            },
            NewJob {
                rerun_of: Some("rerun of b0".into()),
                binding: PluginBinding {
                    requested: Some("requested by b0".into()),
                    ..new_job(bob).binding
                },
                ..launch(bob, "b0", base, None)
            },
            launch(alice, "a3", base + 2, Some("used")),
            launch(bob, "b1", base + 10, Some("fresh")),
            launch(alice, "a0", base, None),
            launch(bob, "b4", base + 20, Some("fresh")),
            launch(bob, "b5", base + 30, None),
            NewJob {
                warm_start: Some("warm start of a4".into()),
                experiment_id: Some("experiment of a4".into()),
                ..launch(alice, "a4", base + 3, None)
            },
            NewJob {
                race: Some(r#"{"race":"b2"}"#.into()),
                ..launch(bob, "b2", base + 200_000, None)
            },
            NewJob {
                race_of: Some("race of b3".into()),
                ..launch(bob, "b3", base + 200_001, None)
            },
        ];
        let mut connection = PgConnection::connect(url).await.expect("connects");
        let mut transaction = connection.begin().await.expect("begins");
        let mut writer = SqlxConnection::<PostgresStore>(&mut transaction);
        let inserted = if together {
            let launches: Vec<&NewJob> = launches.iter().collect();
            postgres_launches::insert_all(&mut writer, &launches)
                .await
                .expect("inserted")
        } else {
            let mut inserted = Vec::new();
            for launch in &launches {
                let alone = super::super::jobs::insert_job(&mut writer, launch).await;
                inserted.push(alone.expect("inserted"));
            }
            inserted
        };
        transaction.commit().await.expect("commits");
        inserted
    };
    let (inserted, rows, usage) = one_by_one_and_together(base, write).await;
    assert_eq!(rows.len(), 9, "{rows:#?}");
    let existing = |job_id: &str| Inserted::Existing {
        job_id: job_id.into(),
        request_hash: format!("hash of {job_id}"),
    };
    assert_eq!(inserted[2], existing("a1"), "a key used before");
    assert_eq!(
        inserted[4],
        Inserted::Created,
        "a batch retried finds its job"
    );
    assert_eq!(inserted[5], existing("b1"), "a key used twice at once");
    // Jobs of 11 bytes each.
    assert_eq!(usage, [(4, 44), (5, 55)]);
    // By id: a0 a1 a2 a4, b0 b1 b2 b3 b5. Bob's b5 comes next after b1: the key b4 used
    // again leaves no gap. His b2 waits for its own launch time, not one spacing after b5;
    // b3 then one spacing after that.
    let spacing = sql::FAIR_SHARE_SPACING_MS;
    let expected = [
        0,
        spacing,
        2 * spacing,
        3 * spacing,
        0,
        spacing,
        200_000,
        260_000,
        2 * spacing,
    ];
    assert_eq!(places(&rows), expected);
}

/// A batch's plain launches go in together, and the rest of its launches as they would
/// alone: a priority job moves its owner's others back, a shared project's job goes after
/// the project's backlog, and an owner without an allowance is checked launch by launch
/// against its quotas. The batch stores what its writes store one batch each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn on_postgres_a_batch_s_launches_are_stored_as_one_batch_each() {
    let base = now_millis();
    let write = async |one_batch, store: &PostgresStore, _: &str, alice: &User, bob: &User| {
        let team = store.create_project("team").await.expect("a project");
        let writer = PostgresWriter::new(store.writer().clone());
        // Alice's first launch shares out her headroom: the batch's launches of hers are
        // paid for by an allowance. Bob has none, and room for two pending jobs.
        let first = Write::InsertJob(Box::new(launch(alice, "a0", base, None)));
        writer.write_batch(&[first]).await.expect("written");
        let bobs = |id: &str, created_at| NewJob {
            quotas: Quotas {
                pending_jobs: 2,
                ..Quotas::default()
            },
            ..launch(bob, id, created_at, None)
        };
        let launches = [
            launch(alice, "a1", base + 1, None),
            launch(alice, "a2", base + 2, None),
            launch(alice, "a3", base + 3, None),
            NewJob {
                priority: 5,
                ..launch(alice, "a4", base + 4, None)
            },
            NewJob {
                project_id: Some(team.id.clone()),
                ..launch(alice, "a5", base + 5, None)
            },
            bobs("b0", base),
            bobs("b1", base + 1),
            bobs("b2", base + 2),
        ];
        let writes: Vec<Write> = launches
            .into_iter()
            .map(|job| Write::InsertJob(Box::new(job)))
            .collect();
        let outcomes = if one_batch {
            writer.write_batch(&writes).await.expect("written")
        } else {
            let mut outcomes = Vec::new();
            for write in &writes {
                let alone = writer.write_batch(std::slice::from_ref(write)).await;
                outcomes.extend(alone.expect("written"));
            }
            outcomes
        };
        outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Outcome::Inserted(inserted) => inserted,
                other => panic!("a launch answered {other:?}"),
            })
            .collect()
    };
    let (inserted, rows, usage) = one_by_one_and_together(base, write).await;
    assert!(inserted[..7].iter().all(|job| *job == Inserted::Created));
    assert!(matches!(inserted[7], Inserted::Refused(_)), "{inserted:?}");
    assert_eq!(usage, [(6, 66), (2, 22)]);
    // By id: a0 to a5, b0 b1. The priority job takes alice's first place and moves the
    // others back one; the project's job goes after alice's last, the project's first.
    let spacing = sql::FAIR_SHARE_SPACING_MS;
    let expected = [
        spacing,
        2 * spacing,
        3 * spacing,
        4 * spacing,
        0,
        5 * spacing,
        0,
        spacing,
    ];
    assert_eq!(places(&rows), expected);
}
