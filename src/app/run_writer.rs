//! One writer for a host's run records, committing in groups.
//!
//! Why it exists: a commit per run caps a server at what the disk syncs
//! per second, and every run waits in line for the store lock. Here the
//! runs that finish while a commit is under way are committed together in
//! the next transaction (group commit); each run's caller is answered once
//! its group is on disk, so a response never precedes its record. The
//! commit runs off the async workers. Records are committed in the order
//! they are sent, so a run's `running` record is always written before the
//! one that finishes it — or not at all, when both fall in one group.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};

use crate::store::NewRun;

use super::error::AppError;
use super::state::StateStore;

/// The most runs one transaction commits.
const MAX_GROUP: usize = 1024;

type Reply = oneshot::Sender<Result<String, String>>;
type Job = (NewRun, Reply);

/// The records a group commits, in the order sent, and who is answered by
/// each. A run that started and finished within one group (a short run
/// under load: most of them) is written once, finished: its `running`
/// record would be overwritten in the same transaction, so nobody could
/// ever read it — half the rows of a busy server's commits.
fn coalesce(group: Vec<Job>) -> (Vec<NewRun>, Vec<Vec<Reply>>) {
    let mut last = std::collections::HashMap::with_capacity(group.len());
    for (i, (run, _)) in group.iter().enumerate() {
        last.insert(run.id.clone(), i);
    }
    let mut runs = Vec::with_capacity(last.len());
    let mut replies: Vec<Vec<Reply>> = Vec::with_capacity(last.len());
    let mut waiting: std::collections::HashMap<String, Vec<Reply>> = Default::default();
    for (i, (run, reply)) in group.into_iter().enumerate() {
        let mut answered = waiting.remove(&run.id).unwrap_or_default();
        answered.push(reply);
        if last.get(&run.id) == Some(&i) {
            runs.push(run);
            replies.push(answered);
        } else {
            waiting.insert(run.id, answered);
        }
    }
    (runs, replies)
}

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
                let (runs, replies) = coalesce(group);
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
                        for (answered, id) in replies.into_iter().zip(ids) {
                            for reply in answered {
                                let _ = reply.send(Ok(id.clone()));
                            }
                        }
                    }
                    Err(e) => {
                        for reply in replies.into_iter().flatten() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, status: &str) -> (Job, oneshot::Receiver<Result<String, String>>) {
        let (reply, answer) = oneshot::channel();
        let run = NewRun {
            id: id.to_owned(),
            generation_id: "gen_0001".to_owned(),
            agent: "a".to_owned(),
            status: status.to_owned(),
            started_at: "t0".to_owned(),
            finished_at: (status != "running").then(|| "t1".to_owned()),
            instance: None,
        };
        ((run, reply), answer)
    }

    #[test]
    fn a_run_started_and_finished_in_one_group_is_written_once_and_everyone_is_answered() {
        let (a_start, a1) = job("run_a", "running");
        let (b_start, b1) = job("run_b", "running");
        let (a_end, a2) = job("run_a", "succeeded");
        let (runs, replies) = coalesce(vec![a_start, b_start, a_end]);
        let written: Vec<(&str, &str)> = runs
            .iter()
            .map(|r| (r.id.as_str(), r.status.as_str()))
            .collect();
        assert_eq!(written, [("run_b", "running"), ("run_a", "succeeded")]);
        assert_eq!(replies.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2]);
        for (answered, run) in replies.into_iter().zip(&runs) {
            for reply in answered {
                reply.send(Ok(run.id.clone())).unwrap();
            }
        }
        for (answer, id) in [(a1, "run_a"), (b1, "run_b"), (a2, "run_a")] {
            assert_eq!(answer.blocking_recv().unwrap(), Ok(id.to_owned()));
        }
    }
}
