//! API keys: stored with their owner's name read back, listed, touched, revoked only by
//! whom may, and gone with their owner.

use super::*;

fn key(id: &str, owner: &User) -> ApiKeyRecord {
    ApiKeyRecord {
        id: id.into(),
        owner_id: owner.id.clone(),
        owner_name: String::new(),
        name: format!("key {id}"),
        secret_hash: "ab".repeat(32),
        scopes: vec!["read".into(), "launch".into()],
        created_at: now_millis(),
        expires_at: Some(now_millis() + 60_000),
        last_used_at: None,
        project_id: None,
    }
}

pub(super) async fn api_keys_are_kept_listed_touched_and_revoked(backend: Backend) {
    let store = backend.store.as_ref();
    let alice = user(store, "alice").await;
    let bob = user(store, "bob").await;
    store
        .create_api_key(&key("aaaaaaaaaaaa", &alice))
        .await
        .expect("create");
    let mut bobs = key("bbbbbbbbbbbb", &bob);
    bobs.project_id = Some(bob.id.clone());
    store.create_api_key(&bobs).await.expect("create");
    let read = store.api_key("bbbbbbbbbbbb").await.expect("read");
    assert_eq!(read.expect("the key").project_id, Some(bob.id.clone()));

    let read = store
        .api_key("aaaaaaaaaaaa")
        .await
        .expect("read")
        .expect("the key");
    assert_eq!(read.owner_name, "alice");
    assert_eq!(read.scopes, ["read", "launch"]);
    assert!(store.api_key("cccccccccccc").await.expect("read").is_none());
    let alices = store.api_keys(Some(&alice.id)).await.expect("list");
    assert_eq!(alices.len(), 1);
    assert_eq!(store.api_keys(None).await.expect("list").len(), 2);

    store
        .touch_api_key("aaaaaaaaaaaa", 42)
        .await
        .expect("touch");
    let touched = store
        .api_key("aaaaaaaaaaaa")
        .await
        .expect("read")
        .expect("the key");
    assert_eq!(touched.last_used_at, Some(42));

    // Bob cannot revoke Alice's key; she can, and anyone's may be revoked without an owner.
    assert!(
        !store
            .revoke_api_key("aaaaaaaaaaaa", Some(&bob.id))
            .await
            .expect("revoke")
    );
    assert!(
        store
            .revoke_api_key("aaaaaaaaaaaa", Some(&alice.id))
            .await
            .expect("revoke")
    );
    assert!(store.api_key("aaaaaaaaaaaa").await.expect("read").is_none());

    // What a key bound to a project checks a job against: its project, whoever asks.
    let job = NewJob {
        project_id: Some("team".into()),
        ..new_job(&alice)
    };
    store.insert_job(&job).await.expect("insert");
    let project = store
        .project_of(ProjectOwned::Job, &job.id)
        .await
        .expect("read");
    assert_eq!(project, Some(Some("team".into())));
    let missing = store.project_of(ProjectOwned::Job, "no-such-job").await;
    assert_eq!(missing.expect("read"), None);
    let missing = store
        .project_of(ProjectOwned::DataFile, "no-such-file")
        .await;
    assert_eq!(missing.expect("read"), None);

    // A deleted user's keys go with it.
    assert!(store.delete_user("bob").await.expect("delete"));
    assert!(store.api_keys(None).await.expect("list").is_empty());
}
