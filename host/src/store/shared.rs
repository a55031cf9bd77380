//! What the two backends share word for word, written once. The statements are in
//! [`super::sql`]; these macros expand the Rust around them inside each backend's module, where
//! `CLAIM` and the connection type are the backend's own (sqlx has no common trait for a
//! statement's rows-affected count, which keeps this from being plain generic code).

/// The writes a batch carries, on the backend's connection type.
macro_rules! batch_writes {
    ($connection:ty) => {
        async fn apply(connection: &mut $connection, write: &Write) -> Result<Outcome, StoreError> {
            Ok(match write {
                Write::InsertJob(job) => Outcome::Inserted(insert_job(connection, job).await?),
                Write::Claim {
                    lease_expires_at,
                    limit,
                } => {
                    let mut claimed = sqlx::query(CLAIM)
                        .bind(lease_expires_at)
                        .bind(i64::from(*limit))
                        .fetch_all(&mut *connection)
                        .await?
                        .iter()
                        .map(claim_from_row)
                        .collect::<Result<Vec<_>, _>>()?;
                    // RETURNING has no order: oldest first, as the queue promises.
                    claimed.sort_by(|a, b| {
                        (a.created_at, &a.lease.job_id).cmp(&(b.created_at, &b.lease.job_id))
                    });
                    Outcome::Claimed(claimed)
                }
                Write::Release { lease } => {
                    let released = sqlx::query(sql::RELEASE_UNSTARTED)
                        .bind(&lease.job_id)
                        .bind(lease.token)
                        .execute(&mut *connection)
                        .await?;
                    Outcome::Held(released.rows_affected() == 1)
                }
                Write::Start {
                    lease,
                    execution_id,
                    attempt,
                    plugin,
                    started_at,
                } => {
                    let inserted = sqlx::query(sql::START_EXECUTION)
                        .bind(execution_id)
                        .bind(i64::from(*attempt))
                        .bind(&plugin.name)
                        .bind(&plugin.version)
                        .bind(&plugin.digest)
                        .bind(started_at)
                        .bind(&lease.job_id)
                        .bind(lease.token)
                        .execute(&mut *connection)
                        .await?;
                    Outcome::Held(inserted.rows_affected() == 1)
                }
                Write::Progress {
                    lease,
                    execution_id,
                    progress,
                } => {
                    let updated = sqlx::query(sql::RECORD_PROGRESS)
                        .bind(progress.fraction)
                        .bind(&progress.message)
                        .bind(execution_id)
                        .bind(&lease.job_id)
                        .bind(lease.token)
                        .execute(&mut *connection)
                        .await?;
                    Outcome::Held(updated.rows_affected() == 1)
                }
                Write::Heartbeat {
                    leases,
                    lease_expires_at,
                } => {
                    let mut lost = Vec::new();
                    for lease in leases {
                        let updated = sqlx::query(sql::HEARTBEAT)
                            .bind(lease_expires_at)
                            .bind(&lease.job_id)
                            .bind(lease.token)
                            .execute(&mut *connection)
                            .await?;
                        if updated.rows_affected() == 0 {
                            lost.push(lease.clone());
                        }
                    }
                    Outcome::Lost(lost)
                }
                Write::Finish { lease, end } => {
                    Outcome::Held(finish(connection, lease, end).await?)
                }
            })
        }

        async fn insert_job(
            connection: &mut $connection,
            job: &NewJob,
        ) -> Result<Inserted, StoreError> {
            let inserted = sqlx::query(sql::INSERT_JOB)
                .bind(&job.id)
                .bind(&job.owner_id)
                .bind(&job.problem)
                .bind(&job.input)
                .bind(&job.options)
                .bind(job.created_at)
                .bind(job.idempotency.as_ref().map(|idempotency| &idempotency.key))
                .bind(
                    job.idempotency
                        .as_ref()
                        .map(|idempotency| &idempotency.request_hash),
                )
                .execute(&mut *connection)
                .await?;
            if inserted.rows_affected() == 1 {
                return Ok(Inserted::Created);
            }
            // A batch retried after a commit whose answer was lost finds its own job.
            let own: Option<String> = sqlx::query_scalar(sql::JOB_OWNER)
                .bind(&job.id)
                .fetch_optional(&mut *connection)
                .await?;
            if own.as_deref() == Some(job.owner_id.as_str()) {
                return Ok(Inserted::Created);
            }
            let existing = match &job.idempotency {
                Some(idempotency) => {
                    sqlx::query(sql::JOB_BY_IDEMPOTENCY_KEY)
                        .bind(&job.owner_id)
                        .bind(&idempotency.key)
                        .fetch_optional(&mut *connection)
                        .await?
                }
                None => None,
            };
            match existing {
                Some(row) => Ok(Inserted::Existing {
                    job_id: row.try_get("id")?,
                    request_hash: row.try_get("request_hash")?,
                }),
                None => Err(StoreError::Conflict(format!("job {}", job.id))),
            }
        }

        async fn finish(
            connection: &mut $connection,
            lease: &Lease,
            end: &ExecutionEnd,
        ) -> Result<bool, StoreError> {
            let job = sqlx::query(sql::FINISH_JOB)
                .bind(end.job_status.as_str())
                .bind(end.job_ended_at())
                .bind(&lease.job_id)
                .bind(lease.token)
                .execute(&mut *connection)
                .await?;
            if job.rows_affected() != 1 {
                // The lease was lost: someone else owns the job now. Change nothing.
                return Ok(false);
            }
            sqlx::query(sql::FINISH_EXECUTION)
                .bind(end.status.as_str())
                .bind(end.ended_at)
                .bind(end.error.as_ref().map(|error| error.code.as_str()))
                .bind(end.error.as_ref().map(|error| error.message.as_str()))
                .bind(&end.log_tail)
                .bind(end.log_truncated)
                .bind(&end.execution_id)
                .bind(&lease.job_id)
                .execute(&mut *connection)
                .await?;
            if let Some(output) = &end.output {
                sqlx::query(sql::INSERT_OUTPUT)
                    .bind(&lease.job_id)
                    .bind(output)
                    .execute(&mut *connection)
                    .await?;
            }
            Ok(true)
        }
    };
}

