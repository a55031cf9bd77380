//! Incumbents: a plugin reports solutions as it finds them (`incumbent`, added in
//! caseload:plugin@0.2.1); clients read the newest at `GET /job/<id>/incumbents` and as
//! `incumbent` events on the job's stream; max-cut reports its cuts; a plugin built against
//! 0.2.0 still loads and runs.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem};
use crate::waiting::{events_url, read_events};

/// The test guest `versioned` built against caseload:plugin@0.2.0, before `incumbent` was
/// added (see tests/fixtures/README.md).
const VERSIONED_0_2_0: &[u8] = include_bytes!("fixtures/versioned-0.2.0.wasm");

const G1: &str = include_str!("fixtures/G1.txt");

async fn incumbents(server: &TestServer, token: &str, job: &str) -> Vec<Value> {
    let response = server.get(token, &format!("/job/{job}/incumbents")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["job_id"], job);
    body["incumbents"].as_array().unwrap().clone()
}

#[tokio::test]
async fn incumbents_are_kept_read_and_streamed_as_the_plugin_reports_them() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.publish_versioned(&token, "", "v1").await;
    let job = server
        .launch(
            &token,
            "versioned",
            &json!({"sleep_ms": 1_500, "incumbents": true, "value": 1}),
        )
        .await;
    let stream = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let events = read_events(stream, |event| event.event == "end").await;
    let view = server.job(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");

    let kept = incumbents(&server, &token, &job).await;
    // One each 250 ms of 1.5 s: a few, however the machine is loaded.
    assert!(kept.len() >= 2, "{kept:?}");
    let (execution_id, execution) = view["executions"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    for incumbent in &kept {
        assert_eq!(incumbent["execution_id"], execution_id.as_str());
        assert_eq!(
            incumbent["solution"],
            json!({"score": incumbent["objective"]})
        );
        assert!(incumbent["found_at"].as_str().unwrap().ends_with('Z'));
    }
    let seqs: Vec<u64> = kept.iter().map(|i| i["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "{seqs:?}");
    let objectives: Vec<f64> = kept
        .iter()
        .map(|i| i["objective"].as_f64().unwrap())
        .collect();
    assert!(
        objectives.windows(2).all(|pair| pair[0] < pair[1]),
        "{objectives:?}"
    );
    // Every report is kept (fewer than the bound), the last ones too: they were stored
    // before the end.
    assert_eq!(execution["incumbents"].as_u64(), seqs.last().copied());
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());

    // The stream sent each once, in order, before its end.
    let streamed: Vec<&Value> = events
        .iter()
        .filter(|event| event.event == "incumbent")
        .map(|event| &event.data)
        .collect();
    assert_eq!(streamed.len(), kept.len(), "{events:?}");
    for (sent, kept) in streamed.iter().zip(&kept) {
        assert_eq!(*sent, kept);
    }
    assert_eq!(events.last().map(|event| event.event.as_str()), Some("end"));

    // A stream resumed after the second incumbent sends only the ones after it.
    let resumed = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&token)
        .header("last-event-id", "1:0:RUNNING:2")
        .send()
        .await
        .unwrap();
    let again = read_events(resumed, |event| event.event == "end").await;
    let resent: Vec<u64> = again
        .iter()
        .filter(|event| event.event == "incumbent")
        .map(|event| event.data["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(resent, seqs[2..]);

    // Another user's job is not found; a job without reports has none.
    server.add_user("bob", "bob-password-1");
    let bob = server.token("bob", "bob-password-1").await;
    let response = server.get(&bob, &format!("/job/{job}/incumbents")).await;
    expect_problem(response, StatusCode::NOT_FOUND).await;
    let quiet = server.launch(&token, "versioned", &json!({})).await;
    server.wait_until_ended(&token, &quiet).await;
    assert!(incumbents(&server, &token, &quiet).await.is_empty());
}

#[tokio::test]
async fn max_cut_reports_cuts_of_the_graph_it_was_given() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let mut lines = G1.lines();
    let num_nodes: usize = lines
        .next()
        .and_then(|header| header.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let edges: Vec<(usize, usize, f64)> = lines
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields[..] {
                [a, b, w] => Some((
                    a.parse::<usize>().ok()? - 1,
                    b.parse::<usize>().ok()? - 1,
                    w.parse().ok()?,
                )),
                _ => None,
            }
        })
        .collect();
    let body = json!({
        "num_nodes": num_nodes,
        "edges": edges.iter().map(|&(a, b, w)| json!([a, b, w])).collect::<Vec<_>>(),
        "options": {"time_limit_s": 1.5, "seed": 1},
    });
    let job = server.launch(&token, "maxcut", &body).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let kept = incumbents(&server, &token, &job).await;
    assert!(!kept.is_empty(), "{view}");
    let output = server.output(&token, &job).await;
    for incumbent in &kept {
        let partition: Vec<u64> = incumbent["solution"]["partition"]
            .as_array()
            .unwrap()
            .iter()
            .map(|side| side.as_u64().unwrap())
            .collect();
        assert_eq!(partition.len(), num_nodes);
        let cut: f64 = edges
            .iter()
            .filter(|&&(a, b, _)| partition[a] != partition[b])
            .map(|&(_, _, w)| w)
            .sum();
        assert_eq!(incumbent["objective"].as_f64(), Some(cut), "{incumbent}");
        assert_eq!(incumbent["solution"]["cut_value"].as_f64(), Some(cut));
        // Never better than the answer.
        assert!(cut <= output["cut_value"].as_f64().unwrap());
    }
}

#[tokio::test]
async fn a_plugin_built_against_0_2_0_still_loads_and_runs() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let response = server.publish_raw(&token, "", VERSIONED_0_2_0).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let published: Value = response.json().await.unwrap();
    assert_eq!(published["world"], "caseload:plugin@0.2.0", "{published}");
    let job = server
        .launch(&token, "versioned", &json!({"sleep_ms": 10, "value": 3}))
        .await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    assert_eq!(server.output(&token, &job).await["version"], "1.0.0");
    assert!(incumbents(&server, &token, &job).await.is_empty());
    // Plugins built now name the new world.
    server.publish_versioned(&token, "", "v2").await;
    let versions = server.get(&token, "/problem/versioned/versions").await;
    let versions: Value = versions.json().await.unwrap();
    let worlds: Vec<&str> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|version| version["world"].as_str().unwrap())
        .collect();
    assert!(worlds.contains(&"caseload:plugin@0.2.2"), "{versions}");
}

