//! A throwaway PostgreSQL database for tests and benchmarks: created on the server that
//! `CASELOAD_TEST_DATABASE_URL` names, dropped when the value is dropped.

/// The variable naming the test server (any database on it; CI sets it).
pub const ADMIN_URL_VARIABLE: &str = "CASELOAD_TEST_DATABASE_URL";

/// A database of its own on the test server, dropped when the test ends.
pub struct ScratchDatabase {
    admin_url: String,
    name: String,
    pub url: String,
}

impl ScratchDatabase {
    /// One on the server [`ADMIN_URL_VARIABLE`] names. The tests that need it are marked
    /// ignored, so they run only when asked for (`--include-ignored`); asked for without a
    /// server, they fail rather than pass untested.
    pub async fn create() -> ScratchDatabase {
        let Ok(admin_url) = std::env::var(ADMIN_URL_VARIABLE) else {
            panic!(
                "set {ADMIN_URL_VARIABLE} to a PostgreSQL server's URL to run the PostgreSQL \
                 tests, e.g. postgres://postgres@127.0.0.1:5432/postgres"
            );
        };
        ScratchDatabase::create_on(&admin_url).await
    }

    /// Creates one on the server of `admin_url`; panics if the server is unreachable.
    pub async fn create_on(admin_url: &str) -> ScratchDatabase {
        let admin_url = admin_url.to_owned();
        let name = format!("caseload_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = connect(&admin_url).await;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("the test server lets us create a database");
        let url = with_database(&admin_url, &name);
        ScratchDatabase {
            admin_url,
            name,
            url,
        }
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let statement = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        // Drop runs outside async; a thread with its own runtime does the dropping.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                let mut admin = connect(&admin_url).await;
                sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                    .execute(&mut admin)
                    .await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(_))) {
            eprintln!("could not drop the test database {}", self.name);
        }
    }
}

async fn connect(url: &str) -> sqlx::PgConnection {
    use sqlx::Connection;
    sqlx::PgConnection::connect(url)
        .await
        .unwrap_or_else(|error| panic!("{ADMIN_URL_VARIABLE}={url} is unreachable: {error}"))
}

/// The URL with its database name replaced.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let server = match base.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('/') {
            Some((authority, _)) => format!("{scheme}://{authority}"),
            None => base.to_owned(),
        },
        None => base.to_owned(),
    };
    if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_are_rewritten() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }
}