/// The backend's [`JobStore`](super::JobStore) implementation: the methods both implement
/// alike (through their `writer` and `readers` pools, their `batcher` and their own `reap`),
/// and the backend's own methods given in braces.
macro_rules! store_impl {
    ($store:ty { $($own:tt)* }) => {
        #[async_trait::async_trait]
        impl JobStore for $store {
            async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError> {
                let user = User::new(username, password_hash);
                sqlx::query(sql::INSERT_USER)
                    .bind(&user.id)
                    .bind(&user.username)
                    .bind(&user.password_hash)
                    .bind(now_millis())
                    .execute(&self.writer)
                    .await
                    .map_err(|error| user_conflict(error, username))?;
                Ok(user)
            }

            async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
                let row = sqlx::query(sql::USER_BY_NAME)
                    .bind(username)
                    .fetch_optional(&self.readers)
                    .await?;
                row.map(|row| {
                    Ok(User {
                        id: row.try_get("id")?,
                        username: row.try_get("username")?,
                        password_hash: row.try_get("password_hash")?,
                    })
                })
                .transpose()
            }

            async fn user_count(&self) -> Result<u64, StoreError> {
                let count: i64 = sqlx::query_scalar(sql::USER_COUNT)
                    .fetch_one(&self.writer)
                    .await?;
                Ok(count as u64)
            }

            async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError> {
                self.batcher.insert_job(job).await
            }

            async fn job_by_idempotency_key(
                &self,
                owner_id: &str,
                key: &str,
            ) -> Result<Option<(String, String)>, StoreError> {
                let row = sqlx::query(sql::JOB_BY_IDEMPOTENCY_KEY)
                    .bind(owner_id)
                    .bind(key)
                    .fetch_optional(&self.readers)
                    .await?;
                row.map(|row| Ok((row.try_get("id")?, row.try_get("request_hash")?)))
                    .transpose()
            }

            async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
                // One read transaction, so the job and its executions are one consistent snapshot.
                let mut transaction = self.readers.begin().await?;
                let Some(row) = sqlx::query(sql::JOB)
                    .bind(job_id)
                    .bind(owner_id)
                    .fetch_optional(&mut *transaction)
                    .await?
                else {
                    return Ok(None);
                };
                let executions = sqlx::query(sql::EXECUTIONS)
                    .bind(job_id)
                    .fetch_all(&mut *transaction)
                    .await?
                    .iter()
                    .map(execution_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                transaction.commit().await?;
                Ok(Some(JobRecord::new(summary_from_row(&row)?, executions)))
            }

            async fn pending_count(&self) -> Result<u64, StoreError> {
                let count: i64 = sqlx::query_scalar(sql::PENDING_COUNT)
                    .fetch_one(&self.readers)
                    .await?;
                Ok(count as u64)
            }

            async fn jobs(
                &self,
                owner_id: &str,
                before: Option<&str>,
                limit: u32,
            ) -> Result<Vec<JobSummary>, StoreError> {
                sqlx::query(sql::JOBS_PAGE)
                    .bind(owner_id)
                    .bind(before)
                    .bind(i64::from(limit))
                    .fetch_all(&self.readers)
                    .await?
                    .iter()
                    .map(summary_from_row)
                    .collect()
            }

            async fn job_output(
                &self,
                owner_id: &str,
                job_id: &str,
            ) -> Result<Option<JobOutput>, StoreError> {
                let row = sqlx::query(sql::JOB_OUTPUT)
                    .bind(job_id)
                    .bind(owner_id)
                    .fetch_optional(&self.readers)
                    .await?;
                row.map(|row| {
                    Ok(JobOutput::from_parts(
                        JobStatus::parse(&row.try_get::<String, _>("status")?)?,
                        row.try_get("output")?,
                    ))
                })
                .transpose()
            }

            async fn claim_jobs(&self, lease: Duration, limit: u32) -> Result<Vec<ClaimedJob>, StoreError> {
                self.batcher
                    .claim(now_millis() + lease.as_millis() as Millis, limit)
                    .await
            }

            fn release_unstarted(&self, lease: &Lease) -> QueuedWrite {
                self.batcher.queue(Write::Release {
                    lease: lease.clone(),
                })
            }

            async fn heartbeat(&self, leases: &[Lease], lease: Duration) -> Result<Vec<Lease>, StoreError> {
                self.batcher
                    .heartbeat(leases, now_millis() + lease.as_millis() as Millis)
                    .await
            }

            fn start_execution(
                &self,
                lease: &Lease,
                execution_id: &str,
                attempt: u32,
                plugin: &PluginRef,
                started_at: Millis,
            ) -> QueuedWrite {
                self.batcher.queue(Write::Start {
                    lease: lease.clone(),
                    execution_id: execution_id.to_owned(),
                    attempt,
                    plugin: plugin.clone(),
                    started_at,
                })
            }

            async fn record_progress(
                &self,
                lease: &Lease,
                execution_id: &str,
                progress: &Progress,
            ) -> Result<bool, StoreError> {
                self.batcher
                    .queue(Write::Progress {
                        lease: lease.clone(),
                        execution_id: execution_id.to_owned(),
                        progress: progress.clone(),
                    })
                    .lease_held()
                    .await
            }

            fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd) -> QueuedWrite {
                self.batcher.queue(Write::Finish {
                    lease: lease.clone(),
                    end: end.clone(),
                })
            }

            async fn reap_expired(&self, max_attempts: u32) -> Result<u64, StoreError> {
                self.reap(max_attempts, false).await
            }

            async fn purge_finished(&self, ended_before: Millis, batch: u32) -> Result<u64, StoreError> {
                let deleted = sqlx::query(sql::PURGE_FINISHED)
                    .bind(ended_before)
                    .bind(i64::from(batch))
                    .execute(&self.writer)
                    .await?;
                Ok(deleted.rows_affected())
            }

            $($own)*
        }
    };
}

pub(super) use {batch_writes, store_impl};