#[tokio::test]
async fn a_run_that_floods_incumbents_gets_its_byte_rate_and_a_warning() {
    for place in [
        "[runaway]\nsandbox = \"server\"\n",
        "[runaway]\nsandbox = \"process\"\n",
    ] {
        let (server, _limits) = crate::support::start_with_limits(place, &[]);
        let token = server.admin_token().await;
        // Megabyte incumbents straight through the host import, as fast as it goes, for 3 s.
        let job = server
            .launch(
                &token,
                "runaway",
                &json!({"mode": "incumbent_flood", "flood_bytes": 1 << 20, "seconds": 3.0}),
            )
            .await;
        let view = server.wait_until_ended(&token, &job).await;
        assert_eq!(view["status"], "COMPLETED", "{place}: {view}");
        let reported = server.output(&token, &job).await["reported"]
            .as_u64()
            .unwrap();
        let (_, execution) = view["executions"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        // The burst and one each two seconds: a handful of the many it sent.
        let taken = execution["incumbents"].as_u64().unwrap();
        assert!(reported > 50, "{place}: only {reported} reports");
        assert!(
            (1..=4).contains(&taken),
            "{place}: {taken} of {reported} incumbents taken"
        );
        let log = execution["logs"]["tail"].as_str().unwrap();
        assert!(log.contains("incumbents dropped"), "{place}: {log}");
    }
}
