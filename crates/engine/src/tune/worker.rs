//! Measuring jobs in isolation: the one interface a search measures
//! through ([`Executor`]: jobs in, one reply each out) and its local
//! implementation, which runs each job in a worker process of its own
//! (`tessera tune-worker`, reading the job as JSON on its standard input
//! and writing the reply on its standard output) under a time limit. A
//! worker that crashes, is killed by a signal, exits with an error, says
//! nothing parseable or runs past the limit (it is then killed) fails
//! that job alone, with the reason; the search goes on.
//!
//! Jobs go a core's worth at a time: compiled at once, one worker per
//! core, then timed one after the other (timing two at once on a
//! machine's cores would disturb both). When the caller's `stop` says so (Ctrl-C, the
//! budget spent), the running workers are killed and the jobs not yet
//! measured get no reply. Workers run in a process group of their own, so
//! a Ctrl-C at the terminal reaches the tuner alone, which stops them. Another executor (a pool of machines, driven for
//! example by Ray from the Python package) implements the same trait; the
//! tuning cache is the only state the jobs share.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::job::{Job, Reply};

/// Measures jobs: one reply per job, in order, until `stop` says to stop;
/// then the replies are those of the jobs measured before (a prefix).
pub trait Executor {
    fn measure(&self, jobs: &[Job], stop: &dyn Fn() -> bool) -> Vec<Reply>;
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
    fn measure(&self, jobs: &[Job], stop: &dyn Fn() -> bool) -> Vec<Reply> {
        // A core's worth of jobs at a time: compiled at once, a worker per
        // core (the kernel cache keeps the results; a candidate that fails
        // to compile fails there), then timed one after the other. Small
        // rounds let a stop lose little work.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // `stop` need not be shareable between threads: the compiling
        // threads watch a flag this thread sets from it.
        let stopped = AtomicBool::new(false);
        let mut replies = Vec::new();
        for chunk in jobs.chunks(cores) {
            if stop() {
                break;
            }
            let compiled: Vec<Option<Reply>> = std::thread::scope(|s| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|j| {
                        let compile = Job {
                            compile_only: true,
                            ..j.clone()
                        };
                        let stopped = &stopped;
                        s.spawn(move || self.reply(&compile, &|| stopped.load(Ordering::Relaxed)))
                    })
                    .collect();
                while !handles.iter().all(|h| h.is_finished()) {
                    if stop() {
                        stopped.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(POLL);
                }
                handles
                    .into_iter()
                    .map(|h| h.join().ok().flatten())
                    .collect()
            });
            if stopped.load(Ordering::Relaxed) {
                break;
            }
            for (j, c) in chunk.iter().zip(compiled) {
                let reply = match c {
                    Some(failed @ Reply::Failed { .. }) => Some(failed),
                    _ => self.reply(j, stop),
                };
                match reply {
                    Some(r) => replies.push(r),
                    None => return replies,
                }
            }
        }
        replies
    }
}

/// How often a waiting worker's status and the caller's `stop` are read.
const POLL: Duration = Duration::from_millis(5);

impl LocalWorkers {
    /// The job's reply, or `None` when `stop` stopped it.
    fn reply(&self, job: &Job, stop: &dyn Fn() -> bool) -> Option<Reply> {
        self.one(job, stop)
            .unwrap_or_else(|reason| Some(Reply::Failed { reason }))
    }

    fn one(&self, job: &Job, stop: &dyn Fn() -> bool) -> Result<Option<Reply>, String> {
        let input = serde_json::to_string(job).map_err(|e| format!("the job: {e}"))?;
        let mut command = Command::new(&self.program);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
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
            if stop() {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            if started.elapsed() >= self.limit {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Some(Reply::Failed {
                    reason: format!(
                        "timed out after {:.1} s and was killed",
                        self.limit.as_secs_f64()
                    ),
                }));
            }
            std::thread::sleep(POLL);
        };
        let (out, err) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        if !status.success() {
            let last = err.lines().last().unwrap_or("").trim();
            return Ok(Some(Reply::Failed {
                reason: match signal(&status) {
                    Some(s) => format!("the worker was killed by signal {s}"),
                    None => format!("the worker failed ({status}): {last}"),
                },
            }));
        }
        serde_json::from_str(out.trim())
            .map(Some)
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
