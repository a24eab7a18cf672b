//! One writer for a host's run records, committing in groups.
//!
//! Why it exists: a commit per run caps a server at what the disk syncs
//! per second, and every run waits in line for the store lock. Here the
//! runs that finish while a commit is under way are committed together in
//! the next transaction (group commit); each run's caller is answered once
//! its group is on disk, so a response never precedes its record. The
//! commit runs off the async workers. Records are committed in the order
//! they are sent, so a run's `running` record is always written before the
//! one that finishes it.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};

use crate::store::NewRun;

use super::error::AppError;
use super::state::StateStore;

/// The most runs one transaction commits.
const MAX_GROUP: usize = 1024;

type Job = (NewRun, oneshot::Sender<Result<String, String>>);

/// The writer's handle; the writer stops when every handle is dropped.
#[derive(Clone)]
pub struct RunWriter {
    jobs: mpsc::UnboundedSender<Job>,
}

impl RunWriter {
    /// Start the writer (on the current tokio runtime) for `store`.
    pub fn start(store: Arc<Mutex<StateStore>>) -> Self {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        tokio::spawn(async move {
            while let Some(first) = queue.recv().await {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match queue.try_recv() {
                        Ok(job) => group.push(job),
                        Err(_) => break,
                    }
                }
                let (runs, replies): (Vec<NewRun>, Vec<_>) = group.into_iter().unzip();
                let store = Arc::clone(&store);
                let committed = tokio::task::spawn_blocking(move || {
                    store
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .record_runs(runs)
                        .map_err(|e| e.to_string())
                })
                .await
                .unwrap_or_else(|e| Err(format!("the store writer stopped: {e}")));
                match committed {
                    Ok(ids) => {
                        for (reply, id) in replies.into_iter().zip(ids) {
                            let _ = reply.send(Ok(id));
                        }
                    }
                    Err(e) => {
                        for reply in replies {
                            let _ = reply.send(Err(e.clone()));
                        }
                    }
                }
            }
        });
        Self { jobs }
    }

    /// Record `run` with the next group, without waiting for it (a run
    /// that starts: the record that finishes it comes later, in order).
    pub fn record_soon(&self, run: NewRun) {
        let (reply, _) = oneshot::channel();
        let _ = self.jobs.send((run, reply));
    }

    /// Record `run`; answers once its group is committed.
    pub async fn record(&self, run: NewRun) -> Result<String, AppError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send((run, reply))
            .map_err(|_| AppError::failure("the store writer has stopped"))?;
        answer
            .await
            .map_err(|_| AppError::failure("the store writer has stopped"))?
            .map_err(|e| AppError::failure(format!("recording the run failed: {e}")))
    }
}
