//! Isolated measurement (`engine::tune::worker` with `tessera tune-worker`):
//! a candidate that crashes, one that hangs and one 1000 times slower than
//! the best are each isolated and reported, and the jobs around them are
//! measured; a stopped measurement ends the running worker at once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use engine::tune::job::{Job, Reply};
use engine::tune::worker::{Executor, LocalWorkers};

fn workers(limit: Duration) -> LocalWorkers {
    LocalWorkers {
        program: PathBuf::from(env!("CARGO_BIN_EXE_tessera")),
        args: vec!["tune-worker".to_string()],
        limit,
    }
}

fn job(fault: Option<&str>, best_ns: Option<u64>) -> Job {
    Job {
        program:
            "def tmm(float(M, K) A, float(N, K) B) -> (C) {\n  C(m, n) +=! A(m, k) * B(n, k)\n}\n"
                .to_string(),
        def: "tmm".to_string(),
        sizes: BTreeMap::from([
            ("M".to_string(), 24),
            ("N".to_string(), 20),
            ("K".to_string(), 32),
        ]),
        options: "step s1_C_init_fused\n  vectorize off\n".to_string(),
        best_ns,
        seed: 3,
        compile_only: false,
        model: None,
        constants: Vec::new(),
        reference: None,
        save_outputs: None,
        fault: fault.map(str::to_string),
    }
}

#[test]
fn crashing_hanging_and_slow_candidates_are_isolated_and_reported() {
    // Compiled first, under a generous limit; the kernel cache then
    // serves the jobs below, whose limit is short so the hang ends soon.
    let replies = workers(Duration::from_secs(120)).measure(&[job(None, None)], &|| false);
    let w = workers(Duration::from_secs(5));
    let Reply::Time {
        median_ns,
        ref steps,
    } = replies[0]
    else {
        panic!("{replies:?}")
    };
    assert!(median_ns > 0);
    // The steps' own times: the kernel's one statement's steps, each a
    // part of a run, in the same unit.
    assert!(!steps.is_empty());
    for (name, &ns) in steps {
        assert!(name.starts_with("s1_"), "{steps:?}");
        assert!(
            ns <= 10 * median_ns,
            "{name}: {ns} ns in a run of {median_ns} ns"
        );
    }
    let started = Instant::now();
    let replies = w.measure(
        &[
            job(Some("abort"), None),
            job(Some("hang"), None),
            job(Some("slow"), Some(median_ns)),
            job(None, Some(median_ns)),
        ],
        &|| false,
    );
    match &replies[0] {
        Reply::Failed { reason } => assert!(reason.contains("signal 6"), "{reason}"),
        other => panic!("the crash: {other:?}"),
    }
    match &replies[1] {
        Reply::Failed { reason } => assert!(reason.contains("timed out after 5.0 s"), "{reason}"),
        other => panic!("the hang: {other:?}"),
    }
    assert!(
        matches!(replies[2], Reply::Pruned { seen_ns } if seen_ns >= 100 * median_ns),
        "the slow one: {:?}",
        replies[2]
    );
    assert!(matches!(replies[3], Reply::Time { .. }), "{:?}", replies[3]);
    // The hang cost its time limit, not more.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn stopping_kills_the_running_worker_and_replies_for_the_jobs_before_it() {
    // The first job compiles under no stop; the kernel cache then serves
    // the job before the hang at once.
    let w = workers(Duration::from_secs(120));
    assert!(matches!(
        w.measure(&[job(None, None)], &|| false)[..],
        [Reply::Time { .. }]
    ));
    let started = Instant::now();
    let stop_at = Duration::from_secs(4);
    let replies = w.measure(
        &[job(None, None), job(Some("hang"), None), job(None, None)],
        &|| started.elapsed() >= stop_at,
    );
    // The hang was stopped, not timed out (its limit is 120 s), and the
    // job after it was never started.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(matches!(replies[..], [Reply::Time { .. }]), "{replies:?}");
}

#[test]
fn a_job_that_cannot_run_fails_with_why() {
    let w = workers(Duration::from_secs(30));
    let mut bad_options = job(None, None);
    bad_options.options = "step s\n  tile m=0\n".to_string();
    let mut bad_program = job(None, None);
    bad_program.program = "def f(".to_string();
    let replies = w.measure(&[bad_options, bad_program], &|| false);
    match &replies[0] {
        Reply::Failed { reason } => assert!(reason.contains("line 2"), "{reason}"),
        other => panic!("{other:?}"),
    }
    match &replies[1] {
        Reply::Failed { reason } => assert!(reason.contains("does not check"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_worker_given_no_job_says_so() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("tune-worker")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(b"{\"program\": 3}")
        .expect("written");
    let out = child.wait_with_output().expect("it ends");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: not a tuning job:"), "{err}");
}
