//! Bad input: every 422 names each violation with a JSON pointer; malformed JSON is 400; a body
//! of 4 MB or more is 413, refused before it is read.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, expect_problem};

#[tokio::test]
async fn invalid_max_cut_input_lists_every_violation() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "non-square",
            json!({"num_nodes": 2, "adj_matrix": [[0, 1, 5], [1, 0]]}),
            vec!["/adj_matrix/0"],
        ),
        (
            "wrong row count",
            json!({"num_nodes": 3, "adj_matrix": [[0, 1, 0], [1, 0, 0]]}),
            vec!["/adj_matrix"],
        ),
        (
            "NaN as a string",
            json!({"num_nodes": 2, "adj_matrix": [[0, "NaN"], [1, 0]]}),
            vec!["/adj_matrix/0/1"],
        ),
        (
            "asymmetric",
            json!({"num_nodes": 3, "adj_matrix": [[0, 1, 2], [1, 0, 1], [3, 1, 0]]}),
            vec!["/adj_matrix/0/2"],
        ),
        ("missing adj_matrix", json!({"num_nodes": 2}), vec![""]),
        ("missing num_nodes", json!({"adj_matrix": [[0]]}), vec![""]),
        (
            "num_nodes not an integer",
            json!({"num_nodes": 1.5, "adj_matrix": [[0]]}),
            vec!["/num_nodes"],
        ),
        (
            "unknown field",
            json!({"num_nodes": 1, "adj_matrix": [[0]], "colour": "red"}),
            vec![""],
        ),
        (
            "two violations",
            json!({"num_nodes": "two", "adj_matrix": [[0, "x"]]}),
            vec!["/num_nodes", "/adj_matrix/0/1"],
        ),
        (
            "bad time limit",
            json!({"num_nodes": 1, "adj_matrix": [[0]], "options": {"time_limit_s": -1}}),
            vec!["/options/time_limit_s"],
        ),
        (
            "time limit over the server's",
            json!({"num_nodes": 1, "adj_matrix": [[0]], "options": {"time_limit_s": 3600}}),
            vec!["/options/time_limit_s"],
        ),
        (
            "priority beyond 9",
            json!({"num_nodes": 1, "adj_matrix": [[0]], "options": {"priority": 10}}),
            vec!["/options/priority"],
        ),
        (
            "unknown option",
            json!({"num_nodes": 1, "adj_matrix": [[0]], "options": {"speed": 11}}),
            vec!["/options/speed"],
        ),
        (
            "dataset and inline together",
            json!({"data_file_identifier": "x", "num_nodes": 1, "adj_matrix": [[0]]}),
            vec!["/num_nodes", "/adj_matrix"],
        ),
        ("not an object", json!([1, 2]), vec![""]),
        (
            "more nodes than the memory limit holds",
            json!({"num_nodes": 1_000_000_000u64, "edges": []}),
            vec!["/num_nodes"],
        ),
        (
            "more nodes than 32 bits number",
            json!({"num_nodes": 4_294_967_296u64, "edges": []}),
            vec!["/num_nodes"],
        ),
        (
            "weights whose total overflows",
            json!({"num_nodes": 3, "edges": [[0, 1, 1.7e308], [1, 2, 1.7e308]]}),
            vec!["/edges"],
        ),
    ];
    for (name, body, expected_pointers) in cases {
        let response = server.post_json(&token, "/problem/maxcut", &body).await;
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let mut pointers: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("case {name}: no errors in {problem}"))
            .iter()
            .map(|error| {
                assert!(
                    error["message"]
                        .as_str()
                        .is_some_and(|message| !message.is_empty())
                );
                error["pointer"].as_str().unwrap()
            })
            .collect();
        pointers.sort();
        let mut expected = expected_pointers.clone();
        expected.sort();
        assert_eq!(pointers, expected, "case {name}: {problem}");
    }
}

#[tokio::test]
async fn malformed_json_is_400_and_oversized_bodies_are_413() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let send = |body: Vec<u8>| {
        server
            .client
            .post(server.url("/problem/maxcut"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    expect_problem(
        send(b"{\"num_nodes\": 2,".to_vec()).await.unwrap(),
        StatusCode::BAD_REQUEST,
    )
    .await;

    // Exactly 4 MB, and more: refused on the declared length.
    for size in [4_000_000, 4 * 1024 * 1024] {
        let mut body = b"{\"num_nodes\": 1, \"adj_matrix\": [[0]], \"pad\": \"".to_vec();
        body.resize(size - 2, b'a');
        body.extend_from_slice(b"\"}");
        let problem =
            expect_problem(send(body).await.unwrap(), StatusCode::PAYLOAD_TOO_LARGE).await;
        assert!(problem["detail"].as_str().unwrap().contains("4000000"));
    }

    // A chunked body of unknown length is cut off once it passes the limit.
    // Well over the limit: the rest is drained, so the client reads its 413.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..8).map(|_| Ok(vec![b' '; 1_000_000])).collect();
    let response = server
        .client
        .post(server.url("/problem/maxcut"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures_stream(chunks)))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE).await;

    // Not JSON at all.
    let response = server
        .client
        .post(server.url("/problem/maxcut"))
        .bearer_auth(&token)
        .header("content-type", "text/csv")
        .body("1,2")
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
}

fn futures_stream(
    chunks: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures_util::stream::iter(chunks)
}

/// The 413 comes on the declared length alone: the client has sent no byte of the body.
#[tokio::test]
async fn an_oversized_declared_body_is_refused_before_it_is_sent() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = TestServer::start();
    let token = server.admin_token().await;
    let address = server.address();
    // Without and with `Expect: 100-continue`: the second client must get its 413 straight
    // away, never a `100 Continue` asking for the body.
    for expect in ["", "Expect: 100-continue\r\n"] {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let head = format!(
            "POST /problem/maxcut HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 4000000\r\n{expect}\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; 4096];
        let read = tokio::time::timeout(crate::support::PATIENCE, stream.read(&mut answer))
            .await
            .expect("the server answers without waiting for the body")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(answer.starts_with("HTTP/1.1 413"), "{expect:?}: {answer}");
        assert!(
            answer.contains("application/problem+json"),
            "{expect:?}: {answer}"
        );
    }
}
