//! Measuring jobs in isolation: the one interface a search measures
//! through ([`Executor`]: jobs in, one reply each out) and its local
//! implementation, which runs each job in a worker process of its own
//! (`tessera tune-worker`, reading the job as JSON on its standard input
//! and writing the reply on its standard output) under a time limit. A
//! worker that crashes, is killed by a signal, exits with an error, says
//! nothing parseable or runs past the limit (it is then killed) fails
//! that job alone, with the reason; the search goes on.
//!
//! A generation's jobs compile first, one worker per core at once; then
//! they are timed one after the other: timing two at once on a machine's
//! cores would disturb both. Another executor (a pool of machines, driven for
//! example by Ray from the Python package) implements the same trait; the
//! tuning cache is the only state the jobs share.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::job::{Job, Reply};

/// Measures jobs: one reply per job, in order.
pub trait Executor {
    fn measure(&self, jobs: &[Job]) -> Vec<Reply>;
}

/// Runs each job in a fresh worker process, `program` with `args`.
#[derive(Clone, Debug)]
pub struct LocalWorkers {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// How long one job may take before its worker is killed.
    pub limit: Duration,
}

impl Executor for LocalWorkers {
    fn measure(&self, jobs: &[Job]) -> Vec<Reply> {
        // Compiled first, a worker per core at once (the kernel cache
        // keeps the results); a candidate that fails to compile fails
        // there. Then timed one at a time.
        let compile: Vec<Job> = jobs
            .iter()
            .map(|j| Job {
                compile_only: true,
                ..j.clone()
            })
            .collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut compiled: Vec<Option<Reply>> = vec![None; jobs.len()];
        for (chunk, slots) in compile.chunks(cores).zip(compiled.chunks_mut(cores)) {
            std::thread::scope(|s| {
                let handles: Vec<_> = chunk.iter().map(|j| s.spawn(|| self.reply(j))).collect();
                for (h, slot) in handles.into_iter().zip(slots.iter_mut()) {
                    *slot = h.join().ok();
                }
            });
        }
        jobs.iter()
            .zip(compiled)
            .map(|(j, c)| match c {
                Some(failed @ Reply::Failed { .. }) => failed,
                _ => self.reply(j),
            })
            .collect()
    }
}

impl LocalWorkers {
    fn reply(&self, job: &Job) -> Reply {
        self.one(job)
            .unwrap_or_else(|reason| Reply::Failed { reason })
    }

    fn one(&self, job: &Job) -> Result<Reply, String> {
        let input = serde_json::to_string(job).map_err(|e| format!("the job: {e}"))?;
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", self.program.display()))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A worker that dies before reading is reported by its status.
            let _ = stdin.write_all(input.as_bytes());
        }
        // The pipes are drained on threads so a chatty worker never blocks.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_string(&mut text);
                }
                text
            })
        };
        let out = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let err = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if started.elapsed() >= self.limit {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Reply::Failed {
                    reason: format!(
                        "timed out after {:.1} s and was killed",
                        self.limit.as_secs_f64()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let (out, err) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        if !status.success() {
            let last = err.lines().last().unwrap_or("").trim();
            return Ok(Reply::Failed {
                reason: match signal(&status) {
                    Some(s) => format!("the worker was killed by signal {s}"),
                    None => format!("the worker failed ({status}): {last}"),
                },
            });
        }
        serde_json::from_str(out.trim())
            .map_err(|e| format!("the worker's reply is not one: {e}: `{}`", out.trim()))
    }
}

#[cfg(unix)]
fn signal(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

#[cfg(not(unix))]
fn signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}
