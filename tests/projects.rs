//! Projects: an administrator makes one and adds members and viewers; a member launches in
//! it; its members read and cancel its jobs, its viewers read them; everyone else gets 404,
//! as for another user's job. Jobs launched before projects stay in their owner's personal
//! project, the default.

use caseload::store::scratch::ScratchDatabase;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ServerOptions, TestServer, expect_problem};
use crate::waiting::{events_url, read_events};

fn launch_body(seconds: f64) -> Value {
    let n = 200;
    let edges: Vec<Value> = (0..n)
        .flat_map(|i| [json!([i, (i + 1) % n, 1]), json!([i, (i * 7 + 3) % n, -1])])
        .collect();
    json!({"num_nodes": n, "edges": edges, "options": {"time_limit_s": seconds}})
}

#[tokio::test]
async fn a_project_s_members_share_its_jobs_and_no_one_else_sees_them() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    for name in ["mark", "vera", "dana"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let mark = server.token("mark", "mark-password-1").await;
    let vera = server.token("vera", "vera-password-1").await;
    let dana = server.token("dana", "dana-password-1").await;
    // Mark's own job, before any project: in his personal project.
    let own = server.launch(&mark, "maxcut", &launch_body(0.1)).await;

    let made = server
        .post_json(&admin, "/admin/projects", &json!({"name": "routing"}))
        .await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let project = made.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    expect_problem(
        server
            .post_json(&admin, "/admin/projects", &json!({"name": "routing"}))
            .await,
        StatusCode::CONFLICT,
    )
    .await;
    assert_eq!(
        server
            .set_member(&admin, &project, "mark", "member")
            .await
            .status(),
        StatusCode::OK
    );
    let listed = server.set_member(&admin, &project, "vera", "viewer").await;
    let listed: Value = listed.json().await.unwrap();
    assert_eq!(
        listed["members"],
        json!([{"username": "mark", "role": "member"}, {"username": "vera", "role": "viewer"}])
    );
    expect_problem(
        server.set_member(&admin, &project, "vera", "owner").await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(
        server
            .set_member(&admin, &project, "nobody", "member")
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        server
            .set_member(&admin, "no-such-project", "vera", "member")
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // Mark's projects: his personal one first.
    let mine: Value = server.get(&mark, "/projects").await.json().await.unwrap();
    assert_eq!(mine["projects"][0]["personal"], true);
    assert_eq!(
        mine["projects"][1],
        json!({"id": project, "name": "routing", "role": "member", "personal": false})
    );

    // Mark launches in the project; Vera (a viewer) reads it, Dana (outside) does not.
    let shared = server
        .launch_in(&mark, "maxcut", &project, &launch_body(30.0))
        .await;
    let view = server.job(&vera, &shared).await;
    assert_eq!(view["project"], project.as_str(), "{view}");
    let listed: Value = server
        .get(&vera, &format!("/jobs?project={project}"))
        .await
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [shared.as_str()]);
    expect_problem(
        server.get(&dana, &format!("/job/{shared}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        server.get(&dana, &format!("/jobs?project={project}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        server
            .post_json(
                &dana,
                &format!("/problem/maxcut?project={project}"),
                &launch_body(0.1),
            )
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    // A viewer launches nothing there, and cancels nothing: it sees the job, so it is told
    // why.
    expect_problem(
        server
            .post_json(
                &vera,
                &format!("/problem/maxcut?project={project}"),
                &launch_body(0.1),
            )
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    expect_problem(
        server.delete(&vera, &format!("/job/{shared}")).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    expect_problem(
        server
            .post_json(&vera, &format!("/job/{shared}/finish"), &json!({}))
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    // Mark's personal jobs stay his.
    expect_problem(
        server.get(&vera, &format!("/job/{own}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // Another member cancels Mark's project job.
    assert_eq!(
        server
            .set_member(&admin, &project, "dana", "member")
            .await
            .status(),
        StatusCode::OK
    );
    let cancelled = server.delete(&dana, &format!("/job/{shared}")).await;
    assert!(cancelled.status().is_success(), "{}", cancelled.status());
    assert_eq!(
        server.wait_until_ended(&mark, &shared).await["status"],
        "CANCELLED"
    );

    // A dataset uploaded into the project: its members launch on it, others cannot.
    let data_file = upload_graph(&server, &mark, &format!("project={project}&")).await;
    let on_dataset = json!({"data_file_identifier": data_file});
    server.launch(&dana, "maxcut", &on_dataset).await;
    expect_problem(
        server
            .post_json(&vera, "/problem/maxcut", &on_dataset)
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // A project with jobs stays; taken out, a member sees no more of it.
    expect_problem(
        server
            .delete(&admin, &format!("/admin/projects/{project}"))
            .await,
        StatusCode::CONFLICT,
    )
    .await;
    // A job Dana launches in the project is the project's: once she leaves, she no longer
    // reads, lists or cancels it, though she launched it.
    let hers = server
        .launch_in(&dana, "maxcut", &project, &launch_body(20.0))
        .await;
    let removed = server
        .delete(&admin, &format!("/admin/projects/{project}/members/dana"))
        .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    expect_problem(
        server.get(&dana, &format!("/job/{shared}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    for path in [
        format!("/job/{hers}"),
        format!("/job/{hers}/output"),
        format!("/job/{hers}/input"),
    ] {
        expect_problem(server.get(&dana, &path).await, StatusCode::NOT_FOUND).await;
    }
    expect_problem(
        server.delete(&dana, &format!("/job/{hers}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let listed: Value = server.get(&dana, "/jobs").await.json().await.unwrap();
    assert!(
        listed["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|job| job["id"] != hers.as_str()),
        "{listed}"
    );
    // The project's members still read it, and cancel it.
    server.delete(&mark, &format!("/job/{hers}")).await;
    expect_problem(
        server
            .post_json(&dana, "/problem/maxcut", &on_dataset)
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let all: Value = server
        .get(&admin, "/admin/projects")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(all["projects"][0]["members"].as_array().unwrap().len(), 2);
    // A name is checked as sent: 101 characters, the first a tab, are too many.
    let tabbed = format!("\t{}", "n".repeat(100));
    expect_problem(
        server
            .post_json(&admin, "/admin/projects", &json!({"name": tabbed}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let empty = server
        .post_json(&admin, "/admin/projects", &json!({"name": "empty"}))
        .await;
    let empty = empty.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        server
            .delete(&admin, &format!("/admin/projects/{empty}"))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
}

/// Uploads a graph as a data file (`query` goes before `filename=`, `&`-terminated) and
/// returns its id.
async fn upload_graph(server: &TestServer, token: &str, query: &str) -> String {
    let uploaded = server
        .client
        .post(server.url(&format!("/data_file?{query}filename=g.json")))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body({
            // A dataset is the input alone: no options inside.
            let mut graph = launch_body(0.1);
            graph.as_object_mut().unwrap().remove("options");
            graph.to_string()
        })
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), StatusCode::CREATED);
    uploaded.json::<Value>().await.unwrap()["data_file_identifier"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn create_key(server: &TestServer, bearer: &str, body: Value) -> reqwest::Response {
    server.post_json(bearer, "/api_keys", &body).await
}

#[tokio::test]
async fn a_key_bound_to_a_project_launches_lists_and_reads_only_there() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    for name in ["mark", "vera"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let mark = server.token("mark", "mark-password-1").await;
    let vera = server.token("vera", "vera-password-1").await;
    let project = server.make_project(&admin, "ops").await;
    server.set_member(&admin, &project, "mark", "member").await;
    server.set_member(&admin, &project, "vera", "viewer").await;
    let own = server.launch(&mark, "maxcut", &launch_body(0.1)).await;
    let mine: Value = server.get(&mark, "/projects").await.json().await.unwrap();
    let personal = mine["projects"][0]["id"].as_str().unwrap().to_owned();

    let created = create_key(
        &server,
        &mark,
        json!({"name": "ci", "scopes": ["read", "launch"], "project": project}),
    )
    .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["project"], project.as_str());
    let key = created["key"].as_str().unwrap().to_owned();
    let listed: Value = server.get(&mark, "/api_keys").await.json().await.unwrap();
    assert_eq!(listed["api_keys"][0]["project"], project.as_str());

    // Its launches (one job or a batch) go to its project without naming it.
    let bound = server.launch(&key, "maxcut", &launch_body(0.1)).await;
    assert_eq!(server.job(&mark, &bound).await["project"], project.as_str());
    let batch = server
        .post_json(
            &key,
            "/problem/maxcut/batch",
            &json!({"jobs": [launch_body(0.1), launch_body(0.1)]}),
        )
        .await;
    assert_eq!(batch.status(), StatusCode::ACCEPTED);
    let batch: Value = batch.json().await.unwrap();
    let batch_job = batch["jobs"][0].as_str().unwrap().to_owned();
    assert_eq!(
        server.job(&vera, &batch_job).await["project"],
        project.as_str()
    );
    // Its list is its project's, and the owner's personal job is out of its reach.
    let listed: Value = server.get(&key, "/jobs").await.json().await.unwrap();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 3, "{listed}");
    assert!(
        listed["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|job| job["id"] != own.as_str())
    );
    // The job's id percent-encoded is the same job to the handler, and as far out of reach.
    let encoded = format!("%{:02X}{}", own.as_bytes()[0], &own[1..]);
    for path in [
        format!("/job/{own}"),
        format!("/job/{own}/output"),
        format!("/job/{encoded}"),
        format!("/job/{encoded}/input"),
        format!("/jobs?project={personal}"),
    ] {
        let answer = server.get(&key, &path).await;
        let status = answer.status();
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::FORBIDDEN,
            "{path}: {status}"
        );
        expect_problem(answer, status).await;
    }
    expect_problem(
        server
            .post_json(
                &key,
                &format!("/problem/maxcut?project={personal}"),
                &launch_body(0.1),
            )
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    // Nor does a launch's body reach its owner's personal data: a data file, or an earlier
    // job as an experiment's input.
    let personal_file = upload_graph(&server, &mark, "").await;
    expect_problem(
        server
            .post_json(
                &key,
                "/problem/maxcut",
                &json!({"data_file_identifier": personal_file}),
            )
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    // Its counts are its project's: the three jobs it lists.
    let counted: Value = server.get(&key, "/jobs/counts").await.json().await.unwrap();
    let total: u64 = counted
        .as_object()
        .unwrap()
        .values()
        .map(|count| count.as_u64().unwrap())
        .sum();
    assert_eq!(total, 3, "{counted}");
    expect_problem(
        server
            .get(&key, &format!("/jobs/counts?project={personal}"))
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    // Its experiments are the project's.
    let experiments: Value = server.get(&key, "/experiments").await.json().await.unwrap();
    assert_eq!(experiments["experiments"], json!([]), "{experiments}");
    // Its webhook secret is the project's.
    let secret_of = |bearer: String, path: String| {
        let server = &server;
        async move {
            let body: Value = server.get(&bearer, &path).await.json().await.unwrap();
            body["secret"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(
        secret_of(key.clone(), "/webhook_secret".into()).await,
        secret_of(mark.clone(), format!("/webhook_secret?project={project}")).await
    );
    // The keys a bound key makes (with the admin scope that takes) are bound where it is.
    let admins: Value = server.get(&admin, "/projects").await.json().await.unwrap();
    let admins_own = admins["projects"][0]["id"].as_str().unwrap().to_owned();
    let bound_admin = create_key(
        &server,
        &admin,
        json!({"name": "ops", "scopes": ["admin"], "project": admins_own}),
    )
    .await;
    let bound_admin = bound_admin.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let child = create_key(
        &server,
        &bound_admin,
        json!({"name": "c", "scopes": ["read"]}),
    )
    .await;
    assert_eq!(child.status(), StatusCode::CREATED);
    assert_eq!(
        child.json::<Value>().await.unwrap()["project"],
        admins_own.as_str()
    );
    expect_problem(
        create_key(
            &server,
            &bound_admin,
            json!({"name": "wider", "scopes": ["read"], "project": project}),
        )
        .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    // A key bound to a shared project, even with the publish scope, does not reach the plugin
    // registry: it is the server's, not a project's.
    server.set_member(&admin, &project, "admin", "member").await;
    let publisher = create_key(
        &server,
        &admin,
        json!({"name": "ops-publisher", "scopes": ["publish"], "project": project}),
    )
    .await;
    assert_eq!(publisher.status(), StatusCode::CREATED);
    let publisher = publisher.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let promoted = server
        .client
        .put(server.url("/problem/maxcut/current"))
        .bearer_auth(&publisher)
        .json(&json!({"version": "0.1.0"}))
        .send()
        .await
        .unwrap();
    expect_problem(promoted, StatusCode::FORBIDDEN).await;

    // A viewer's key for the project only reads; no key for a project one is not in.
    expect_problem(
        create_key(
            &server,
            &vera,
            json!({"name": "v", "scopes": ["launch"], "project": project}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let reader = create_key(
        &server,
        &vera,
        json!({"name": "v", "scopes": ["read"], "project": project}),
    )
    .await;
    assert_eq!(reader.status(), StatusCode::CREATED);
    let reader = reader.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        server.job(&reader, &bound).await["project"],
        project.as_str()
    );
    expect_problem(
        create_key(
            &server,
            &vera,
            json!({"name": "v", "scopes": ["read"], "project": "no-such-project"}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
}

#[tokio::test]
async fn a_project_s_own_cap_on_pending_jobs_holds_beside_its_members_quotas() {
    // No workers: every job stays pending.
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "0"],
        ..Default::default()
    });
    let admin = server.admin_token().await;
    for name in ["mark", "dana"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let mark = server.token("mark", "mark-password-1").await;
    let dana = server.token("dana", "dana-password-1").await;
    let made = server
        .post_json(&admin, "/admin/projects", &json!({"name": "batch"}))
        .await;
    let made: Value = made.json().await.unwrap();
    assert_eq!(made["max_pending_jobs"], Value::Null);
    let project = made["id"].as_str().unwrap().to_owned();
    for name in ["mark", "dana"] {
        server.set_member(&admin, &project, name, "member").await;
    }
    let set_quota = |body: Value| {
        server
            .client
            .patch(server.url(&format!("/admin/projects/{project}")))
            .bearer_auth(&admin)
            .json(&body)
            .send()
    };
    let capped = set_quota(json!({"max_pending_jobs": 2})).await.unwrap();
    assert_eq!(capped.status(), StatusCode::OK);
    assert_eq!(capped.json::<Value>().await.unwrap()["max_pending_jobs"], 2);
    expect_problem(
        set_quota(json!({"max_pending_jobs": -1})).await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    expect_problem(
        server
            .client
            .patch(server.url("/admin/projects/no-such-project"))
            .bearer_auth(&admin)
            .json(&json!({"max_pending_jobs": 1}))
            .send()
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;

    server
        .launch_in(&mark, "maxcut", &project, &launch_body(0.1))
        .await;
    server
        .launch_in(&dana, "maxcut", &project, &launch_body(0.1))
        .await;
    let refused = server
        .post_json(
            &dana,
            &format!("/problem/maxcut?project={project}"),
            &launch_body(0.1),
        )
        .await;
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(
        problem["type"],
        "urn:caseload:problem:quota-project-pending-jobs"
    );
    // The cap is the project's: a member's own jobs are not in it.
    server.launch(&dana, "maxcut", &launch_body(0.1)).await;
    // Lifted, the project takes more.
    assert_eq!(
        set_quota(json!({"max_pending_jobs": null}))
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    server
        .launch_in(&dana, "maxcut", &project, &launch_body(0.1))
        .await;
    let audit: Value = server
        .get(&admin, "/admin/audit")
        .await
        .json()
        .await
        .unwrap();
    assert!(audit.to_string().contains("project.quota_set"), "{audit}");
}

/// `GET /jobs/events?project=`: every job of the project, whoever launched it, for its
/// members, its viewers and the keys bound to it (without naming it); 404 for anyone else,
/// and a stream that ends once its user is taken out of the project.
#[tokio::test]
async fn a_project_s_feed_carries_every_job_in_it_to_whoever_reads_the_project() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    for name in ["mark", "nina", "vera", "dana"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let [mark, nina, vera, dana] = [
        server.token("mark", "mark-password-1").await,
        server.token("nina", "nina-password-1").await,
        server.token("vera", "vera-password-1").await,
        server.token("dana", "dana-password-1").await,
    ];
    let project = server.make_project(&admin, "routing").await;
    for (name, role) in [("mark", "member"), ("nina", "member"), ("vera", "viewer")] {
        server.set_member(&admin, &project, name, role).await;
    }
    let key_of = async |bearer: &str, scopes: Value| {
        let created = create_key(
            &server,
            bearer,
            json!({"name": "ci", "scopes": scopes, "project": project}),
        )
        .await;
        assert_eq!(created.status(), StatusCode::CREATED);
        created.json::<Value>().await.unwrap()["key"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let marks_key = key_of(&mark, json!(["launch"])).await;
    let veras_key = key_of(&vera, json!(["read"])).await;

    // Who may follow the project, and who may not.
    let feed = format!("/jobs/events?project={project}");
    let cases: [(&str, &str, &str, StatusCode); 7] = [
        ("a member", &mark, &feed, StatusCode::OK),
        ("a viewer", &vera, &feed, StatusCode::OK),
        (
            "a viewer's key bound to it",
            &veras_key,
            "/jobs/events",
            StatusCode::OK,
        ),
        (
            "a key bound to it, naming it",
            &marks_key,
            &feed,
            StatusCode::OK,
        ),
        ("someone not in it", &dana, &feed, StatusCode::NOT_FOUND),
        (
            "a project that is not",
            &mark,
            "/jobs/events?project=nope",
            StatusCode::NOT_FOUND,
        ),
        (
            "a key bound to it, naming another",
            &marks_key,
            "/jobs/events?project=nope",
            StatusCode::FORBIDDEN,
        ),
    ];
    let mut streams = Vec::new();
    for (who, bearer, path, status) in cases {
        let response = events_url(&server, path)
            .bearer_auth(bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{who}");
        if status == StatusCode::OK {
            streams.push((who, response));
        } else {
            expect_problem(response, status).await;
        }
    }

    // Opened before the launches: a teammate's job, a job of the bound key, and a personal
    // job that is not the project's.
    let tiny = json!({"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]});
    let ninas = server.launch_in(&nina, "maxcut", &project, &tiny).await;
    let keys = server.launch(&marks_key, "maxcut", &tiny).await;
    let personal = server.launch(&mark, "maxcut", &tiny).await;
    server.wait_until_ended(&mark, &personal).await;
    for (who, stream) in streams {
        let mut completed = std::collections::HashSet::new();
        let events = read_events(stream, |event| {
            if event.data["status"] == "COMPLETED" {
                completed.insert(event.data["id"].as_str().unwrap().to_owned());
            }
            completed.contains(&ninas) && completed.contains(&keys)
        })
        .await;
        assert!(
            events
                .iter()
                .all(|event| event.data["id"] != personal.as_str()),
            "{who} heard of a personal job: {events:?}"
        );
    }
    // Resumed from the start: each of the project's jobs at its last status.
    let resumed = events_url(&server, "/jobs/events")
        .bearer_auth(&veras_key)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    let mut replayed = std::collections::HashSet::new();
    read_events(resumed, |event| {
        assert_eq!(event.data["status"], "COMPLETED", "{event:?}");
        assert_ne!(event.data["id"], personal.as_str());
        replayed.insert(event.data["id"].as_str().unwrap().to_owned());
        replayed.len() == 2
    })
    .await;

    // Taken out of the project, Nina hears no more of it: her stream ends at its next news
    // (within a second of the removal).
    let stream = events_url(&server, &feed)
        .bearer_auth(&nina)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let removed = server
        .delete(&admin, &format!("/admin/projects/{project}/members/nina"))
        .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let launching = tokio::spawn({
        let (base, mark, project, tiny) = (
            server.base_url.clone(),
            mark.clone(),
            project.clone(),
            tiny.clone(),
        );
        async move {
            let client = reqwest::Client::new();
            // A job a second, until the test is done with this task.
            loop {
                let _ = client
                    .post(format!("{base}/problem/maxcut?project={project}"))
                    .bearer_auth(&mark)
                    .json(&tiny)
                    .send()
                    .await;
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
        }
    });
    // Read until it ends (the helper fails the test if it is still open after 30 s).
    let events = read_events(stream, |_| false).await;
    launching.abort();
    assert!(
        events.iter().all(|event| event.event == "status"),
        "{events:?}"
    );
}

/// On PostgreSQL every replica hears a project's changes: a stream of the project on a
/// replica that runs no job hears the teammate's job end on the replica that runs it.
#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn a_project_s_feed_hears_its_jobs_from_every_replica() {
    let database = ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let key_file = key_file.to_str().unwrap();
    let common = ["--database-url", &database.url, "--jwt-key-file", key_file];
    let front_args = [&common[..], &["--workers", "0"]].concat();
    let front = TestServer::start_with(ServerOptions {
        args: &front_args,
        ..Default::default()
    });
    let runner = TestServer::start_with(ServerOptions {
        args: &common,
        ..Default::default()
    });
    let admin = front.admin_token().await;
    for name in ["mark", "vera"] {
        let body = json!({"username": name, "password": format!("{name}-password-1")});
        let made = front.post_json(&admin, "/admin/users", &body).await;
        assert_eq!(made.status(), StatusCode::CREATED);
    }
    let mark = runner.token("mark", "mark-password-1").await;
    let vera = front.token("vera", "vera-password-1").await;
    let project = front.make_project(&admin, "routing").await;
    front.set_member(&admin, &project, "mark", "member").await;
    front.set_member(&admin, &project, "vera", "viewer").await;
    let stream = events_url(&front, &format!("/jobs/events?project={project}"))
        .bearer_auth(&vera)
        .send()
        .await
        .unwrap();
    let tiny = json!({"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]});
    let job = runner.launch_in(&mark, "maxcut", &project, &tiny).await;
    let events = read_events(stream, |event| {
        event.data["id"] == job.as_str() && event.data["status"] == "COMPLETED"
    })
    .await;
    assert!(!events.is_empty());
    drop(runner);
}

#[tokio::test]
async fn counts_are_a_project_s_when_it_is_asked_for() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    for name in ["mark", "vera", "dana"] {
        server.add_user(name, &format!("{name}-password-1"));
    }
    let mark = server.token("mark", "mark-password-1").await;
    let vera = server.token("vera", "vera-password-1").await;
    let dana = server.token("dana", "dana-password-1").await;
    let project = server.make_project(&admin, "counted").await;
    server.set_member(&admin, &project, "mark", "member").await;
    server.set_member(&admin, &project, "dana", "member").await;
    server.set_member(&admin, &project, "vera", "viewer").await;
    let small = json!({"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]});
    let mut jobs = Vec::new();
    for _ in 0..2 {
        jobs.push(server.launch(&mark, "maxcut", &small).await);
    }
    jobs.push(server.launch_in(&mark, "maxcut", &project, &small).await);
    jobs.push(server.launch_in(&dana, "maxcut", &project, &small).await);
    for (job, token) in jobs.iter().zip([&mark, &mark, &mark, &dana]) {
        server.wait_until_ended(token, job).await;
    }
    let counts = |token: &str, query: &str| {
        let (server, token, path) = (&server, token.to_owned(), format!("/jobs/counts{query}"));
        async move {
            let response = server.get(&token, &path).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            response.json::<Value>().await.unwrap()
        }
    };
    let in_project = format!("?project={project}");
    // The project's: its members' jobs there, for each of its members and viewers.
    for token in [&mark, &dana, &vera] {
        let counted = counts(token, &in_project).await;
        assert_eq!(counted["COMPLETED"], 2, "{counted}");
        assert_eq!(counted["PENDING"], 0, "{counted}");
    }
    // The caller's own, without a project: Mark's three, Dana's one, Vera's none.
    for (token, completed) in [(&mark, 3), (&dana, 1), (&vera, 0)] {
        assert_eq!(counts(token, "").await["COMPLETED"], completed);
    }
    // Anyone not in it hears of no such project.
    expect_problem(
        server
            .get(&admin, &format!("/jobs/counts{in_project}"))
            .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_problem(
        server.get(&mark, "/jobs/counts?colour=red").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
}
